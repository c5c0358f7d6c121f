"""PORT and every baseline of the paper on one stream under one budget, in one harness (Table 1 of Sec. 5)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from nips25_routing.baselines import BatchSplitRouter, GreedyRouter, RandomRouter, offline_lp_actions
from nips25_routing.budgets import SPLITS, split_budget, total_budget
from nips25_routing.estimation import ANNEstimator
from nips25_routing.history import HistoryStore
from nips25_routing.port import PORTRouter
from nips25_routing.simulation import RoutingResult, evaluate_actions, simulate
from nips25_routing.validation import as_matrix, check_nonnegative_int, check_positive_int, check_real

__all__ = ["DUAL_FORMS", "ONLINE_BASELINES", "ROUTERS", "compare_routers", "stream_budgets"]

ROUTERS: tuple[str, ...] = (
    "PORT", "Random", "Greedy-Perf", "Greedy-Cost", "KNN-Perf", "KNN-Cost", "BatchSplit", "Approx-Opt", "Optimum",
)  # fmt: skip
ONLINE_BASELINES: tuple[str, ...] = ("Random", "Greedy-Perf", "Greedy-Cost", "KNN-Perf", "KNN-Cost", "BatchSplit")
DUAL_FORMS: dict[str, dict[str, Any]] = {
    "code, gamma<=1": {"clip_zero": False, "gamma_max": 1.0},  # the official code's form
    "code, unbounded": {"clip_zero": False, "gamma_max": None},
    "textbook": {"clip_zero": True, "gamma_max": None},  # the LP dual with beta_j >= 0
}


def stream_budgets(history: HistoryStore, cost: Any, *, budget_multiple: float, split: str = "weighted") -> np.ndarray:
    r"""The paper's per-model budgets for a stream: :math:`b \cdot \min_i \sum_j g_{ji}`, split by history means.

    Args:
        history: the history whose per-model mean quality and cost weight the split.
        cost: ``(N, M)`` true stream costs.
        budget_multiple: ``b > 0``.
        split: one of :data:`~nips25_routing.SPLITS`.

    Returns:
        ``(M,)`` budgets.

    Raises:
        ValueError: on an unknown split, a non-positive multiple or a bad cost array.

    Example:
        >>> import numpy as np
        >>> h = HistoryStore(np.eye(2), [[1.0, 1.0], [1.0, 1.0]], [[1.0, 4.0], [1.0, 4.0]])
        >>> stream_budgets(h, [[1.0, 4.0]] * 3, budget_multiple=1.0).tolist()
        [2.0, 1.0]
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return split_budget(
        split,  # type: ignore[arg-type]
        history.quality.mean(axis=0),
        history.cost.mean(axis=0),
        total_budget(cost, check_real(budget_multiple, "budget_multiple")),
    )


