r"""Sampling a CSBM in :math:`O(n\nu)` memory: block-wise binomial edge counts, uniform distinct pairs, BCOO.

For every block pair :math:`a \le b` the number of edges is drawn as
:math:`m_{ab} \sim \mathrm{Binomial}(N_{ab}, \nu B_{ab}/n)` with :math:`N_{ab} = n_a n_b` (:math:`a \ne b`) or
:math:`n_a(n_a-1)/2`; then :math:`m_{ab}` *distinct* pairs are drawn uniformly (with replacement, collapsing
duplicates and topping up until :math:`m_{ab}` remain). Conditional on the labels this is exactly the law of
independent :math:`\mathrm{Bern}(\nu B_{ab}/n)` edges, without ever touching the :math:`n^2` pairs.

Under ``jax.jit``/``jax.vmap`` edge counts cannot decide shapes, so a static ``capacity`` fixes the length of the
edge list (padding entries point out of bounds and hold 0). The padded sampler is Poissonised: draw
:math:`M \sim \mathrm{Poisson}(\Lambda)` uniform pairs with :math:`\Lambda = -\binom n2\log(1 - p_{\max})`, so
that every pair is present independently with probability exactly :math:`p_{\max} = \nu\max B/n`, then keep
a present pair :math:`(i, j)` with probability :math:`B_{y_i y_j}/\max B`: again exactly independent
:math:`\mathrm{Bern}(\nu B_{y_i y_j}/n)` edges, in :math:`O(\mathtt{capacity})` memory.
"""

from __future__ import annotations

import functools
from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from jax.experimental import sparse as jsparse

from nips25_gnnclt._checks import check_int, check_positive, is_traced
from nips25_gnnclt.csbm import CSBM

__all__ = ["CSBMSample", "sample_csbm"]

Method = Literal["auto", "blockwise", "bernoulli"]
Duplicates = Literal["resample", "keep"]
_DENSE_MAX_N = 4096


class CSBMSample(NamedTuple):
    """One draw of a CSBM (a pytree).

    Attributes:
        A: ``(n, n)`` symmetric ``BCOO`` adjacency, no self-loops, both directions stored, float32 ones.
        X: ``(n, d)`` float32 node features.
        y: ``(n,)`` int32 class labels.
    """

    A: jsparse.BCOO
    X: Array
    y: Array


_CHUNK = 1 << 16


@jax.jit
def _draw_chunk(key: Array, n_a: Array, n_b: Array) -> Array:
    """``(_CHUNK, 2)`` i.i.d. uniform integers in ``[0, n_a) x [0, n_b)``; one compile for every block and size."""
    k1, k2 = jax.random.split(key)
    r = jax.random.randint(k1, (_CHUNK,), 0, n_a, dtype=jnp.int32)
    return jnp.stack([r, jax.random.randint(k2, (_CHUNK,), 0, n_b, dtype=jnp.int32)], axis=1)


