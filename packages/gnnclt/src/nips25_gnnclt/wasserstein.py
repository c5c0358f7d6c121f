r"""1-Wasserstein distances: exact 1-D (two samples, or a sample against a Gaussian mixture), sliced, matching.

:math:`W_1(P, Q) = \int_{\mathbb R} |F_P(x) - F_Q(x)|\,dx` in one dimension. In :math:`d` dimensions the sliced
distance :math:`SW_1(P, Q) = \mathbb E_\theta W_1(\theta_\# P, \theta_\# Q)` (:math:`\theta` uniform on the sphere)
is a lower bound of :math:`W_1`; the exact :math:`W_1` between two equal-size samples is an assignment problem.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from jax.scipy.special import ndtr as jax_ndtr
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist
from scipy.special import ndtr as scipy_ndtr

from nips25_gnnclt._checks import as_float_matrix, check_int, concretely, finite_array, is_traced, real_array

__all__ = ["sliced_w1", "sliced_w1_to_mixture", "w1_1d", "w1_1d_to_mixture", "w1_matching"]

_MATCHING_MAX = 5000
_PARTS = ("weights", "means", "stds")


def _vector(value: Any, name: str) -> Array:
    if isinstance(value, Array):
        if value.ndim != 1 or value.size == 0:
            raise ValueError(f"{name} must be a non-empty 1-D array, got shape {value.shape}")
        return value
    return jnp.asarray(finite_array(value, name, ndim=1), jnp.result_type(float))


@jax.jit
def _w1_1d(a: Array, b: Array) -> Array:
    a_s, b_s = jnp.sort(a), jnp.sort(b)
    grid = jnp.sort(jnp.concatenate([a_s, b_s]))
    left = grid[:-1]
    cdf_a = jnp.searchsorted(a_s, left, side="right") / a_s.shape[0]
    cdf_b = jnp.searchsorted(b_s, left, side="right") / b_s.shape[0]
    return jnp.sum(jnp.abs(cdf_a - cdf_b) * jnp.diff(grid))


def w1_1d(a: Any, b: Any) -> Array:
    r"""Exact 1-D :math:`W_1` between two empirical laws (sizes may differ): :math:`\int |F_a - F_b|\,dx`.

    Agrees with ``scipy.stats.wasserstein_distance``. jit- and vmap-clean: ``jax.jit(w1_1d)`` and
    ``jax.vmap(w1_1d)`` over a batch of equal-size samples work; shapes are checked at trace time, while the
    finiteness check runs only on concrete (non-traced) inputs, so a NaN inside ``jit`` gives a NaN distance.

    Args:
        a: ``(n_a,)`` sample, finite.
        b: ``(n_b,)`` sample, finite.

    Returns:
        Scalar array.

    Raises:
        ValueError: if a sample is empty, not 1-D or not finite.

    Example:
        >>> float(w1_1d([0.0, 1.0], [2.0]))
        1.5
        >>> a = jnp.array([[0.0, 1.0], [0.0, 2.0]])
        >>> jax.vmap(w1_1d)(a, a + 1.0).tolist()  # a shift by 1 moves every atom by 1
        [1.0, 1.0]
    """
    a_arr, b_arr = _vector(a, "a"), _vector(b, "b")
    traced = isinstance(a_arr, jax.core.Tracer) or isinstance(b_arr, jax.core.Tracer)
    if not traced and not (bool(jnp.all(jnp.isfinite(a_arr))) and bool(jnp.all(jnp.isfinite(b_arr)))):
        raise ValueError("a and b must be finite (no NaN or inf)")  # checked on concrete values only
    dtype = jnp.promote_types(a_arr.dtype, b_arr.dtype)
    return _w1_1d(a_arr.astype(dtype), b_arr.astype(dtype))


def _weights(weights: Any, k: int) -> Any:
    w = real_array(weights, "weights", ndim=1)
    if w.shape != (k,):
        raise ValueError(f"weights must have shape ({k},) to match the components, got {w.shape}")
    if concretely(lambda: (w < 0).any() or abs(w.sum() - 1.0) > 1e-6, w):
        raise ValueError("weights must be non-negative and sum to 1")
    return w


def _mixture_parts(weights: Any, means: Any, stds: Any) -> tuple[Any, Any, Any]:
    m = real_array(means, "means", ndim=1)
    s = real_array(stds, "stds", ndim=1)
    if m.shape != s.shape:
        raise ValueError(f"weights, means and stds must have equal shapes, got means {m.shape}, stds {s.shape}")
    w = _weights(weights, m.shape[0])
    if concretely(lambda: (s <= 0).any(), s):
        raise ValueError("stds must be > 0")
    return w, m, s


def _mix_cdf(x: Any, w: Any, m: Any, s: Any) -> Any:
    ndtr = jax_ndtr if isinstance(x, Array) else scipy_ndtr
    return (w * ndtr((x[..., None] - m) / s)).sum(-1)


def _mix_int_cdf(x: Any, w: Any, m: Any, s: Any) -> Any:
    r""":math:`G(x) = \int_{-\infty}^x F`, closed form :math:`\sum_c w_c s_c (z\Phi(z) + \varphi(z))`."""
    xp, ndtr = (jnp, jax_ndtr) if isinstance(x, Array) else (np, scipy_ndtr)
    z = (x[..., None] - m) / s
    return (w * s * (z * ndtr(z) + xp.exp(-0.5 * z * z) / np.sqrt(2 * np.pi))).sum(-1)


def _crossing(a: Any, b: Any, level: Any, w: Any, m: Any, s: Any) -> Any:
    """Where the mixture CDF reaches ``level`` in ``[a, b]``, by 60 bisection steps (past float64 resolution)."""

    def halve(lo: Any, hi: Any) -> tuple[Any, Any]:
        mid = 0.5 * (lo + hi)
        go_right = _mix_cdf(mid, w, m, s) < level
        xp = jnp if isinstance(mid, Array) else np
        return xp.where(go_right, mid, lo), xp.where(go_right, hi, mid)

    if isinstance(a, Array):
        a, b = jax.lax.fori_loop(0, 60, lambda _, ab: halve(*ab), (a, b))
    else:
        for _ in range(60):
            a, b = halve(a, b)
    return 0.5 * (a + b)


def _w1_sorted_to_mixture(xs: Any, w: Any, m: Any, s: Any) -> Any:
    """The integral of ``w1_1d_to_mixture`` on sorted ``xs``: numpy on the host, ``jax.numpy`` for JAX input."""
    xp, ndtr = (jnp, jax_ndtr) if isinstance(xs, Array) else (np, scipy_ndtr)
    n = xs.shape[0]
    g = _mix_int_cdf(xs, w, m, s)
    f = _mix_cdf(xs, w, m, s)
    left_tail = g[0]
    z_last = (xs[-1] - m) / s
    right_tail = (w * s * (xp.exp(-0.5 * z_last**2) / np.sqrt(2 * np.pi) - z_last * (1 - ndtr(z_last)))).sum()
    if n == 1:
        return left_tail + right_tail
    lo, hi = xs[:-1], xs[1:]
    level = xp.arange(1, n, dtype=xs.dtype) / n
    width = hi - lo
    dg = g[1:] - g[:-1]
    below = f[1:] <= level  # F <= level on the whole interval
    above = f[:-1] >= level
    total = xp.where(below, level * width - dg, 0.0) + xp.where(above, dg - level * width, 0.0)
    cross = ~(below | above)
    # on the host, bisect only where F crosses the level; in JAX (static shapes), on every interval, masked
    idx: Any = np.flatnonzero(cross) if xp is np else slice(None)
    a, b, c = lo[idx], hi[idx], level[idx]
    star = _crossing(a, b, c, w, m, s)
    g_star = _mix_int_cdf(star, w, m, s)
    part = c * (star - a) - (g_star - g[:-1][idx]) + (g[1:][idx] - g_star) - c * (b - star)
    if xp is np:
        total[idx] = part
    else:
        total = jnp.where(cross, part, total)
    return left_tail + total.sum() + right_tail


def w1_1d_to_mixture(x: Any, weights: Any, means: Any, stds: Any) -> Any:
    r"""Exact :math:`W_1` between the empirical law of ``x`` and a 1-D Gaussian mixture
    :math:`F = \sum_c w_c \Phi((\cdot - m_c)/s_c)`.

    :math:`\int|F_n - F|` is integrated in closed form on every interval between order statistics with
    :math:`G = \int F`; where :math:`F` crosses the level of :math:`F_n` the crossing is found by bisection
    (no Monte Carlo sample of the mixture is drawn). Concrete host input is integrated in float64 numpy/scipy
    and gives a float; under ``jax.jit``/``jax.vmap`` (any argument traced) the same integral runs in JAX, in
    the inputs' dtype, and gives a JAX scalar.

    Args:
        x: ``(n,)`` sample.
        weights: ``(K,)`` mixture weights (non-negative, sum 1).
        means: ``(K,)`` component means.
        stds: ``(K,)`` component standard deviations, ``> 0``.

    Returns:
        :math:`W_1` (a float, or a JAX scalar when traced).

    Raises:
        ValueError: on empty/non-finite input, mismatched shapes, invalid weights or non-positive ``stds`` (values
            checked when concrete).

    Example:
        >>> round(w1_1d_to_mixture([0.0], [1.0], [0.0], [1.0]), 6)  # E|N(0,1)| = sqrt(2/pi)
        0.797885
        >>> f = jax.jit(w1_1d_to_mixture)
        >>> round(float(f(jnp.zeros(1), jnp.ones(1), jnp.zeros(1), jnp.ones(1))), 5)
        0.79788
    """
    if is_traced(x, weights, means, stds):
        xs = jnp.sort(_vector(x, "x"))
        w, m, s = (jnp.asarray(v, xs.dtype) for v in _mixture_parts(weights, means, stds))
        return _w1_sorted_to_mixture(xs, w, m, s)
    xs_host = np.sort(finite_array(x, "x", ndim=1))
    w, m, s = _mixture_parts(*(finite_array(v, name) for v, name in zip((weights, means, stds), _PARTS, strict=True)))
    return float(_w1_sorted_to_mixture(xs_host, w, m, s))


def _directions(key: Array, n_proj: int, d: int) -> Array:
    g = jax.random.normal(key, (n_proj, d))
    return g / jnp.linalg.norm(g, axis=1, keepdims=True)


def sliced_w1(a: Any, b: Any, key: Array, *, n_proj: int = 256) -> Array:
    r"""Monte Carlo sliced :math:`W_1` between two samples in :math:`\mathbb R^d`:
    :math:`\frac1L\sum_{l} W_1(\theta_l^\top a, \theta_l^\top b)`, :math:`\theta_l` uniform on the sphere.

    A lower bound of :math:`W_1(a, b)` in expectation. jit/vmap-clean core.

    Args:
        a: ``(n_a, d)`` sample.
        b: ``(n_b, d)`` sample.
        key: JAX PRNG key for the directions.
        n_proj: number of directions ``L >= 1``.

    Returns:
        Scalar array.

    Raises:
        ValueError: on empty/non-finite input, mismatched ``d`` or ``n_proj < 1``.
    """
    x, z = as_float_matrix(a, "a"), as_float_matrix(b, "b")
    if x.shape[1] != z.shape[1]:
        raise ValueError(f"a and b must have the same number of columns, got {x.shape[1]} and {z.shape[1]}")
    n_proj = check_int(n_proj, "n_proj", minimum=1)
    theta = _directions(key, n_proj, x.shape[1]).astype(x.dtype)
    return jnp.mean(jax.vmap(lambda t: _w1_1d(x @ t, z @ t))(theta))


def sliced_w1_to_mixture(Z: Any, weights: Any, means: Any, covs: Any, key: Array, *, n_proj: int = 64) -> Any:
    r"""Sliced :math:`W_1` between the empirical law of ``Z`` and the Gaussian mixture
    :math:`\sum_c w_c N(m_c, \Gamma_c)`: the mean over :math:`L` random directions of the exact 1-D distance to the
    projected mixture :math:`\sum_c w_c N(\theta^\top m_c, \theta^\top\Gamma_c\theta)`.

    Concrete input is evaluated on the host in float64 (a float); under ``jax.jit``/``jax.vmap`` the directions
    are mapped with ``jax.vmap`` on the inputs' devices (a JAX scalar).

    Args:
        Z: ``(n, d)`` sample.
        weights: ``(K,)`` mixture weights.
        means: ``(K, d)`` component means.
        covs: ``(K, d, d)`` component covariances (PSD; a zero projected variance is floored at 1e-12).
        key: JAX PRNG key for the directions.
        n_proj: number of directions ``L >= 1`` (static).

    Returns:
        The sliced distance (a lower bound of :math:`W_1` in expectation).

    Raises:
        ValueError: on mismatched shapes or invalid mixture parameters.

    Example:
        >>> z = np.random.default_rng(0).normal(size=(2000, 2))
        >>> near = sliced_w1_to_mixture(z, [1.0], np.zeros((1, 2)), np.eye(2)[None], jax.random.key(0))
        >>> far = sliced_w1_to_mixture(z, [1.0], np.ones((1, 2)), np.eye(2)[None], jax.random.key(0))
        >>> near < 0.05 < 0.5 < far  # sampling error of 2000 points vs a shift of norm sqrt(2)
        True
    """
    traced = is_traced(Z, weights, means, covs)
    z = as_float_matrix(Z, "Z") if traced else np.asarray(as_float_matrix(Z, "Z"), np.float64)
    mu = real_array(means, "means", ndim=2)
    cv = real_array(covs, "covs", ndim=3)
    d = z.shape[1]
    if mu.shape[1] != d or cv.shape[1:] != (d, d) or cv.shape[0] != mu.shape[0]:
        raise ValueError(f"means must be (K, {d}) and covs (K, {d}, {d}), got {mu.shape} and {cv.shape}")
    n_proj = check_int(n_proj, "n_proj", minimum=1)
    if traced:
        w = jnp.asarray(_weights(weights, mu.shape[0]), z.dtype)
        mu, cv = jnp.asarray(mu, z.dtype), jnp.asarray(cv, z.dtype)

        def one(t: Array) -> Array:
            var = jnp.einsum("i,cij,j->c", t, cv, t)
            return _w1_sorted_to_mixture(jnp.sort(z @ t), w, mu @ t, jnp.sqrt(jnp.maximum(var, 1e-12)))

        return jnp.mean(jax.vmap(one)(_directions(key, n_proj, d).astype(z.dtype)))
    theta = np.asarray(_directions(key, n_proj, d), np.float64)
    out = []
    for t in theta:
        var = np.einsum("i,cij,j->c", t, cv, t)
        out.append(w1_1d_to_mixture(z @ t, weights, mu @ t, np.sqrt(np.maximum(var, 1e-12))))
    return float(np.mean(out))


def w1_matching(a: Any, b: Any) -> float:
    r"""Exact :math:`W_1` between two equal-size samples in :math:`\mathbb R^d`:
    :math:`\min_\sigma \frac1n \sum_i \|a_i - b_{\sigma(i)}\|_2` (optimal assignment, scipy's Hungarian solver).

    Args:
        a: ``(n, d)`` sample, ``n <= 5000``.
        b: ``(n, d)`` sample.

    Returns:
        :math:`W_1` as a float.

    Raises:
        ValueError: on unequal sizes, mismatched ``d``, ``n > 5000``, empty or non-finite input.

    Example:
        >>> w1_matching([[0.0, 0.0], [1.0, 0.0]], [[1.0, 1.0], [0.0, 1.0]])
        1.0
    """
    x = finite_array(a, "a", ndim=2)
    z = finite_array(b, "b", ndim=2)
    if x.shape != z.shape:
        raise ValueError(f"a and b must have the same shape (equal-size samples), got {x.shape} and {z.shape}")
    if x.shape[0] > _MATCHING_MAX:
        raise ValueError(f"a must have at most {_MATCHING_MAX} rows (cubic cost), got {x.shape[0]}; subsample first")
    cost = cdist(x, z)
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].mean())
