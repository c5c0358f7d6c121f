r"""Contextual stochastic block models: a graph family in which zero-shot transfer is planted.

Every graph of a family is drawn from the same mechanism with its own size, feature count F and class count C:
node ``v`` of class :math:`y_v` has features :math:`x_v = \mu_{y_v} + \varepsilon_v` (class means
:math:`\mu_c \sim \mathcal N(0, s^2 I_F)` drawn per graph, :math:`\varepsilon_v \sim \mathcal N(0, I_F)`) and an
edge to ``u`` with probability :math:`p_{in}` when :math:`y_u = y_v` and :math:`p_{out}` otherwise, set so that
the expected degree is ``degree`` and a fraction ``homophily`` of the edges join nodes of one class (Deshpande et
al., NeurIPS 2018). What helps on one graph of the family (propagating the fed labels to neighbours, trusting the
feature-label maps to the extent the signal allows) helps on every other, so the held-out accuracy of a model
trained on more graphs of the family can only gain from the extra data: the positive control of the scaling claim.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from nips25_gfm._validation import check_int, check_positive
from nips25_gfm.graphs import GraphTask, from_adjacency

__all__ = ["csbm_family", "sample_csbm"]


def sample_csbm(
    *,
    num_nodes: int,
    num_features: int,
    num_classes: int,
    homophily: float = 0.8,
    degree: float = 4.0,
    signal: float = 0.3,
    per_class: int = 3,
    seed: int = 0,
    name: str = "csbm",
) -> GraphTask:
    """One contextual-SBM graph (module docstring) with ``per_class`` labelled nodes per class.

    Args:
        num_nodes: N (>= 4 * num_classes).
        num_features: F (>= 1).
        num_classes: C (>= 2).
        homophily: expected fraction of intra-class edges, in ``(0, 1)``.
        degree: expected degree (> 0).
        signal: scale ``s`` of the class means relative to the unit noise (>= 0).
        per_class: labelled nodes per class (the rest halved into validation and test).
        seed: generator seed.
        name: task name.

    Raises:
        ValueError: out-of-range arguments.

    Example:
        >>> g = sample_csbm(num_nodes=40, num_features=5, num_classes=2, seed=0)
        >>> g.num_nodes, g.num_features, g.num_classes
        (40, 5, 2)
    """
    check_int(num_classes, "num_classes", low=2)
    check_int(num_nodes, "num_nodes", low=4 * num_classes)
    check_int(num_features, "num_features", low=1)
    check_positive(degree, "degree")
    check_positive(signal, "signal", allow_zero=True)
    if not 0.0 < homophily < 1.0:
        raise ValueError(f"homophily: expected a value in (0, 1), got {homophily}")
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(num_nodes) % num_classes)
    mu = rng.normal(scale=signal, size=(num_classes, num_features))
    x = mu[y] + rng.normal(size=(num_nodes, num_features))
    n_c = num_nodes / num_classes
    p_in = min(1.0, degree * homophily / max(n_c - 1, 1))
    p_out = min(1.0, degree * (1 - homophily) / max(num_nodes - n_c, 1))
    same = y[:, None] == y[None, :]
    upper = np.triu(rng.random((num_nodes, num_nodes)) < np.where(same, p_in, p_out), k=1)
    adj = sp.csr_matrix(upper | upper.T, dtype=np.float64)
    return from_adjacency(adj, x, y, name=name, per_class=per_class, max_features=None, seed=seed)


def csbm_family(count: int, *, seed: int = 0, prefix: str = "csbm", **kwargs: float) -> list[GraphTask]:
    """``count`` graphs of one family: N in [60, 120], F in [4, 32], C in [2, 4] drawn per graph.

    Args:
        count: number of graphs (>= 1).
        seed: family seed (graph ``i`` uses ``[seed, i]``).
        prefix: graph names ``<prefix><i>``.
        **kwargs: :func:`sample_csbm`'s ``homophily``, ``degree``, ``signal``, ``per_class``.

    Example:
        >>> [g.name for g in csbm_family(2, seed=1)]
        ['csbm0', 'csbm1']
    """
    check_int(count, "count", low=1)
    out = []
    for i in range(count):
        rng = np.random.default_rng([seed, i])
        out.append(
            sample_csbm(
                num_nodes=int(rng.integers(60, 121)),
                num_features=int(rng.integers(4, 33)),
                num_classes=int(rng.integers(2, 5)),
                seed=int(rng.integers(2**31)),
                name=f"{prefix}{i}",
                **kwargs,  # type: ignore[arg-type]
            )
        )
    return out