def _draw_pairs(key: Array, n_a: int, n_b: int, *, size: int, diagonal: bool) -> np.ndarray:
    """``(size, 2)`` i.i.d. uniform local pairs; on a diagonal block uniform unordered pairs ``i != j``."""
    chunks = -(-size // _CHUNK)
    upper = n_a - 1 if diagonal else n_b
    keys = jax.random.split(key, chunks)
    pairs = np.concatenate([np.asarray(_draw_chunk(k, jnp.int32(n_a), jnp.int32(upper))) for k in keys])[:size]
    if diagonal:
        r, s = pairs[:, 0], pairs[:, 1]
        s = s + (s >= r)  # uniform over j != i
        pairs = np.stack([np.minimum(r, s), np.maximum(r, s)], axis=1)
    return pairs


def _first_occurrences(pairs: np.ndarray, n_b: int) -> np.ndarray:
    """Boolean mask of the first occurrence of every distinct pair, in draw order (host-side, one int64 sort)."""
    size = pairs.shape[0]
    code = pairs[:, 0].astype(np.int64) * n_b + pairs[:, 1]
    first = np.zeros(size, bool)
    if (int(code.max()) + 1) * size < 2**62:
        packed = np.sort(code * size + np.arange(size))  # ties broken by draw index
        code_sorted, index = packed // size, packed % size
    else:
        order = np.argsort(code, kind="stable")
        code_sorted, index = code[order], order
    new = np.ones(size, bool)
    new[1:] = code_sorted[1:] != code_sorted[:-1]
    first[index[new]] = True
    return first


def _bucket(size: int) -> int:
    return 1 << max(int(np.ceil(np.log2(max(size, 1)))), 10)


def _distinct_pairs(key: Array, m: int, n_a: int, n_b: int, diagonal: bool, duplicates: Duplicates) -> np.ndarray:
    """``(m, 2)`` local pairs, uniform without replacement (``"resample"``) or with replacement (``"keep"``).

    Taking the first ``m`` distinct pairs of an i.i.d. uniform stream is sampling without replacement.
    """
    trials = n_a * (n_a - 1) / 2.0 if diagonal else float(n_a) * n_b
    expected_repeats = m * m / (2.0 * trials)
    size = _bucket(int(m + 4.0 * expected_repeats + 8.0 * np.sqrt(expected_repeats + 1.0)))
    while True:
        key, sub = jax.random.split(key)
        pairs_np = _draw_pairs(sub, n_a, n_b, size=size, diagonal=diagonal)
        if duplicates == "keep":
            return pairs_np[:m]
        first_np = _first_occurrences(pairs_np, n_b)
        keep = first_np & (np.cumsum(first_np) <= m)
        if int(first_np.sum()) >= m:
            return pairs_np[keep]
        size *= 2


def _binomial_count(key: Array, trials: float, p: float) -> int:
    """An exact-enough Binomial draw for counts up to ~1e12 (float64: float32 inflates the variance)."""
    if trials <= 0 or p <= 0:
        return 0
    with jax.enable_x64(True):
        draw = jax.random.binomial(key, jnp.float64(trials), jnp.float64(p), dtype=jnp.float64)
        return int(draw)


def sample_csbm(
    model: CSBM,
    key: Array,
    *,
    n: int,
    nu: float | Array,
    method: Method = "auto",
    duplicates: Duplicates = "resample",
    capacity: int | None = None,
) -> CSBMSample:
    r"""Draw labels, Gaussian features and a sparse adjacency matrix from a CSBM.

    :math:`y_i \sim \pi`, :math:`x_i = \mu_{y_i} + \Sigma^{1/2} g_i` with :math:`g_i \sim N(0, I)`, and
    :math:`A_{ij} = A_{ji} \sim \mathrm{Bern}(\nu B_{y_i y_j}/n)` for :math:`i < j`.

    Memory is :math:`O(n\nu)` with ``method="blockwise"``; ``"bernoulli"`` draws the :math:`n(n-1)/2`
    indicators directly (a reference for small ``n``, at most 4096 nodes); ``"auto"`` picks ``"bernoulli"`` for
    ``n <= 512`` and ``"blockwise"`` otherwise.

    Two forms. Without ``capacity`` the sampler runs eagerly and returns exactly the edges it drew. With a static
    ``capacity`` it is a traceable JAX function: ``jax.jit`` and ``jax.vmap`` over ``key``, ``nu`` and the
    model's parameters work, and ``A`` is a padded ``BCOO`` with ``2 * capacity`` stored entries (padding points
    at row/column ``n`` and holds 0, so every sparse product ignores it; the edge count is ``A.data.sum() / 2``).
    ``model.edge_capacity(n=n, nu=nu_max)`` gives a capacity that overflows with probability below 1e-15. An
    overflow raises ``ValueError`` eagerly; under tracing it cannot raise, so it fills ``X`` with NaN, which every
    downstream statistic propagates: nothing is silently wrong.

    Args:
        model: the CSBM (its parameters may be traced when ``capacity`` is given).
        key: a JAX PRNG key (``jax.random.key(seed)``).
        n: number of nodes, ``>= 2`` (static).
        nu: degree scale :math:`\nu > 0` with :math:`\nu \max B \le n` (a JAX scalar when traced).
        method: ``"auto"``, ``"blockwise"`` or ``"bernoulli"``.
        duplicates: ``"resample"`` (exact Bernoulli law) or ``"keep"`` (a multigraph: each pair count is
            :math:`\approx\mathrm{Poisson}(\nu B/n)`; faster, bias :math:`O(\nu/n)`; eager form only).
        capacity: static number of candidate pairs of the traceable form; ``None`` for the eager form (required
            under ``jit``/``vmap``).

    Returns:
        :class:`CSBMSample` ``(A, X, y)``.

    Raises:
        TypeError: if ``model`` is not a :class:`CSBM` or ``key`` is not a key.
        ValueError: on ``n < 2``, ``nu <= 0``, probabilities above 1, an unknown ``method``/``duplicates``,
            ``method="bernoulli"`` with ``n > 4096``, a traced call without ``capacity``, ``duplicates="keep"``
            with ``capacity``, or (eagerly) more candidate pairs than ``capacity``.

    References:
        Vinas & Amini, NeurIPS 2025 (CSBM of the main theorem).

    Example:
        >>> m = CSBM(pi=[0.5, 0.5], B=[[1.5, 0.5], [0.5, 1.0]], means=np.eye(2), cov=0.25 * np.eye(2))
        >>> s = sample_csbm(m, jax.random.key(0), n=1000, nu=10.0)
        >>> s.A.shape, s.X.shape
        ((1000, 1000), (1000, 2))
        >>> cap = m.edge_capacity(n=1000, nu=10.0)
        >>> draw = jax.jit(lambda k: sample_csbm(m, k, n=1000, nu=10.0, capacity=cap).A.data.sum() / 2)
        >>> jax.vmap(draw)(jax.random.split(jax.random.key(0), 3)).shape  # doctest: +SKIP
        (3,)
    """
    if not isinstance(model, CSBM):
        raise TypeError(f"model must be a CSBM, got {type(model).__name__}")
    if not (isinstance(key, Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)):
        raise TypeError("key must be a typed JAX PRNG key from jax.random.key(seed)")
    if key.shape != ():
        raise ValueError(f"key must be a single key (shape ()), got shape {key.shape}; use jax.vmap for a batch")
    n = check_int(n, "n", minimum=2)
    nu = check_positive(nu, "nu")
    if method not in ("auto", "blockwise", "bernoulli"):
        raise ValueError(f"method must be 'auto', 'blockwise' or 'bernoulli', got {method!r}")
    if duplicates not in ("resample", "keep"):
        raise ValueError(f"duplicates must be 'resample' or 'keep', got {duplicates!r}")
    if method == "bernoulli" and n > _DENSE_MAX_N:
        raise ValueError(f"method='bernoulli' builds n x n indicators; n must be <= {_DENSE_MAX_N}, got {n}")
    traced = is_traced(key, nu, model.pi, model.B, model.means, model.cov)
    if capacity is None and traced:
        raise ValueError(
            "capacity must be given under jax.jit/jax.vmap (edge counts are random and cannot fix a shape); "
            "pass capacity=model.edge_capacity(n=n, nu=largest_nu)"
        )
    if capacity is not None:
        capacity = check_int(capacity, "capacity", minimum=1)
        if duplicates != "resample":
            raise ValueError("duplicates='keep' has no padded form; use duplicates='resample' with capacity")
    p = model.edge_probabilities(n=n, nu=nu)
    k_y, k_x, k_e = jax.random.split(key, 3)
    y = jax.random.choice(k_y, model.n_classes, shape=(n,), p=jnp.asarray(model.pi, jnp.float32)).astype(jnp.int32)
    dense = method == "bernoulli" or (method == "auto" and n <= 512)
    if capacity is not None:
        X = _features(k_x, y, jnp.asarray(model.means, jnp.float32), _noise_root(model.cov))
        rows, cols, keep, overflow = _padded_edges(k_e, y, jnp.asarray(p, jnp.float32), capacity=capacity, dense=dense)
        if not traced and bool(overflow):
            raise ValueError(f"capacity={capacity} is too small for this draw; use model.edge_capacity(n=n, nu=nu)")
        X = jnp.where(overflow, jnp.nan, X)
        indices = jnp.concatenate([jnp.stack([rows, cols], axis=1), jnp.stack([cols, rows], axis=1)])
        data = jnp.tile(keep.astype(jnp.float32), 2)
        return CSBMSample(A=jsparse.BCOO((data, indices), shape=(n, n)), X=X, y=y)
    X = jnp.asarray(model.means, jnp.float32)[y] + jax.random.normal(k_x, (n, model.dim), jnp.float32) @ _noise_root(
        model.cov
    )
    if dense:
        edges = _bernoulli_edges(k_e, y, jnp.asarray(p, jnp.float32))
    else:
        edges = _blockwise_edges(k_e, np.asarray(y), p, duplicates)
    both = jnp.concatenate([edges, edges[:, ::-1]], axis=0)
    A = jsparse.BCOO((jnp.ones(both.shape[0], jnp.float32), both), shape=(n, n))
    return CSBMSample(A=A, X=X, y=y)


def _noise_root(cov: Any) -> Array:
    r"""The symmetric PSD root of :math:`\Sigma` (float32): numpy for a concrete model, JAX for a traced one."""
    xp = jnp if is_traced(cov) else np
    w, v = xp.linalg.eigh(cov)
    return jnp.asarray((v * xp.sqrt(xp.clip(w, 0.0, None))) @ v.T, jnp.float32)


@jax.jit
def _features(key: Array, y: Array, means: Array, root: Array) -> Array:
    r""":math:`x_i = \mu_{y_i} + \Sigma^{1/2} g_i` (traceable)."""
    return means[y] + jax.random.normal(key, (y.shape[0], means.shape[1]), means.dtype) @ root


@functools.partial(jax.jit, static_argnames=("capacity", "dense"))
def _padded_edges(key: Array, y: Array, p: Array, *, capacity: int, dense: bool) -> tuple[Array, Array, Array, Array]:
    """``(rows, cols, keep, overflow)`` of a padded upper-triangular edge list (padding: index ``n``, keep False)."""
    n = y.shape[0]
    p_pair = lambda i, j: p[y[jnp.clip(i, 0, n - 1)], y[jnp.clip(j, 0, n - 1)]]  # noqa: E731
    if dense:  # exact Bernoulli indicators, then a static-size nonzero
        upper = jnp.triu(jax.random.uniform(key, (n, n)) < p[y][:, y], k=1)
        lo, hi = jnp.nonzero(upper, size=capacity, fill_value=n)
        keep = lo < n
        return lo, hi, keep, upper.sum() > capacity
    k_m, k_i, k_j, k_u = jax.random.split(key, 4)
    p_max = p.max()
    lam = -(n * (n - 1) / 2.0) * jnp.log1p(-p_max)
    m = jax.random.poisson(k_m, lam, dtype=jnp.int32)
    i = jax.random.randint(k_i, (capacity,), 0, n, dtype=jnp.int32)
    j = jax.random.randint(k_j, (capacity,), 0, n - 1, dtype=jnp.int32)
    j = j + (j >= i)  # uniform over j != i, so {i, j} is a uniform unordered pair
    valid = jnp.arange(capacity) < m
    lo, hi = jax.lax.sort((jnp.where(valid, jnp.minimum(i, j), n), jnp.where(valid, jnp.maximum(i, j), n)), num_keys=2)
    first = jnp.concatenate([jnp.ones(1, bool), (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])]) & (lo < n)
    keep = first & (jax.random.uniform(k_u, (capacity,)) * p_max < p_pair(lo, hi))  # thin to nu B_ab / n
    return jnp.where(keep, lo, n), jnp.where(keep, hi, n), keep, m > capacity


