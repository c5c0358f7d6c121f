r"""Closed-form feature-to-label and label-to-feature maps, solved once per graph on its labelled nodes.

The maps link the two set tensors of TS-GNN: features ``x`` (set axis of size F) and labels ``y`` (set axis of size
C). Each is a ridge regression with a bias, its penalty chosen by K-fold cross-validation (paper, Sec. 4;
official ``transforms/least_squares.py``). Under a permutation of features :math:`P_F` and of classes
:math:`P_C` a map transforms as :math:`W \mapsto P_F^\top W P_C`, which keeps the network's symmetries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from nips25_gfm._validation import check_int, check_mask, check_matrix
from nips25_gfm.graphs import normalized_adjacency

if TYPE_CHECKING:
    import torch

__all__ = ["DEFAULT_LAMBDAS", "Conversions", "LinearMap", "ridge_lstsq", "ridge_lstsq_cv", "xy_conversions"]

DEFAULT_LAMBDAS: tuple[float, ...] = (1e-15, 1e-8, 1e-6, 1e-4, 1e-2)


def ridge_lstsq(u: np.ndarray, v: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Ridge regression with a penalised bias: :math:`\min_{W,b} \|[U, 1][W; b] - V\|^2 + \lambda^2\|[W; b]\|^2`.

    Solved as the least-squares problem of the system stacked with :math:`\lambda I` (``numpy.linalg.lstsq``),
    equal to :math:`(\tilde U^\top \tilde U + \lambda^2 I)^{-1}\tilde U^\top V` with :math:`\tilde U = [U, 1]`.

    Args:
        u: inputs ``[m, p]``.
        v: targets ``[m, q]``.
        lam: penalty :math:`\lambda \ge 0`.

    Returns:
        ``(W [p, q], b [q])``.

    Raises:
        ValueError: shapes, non-finite values, negative ``lam``.
    """
    u = check_matrix(u, "u")
    v = check_matrix(v, "v", rows=u.shape[0])
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam: expected a finite value >= 0, got {lam}")
    ut = np.hstack([u, np.ones((u.shape[0], 1))])
    p1 = ut.shape[1]
    a = np.vstack([ut, lam * np.eye(p1)])
    rhs = np.vstack([v, np.zeros((p1, v.shape[1]))])
    sol, *_ = np.linalg.lstsq(a, rhs, rcond=None)
    return sol[:-1], sol[-1]


def ridge_lstsq_cv(
    u: np.ndarray,
    v: np.ndarray,
    *,
    lambdas: Sequence[float] = DEFAULT_LAMBDAS,
    k_folds: int = 10,
    seed: int = 42,
) -> tuple[np.ndarray, np.ndarray, float]:
    r"""Ridge regression whose penalty is chosen by K-fold cross-validation, then refit on all rows.

    For each :math:`\lambda` the mean over folds of the held-out mean squared error is computed (scikit-learn
    ``KFold(k_folds, shuffle=True, random_state=seed)``; ``k_folds`` is capped at the number of rows); the first
    minimiser is kept (paper, Sec. 4; official ``least_squares.py``). With fewer than two rows, or one candidate,
    no cross-validation runs and the first :math:`\lambda` is used.

    Args:
        u: inputs ``[m, p]``.
        v: targets ``[m, q]``.
        lambdas: candidate penalties (non-empty, finite, >= 0).
        k_folds: folds (>= 2).
        seed: fold shuffling seed.

    Returns:
        ``(W [p, q], b [q], lam)``.

    Raises:
        ValueError: shapes, non-finite values, empty or negative ``lambdas``, ``k_folds < 2``.

    Example:
        >>> u = np.arange(6.0).reshape(3, 2); w, b, lam = ridge_lstsq_cv(u, u @ np.ones((2, 1)), k_folds=3)
        >>> w.shape, b.shape
        ((2, 1), (1,))
    """
    u = check_matrix(u, "u")
    v = check_matrix(v, "v", rows=u.shape[0])
    lams = [float(x) for x in lambdas]
    if not lams or any((not np.isfinite(x)) or x < 0 for x in lams):
        raise ValueError(f"lambdas: expected a non-empty sequence of finite values >= 0, got {list(lambdas)}")
    check_int(k_folds, "k_folds", low=2)
    m = u.shape[0]
    if m < 2 or len(lams) == 1:
        best = lams[0]
    else:
        from sklearn.model_selection import KFold

        folds = list(KFold(n_splits=min(k_folds, m), shuffle=True, random_state=seed).split(u))
        errors = []
        for lam in lams:
            err = 0.0
            for tr, te in folds:
                w, b = ridge_lstsq(u[tr], v[tr], lam)
                err += float(np.mean((u[te] @ w + b - v[te]) ** 2))
            errors.append(err / len(folds))
        best = lams[int(np.argmin(errors))]
    w, b = ridge_lstsq(u, v, best)
    return w, b, best


