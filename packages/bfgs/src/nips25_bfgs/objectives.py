r"""The paper's test objectives (strictly convex, strongly self-concordant) and the affine pullback.

Each builder returns a ``jax.tree_util.Partial``: data are pytree leaves, so jitted solvers compile once per
objective kind and shape, not once per data set. All objectives take a flat ``(d,)`` vector.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import Partial

from nips25_bfgs.checks import check_positive, check_vector, is_concrete
from nips25_bfgs.solver import as_partial

__all__ = ["affine_pullback", "hard_cubic", "logistic_l2", "logsumexp_reg", "random_affine_map", "softmax_l2"]


def _logistic(X: jax.Array, y: jax.Array, lam: jax.Array, w: jax.Array) -> jax.Array:
    return jnp.mean(jnp.logaddexp(0.0, -y * (X @ w))) + 0.5 * lam * jnp.vdot(w, w)


def logistic_l2(X: Any, y: Any, *, lam: float) -> Partial:
    r""":math:`\ell_2`-regularised logistic regression :math:`f(w) = \frac1n\sum_i \log(1 + e^{-y_i x_i^\top w}) +
    \frac{\lambda}{2}\|w\|^2` (no intercept).

    Args:
        X: ``(n, d)`` finite features.
        y: ``(n,)`` labels in :math:`\{-1, +1\}`.
        lam: :math:`\lambda > 0`.

    Returns:
        ``w (d,) -> scalar`` as a ``jax.tree_util.Partial``.

    Raises:
        ValueError: shapes disagree, empty or non-finite data, labels outside ``{-1, +1}``, ``lam <= 0``.

    Example:
        >>> import jax.numpy as jnp
        >>> f = logistic_l2(jnp.ones((2, 1)), jnp.array([1.0, -1.0]), lam=1.0)
        >>> round(float(f(jnp.zeros(1))), 6)
        0.693147
    """
    X, y = jnp.asarray(X), jnp.asarray(y)
    check_vector(X, "X", ndim=2)
    check_vector(y, "y")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have shape ({X.shape[0]},) to match X, got {tuple(y.shape)}")
    if is_concrete(y) and not np.all(np.isin(np.asarray(y), (-1.0, 1.0))):
        raise ValueError("y must hold labels -1 or +1")
    lam = check_positive(lam, "lam")
    return Partial(_logistic, X, y, jnp.asarray(lam, X.dtype))


def _softmax(X: jax.Array, onehot: jax.Array, lam: jax.Array, w: jax.Array) -> jax.Array:
    logits = X @ w.reshape(X.shape[1], onehot.shape[1])
    nll = jax.nn.logsumexp(logits, axis=1) - jnp.sum(onehot * logits, axis=1)
    return jnp.mean(nll) + 0.5 * lam * jnp.vdot(w, w)


def softmax_l2(X: Any, labels: Any, *, lam: float, n_classes: int | None = None) -> Partial:
    r"""Multinomial logistic regression :math:`f(W) = \frac1n\sum_i [\log\sum_k e^{x_i^\top W_k} - x_i^\top
    W_{y_i}] + \frac{\lambda}{2}\|W\|_F^2` on the flattened ``W`` of shape ``(d * K,)``.

    Args:
        X: ``(n, d)`` finite features.
        labels: ``(n,)`` integer classes in ``[0, K)``.
        lam: :math:`\lambda > 0`.
        n_classes: ``K``; defaults to ``max(labels) + 1``.

    Returns:
        ``w (d * K,) -> scalar`` as a ``jax.tree_util.Partial`` (``W = w.reshape(d, K)``).

    Raises:
        ValueError: shapes disagree, empty or non-finite data, labels out of range, ``lam <= 0``.
    """
    X = jnp.asarray(X)
    check_vector(X, "X", ndim=2)
    lab = np.asarray(labels)
    if lab.ndim != 1 or lab.shape[0] != X.shape[0]:
        raise ValueError(f"labels must have shape ({X.shape[0]},), got {lab.shape}")
    if not np.issubdtype(lab.dtype, np.integer):
        raise TypeError(f"labels must be integers, got {lab.dtype}")
    K = int(lab.max()) + 1 if n_classes is None else n_classes
    if K < 2 or lab.min() < 0 or lab.max() >= K:
        raise ValueError(f"labels must lie in [0, n_classes) with n_classes >= 2, got range [{lab.min()}, {lab.max()}]")
    lam = check_positive(lam, "lam")
    onehot = jax.nn.one_hot(jnp.asarray(lab), K, dtype=X.dtype)
    return Partial(_softmax, X, onehot, jnp.asarray(lam, X.dtype))


def _g_cubic(w: jax.Array, delta: jax.Array) -> jax.Array:
    a = jnp.abs(w)
    return jnp.where(a <= delta, a**3 / 3.0, delta * w**2 - delta**2 * a + delta**3 / 3.0)


def _hard_cubic(V: jax.Array, a: jax.Array, b: jax.Array, lam: jax.Array, delta: jax.Array, x: jax.Array) -> jax.Array:
    u = V.T @ x
    chain = jnp.sum(_g_cubic(u[:-1] - u[1:], delta))
    return (a / 12.0) * (chain - b * u[0]) + 0.5 * lam * jnp.vdot(x, x)


def hard_cubic(
    d: int, *, a: float = 1.0, b: float = 1.0, lam: float = 1e-2, delta: float = 1.0, key: jax.Array
) -> Partial:
    r"""The hard cubic (our reconstruction of the paper's): :math:`f(x) = \frac{a}{12}\big(\sum_{i<d}
    g(v_i^\top x - v_{i+1}^\top x) - b\, v_1^\top x\big) + \frac{\lambda}{2}\|x\|^2`.

    :math:`\{v_i\}` is a random orthonormal basis and :math:`g(w) = |w|^3/3` for :math:`|w| \le \Delta`, else
    :math:`\Delta w^2 - \Delta^2|w| + \Delta^3/3` (twice continuously differentiable). :math:`\nabla^2 f(0) =
    \lambda I`, so start away from 0.

    Args:
        d: dimension, ``>= 2``.
        a, b, lam, delta: the constants :math:`a, b, \lambda, \Delta`, all ``> 0``.
        key: ``jax.random`` key for the basis.

    Returns:
        ``x (d,) -> scalar`` as a ``jax.tree_util.Partial``.

    Raises:
        ValueError: ``d < 2`` or a non-positive constant.
    """
    if isinstance(d, bool) or not isinstance(d, int) or d < 2:
        raise ValueError(f"d must be an int >= 2, got {d!r}")
    consts = [check_positive(v, n) for v, n in ((a, "a"), (b, "b"), (lam, "lam"), (delta, "delta"))]
    dtype = jnp.result_type(float)
    V = _orthogonal(key, d, dtype)
    return Partial(_hard_cubic, V, *(jnp.asarray(c, dtype) for c in consts))


@functools.partial(jax.jit, static_argnums=(1, 2))
def _orthogonal(key: jax.Array, d: int, dtype: Any) -> jax.Array:
    """A random ``(d, d)`` orthogonal matrix (Q factor of a Gaussian matrix), compiled once per size."""
    return jnp.linalg.qr(jax.random.normal(key, (d, d), dtype=dtype))[0]


def _logsumexp(A: jax.Array, b: jax.Array, mu: jax.Array, x: jax.Array) -> jax.Array:
    return jax.nn.logsumexp(A @ x - b) + 0.5 * mu * jnp.vdot(x, x)


def logsumexp_reg(A: Any, b: Any, *, mu: float) -> Partial:
    r"""Regularised log-sum-exp :math:`f(x) = \log\sum_{i=1}^m e^{a_i^\top x - b_i} + \frac{\mu}{2}\|x\|^2`.

    Args:
        A: ``(m, d)`` finite rows :math:`a_i`.
        b: ``(m,)`` finite offsets.
        mu: :math:`\mu > 0`.

    Returns:
        ``x (d,) -> scalar`` as a ``jax.tree_util.Partial``.

    Raises:
        ValueError: shapes disagree, empty or non-finite data, ``mu <= 0``.
    """
    A, b = jnp.asarray(A), jnp.asarray(b)
    check_vector(A, "A", ndim=2)
    check_vector(b, "b")
    if b.shape[0] != A.shape[0]:
        raise ValueError(f"b must have shape ({A.shape[0]},) to match A, got {tuple(b.shape)}")
    mu = check_positive(mu, "mu")
    return Partial(_logsumexp, A, b, jnp.asarray(mu, A.dtype))


def _pullback(fun: Partial, A: jax.Array, y: jax.Array) -> jax.Array:
    return fun(A @ y)


def affine_pullback(fun: Callable[[jax.Array], jax.Array], A: Any) -> Partial:
    r"""The pulled-back objective :math:`g(y) = f(Ay)` for an invertible ``A``.

    BFGS with :math:`B_0' = A^\top B_0 A` (``B0="hessian"`` does this automatically) from :math:`y_0 = A^{-1}x_0`
    produces :math:`y_t = A^{-1} x_t` (affine invariance), so ill-conditioned ``A`` builds hard copies of ``f``.

    Args:
        fun: ``(d,) -> scalar``.
        A: ``(d, d)`` finite, invertible.

    Returns:
        ``y (d,) -> scalar`` as a ``jax.tree_util.Partial``.

    Raises:
        ValueError: ``A`` not square, non-finite or singular.

    Example:
        >>> import jax.numpy as jnp
        >>> g = affine_pullback(lambda x: jnp.sum(x**2), 2.0 * jnp.eye(2))
        >>> float(g(jnp.ones(2)))
        8.0
    """
    A = jnp.asarray(A)
    check_vector(A, "A", ndim=2)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square, got shape {tuple(A.shape)}")
    if is_concrete(A) and not np.isfinite(np.linalg.cond(np.asarray(A, dtype=np.float64))):
        raise ValueError("A must be invertible")
    return Partial(_pullback, as_partial(fun), A)


def random_affine_map(d: int, *, cond: float, key: jax.Array) -> jax.Array:
    r"""A random :math:`A = U \operatorname{diag}(\sigma) V^\top` with condition number ``cond``.

    :math:`U, V` are random orthogonal and :math:`\sigma` is geometric from :math:`\kappa^{-1/2}` to
    :math:`\kappa^{1/2}`, so :math:`\|A\| = \|A^{-1}\| = \sqrt{\kappa}`.

    Args:
        d: dimension, ``>= 1``.
        cond: :math:`\kappa(A) \ge 1`.
        key: ``jax.random`` key.

    Returns:
        ``(d, d)`` matrix in the default float dtype.

    Raises:
        ValueError: ``d < 1`` or ``cond < 1``.
    """
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(f"d must be an int >= 1, got {d!r}")
    cond = check_positive(cond, "cond")
    if cond < 1.0:
        raise ValueError(f"cond must be >= 1, got {cond}")
    return _affine_map(key, jnp.asarray(cond, jnp.result_type(float)), d)


@functools.partial(jax.jit, static_argnums=(2,))
def _affine_map(key: jax.Array, cond: jax.Array, d: int) -> jax.Array:
    ku, kv = jax.random.split(key)
    U, V = _orthogonal(ku, d, cond.dtype), _orthogonal(kv, d, cond.dtype)
    sigma = jnp.sqrt(cond) ** jnp.linspace(-1.0, 1.0, d, dtype=cond.dtype) if d > 1 else jnp.ones(1, cond.dtype)
    return (U * sigma) @ V.T
