"""The positive control: a planted instance on which budget prices are known to matter (CONTRACT §4a).

Four query clusters; one "premium" model is good everywhere and ten times dearer; three cheap "specialists" are
each good on one cluster and poor elsewhere; the fourth cluster only the premium model serves well. The weighted
split gives the premium model about 1.4% of the stream's queries. A budget-blind router (Greedy-Perf) sends every
query to the premium model, which is soon exhausted, and loses almost everything; the offline LP sends each
cluster to its specialist and the premium model to the fourth cluster, so Optimum is tens of times Greedy-Perf.
A router that prices the budgets (PORT) should land near the LP. If the measurement cannot see that gap, it is
broken, not the paper.
"""

from __future__ import annotations

import numpy as np

from nips25_routing.history import HistoryStore
from nips25_routing.zoo import ZooSplit

__all__ = ["CONTROL_MODELS", "planted_instance"]

CONTROL_MODELS: tuple[str, ...] = ("premium", "specialist-0", "specialist-1", "specialist-2")


def planted_instance(*, seed: int = 0, n_history: int = 2000, n_stream: int = 5000, dim: int = 16) -> ZooSplit:
    """One seeded draw of the planted instance (history and stream from the same clusters).

    Quality of the premium model: 0.95; of specialist ``c``: 0.9 on cluster ``c`` and 0.2 elsewhere; each plus
    N(0, 0.03) noise, clipped to [0, 1] (graded, so models do not tie). Cost: premium 10, specialists 1, in units
    of $1e-4 per query, with 5% noise.

    Args:
        seed: seed of the draw.
        n_history: history size.
        n_stream: stream length.
        dim: embedding dimension.

    Returns:
        A :class:`~nips25_routing.zoo.ZooSplit` (``n_distinct`` = ``n_stream``).

    Raises:
        ValueError: if a size is < 1.

    Example:
        >>> z = planted_instance(seed=0, n_history=100, n_stream=50)
        >>> z.history.models[0], z.stream_quality.shape
        ('premium', (50, 4))
    """
    if min(n_history, n_stream, dim) < 1:
        raise ValueError(f"n_history, n_stream and dim must be >= 1, got {n_history}, {n_stream}, {dim}")
    rng = np.random.default_rng([seed, 7])
    centers = rng.normal(size=(4, dim)) * 4.0
    base = np.full((4, 4), 0.2)
    base[:, 0] = 0.95
    for c in range(3):
        base[c, 1 + c] = 0.9
    unit_cost = np.array([10.0, 1.0, 1.0, 1.0]) * 1e-4

    def draw(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        label = rng.integers(0, 4, size=n)
        emb = centers[label] + rng.normal(size=(n, dim))
        quality = np.clip(base[label] + rng.normal(scale=0.03, size=(n, 4)), 0.0, 1.0)
        cost = unit_cost * rng.uniform(0.95, 1.05, size=(n, 4))
        return emb.astype(np.float32), quality, cost

    h_emb, h_q, h_c = draw(n_history)
    s_emb, s_q, s_c = draw(n_stream)
    return ZooSplit(HistoryStore(h_emb, h_q, h_c, list(CONTROL_MODELS)), s_emb, s_q, s_c, n_stream)