@dataclass(frozen=True)
class LinearMap:
    """A fixed affine map between set axes: ``out[n, j, k] = sum_i in[n, i, k] W[i, j] + b[j]``."""

    weight: np.ndarray
    bias: np.ndarray
    lam: float

    def __post_init__(self) -> None:
        w = check_matrix(self.weight, "weight")
        b = np.asarray(self.bias, dtype=np.float64)
        if b.shape != (w.shape[1],) or not np.all(np.isfinite(b)):
            raise ValueError(f"bias: expected finite shape ({w.shape[1]},), got {b.shape}")
        object.__setattr__(self, "weight", w)
        object.__setattr__(self, "bias", b)

    def tensors(
        self, dtype: torch.dtype, device: torch.device | str | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(W, b)`` as torch tensors of ``dtype`` on ``device`` (default: CPU)."""
        import torch

        return (
            torch.as_tensor(self.weight, dtype=dtype, device=device),
            torch.as_tensor(self.bias, dtype=dtype, device=device),
        )


@dataclass(frozen=True)
class Conversions:
    """The closed-form maps of one graph (official ``transforms/least_squares.py``).

    Attributes:
        pool2y: ``mean_F x -> y``, ``W [1, C]``.
        pool2x: ``mean_C y -> x``, ``W [1, F]``.
        ls2y: for hop ``l = 0..L``, ``Â^l x -> y``, ``W [F, C]`` (empty when ``n_hops = -1``).
        ls2x: for hop ``l = 0..L``, ``y -> Â^l x``, ``W [C, F]``.
        het2y: for ``l = 1..L``, ``(I - Â)^l x -> y``.
        het2x: for ``l = 1..L``, ``y -> (I - Â)^l x``.
    """

    pool2y: LinearMap
    pool2x: LinearMap
    ls2y: tuple[LinearMap, ...] = ()
    ls2x: tuple[LinearMap, ...] = ()
    het2y: tuple[LinearMap, ...] = ()
    het2x: tuple[LinearMap, ...] = ()

    @property
    def to_y(self) -> tuple[LinearMap, ...]:
        """Full feature-to-label maps (``ls2y`` then ``het2y``)."""
        return self.ls2y + self.het2y

    @property
    def to_x(self) -> tuple[LinearMap, ...]:
        """Full label-to-feature maps (``ls2x`` then ``het2x``)."""
        return self.ls2x + self.het2x


def _as_csr(graph: Any, n: int) -> sp.csr_matrix:
    if hasattr(graph, "adj_external"):
        a = graph.adj_external(scipy_fmt="csr")
    else:
        a = sp.csr_matrix(graph, dtype=np.float64)
    if a.shape != (n, n):
        raise ValueError(f"graph: expected {n} nodes (rows of x), got adjacency shape {a.shape}")
    return sp.csr_matrix(a, dtype=np.float64)


def xy_conversions(
    graph: Any,
    x: np.ndarray,
    y_onehot: np.ndarray,
    train_mask: np.ndarray,
    *,
    n_hops: int = -1,
    lambdas: Sequence[float] = DEFAULT_LAMBDAS,
    k_folds: int = 10,
    seed: int = 42,
) -> Conversions:
    r"""Solve every conversion map of a graph on its labelled nodes.

    Args:
        graph: ``DGLGraph`` or adjacency ``[N, N]`` (dense or scipy sparse); used only when ``n_hops >= 0``.
        x: preprocessed features ``[N, F]``.
        y_onehot: one-hot labels ``[N, C]`` (rows outside ``train_mask`` are ignored).
        train_mask: boolean ``[N]``, the labelled nodes the maps are fitted on.
        n_hops: ``-1`` (default, published configs): pooled maps only; ``L >= 0``: also the per-hop maps.
        lambdas, k_folds, seed: see :func:`ridge_lstsq_cv`.

    Returns:
        :class:`Conversions`.

    Raises:
        ValueError: shapes, non-finite values, empty ``train_mask``, ``n_hops < -1``.
    """
    x = check_matrix(x, "x")
    n = x.shape[0]
    y = check_matrix(y_onehot, "y_onehot", rows=n)
    mask = check_mask(train_mask, "train_mask", n)
    if not mask.any():
        raise ValueError("train_mask: needs at least one labelled node")
    check_int(n_hops, "n_hops", low=-1)
    cv = {"lambdas": lambdas, "k_folds": k_folds, "seed": seed}

    def fit(u: np.ndarray, v: np.ndarray) -> LinearMap:
        w, b, lam = ridge_lstsq_cv(u[mask], v[mask], **cv)  # type: ignore[arg-type]
        return LinearMap(w, b, lam)

    pool2y = fit(x.mean(axis=1, keepdims=True), y)
    pool2x = fit(y.mean(axis=1, keepdims=True), x)
    ls2y: list[LinearMap] = []
    ls2x: list[LinearMap] = []
    het2y: list[LinearMap] = []
    het2x: list[LinearMap] = []
    if n_hops >= 0:
        a_hat = normalized_adjacency(_as_csr(graph, n))
        smooth, sharp = x, x
        for hop in range(n_hops + 1):
            if hop >= 1:
                smooth = a_hat @ smooth
                sharp = sharp - a_hat @ sharp
                het2y.append(fit(sharp, y))
                het2x.append(fit(y, sharp))
            ls2y.append(fit(smooth, y))
            ls2x.append(fit(y, smooth))
    return Conversions(pool2y, pool2x, tuple(ls2y), tuple(ls2x), tuple(het2y), tuple(het2x))
