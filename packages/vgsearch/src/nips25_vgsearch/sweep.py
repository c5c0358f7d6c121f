"""Accuracy-vs-FLOPs sweeps over ``g`` and ``n``, matched-FLOPs comparison and the Pareto front."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nips25_vgsearch.flops import FlopsModel
from nips25_vgsearch.generator import Generator, is_int
from nips25_vgsearch.progress import progress
from nips25_vgsearch.search import GranularityPolicy, SearchResult, best_of_n, vg_search
from nips25_vgsearch.verifier import Verifier

__all__ = ["SweepPoint", "accuracy_at", "method_name", "pareto_front", "run_sweep", "score_results", "search_batched"]


@dataclass(frozen=True)
class SweepPoint:
    """Mean accuracy and cost of one method at one ``n`` over a problem set.

    Attributes:
        method: ``"bon"``, ``"g=1"`` (beam search), ``"g=2"``, ..., ``"g=inf"``, or ``"adaptive"``.
        n: candidates per round.
        accuracy: share of right answers.
        se: binomial standard error of ``accuracy``.
        flops: mean FLOPs per problem.
        gen_tokens: mean generated tokens per problem.
        verifier_calls: mean verifier calls per problem.
    """

    method: str
    n: int
    accuracy: float
    se: float
    flops: float
    gen_tokens: float
    verifier_calls: float

    def __post_init__(self) -> None:
        if not isinstance(self.method, str) or not self.method:
            raise ValueError(f"method must be a non-empty str, got {self.method!r}")
        if not is_int(self.n) or self.n < 1:
            raise ValueError(f"n must be an int >= 1, got {self.n!r}")
        if not (isinstance(self.accuracy, (int, float)) and 0.0 <= self.accuracy <= 1.0):
            raise ValueError(f"accuracy must be in [0, 1], got {self.accuracy!r}")
        for name in ("se", "flops", "gen_tokens", "verifier_calls"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be finite and >= 0, got {value!r}")


def method_name(g: int | None) -> str:
    """``"g=<g>"``, ``"g=inf"`` for ``None``."""
    return "g=inf" if g is None else f"g={g}"


def score_results(
    method: str,
    n: int,
    results: Sequence[SearchResult],
    is_correct: Callable[[str, str], bool],
    *,
    flops_model: FlopsModel | None = None,
) -> tuple[SweepPoint, list[bool]]:
    """Summarise ``results`` into a :class:`SweepPoint` and the per-problem correctness.

    Args:
        method, n: the point's labels.
        results: one search result per problem.
        is_correct: ``is_correct(problem, completion) -> bool``.
        flops_model: recount every result's FLOPs from its ledger under this accounting (e.g. with prefix caching);
            ``None`` keeps ``result.flops`` (the accounting the search ran with).

    Raises:
        ValueError: if ``results`` is empty.
    """
    if not results:
        raise ValueError("results must be non-empty")
    ok = [bool(is_correct(r.problem, r.answer)) for r in results]
    flops = [r.flops if flops_model is None else flops_model.flops(r.ledger) for r in results]
    acc = float(np.mean(ok))
    return (
        SweepPoint(
            method=method,
            n=n,
            accuracy=acc,
            se=math.sqrt(max(acc * (1 - acc), 1e-12) / len(ok)),
            flops=float(np.mean(flops)),
            gen_tokens=float(np.mean([r.ledger.gen_tokens for r in results])),
            verifier_calls=float(np.mean([r.ledger.verifier_calls for r in results])),
        ),
        ok,
    )


def run_sweep(
    problems: Sequence[str],
    generator: Generator,
    verifier: Verifier,
    is_correct: Callable[[str, str], bool],
    *,
    ns: Sequence[int] = (4, 16, 64),
    gs: Sequence[int | None] = (1, 2, 3, 4, None),
    beam_width: int = 4,
    include_bon: bool = True,
    max_steps: int = 12,
    seed: int = 0,
    flops_model: FlopsModel | None = None,
    batch_size: int = 0,
    num_iterations: Mapping[int | None, int] | None = None,
) -> tuple[list[SweepPoint], dict[tuple[str, int], list[SearchResult]]]:
    """Run Best-of-N and VG-Search at every ``g`` and ``n`` on the same problems and seeds.

    Args:
        problems: the problem set.
        generator, verifier: the models.
        is_correct: ``is_correct(problem, completion) -> bool``.
        ns: candidate counts, each a multiple of ``beam_width``.
        gs: granularities (``None`` = full length).
        beam_width: :math:`B_2`.
        include_bon: also run :func:`best_of_n`.
        max_steps: see :class:`~nips25_vgsearch.SearchConfig`.
        seed: search seed (shared by every method).
        flops_model: the FLOPs model.
        batch_size: problems per search call (0: all at once).
        num_iterations: rounds per granularity (e.g. the paper's ``{1: 12, 2: 6, 3: 4, 4: 3}``,
            :meth:`~nips25_vgsearch.PaperPreset.rounds`); a ``g`` not in it gets the rounds derived from
            ``max_steps``.

    Returns:
        ``(points, results)``: one :class:`SweepPoint` per method and ``n``; the raw results keyed by
        ``(method, n)``.

    Raises:
        ValueError: on empty ``problems``/``ns``/``gs``, a negative ``batch_size`` or an ``n`` that is not a
            multiple of ``beam_width``.
        TypeError: if ``is_correct`` is not callable.
    """
    if not ns or not gs:
        raise ValueError("ns and gs must be non-empty")
    if not callable(is_correct):
        raise TypeError(f"is_correct must be callable (problem, completion) -> bool, got {type(is_correct).__name__}")
    jobs: list[tuple[str, int, int | GranularityPolicy | None]] = []
    for n in ns:
        if include_bon:
            jobs.append(("bon", n, None))
        jobs += [(method_name(g), n, g) for g in gs]
    points, raw = [], {}
    rounds = dict(num_iterations or {})
    for method, n, g in progress(jobs, desc="sweep"):
        results = search_batched(
            problems, generator, verifier, method=method, n=n, g=g, beam_width=beam_width, max_steps=max_steps,
            seed=seed, flops_model=flops_model, batch_size=batch_size,
            num_iterations=None if method == "bon" else rounds or None,
        )  # fmt: skip
        point, _ = score_results(method, n, results, is_correct)
        points.append(point)
        raw[(method, n)] = results
    return points, raw


def search_batched(
    problems: Sequence[str],
    generator: Generator,
    verifier: Verifier,
    *,
    method: str,
    n: int,
    g: int | GranularityPolicy | None,
    beam_width: int,
    max_steps: int,
    seed: int,
    flops_model: FlopsModel | None,
    batch_size: int = 0,
    num_iterations: int | Mapping[int | None, int] | None = None,
) -> list[SearchResult]:
    """Best-of-N (``method="bon"``) or VG-Search on ``problems`` in chunks of ``batch_size`` (0: one chunk).

    ``num_iterations`` (VG-Search only): the rounds, or a mapping ``{g: rounds}`` (also read by an adaptive
    policy's choice); ``None`` derives them from ``max_steps``.

    Raises:
        ValueError: if ``batch_size`` is not an int >= 0 or ``problems`` is empty.
    """
    if not is_int(batch_size) or batch_size < 0:
        raise ValueError(f"batch_size must be an int >= 0 (0: all problems at once), got {batch_size!r}")
    if isinstance(problems, str) or len(problems) == 0:
        raise ValueError("problems must be a non-empty sequence of problem texts")
    size = batch_size or len(problems)
    out: list[SearchResult] = []
    for i in range(0, len(problems), size):
        chunk = list(problems[i : i + size])
        if method == "bon":
            out += best_of_n(chunk, generator, verifier, n=n, seed=seed, flops_model=flops_model)
        else:
            out += vg_search(
                chunk, generator, verifier, n=n, beam_width=beam_width, g=g, max_steps=max_steps, seed=seed,
                flops_model=flops_model, num_iterations=num_iterations,
            )  # fmt: skip
    return out


def accuracy_at(points: Sequence[SweepPoint], flops: float) -> float:
    """Accuracy of one method at a FLOPs budget, linear in :math:`\\log_{10}` FLOPs between its sweep points.

    Returns ``nan`` outside the method's measured FLOPs range (no extrapolation).

    Raises:
        ValueError: if ``points`` is empty or mixes methods, or ``flops`` is not finite and positive.
    """
    if not points:
        raise ValueError("points must be non-empty")
    if len({p.method for p in points}) != 1:
        raise ValueError("points must belong to one method")
    if not math.isfinite(flops) or flops <= 0:
        raise ValueError(f"flops must be finite and > 0, got {flops}")
    pts = sorted(points, key=lambda p: p.flops)
    x = np.log10([p.flops for p in pts])
    y = np.array([p.accuracy for p in pts])
    lx = math.log10(flops)
    if lx < x[0] - 1e-9 or lx > x[-1] + 1e-9:
        return float("nan")
    return float(np.interp(lx, x, y))


def pareto_front(points: Sequence[SweepPoint]) -> list[SweepPoint]:
    """The points no other point beats on both axes (fewer-or-equal FLOPs and higher-or-equal accuracy, one strict).

    Returns:
        The front sorted by FLOPs.

    Raises:
        TypeError: if an entry is not a :class:`SweepPoint`.
    """
    if not all(isinstance(p, SweepPoint) for p in points):
        raise TypeError("points must hold SweepPoint objects")
    front = []
    for p in points:
        dominated = any(
            q.flops <= p.flops and q.accuracy >= p.accuracy and (q.flops < p.flops or q.accuracy > p.accuracy)
            for q in points
        )
        if not dominated:
            front.append(p)
    return sorted(front, key=lambda p: p.flops)
