"""Adaptive VG-Search: choose the verification granularity ``g`` per problem (difficulty) or per budget."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from nips25_vgsearch.search import SearchResult

__all__ = ["AdaptiveG", "difficulty_proxy"]


def difficulty_proxy(first_scores: np.ndarray, *, kind: Literal["mean", "std"] = "mean") -> float:
    """Difficulty proxy of a problem from the PRM scores of its ``n`` first-step samples (round 0 of the search).

    ``"mean"`` (default): the mean score, low for hard problems. ``"std"``: their spread (the brief's alternative).

    Args:
        first_scores: shape ``(n,)``, finite, ``n >= 1``.
        kind: ``"mean"`` or ``"std"``.

    Raises:
        ValueError: on empty, non-1-d or non-finite scores, or an unknown ``kind``.
    """
    arr = np.asarray(first_scores, dtype=float)
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"first_scores must be a non-empty finite 1-d array, got shape {arr.shape}")
    if kind == "mean":
        return float(arr.mean())
    if kind == "std":
        return float(arr.std())
    raise ValueError(f"kind must be 'mean' or 'std', got {kind!r}")


@dataclass
class AdaptiveG:
    r"""Chooses ``g`` from dev-set results (adaptive VG-Search; the paper's exact rule was not published).

    ``policy="difficulty"``: problems are binned by :func:`difficulty_proxy` of their round-0 scores (quantile
    bins fitted on the dev set); each bin gets the cheapest ``g`` whose dev accuracy in the bin is within the
    bin's slack of the bin's best: :math:`\max(\text{tolerance}, 1/m_b) + \text{se\_slack}\cdot
    \mathrm{SE}_b(\text{best} - g)`, with :math:`m_b` the bin's dev problems (at least one problem's worth) and
    :math:`\mathrm{SE}_b` the paired standard error of the accuracy difference on the bin's problems. The slack
    shrinks the choice towards the cheap ``g`` unless the dev set shows a difference larger than its noise, so a
    small dev set cannot pick a granularity from noise. The fitted object is a granularity policy: pass it as ``g=`` to
    :func:`~nips25_vgsearch.vg_search` and every problem gets its bin's ``g`` after round 0.

    ``policy="budget"``: :meth:`choose` ``(budget=F)`` returns the most accurate ``g`` whose mean dev FLOPs fit the
    budget ``F`` (the cheapest ``g`` when none fits).

    Attributes:
        policy: ``"difficulty"`` or ``"budget"``.
        n_bins: difficulty bins, ``>= 1``.
        tolerance: accuracy slack in [0, 1) that buys a cheaper ``g`` (at least one problem per bin is used).
        se_slack: paired standard errors of slack, ``>= 0`` (0 with a large ``tolerance`` is the old rule).
        proxy: ``"mean"`` or ``"std"`` (see :func:`difficulty_proxy`).

    Example:
        >>> from nips25_vgsearch import StepChainTask, vg_search
        >>> task = StepChainTask(n_problems=20, seed=1)
        >>> gen, prm = task.generator(), task.verifier()
        >>> dev = {g: vg_search(task.problems, gen, prm, n=4, beam_width=2, g=g) for g in (1, 2)}
        >>> ok = {g: [task.is_correct(r.problem, r.answer) for r in res] for g, res in dev.items()}
        >>> policy = AdaptiveG(n_bins=2).fit(dev, ok)
        >>> policy(dev[1][0].first_scores) in (1, 2)
        True
    """

    policy: Literal["difficulty", "budget"] = "difficulty"
    n_bins: int = 3
    tolerance: float = 0.02
    se_slack: float = 1.0
    proxy: Literal["mean", "std"] = "mean"
    edges_: np.ndarray | None = field(default=None, init=False)
    table_: list[int | None] = field(default_factory=list, init=False)
    costs_: dict[int | None, tuple[float, float]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if self.policy not in ("difficulty", "budget"):
            raise ValueError(f"policy must be 'difficulty' or 'budget', got {self.policy!r}")
        if isinstance(self.n_bins, bool) or not isinstance(self.n_bins, int) or self.n_bins < 1:
            raise ValueError(f"n_bins must be an int >= 1, got {self.n_bins!r}")
        if isinstance(self.tolerance, bool) or not isinstance(self.tolerance, (int, float)):
            raise TypeError(f"tolerance must be a number, got {type(self.tolerance).__name__}")
        if not (math.isfinite(self.tolerance) and 0.0 <= self.tolerance < 1.0):
            raise ValueError(f"tolerance must be in [0, 1), got {self.tolerance}")
        if isinstance(self.se_slack, bool) or not isinstance(self.se_slack, (int, float)):
            raise TypeError(f"se_slack must be a number, got {type(self.se_slack).__name__}")
        if not (math.isfinite(self.se_slack) and self.se_slack >= 0):
            raise ValueError(f"se_slack must be finite and >= 0, got {self.se_slack}")
        if self.proxy not in ("mean", "std"):
            raise ValueError(f"proxy must be 'mean' or 'std', got {self.proxy!r}")

    def fit(
        self, results: Mapping[int | None, Sequence[SearchResult]], correct: Mapping[int | None, Sequence[bool]]
    ) -> AdaptiveG:
        """Fit the policy on dev results: ``results[g][i]`` is the search of dev problem ``i`` at granularity ``g``.

        Args:
            results: per candidate ``g`` (``None`` = full length), one :class:`SearchResult` per dev problem, the
                same problems in the same order for every ``g``.
            correct: per ``g``, whether each result's answer is right.

        Returns:
            ``self``.

        Raises:
            ValueError: if ``results`` is empty, keys differ, lengths/problems do not line up, or a ``correct``
                entry is not a bool (or 0/1).
            TypeError: if a result is not a :class:`SearchResult`.
        """
        if not results:
            raise ValueError("results must hold at least one g")
        if set(results) != set(correct):
            raise ValueError(f"results and correct must have the same g keys, got {set(results)} and {set(correct)}")
        gs = sorted(results, key=lambda g: math.inf if g is None else g)
        first = results[gs[0]]
        if len(first) == 0:
            raise ValueError("results must hold at least one dev problem per g")
        for g in gs:
            if len(results[g]) != len(first) or len(correct[g]) != len(first):
                raise ValueError(f"results[{g}] and correct[{g}] must have {len(first)} entries")
            if not all(isinstance(r, SearchResult) for r in results[g]):
                raise TypeError(f"results[{g}] must hold SearchResult objects (one per dev problem)")
            if not all(isinstance(c, (bool, np.bool_, numbers.Real)) and c in (0, 1) for c in correct[g]):
                raise ValueError(f"correct[{g}] must hold bools (or 0/1), one per dev problem")
            if [r.problem for r in results[g]] != [r.problem for r in first]:
                raise ValueError(f"results[{g}] must list the same problems in the same order")
        acc = {g: np.asarray(correct[g], dtype=float) for g in gs}
        flops = {g: np.array([r.flops for r in results[g]]) for g in gs}
        self.costs_ = {g: (float(flops[g].mean()), float(acc[g].mean())) for g in gs}
        proxy = np.array([difficulty_proxy(r.first_scores, kind=self.proxy) for r in first])
        edges = np.quantile(proxy, np.linspace(0, 1, self.n_bins + 1)[1:-1]) if self.n_bins > 1 else np.zeros(0)
        bins = np.searchsorted(edges, proxy, side="right")
        table: list[int | None] = []
        for b in range(self.n_bins):
            mask = bins == b
            if not mask.any():
                mask = np.ones_like(mask)
            table.append(self._best({g: (float(flops[g][mask].mean()), acc[g][mask]) for g in gs}))
        self.edges_, self.table_ = edges, table
        return self

    def _best(self, rows: dict[int | None, tuple[float, np.ndarray]]) -> int | None:
        """The cheapest ``g`` within the slack of the most accurate one; ``rows[g] = (mean FLOPs, correct (m,))``."""
        top = max(rows, key=lambda g: (float(rows[g][1].mean()), -rows[g][0]))
        best = rows[top][1]
        m = len(best)
        ok = []
        for g, (f, c) in rows.items():
            diff = best - c
            se = float(diff.std(ddof=1) / math.sqrt(m)) if m > 1 else 0.0
            if float(diff.mean()) <= max(self.tolerance, 1.0 / m) + self.se_slack * se + 1e-12:
                ok.append((f, g))
        return min(ok, key=lambda t: t[0])[1]

    def _check_fitted(self) -> None:
        if not self.costs_:
            raise RuntimeError("AdaptiveG is not fitted yet: call fit(results, correct) first")

    def choose(self, *, first_scores: np.ndarray | None = None, budget: float | None = None) -> int | None:
        """The granularity for one problem (``difficulty``: from ``first_scores``) or one budget (``budget``).

        Raises:
            RuntimeError: before :meth:`fit`.
            ValueError: if the argument the policy needs is missing or malformed.
        """
        self._check_fitted()
        if self.policy == "budget":
            if budget is None or isinstance(budget, bool) or not isinstance(budget, (int, float)):
                raise ValueError(f"budget must be a finite FLOPs count > 0 for policy='budget', got {budget!r}")
            if not math.isfinite(budget) or budget <= 0:
                raise ValueError(f"budget must be a finite FLOPs count > 0 for policy='budget', got {budget}")
            fits = [(g, f, a) for g, (f, a) in self.costs_.items() if f <= budget]
            if not fits:
                return min(self.costs_.items(), key=lambda kv: kv[1][0])[0]
            best = max(a for _, _, a in fits)
            return min(((f, g) for g, f, a in fits if a >= best - 1e-12), key=lambda t: t[0])[1]
        if first_scores is None:
            raise ValueError("first_scores is required for policy='difficulty'")
        value = difficulty_proxy(first_scores, kind=self.proxy)
        assert self.edges_ is not None
        return self.table_[int(np.searchsorted(self.edges_, value, side="right"))]

    def __call__(self, first_scores: np.ndarray) -> int | None:
        """Granularity policy for :func:`~nips25_vgsearch.vg_search` (``policy="difficulty"`` only)."""
        if self.policy != "difficulty":
            raise ValueError("only policy='difficulty' chooses g per problem; use choose(budget=...) for 'budget'")
        return self.choose(first_scores=first_scores)