def _bernoulli_edges(key: Array, y: Array, p: Array) -> Array:
    n = y.shape[0]
    upper = jnp.triu(jax.random.uniform(key, (n, n)) < p[y][:, y], k=1)
    i, j = np.nonzero(np.asarray(upper))
    return jnp.stack([jnp.asarray(i, jnp.int32), jnp.asarray(j, jnp.int32)], axis=1)


def _blockwise_edges(key: Array, y: np.ndarray, p: np.ndarray, duplicates: Duplicates) -> Array:
    k = p.shape[0]
    order = np.argsort(y, kind="stable").astype(np.int32)
    counts = np.bincount(y, minlength=k)
    starts = np.concatenate([[0], np.cumsum(counts)])
    members = [order[starts[c] : starts[c + 1]] for c in range(k)]
    parts: list[np.ndarray] = []
    for a in range(k):
        for b in range(a, k):
            n_a, n_b = int(counts[a]), int(counts[b])
            trials = n_a * (n_a - 1) / 2.0 if a == b else float(n_a) * n_b
            key, k_count, k_pairs = jax.random.split(key, 3)
            m = _binomial_count(k_count, trials, float(p[a, b]))
            if m == 0:
                continue
            local = _distinct_pairs(k_pairs, m, n_a, n_b, a == b, duplicates)
            parts.append(np.stack([members[a][local[:, 0]], members[b][local[:, 1]]], axis=1))
    if not parts:
        return jnp.zeros((0, 2), jnp.int32)
    return jnp.asarray(np.concatenate(parts, axis=0))
