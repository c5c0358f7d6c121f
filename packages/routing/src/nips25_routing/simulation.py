"""The serving harness: stream queries through a router in batches and account for budgets (PORT, Sec. 5)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import numpy as np

from nips25_routing.budgets import BudgetLedger
from nips25_routing.validation import as_matrix, check_positive_int

__all__ = ["Router", "RoutingResult", "evaluate_actions", "simulate"]


class Router(Protocol):
    """Anything with ``n_models`` and ``route((B, D)) -> (B,)`` actions in ``0..M`` (``M`` = dropped)."""

    n_models: int

    def route(self, embeddings: Any) -> np.ndarray: ...


@dataclass(frozen=True)
class RoutingResult:
    """The official metrics of one routed stream.

    Attributes:
        quality: Performance, the sum of true quality over served queries.
        cost: total spend over served queries.
        throughput: queries served (``N`` minus drops minus budget rejections).
        n_queries: ``N``.
        route_s: wall-clock seconds spent inside ``route`` (estimation + decision), ``nan`` for offline actions.
    """

    quality: float
    cost: float
    throughput: int
    n_queries: int
    route_s: float = float("nan")

    @property
    def ratio(self) -> float:
        """Performance per cost (the paper's PPC), ``nan`` when nothing was spent."""
        return self.quality / self.cost if self.cost > 0 else float("nan")

    def as_dict(self) -> dict[str, float]:
        """The metrics plus ``ratio``, as plain floats."""
        return {**{k: float(v) for k, v in asdict(self).items()}, "ratio": self.ratio}


def _check_stream(quality: Any, cost: Any) -> tuple[np.ndarray, np.ndarray]:
    d = as_matrix(quality, "quality")
    g = as_matrix(cost, "cost", rows=d.shape[0], cols=d.shape[1])
    if (g < 0).any():
        raise ValueError("cost must be >= 0")
    return d, g


def _account(ledger: BudgetLedger, actions: np.ndarray, d: np.ndarray, g: np.ndarray) -> tuple[float, float, int]:
    m = d.shape[1]
    routed = actions < m
    rows = np.arange(actions.size)
    safe = np.where(routed, actions, 0)
    costs = np.where(routed, g[rows, safe], 0.0)
    served = ledger.charge(actions, costs) & routed
    return float(d[rows, safe][served].sum()), float(costs[served].sum()), int(served.sum())


def evaluate_actions(actions: Any, quality: Any, cost: Any, budgets: Any) -> RoutingResult:
    """Serve precomputed ``(N,)`` actions in order against ``(N, M)`` true quality/cost under ``budgets``.

    Raises:
        ValueError: on mismatched shapes or actions outside ``0..M``.
    """
    d, g = _check_stream(quality, cost)
    act = np.asarray(actions)
    if act.shape != (d.shape[0],):
        raise ValueError(f"actions must have shape ({d.shape[0]},), got {act.shape}")
    ledger = BudgetLedger(budgets)
    if ledger.n_models != d.shape[1]:
        raise ValueError(f"budgets must have {d.shape[1]} entries, got {ledger.n_models}")
    q, c, served = _account(ledger, act, d, g)
    return RoutingResult(q, c, served, d.shape[0])


def simulate(
    router: Router, embeddings: Any, quality: Any, cost: Any, budgets: Any, *, batch_size: int = 256
) -> RoutingResult:
    """Stream ``embeddings`` through ``router`` in arrival order, ``batch_size`` at a time, and serve its actions.

    Args:
        router: a :class:`Router` (PORT or a baseline) with ``M`` models.
        embeddings: ``(N, D)`` query embeddings in arrival order.
        quality: ``(N, M)`` true quality of every model on every query.
        cost: ``(N, M)`` true cost.
        budgets: ``(M,)`` per-model budgets.
        batch_size: queries per ``route`` call (the official ``segsize``: 256).

    Returns:
        A :class:`RoutingResult`, with ``route_s`` the time spent routing.

    Raises:
        ValueError: on mismatched shapes, NaN/inf, ``batch_size < 1`` or a router returning bad actions.
    """
    d, g = _check_stream(quality, cost)
    emb = as_matrix(embeddings, "embeddings", rows=d.shape[0], dtype=np.float32)
    batch_size = check_positive_int(batch_size, "batch_size")
    ledger = BudgetLedger(budgets)
    if ledger.n_models != d.shape[1] or router.n_models != d.shape[1]:
        raise ValueError(f"budgets and router must have {d.shape[1]} models")
    total_q = total_c = 0.0
    total_served = 0
    route_s = 0.0
    for start in range(0, d.shape[0], batch_size):
        stop = min(start + batch_size, d.shape[0])
        t0 = time.perf_counter()
        actions = np.asarray(router.route(emb[start:stop]))
        route_s += time.perf_counter() - t0
        q, c, served = _account(ledger, actions, d[start:stop], g[start:stop])
        total_q, total_c, total_served = total_q + q, total_c + c, total_served + served
    return RoutingResult(total_q, total_c, total_served, d.shape[0], route_s)
