r"""One BFGS iteration (Jin & Mokhtari 2025, Alg. 1), shared by :func:`nips25_bfgs.bfgs` and the optimistix adapter.

From :math:`(x_t, f_t, g_t, M_t, d_t)` with :math:`d_t = -B_t^{-1} g_t`: the weak-Wolfe log-bisection search on
:math:`\phi(\eta) = f(x_t + \eta d_t)`, then :math:`s = x_{t+1} - x_t`, :math:`y = g_{t+1} - g_t`, the BFGS update of
:math:`M = H = B^{-1}` (inverse form) or :math:`M = B` (direct form), guarded by :math:`s^\top y > 0`, and the next
direction. Everything is traceable (no Python control flow on values).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from nips25_bfgs.linesearch import WeakWolfe, weak_wolfe_log_bisection
from nips25_bfgs.update import curvature_ok, direct_update, inverse_update_finite

__all__ = ["Iterate", "StepInfo", "bfgs_iteration", "direction", "inverse_of", "inverse_of_scaled_identity"]


class Iterate(NamedTuple):
    """The solver's iterate: ``x`` ``(d,)``, ``f``, ``g`` ``(d,)``, ``M`` ``(d, d)`` (:math:`H` or :math:`B`), the
    direction ``d`` ``(d,)`` and ``aux`` (whatever the objective returns beside its value; ``None`` for none)."""

    x: jax.Array
    f: jax.Array
    g: jax.Array
    M: jax.Array
    d: jax.Array
    aux: Any


class StepInfo(NamedTuple):
    """What one iteration did: accepted ``eta``, search ``n_trials`` (int32), search ``success``, ``skipped`` (the
    update was not applied because :math:`s^\\top y \\le 0` or non-finite) and ``finite`` (the next direction is)."""

    eta: jax.Array
    n_trials: jax.Array
    success: jax.Array
    skipped: jax.Array
    finite: jax.Array


def direction(M: jax.Array, g: jax.Array, *, inverse: bool) -> jax.Array:
    r"""Quasi-Newton direction :math:`d = -B^{-1} g`: ``-M @ g`` for the inverse form, a Cholesky solve otherwise."""
    if inverse:
        return -(M @ g)
    return -jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(M, lower=True), g)


def inverse_of(B: jax.Array) -> jax.Array:
    """:math:`B^{-1}` of an SPD matrix by Cholesky, symmetrised (the inverse form's :math:`H_0`)."""
    eye = jnp.eye(B.shape[0], dtype=B.dtype)
    H = jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(B, lower=True), eye)
    return 0.5 * (H + H.T)


def inverse_of_scaled_identity(c: jax.Array, d: int) -> jax.Array:
    r""":math:`(cI)^{-1}` for a 0-d ``c``, ``(d, d)`` in ``c``'s dtype, without a ``(d, d)`` Cholesky (:math:`O(d^3)`,
    ~20 ms at ``d = 640``): the ``1 x 1`` :func:`inverse_of` of ``c`` times :math:`I`. Bit for bit
    ``inverse_of(c * I)`` (which is not always the correctly rounded ``1 / c``): a Cholesky factorisation and its
    solves do on a diagonal matrix, entry by entry, what they do on ``[[c]]`` (tested)."""
    h = inverse_of(jnp.reshape(c, (1, 1)))[0, 0]
    return h * jnp.eye(d, dtype=h.dtype)


def bfgs_iteration(
    value_and_grad: Callable[[jax.Array], tuple[tuple[jax.Array, Any], jax.Array]],
    it: Iterate,
    *,
    line_search: WeakWolfe,
    inverse: bool,
) -> tuple[Iterate, StepInfo]:
    r"""One BFGS iteration with a weak-Wolfe step; on a failed search or a non-finite direction the iterate is kept.

    Args:
        value_and_grad: ``x (d,) -> ((f, aux), grad (d,))`` (``jax.value_and_grad(..., has_aux=True)`` form).
        it: the current :class:`Iterate`.
        line_search: the search constants.
        inverse: whether ``it.M`` is :math:`H = B^{-1}`.

    Returns:
        ``(next Iterate, StepInfo)``. The next iterate equals ``it`` when the search fails. The update of ``M`` is
        skipped (``StepInfo.skipped``) when :math:`s^\top y \le 0` or a value is non-finite, and in the inverse
        form also when its coefficient :math:`\rho^2 y^\top H y + \rho` overflows (:math:`s^\top y` near the
        underflow). ``d`` is kept when the new direction is not finite (the callers then stop); ``M`` is then the
        updated :math:`H` (inverse form) or the kept :math:`B` (direct form).
    """

    def phi(eta: jax.Array) -> tuple[jax.Array, jax.Array, tuple[jax.Array, jax.Array, Any]]:
        x_new = it.x + eta * it.d
        (f_new, aux_new), g_new = value_and_grad(x_new)
        return f_new, jnp.vdot(g_new, it.d), (x_new, g_new, aux_new)

    res = weak_wolfe_log_bisection(phi, it.f, jnp.vdot(it.g, it.d), line_search=line_search)
    x_new, g_new, aux_new = res.aux
    s, y = x_new - it.x, g_new - it.g
    ok = res.success
    if inverse:
        # Kept or not is decided from scalars before the (d, d) result exists, so this select fuses into the pass
        # that builds the update: one pass over H per iteration instead of a second select after the direction.
        H_upd, coef_ok = inverse_update_finite(it.M, s, y)
        pair_ok = curvature_ok(s, y) & coef_ok
        M_new = jnp.where(ok & pair_ok, H_upd, it.M)
        d_new = direction(M_new, g_new, inverse=True)
        finite = jnp.all(jnp.isfinite(d_new))
    else:
        # The direct form solves with a Cholesky factorisation (O(d^3)); a second (d, d) select costs nothing
        # beside it, and this order keeps 0.2.0's rounding of B (the fused form rounds the divisions otherwise).
        pair_ok = curvature_ok(s, y)
        M_try = jnp.where(pair_ok, direct_update(it.M, s, y), it.M)
        d_new = direction(M_try, g_new, inverse=False)
        finite = jnp.all(jnp.isfinite(d_new))
        M_new = jnp.where(ok & finite, M_try, it.M)
    pick = lambda a, b: jax.tree.map(lambda u, v: jnp.where(ok, u, v), a, b)  # noqa: E731
    nxt = Iterate(
        x=pick(x_new, it.x),
        f=pick(res.value, it.f),
        g=pick(g_new, it.g),
        M=M_new,
        d=jnp.where(ok & finite, d_new, it.d),
        aux=pick(aux_new, it.aux),
    )
    info = StepInfo(eta=res.eta, n_trials=res.n_trials, success=ok, skipped=ok & ~pair_ok, finite=finite)
    return nxt, info