def compare_routers(
    history: HistoryStore,
    embeddings: Any,
    quality: Any,
    cost: Any,
    *,
    budgets: Any = None,
    budget_multiple: float = 1.0,
    split: str = "weighted",
    seed: int = 0,
    batch_size: int = 256,
    routers: Sequence[str] = ROUTERS,
    port_options: Mapping[str, Any] | None = None,
    estimator: ANNEstimator | None = None,
) -> dict[str, RoutingResult]:
    """Route one stream with PORT and the paper's baselines under the same budgets; serve each with the same ledger.

    Every router gets the same estimator, budgets and batches, and breaks its ties at random with ``seed``.
    Approx-Opt is the offline LP on the estimates, Optimum on the true quality and cost (both with the official
    rounding). KNN-Perf/Cost use exact (scikit-learn) kNN; the other kNN routers use ``estimator``.

    Args:
        history: the history store ``H``.
        embeddings: ``(N, D)`` stream embeddings in arrival order.
        quality: ``(N, M)`` true quality of every model on every stream query, in ``[0, 1]``.
        cost: ``(N, M)`` true cost.
        budgets: ``(M,)`` budgets; by default :func:`stream_budgets` with ``budget_multiple`` and ``split``.
        budget_multiple: the paper's budget multiple (1 = what the cheapest model spends on the whole stream).
        split: budget split (``weighted``, ``cost``, ``perf``, ``uniform``).
        seed: seed of PORT's learning phase, Random, and every router's tie draws.
        batch_size: queries per ``route`` call (the paper: 256).
        routers: names from :data:`ROUTERS` to run.
        port_options: extra keyword arguments of :class:`~nips25_routing.PORTRouter` (e.g. a dual form from
            :data:`DUAL_FORMS`, ``alpha``, ``eps``).
        estimator: the kNN estimator (default: faiss HNSW over ``history``).

    Returns:
        ``{router name: RoutingResult}`` in the order of ``routers``.

    Raises:
        ValueError: on an unknown router name, mismatched shapes, or bad budgets.

    References:
        Wu & Silwal, NeurIPS 2025, arXiv:2509.02718, Sec. 5 (baselines, metrics, budget splits).

    Example:
        >>> from nips25_routing.experiments.control import planted_instance
        >>> inst = planted_instance(seed=0, n_history=300, n_stream=300)
        >>> res = compare_routers(inst.history, inst.stream_embeddings, inst.stream_quality, inst.stream_cost,
        ...                       routers=("PORT", "Greedy-Perf"), port_options={"eps": 0.1})
        >>> bool(res["PORT"].quality > 3 * res["Greedy-Perf"].quality)
        True
    """
    unknown = sorted(set(routers) - set(ROUTERS))
    if unknown:
        raise ValueError(f"routers must be names from {ROUTERS}, got {unknown}")
    d = as_matrix(quality, "quality", cols=history.n_models)
    g = as_matrix(cost, "cost", rows=d.shape[0], cols=d.shape[1])
    emb = as_matrix(embeddings, "embeddings", rows=d.shape[0], cols=history.embeddings.shape[1], dtype=np.float32)
    seed = check_nonnegative_int(seed, "seed")
    batch_size = check_positive_int(batch_size, "batch_size")
    b = (
        stream_budgets(history, g, budget_multiple=budget_multiple, split=split)
        if budgets is None
        else np.asarray(budgets, dtype=np.float64)
    )
    ann = estimator if estimator is not None else ANNEstimator(history, backend="faiss-hnsw")
    exact: list[ANNEstimator] = []

    def knn() -> ANNEstimator:
        if not exact:
            exact.append(ANNEstimator(history, backend="sklearn", k=ann.k))
        return exact[0]

    n = d.shape[0]
    opts = dict(port_options or {})
    online: dict[str, Callable[[], Any]] = {
        "PORT": lambda: PORTRouter(ann, b, n_total=n, seed=seed, **opts),
        "Random": lambda: RandomRouter(history.n_models, seed=seed),
        "Greedy-Perf": lambda: GreedyRouter(ann, b, kind="perf", seed=seed),
        "Greedy-Cost": lambda: GreedyRouter(ann, b, kind="cost", seed=seed),
        "KNN-Perf": lambda: GreedyRouter(knn(), b, kind="perf", seed=seed),
        "KNN-Cost": lambda: GreedyRouter(knn(), b, kind="cost", seed=seed),
        "BatchSplit": lambda: BatchSplitRouter(ann, b, seed=seed),
    }
    out: dict[str, RoutingResult] = {}
    for name in routers:
        if name in online:
            out[name] = simulate(online[name](), emb, d, g, b, batch_size=batch_size)
        elif name == "Approx-Opt":
            d_hat, g_hat = ann.estimate(emb)
            out[name] = evaluate_actions(offline_lp_actions(d_hat, g_hat, b, seed=seed), d, g, b)
        else:
            out[name] = evaluate_actions(offline_lp_actions(d, g, b, seed=seed), d, g, b)
    return out
