"""The ``Model`` protocol and the weight-free baselines: all options, none, random, oracle, noisy oracle."""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import numpy as np

from nips25_commono.example import Example
from nips25_commono.prompt import format_answer

__all__ = ["AllOptions", "Model", "NoisyOracle", "NoneOption", "Oracle", "RandomGuess"]


@runtime_checkable
class Model(Protocol):
    """Anything that answers a Common-O question with a string such as ``"Answer: A, C"``.

    A multimodal LLM implements it by formatting :func:`~nips25_commono.prompt.format_prompt` with the example's
    images and returning its text; :func:`~nips25_commono.scoring.evaluate` parses and scores the strings.
    """

    def answer(self, example: Example) -> str:
        """The model's reply to ``example``."""
        ...


def _check_example(example: object) -> Example:
    if not isinstance(example, Example):
        raise TypeError(f"example must be an Example, got {type(example).__name__}")
    return example


def _check_probability(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)


class AllOptions:
    """Selects every object option. Exact only when every object option is common; hallucinates otherwise."""

    def answer(self, example: Example) -> str:
        """``Answer:`` followed by every letter except the None option's."""
        ex = _check_example(example)
        return format_answer(ex.object_indices or (ex.none_index,))


class NoneOption:
    """Always answers the None option: accuracy = share of questions with nothing in common, never hallucinates."""

    def answer(self, example: Example) -> str:
        """``Answer:`` and the None option's letter."""
        return format_answer((_check_example(example).none_index,))


class Oracle:
    """Answers the ground truth: accuracy 1, hallucination 0 (a check of the scoring)."""

    def answer(self, example: Example) -> str:
        """The ground-truth letters."""
        return format_answer(_check_example(example).answer)


class RandomGuess:
    """Selects each object option independently with probability ``p``; answers None when it selects nothing.

    Args:
        p: selection probability in ``[0, 1]``.
        seed: seed of its random stream (replies depend on the order of the calls).
    """

    def __init__(self, *, p: float = 0.5, seed: int = 0) -> None:
        self.p = _check_probability("p", p)
        self._rng = np.random.default_rng(seed)

    def answer(self, example: Example) -> str:
        """A random subset of the object options, or None."""
        ex = _check_example(example)
        picked = [i for i in ex.object_indices if self._rng.random() < self.p]
        return format_answer(picked or (ex.none_index,))


class NoisyOracle:
    r"""A perception model with known error rates: keeps each common option with probability ``1 - p_miss`` and
    adds each non-common object option with probability ``p_false``, independently; answers None when it selects
    nothing.

    Closed forms for a question with common set :math:`C` and non-common object options :math:`N`:
    :math:`P(\text{correct}) = (1-p_{miss})^{|C|}(1-p_{false})^{|N|}` and
    :math:`P(\text{hallucinate}) = 1 - (1-p_{false})^{|N|}` (when :math:`C = \emptyset` the None answer is correct
    exactly when nothing is added, which is the same formula).

    Args:
        p_miss: probability of dropping a common object, in ``[0, 1]``.
        p_false: probability of adding a non-common object, in ``[0, 1]``.
        seed: seed of its random stream.

    Raises:
        ValueError: if a probability is outside ``[0, 1]``.

    Example:
        >>> NoisyOracle(p_miss=0.0, p_false=0.0).answer  # doctest: +ELLIPSIS
        <bound method NoisyOracle.answer of ...>
    """

    def __init__(self, *, p_miss: float = 0.1, p_false: float = 0.05, seed: int = 0) -> None:
        self.p_miss = _check_probability("p_miss", p_miss)
        self.p_false = _check_probability("p_false", p_false)
        self._rng = np.random.default_rng(seed)

    def answer(self, example: Example) -> str:
        """The noisy selection (see the class docstring)."""
        ex = _check_example(example)
        picked = []
        for i in ex.object_indices:
            keep = 1.0 - self.p_miss if i in ex.answer else self.p_false
            if self._rng.random() < keep:
                picked.append(i)
        return format_answer(picked or (ex.none_index,))

    def expected_accuracy(self, example: Example) -> float:
        """:math:`(1-p_{miss})^{|C|}(1-p_{false})^{|N|}` for ``example``."""
        ex = _check_example(example)
        n_common = len(ex.common)
        n_other = len(ex.object_indices) - n_common
        return math.pow(1.0 - self.p_miss, n_common) * math.pow(1.0 - self.p_false, n_other)

    def expected_hallucination(self, example: Example) -> float:
        """:math:`1 - (1-p_{false})^{|N|}` for ``example``."""
        ex = _check_example(example)
        n_other = len(ex.object_indices) - len(ex.common)
        return 1.0 - math.pow(1.0 - self.p_false, n_other)
