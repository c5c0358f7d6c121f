"""The generator side of the search: one reasoning step per request, with per-path seeds.

A *step* is the text up to and including the stop string (``"\\n\\n"`` in the paper's code), or up to the end of
the answer. The search never samples itself; it sends :class:`StepRequest` objects to any object that follows the
:class:`Generator` protocol (the simulator, the tiny trained GRU, a Hugging Face causal LM).
"""

from __future__ import annotations

import hashlib
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["STOP", "Generator", "Step", "StepRequest", "path_seed", "step_seed"]

#: The step delimiter of the paper's code (kept in the step text).
STOP = "\n\n"
_MASK = (1 << 63) - 1


def is_int(value: object) -> bool:
    """Whether ``value`` is an integer (Python or numpy), not a bool."""
    if type(value) is int:  # the common case, without the slow abstract-class check
        return True
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _hash(*parts: object) -> int:
    h = hashlib.blake2b(digest_size=8)
    for part in parts:
        h.update(repr(part).encode())
        h.update(b"\x1f")
    return int.from_bytes(h.digest(), "little") & _MASK


def path_seed(seed: int, problem: str, lineage: tuple[int, ...]) -> int:
    """The seed of one sampling path: a hash of the search seed, the problem text and the path's lineage.

    The lineage is the tuple of branch indices that created the path, so that the randomness of a path does not
    depend on where it sits in the batch (the fix for sal#28-style misalignment) nor on how many problems share a
    call.

    Args:
        seed: the search seed (any int).
        problem: the problem text.
        lineage: branch indices from the root, e.g. ``(3,)`` for the 4th first-step sample, ``(3, 1)`` for its
            second child.

    Returns:
        A 63-bit non-negative int.

    Raises:
        TypeError: if ``seed`` is not an int, ``problem`` not a str or ``lineage`` not a tuple of ints.
    """
    if not is_int(seed):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not isinstance(problem, str):
        raise TypeError(f"problem must be a str, got {type(problem).__name__}")
    if not isinstance(lineage, tuple) or not all(is_int(k) for k in lineage):
        raise TypeError(f"lineage must be a tuple of ints, got {lineage!r}")
    return _hash("path", int(seed), problem, tuple(int(k) for k in lineage))


def step_seed(seed: int, depth: int) -> int:
    """The seed of the step at ``depth`` (0-based count of steps already in the prefix) of a path.

    Generators that honour this contract make a path's ``k``-th step a function of ``(seed, k)`` only, whether it
    is sampled alone or inside a run to the end of the answer. That makes Best-of-N and VG-Search with
    ``beam_width=1`` draw exactly the same paths (tested).

    Args:
        seed: the path seed (:func:`path_seed`).
        depth: number of steps already in the prefix, ``>= 0``.

    Returns:
        A 63-bit non-negative int.

    Raises:
        TypeError: if ``seed`` or ``depth`` is not an int.
        ValueError: if ``depth < 0``.
    """
    if not is_int(seed) or not is_int(depth):
        raise TypeError(f"seed and depth must be ints, got {type(seed).__name__} and {type(depth).__name__}")
    if depth < 0:
        raise ValueError(f"depth must be >= 0, got {depth}")
    return _hash("step", int(seed), int(depth))


@dataclass(frozen=True)
class StepRequest:
    """One request to a generator: continue ``prefix`` (the solution so far) of ``problem`` by one step.

    Attributes:
        problem: the problem (prompt) text.
        prefix: the solution text so far (whole steps, each ending with :data:`STOP`), ``""`` at the root.
        depth: number of steps in ``prefix``.
        seed: the path seed (:func:`path_seed`); the step at depth ``k`` uses :func:`step_seed` ``(seed, k)``.
    """

    problem: str
    prefix: str
    depth: int
    seed: int

    def __post_init__(self) -> None:
        if not isinstance(self.problem, str) or not isinstance(self.prefix, str):
            raise TypeError("StepRequest.problem and StepRequest.prefix must be str")
        if not is_int(self.depth) or not is_int(self.seed):
            raise TypeError(f"StepRequest.depth and StepRequest.seed must be ints, got {self.depth!r}, {self.seed!r}")
        if self.depth < 0:
            raise ValueError(f"StepRequest.depth must be >= 0, got {self.depth}")


@dataclass(frozen=True)
class Step:
    """What a generator returns for one request.

    Attributes:
        text: the new text (one step ending with :data:`STOP`, or several steps up to the end of the answer
            when sampled ``to_eos``).
        n_tokens: generated tokens in ``text`` (for the FLOPs accountant), ``>= 0``.
        n_steps: reasoning steps in ``text`` (1 for a single step; an empty step counts as 1).
        finished: the answer ended (EOS, final answer, empty step, or the length limit).
    """

    text: str
    n_tokens: int
    n_steps: int
    finished: bool

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"Step.text must be a str, got {type(self.text).__name__}")
        if not is_int(self.n_tokens) or not is_int(self.n_steps):
            raise TypeError(f"Step.n_tokens and Step.n_steps must be ints, got {self.n_tokens!r}, {self.n_steps!r}")
        if self.n_tokens < 0 or self.n_steps < 1:
            raise ValueError(f"Step needs n_tokens >= 0 and n_steps >= 1, got {self.n_tokens}, {self.n_steps}")


@runtime_checkable
class Generator(Protocol):
    """A sampler of reasoning steps (the policy model).

    ``step(requests, to_eos=False)`` returns one :class:`Step` per request, in order, ending at :data:`STOP`;
    with ``to_eos=True`` it samples to the end of the answer. ``count_tokens(text)`` is the number of tokens the
    model sees for ``text`` (for prefill FLOPs). ``n_params`` is the parameter count used by the FLOPs model.
    """

    n_params: float

    def step(self, requests: Sequence[StepRequest], *, to_eos: bool = False) -> list[Step]: ...

    def count_tokens(self, text: str) -> int: ...


def check_params(n_params: float, name: str) -> float:
    """Validate a parameter count (finite, > 0) and return it as float."""
    if isinstance(n_params, bool) or not isinstance(n_params, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(n_params).__name__}")
    if not math.isfinite(n_params) or n_params <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {n_params}")
    return float(n_params)
