r"""The contextual stochastic block model (CSBM) whose node embeddings the CLT describes.

Model (Vinas & Amini, NeurIPS 2025, setting of the main theorem): labels :math:`y_i \sim \pi` i.i.d. over
:math:`K` classes; a symmetric adjacency matrix without self-loops with
:math:`A_{ij} \sim \mathrm{Bern}(\nu B_{y_i y_j} / n)` for :math:`i < j`; features
:math:`x_i = \mu_{y_i} + \varepsilon_i` with :math:`\mathbb E\varepsilon = 0`,
:math:`\mathrm{Cov}\,\varepsilon = \Sigma`.
:math:`\nu` scales the expected degree; the average degree is :math:`\nu\,\pi^\top B \pi`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import sparse as jsparse

from nips25_gnnclt._checks import (
    array_module,
    as_labels,
    check_int,
    check_positive,
    concretely,
    finite_array,
    is_traced,
    real_array,
    scalar_out,
)

__all__ = ["CSBM", "fit_csbm"]


@dataclass(frozen=True, eq=False)
class CSBM:
    r"""A contextual SBM :math:`(\pi, B, M, \Sigma)`; frozen, validated, and a JAX pytree.

    The four parameters are the pytree's leaves, so a model can be an argument of ``jax.jit`` and be mapped over
    with ``jax.vmap`` (a batch of models with stacked leaves). Concrete parameters are checked and stored as
    read-only float64 numpy arrays; traced parameters (a model built inside ``jit``/``vmap``) are checked for
    shape only, their values are not inspected.

    Args:
        pi: ``(K,)`` class probabilities, positive, summing to 1.
        B: ``(K, K)`` symmetric, non-negative connectivity; edge probability between classes ``a, b`` is
            :math:`\nu B_{ab} / n`.
        means: ``(K, d)`` class means :math:`\mu_c` of the node features (the matrix :math:`M`).
        cov: ``(d, d)`` symmetric positive semi-definite feature-noise covariance :math:`\Sigma`.

    Raises:
        ValueError: on wrong shapes, NaN/inf, negative or non-normalised ``pi``, asymmetric, negative or zero ``B``,
            asymmetric or indefinite ``cov``.

    Example:
        >>> m = CSBM(pi=[0.5, 0.5], B=[[1.5, 0.5], [0.5, 1.0]], means=[[1.0, 0.0], [0.0, 1.0]], cov=0.25 * np.eye(2))
        >>> float(m.average_degree(100.0))
        87.5
        >>> jax.jit(lambda model: model.Q.sum())(m).item()  # a pytree: the model is a jit argument
        1.75
    """

    pi: Any
    B: Any
    means: Any
    cov: Any

    def __post_init__(self) -> None:
        if is_traced(self.pi, self.B, self.means, self.cov):
            leaves = [jnp.asarray(v, jnp.result_type(float)) for v in (self.pi, self.B, self.means, self.cov)]
            self._check_shapes(*(v.shape for v in leaves))
            for name, leaf in zip(("pi", "B", "means", "cov"), leaves, strict=True):
                object.__setattr__(self, name, leaf)
            return
        pi = finite_array(self.pi, "pi", ndim=1)
        b = finite_array(self.B, "B", ndim=2)
        means = finite_array(self.means, "means", ndim=2)
        cov = finite_array(self.cov, "cov", ndim=2)
        self._check_shapes(pi.shape, b.shape, means.shape, cov.shape)
        if np.any(pi <= 0) or abs(pi.sum() - 1.0) > 1e-8:
            raise ValueError(f"pi must be positive and sum to 1, got {pi.tolist()}")
        if np.any(b < 0) or not np.allclose(b, b.T, rtol=1e-10, atol=1e-12):
            raise ValueError("B must be symmetric with non-negative entries")
        if not np.any(b > 0):
            raise ValueError("B must have a positive entry (B = 0 is a graph without edges: Q = 0, no limit)")
        if not np.allclose(cov, cov.T, rtol=1e-10, atol=1e-12):
            raise ValueError("cov must be symmetric")
        if np.linalg.eigvalsh(cov).min() < -1e-10 * max(1.0, float(np.abs(cov).max())):
            raise ValueError("cov must be positive semi-definite")
        for name, arr in (("pi", pi), ("B", b), ("means", means), ("cov", cov)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    @staticmethod
    def _check_shapes(pi: tuple[int, ...], b: tuple[int, ...], means: tuple[int, ...], cov: tuple[int, ...]) -> None:
        if len(pi) != 1 or pi[0] == 0:
            raise ValueError(f"pi must be a non-empty 1-dimensional array (K,), got shape {pi}")
        k = pi[0]
        if b != (k, k):
            raise ValueError(f"B must have shape ({k}, {k}) to match pi, got {b}")
        if len(means) != 2 or means[0] != k or means[1] == 0:
            raise ValueError(f"means must have shape ({k}, d) to match pi, got {means}")
        d = means[1]
        if cov != (d, d):
            raise ValueError(f"cov must have shape ({d}, {d}) to match means, got {cov}")

    @property
    def n_classes(self) -> int:
        """Number of classes :math:`K`."""
        return int(self.pi.shape[0])

    @property
    def dim(self) -> int:
        """Feature dimension :math:`d`."""
        return int(self.means.shape[1])

    @property
    def Q(self) -> Any:
        r"""``(K, K)`` mean-propagation matrix :math:`Q = B\,\mathrm{diag}(\pi)`.

        :math:`\mathbb E[(AX)_i]/\nu \to (QM)_{y_i}`.
        """
        return self.B * self.pi[None, :]

    def average_degree(self, nu: Any) -> Any:
        r"""Expected average degree :math:`\nu\,\pi^\top B \pi` (for :math:`n \to \infty`); a float, or a JAX
        scalar for a traced ``nu`` or model."""
        return scalar_out(check_positive(nu, "nu") * (self.pi @ self.B @ self.pi))

    def nu_for_average_degree(self, degree: float) -> float:
        r""":math:`\nu` giving the expected average degree ``degree`` (the other meaning of the degree scale)."""
        scale = float(self.pi @ self.B @ self.pi)
        if scale <= 0:
            raise ValueError("B is zero: no nu gives a positive average degree")
        return check_positive(degree, "degree") / scale

    def edge_probabilities(self, *, n: int, nu: Any) -> Any:
        r"""``(K, K)`` edge probabilities :math:`\nu B / n`.

        Raises:
            ValueError: if ``n < 2``, ``nu <= 0`` or some probability exceeds 1 (values checked when concrete).
        """
        n = check_int(n, "n", minimum=2)
        nu = check_positive(nu, "nu")
        p = nu * self.B / n
        if concretely(lambda: p.max() > 1.0, p):
            raise ValueError(
                f"nu * max(B) / n must be <= 1 (a probability), got {float(p.max()):.4g}; lower nu or raise n"
            )
        return p

    def edge_capacity(self, *, n: int, nu: float, sigmas: float = 8.0) -> int:
        r"""A static length for the padded edge list of :func:`~nips25_gnnclt.sample_csbm` (``capacity=``).

        The padded sampler draws :math:`M \sim \mathrm{Poisson}(\Lambda)` candidate pairs with
        :math:`\Lambda = -\binom n2 \log(1 - \nu \max B / n)`; this returns
        :math:`\lceil\Lambda + \mathtt{sigmas}\sqrt\Lambda\rceil + 16`, so that :math:`M` exceeds it with
        probability below :math:`10^{-15}` for ``sigmas = 8``. For a sweep over ``nu`` pass its largest value.

        Example:
            >>> m = CSBM(pi=[1.0], B=[[1.0]], means=[[0.0]], cov=[[1.0]])
            >>> m.edge_capacity(n=1000, nu=10.0)
            5603
        """
        p_max = float(np.max(self.edge_probabilities(n=n, nu=check_positive(nu, "nu"))))
        sigmas = check_positive(sigmas, "sigmas")
        lam = -n * (n - 1) / 2.0 * np.log1p(-min(p_max, 1.0 - 1e-12))
        return int(np.ceil(lam + sigmas * np.sqrt(lam))) + 16

    def conditioned_on(self, y: Any, X: Any) -> CSBM:
        r"""The plug-in model of one realisation: :math:`\hat\pi` and :math:`\hat M` from ``(y, X)``, pooled
        within-class covariance :math:`\hat\Sigma`, the same :math:`B`.

        Centring with the plug-in model removes the :math:`O(\sqrt{\nu/n})` shift that the sampling error of
        :math:`\hat\pi, \hat M` would otherwise add to :math:`Z` at finite ``n`` (see README, Choices).
        Host inputs give a float64 model; JAX inputs (concrete, sharded or traced) are reduced with JAX.

        Args:
            y: ``(n,)`` integer labels in ``[0, K)``; every class must occur (checked when concrete).
            X: ``(n, d)`` features.
        """
        x = real_array(X, "X", ndim=2)
        lab = as_labels(y, "y", n=x.shape[0], n_classes=self.n_classes)
        if x.shape[1] != self.dim:
            raise ValueError(f"X must have {self.dim} columns to match means, got {x.shape[1]}")
        xp = array_module(x, lab)
        onehot = (lab[:, None] == xp.arange(self.n_classes)[None, :]).astype(x.dtype)
        counts = onehot.sum(axis=0)
        if concretely(lambda: xp.any(counts == 0), counts):
            got = np.asarray(counts).astype(int).tolist()
            raise ValueError(f"y must contain every class at least once, got counts {got}")
        means = (onehot.T @ x) / counts[:, None]
        resid = x - means[lab]
        cov = resid.T @ resid / max(x.shape[0] - self.n_classes, 1)
        pi_hat = counts / x.shape[0]
        if xp is np:
            return CSBM(pi=pi_hat, B=self.B, means=means, cov=(cov + cov.T) / 2)
        dtype = x.dtype
        return _unchecked(pi_hat.astype(dtype), jnp.asarray(self.B, dtype), means, (cov + cov.T) / 2)


def _unchecked(pi: Any, B: Any, means: Any, cov: Any) -> CSBM:
    """A CSBM from leaves without validation (pytree unflattening, and plug-in models computed in JAX)."""
    model = object.__new__(CSBM)
    for name, value in (("pi", pi), ("B", B), ("means", means), ("cov", cov)):
        object.__setattr__(model, name, value)
    return model


jax.tree_util.register_pytree_node(
    CSBM,
    lambda m: ((m.pi, m.B, m.means, m.cov), None),
    lambda _, leaves: _unchecked(*leaves),
)


def _dense_adjacency(A: Any) -> tuple[np.ndarray, int]:
    """Edge index ``(2, nnz)`` and ``n`` of a symmetric 0/1 adjacency (dense or ``BCOO``); rejects anything else."""
    msg = "A must be symmetric with 0/1 entries (an undirected, unweighted graph)"
    if isinstance(A, jsparse.BCOO):
        if A.ndim != 2 or A.shape[0] != A.shape[1]:
            raise ValueError(f"A must be a square (n, n) matrix, got shape {A.shape}")
        n = A.shape[0]
        rows, cols = np.asarray(A.indices[:, 0]), np.asarray(A.indices[:, 1])
        data = np.asarray(A.data, dtype=np.float64)
        stored = (rows < n) & (cols < n) & (data != 0)  # drop padding and explicit zeros
        rows, cols, data = rows[stored], cols[stored], data[stored]
        codes = rows.astype(np.int64) * n + cols
        unique_codes = np.unique(codes)
        if not np.all(data == 1) or unique_codes.size != codes.size:  # duplicates would sum to weights > 1
            raise ValueError(f"{msg}; got a BCOO with entries other than 1")
        if not np.array_equal(unique_codes, np.unique(cols.astype(np.int64) * n + rows)):
            raise ValueError(f"{msg}; got a non-symmetric BCOO")
        return np.stack([rows, cols]), n
    arr = finite_array(A, "A", ndim=2)
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"A must be a square (n, n) matrix, got shape {arr.shape}")
    if not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{msg}; got entries other than 0 and 1")
    if not np.array_equal(arr, arr.T):
        raise ValueError(f"{msg}; got A != A.T")
    rows, cols = np.nonzero(arr)
    return np.stack([rows, cols]), arr.shape[0]


def fit_csbm(A: Any, y: Any, X: Any, *, nu: float | None = None) -> tuple[CSBM, float]:
    r"""Fit a CSBM to a graph with known classes and features (the real-graph check).

    The adjacency must be an undirected simple graph's (symmetric, 0/1; self-loops are dropped); then
    :math:`\hat\pi_c = n_c/n`, block densities :math:`\hat p_{ab} = e_{ab}/(n_a n_b)` (``a != b``) and
    :math:`e_{aa}/\binom{n_a}{2}`, :math:`\hat B = \hat p\, n / \hat\nu`, class means :math:`\hat M` and the
    pooled within-class covariance :math:`\hat\Sigma`. :math:`\hat\nu` defaults to the observed average degree;
    the predicted means :math:`\hat\nu^k \hat Q^k \hat M` do not depend on that choice.

    Args:
        A: ``(n, n)`` symmetric 0/1 adjacency (dense array or ``BCOO``); a directed or weighted graph is
            rejected, pass it through :func:`~nips25_gnnclt.symmetrize_binarize` first if that is what you mean.
        y: ``(n,)`` integer classes in ``[0, K)``, every class present.
        X: ``(n, d)`` node features.
        nu: degree scale :math:`\nu`; ``None`` means the observed average degree.

    Returns:
        ``(model, nu)``: the fitted :class:`CSBM` and the :math:`\nu` it is expressed in.

    Raises:
        ValueError: on non-square, non-symmetric or non-0/1 ``A``, mismatched lengths, an absent class, an empty
            graph or ``nu <= 0``.

    Example:
        >>> A = np.array([[0, 1, 1], [1, 0, 0], [1, 0, 0]])
        >>> model, nu = fit_csbm(A, np.array([0, 0, 1]), np.eye(3)[:, :2])
        >>> round(nu, 4)
        1.3333
    """
    idx, n = _dense_adjacency(A)
    x = finite_array(X, "X", ndim=2)
    if x.shape[0] != n:
        raise ValueError(f"X must have {n} rows (one per node of A), got {x.shape[0]}")
    lab = as_labels(y, "y", n=n)
    k = int(lab.max()) + 1
    counts = np.bincount(lab, minlength=k)
    if np.any(counts == 0):
        raise ValueError(f"y must use every class 0..{k - 1}, got counts {counts.tolist()}")
    rows, cols = idx
    keep = rows != cols
    lo, hi = np.minimum(rows[keep], cols[keep]), np.maximum(rows[keep], cols[keep])
    pairs = np.unique(lo.astype(np.int64) * n + hi)
    if pairs.size == 0:
        raise ValueError("A has no edges outside the diagonal")
    i, j = pairs // n, pairs % n
    e = np.zeros((k, k))
    np.add.at(e, (lab[i], lab[j]), 1.0)
    e = e + e.T - np.diag(np.diag(e))
    possible = np.outer(counts, counts).astype(np.float64)
    possible[np.diag_indices(k)] = counts * (counts - 1) / 2.0
    p_hat = np.divide(e, possible, out=np.zeros_like(e), where=possible > 0)
    nu_hat = 2.0 * pairs.size / n if nu is None else check_positive(nu, "nu")
    model = CSBM(pi=counts / n, B=p_hat * n / nu_hat, means=np.eye(k, x.shape[1]), cov=np.eye(x.shape[1]))
    return model.conditioned_on(lab, x), nu_hat
