"""Per-model budgets: how a total budget is split across models, and the ledger that enforces them (PORT, Sec. 5)."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from nips25_routing.validation import as_matrix, as_vector

__all__ = ["SPLITS", "BudgetLedger", "split_budget", "total_budget"]

Split = Literal["weighted", "cost", "perf", "uniform"]
SPLITS: tuple[str, ...] = ("weighted", "cost", "perf", "uniform")


def total_budget(cost: Any, multiple: float) -> float:
    r"""The paper's total budget: ``multiple`` times what the cheapest model would spend serving the whole stream.

    .. math:: B = b \cdot \min_i \sum_j g_{ji}

    Args:
        cost: ``(N, M)`` true costs of the stream.
        multiple: the budget multiple ``b > 0`` (the paper's default run uses 1).

    Raises:
        ValueError: on a bad ``cost`` array or ``multiple <= 0``.

    Example:
        >>> total_budget([[1.0, 3.0], [1.0, 1.0]], 0.5)
        1.0
    """
    g = as_matrix(cost, "cost")
    if not np.isfinite(multiple) or multiple <= 0:
        raise ValueError(f"multiple must be > 0, got {multiple}")
    return float(multiple * g.sum(axis=0).min())


def split_budget(kind: Split, quality_mean: Any, cost_mean: Any, total: float) -> np.ndarray:
    r"""Split ``total`` into per-model budgets :math:`B_i` (official code's ``budget_distribution``).

    ``weighted``: :math:`B_i \propto \sqrt{\bar d_i / \bar g_i}`; ``cost``: :math:`\propto \sqrt{1/\bar g_i}`;
    ``perf``: :math:`\propto \bar d_i`; ``uniform``: equal shares.

    Args:
        kind: one of :data:`SPLITS`.
        quality_mean: ``(M,)`` mean quality of each model (from the history), ``>= 0``.
        cost_mean: ``(M,)`` mean cost of each model, ``> 0``.
        total: the total budget, ``> 0``.

    Returns:
        ``(M,)`` budgets summing to ``total``.

    Raises:
        ValueError: on an unknown ``kind``, mismatched lengths, non-positive costs or total, or all-zero weights.

    Example:
        >>> split_budget("weighted", [1.0, 1.0], [1.0, 4.0], 3.0).tolist()
        [2.0, 1.0]
    """
    if kind not in SPLITS:
        raise ValueError(f"kind must be one of {SPLITS}, got {kind!r}")
    perf = as_vector(quality_mean, "quality_mean", nonnegative=True)
    cost = as_vector(cost_mean, "cost_mean", size=perf.size)
    if (cost <= 0).any():
        raise ValueError("cost_mean must be > 0")
    if not np.isfinite(total) or total <= 0:
        raise ValueError(f"total must be > 0, got {total}")
    weights = {
        "weighted": np.sqrt(perf / cost),
        "cost": np.sqrt(1.0 / cost),
        "perf": perf,
        "uniform": np.ones_like(perf),
    }[kind]
    if weights.sum() <= 0:
        raise ValueError("quality_mean gives all-zero weights")
    return total * weights / weights.sum()


class BudgetLedger:
    r"""The serving side's budget accounting: a query a model cannot afford is lost (PORT, Sec. 5, ``test.py``).

    Query :math:`j` routed to model :math:`i` is served iff :math:`S_i + g_{ji} \le B_i`, where :math:`S_i` is what
    model ``i`` has spent so far; then :math:`S_i \mathrel{+}= g_{ji}`. Action ``M`` means "dropped".

    Args:
        budgets: ``(M,)`` per-model budgets, ``>= 0``.

    Example:
        >>> ledger = BudgetLedger([1.0, 5.0])
        >>> ledger.charge([0, 0, 1, 2], [0.6, 0.6, 1.0, 0.0]).tolist()
        [True, False, True, False]
    """

    def __init__(self, budgets: Any) -> None:
        self.budgets = as_vector(budgets, "budgets", nonnegative=True)
        self.spent = np.zeros_like(self.budgets)

    @property
    def n_models(self) -> int:
        """Number of models ``M``."""
        return int(self.budgets.size)

    @property
    def remaining(self) -> np.ndarray:
        """``(M,)`` budget left per model."""
        return self.budgets - self.spent

    def charge(self, actions: Any, costs: Any) -> np.ndarray:
        """Serve each routed query in order if its model can still afford it; return the ``(B,)`` served mask.

        Args:
            actions: ``(B,)`` model indices in ``0..M`` (``M`` = dropped).
            costs: ``(B,)`` true cost of each query on the model it was routed to, ``>= 0``.

        Raises:
            ValueError: on mismatched lengths, actions outside ``0..M``, or NaN/inf/negative costs.
        """
        act = np.asarray(actions)
        if act.ndim != 1 or not np.issubdtype(act.dtype, np.integer):
            raise ValueError(f"actions must be a 1-D integer array, got dtype {act.dtype} shape {act.shape}")
        if act.size and (act.min() < 0 or act.max() > self.n_models):
            raise ValueError(f"actions must lie in 0..{self.n_models}")
        c = as_vector(costs, "costs", size=act.size, nonnegative=True) if act.size else np.zeros(0)
        served = np.zeros(act.size, dtype=bool)
        for i in range(self.n_models):
            pos = np.flatnonzero(act == i)
            if pos.size == 0:
                continue
            cum = self.spent[i] + np.cumsum(c[pos])
            if cum[-1] <= self.budgets[i]:
                served[pos] = True
                self.spent[i] = cum[-1]
                continue
            for p in pos:
                if self.spent[i] + c[p] <= self.budgets[i]:
                    self.spent[i] += c[p]
                    served[p] = True
        return served
