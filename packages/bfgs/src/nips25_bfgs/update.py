r"""The BFGS update of the Hessian approximation, direct and inverse (Jin & Mokhtari 2025, Eq. (3)).

With :math:`s = x_{t+1} - x_t` and :math:`y = \nabla f(x_{t+1}) - \nabla f(x_t)`,

.. math::
    B_+ = B - \frac{B s s^\top B}{s^\top B s} + \frac{y y^\top}{s^\top y}, \qquad
    H_+ = (I - \rho s y^\top) H (I - \rho y s^\top) + \rho s s^\top, \quad \rho = 1 / (y^\top s),

and :math:`H_+ = B_+^{-1}` whenever :math:`H = B^{-1}` and :math:`s^\top y > 0` (Sherman-Morrison-Woodbury).
Both keep positive definiteness when :math:`s^\top y > 0`, which every weak-Wolfe step guarantees.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from nips25_bfgs.checks import check_secant_pair

__all__ = [
    "bfgs_update",
    "curvature_ok",
    "direct_update",
    "inverse_bfgs_update",
    "inverse_update",
    "inverse_update_finite",
]


def curvature_ok(s: jax.Array, y: jax.Array) -> jax.Array:
    """Whether the pair can be used: :math:`s^\\top y > 0` and every entry finite (scalar bool)."""
    sy = jnp.vdot(s, y)
    return (sy > 0) & jnp.isfinite(sy) & jnp.all(jnp.isfinite(s)) & jnp.all(jnp.isfinite(y))


def bfgs_update(B: jax.Array, s: jax.Array, y: jax.Array) -> jax.Array:
    r"""Direct BFGS update :math:`B_+ = B - Bss^\top B/(s^\top Bs) + yy^\top/(s^\top y)`.

    The secant equation :math:`B_+ s = y` holds exactly in exact arithmetic.

    Args:
        B: ``(d, d)`` symmetric positive-definite Hessian approximation.
        s: ``(d,)`` step :math:`x_{t+1} - x_t`.
        y: ``(d,)`` gradient difference, with :math:`s^\top y > 0` (the curvature condition; without it
            :math:`B_+` is not positive definite).

    Returns:
        ``(d, d)`` the updated approximation (symmetrised).

    Raises:
        ValueError: shapes that do not match ``B`` ``(d, d)``; on concrete inputs also NaN/inf or
            :math:`s^\top y \le 0` (under ``jit`` these are not checked: use :func:`curvature_ok`).

    References:
        Jin & Mokhtari, NeurIPS 2025, arXiv:2507.00361, Eq. (3); Nocedal & Wright, Eq. (6.19).

    Example:
        >>> import jax.numpy as jnp
        >>> Bp = bfgs_update(jnp.eye(2), jnp.array([1.0, 0.0]), jnp.array([2.0, 0.0]))
        >>> Bp.tolist()
        [[2.0, 0.0], [0.0, 1.0]]
    """
    check_secant_pair(B, s, y, "B")
    B_new = direct_update(B, s, y)
    return 0.5 * (B_new + B_new.T)


def direct_update(B: jax.Array, s: jax.Array, y: jax.Array) -> jax.Array:
    """:func:`bfgs_update` without the argument checks or the final symmetrisation, for callers that guard with
    :func:`curvature_ok`. Entry ``(i, j)`` and ``(j, i)`` are computed from the same products, so an exactly
    symmetric ``B`` stays exactly symmetric (the symmetrisation would be a no-op, one pass over ``(d, d)`` less)."""
    Bs = B @ s
    return B - jnp.outer(Bs, Bs) / jnp.vdot(s, Bs) + jnp.outer(y, y) / jnp.vdot(s, y)


def inverse_bfgs_update(H: jax.Array, s: jax.Array, y: jax.Array) -> jax.Array:
    r"""Inverse BFGS update :math:`H_+ = (I - \rho sy^\top)H(I - \rho ys^\top) + \rho ss^\top` (Eq. (3), inverse).

    Here :math:`\rho = 1/y^\top s`.

    Expanded to :math:`O(d^2)` work: :math:`H_+ = H - \rho(s (Hy)^\top + (Hy) s^\top) + (\rho^2 y^\top H y + \rho)
    ss^\top`. The inverse secant equation :math:`H_+ y = s` holds exactly in exact arithmetic.

    Args:
        H: ``(d, d)`` symmetric positive-definite inverse Hessian approximation.
        s: ``(d,)`` step.
        y: ``(d,)`` gradient difference, with :math:`s^\top y > 0` (the curvature condition; without it
            :math:`H_+` is not positive definite).

    Returns:
        ``(d, d)`` the updated inverse approximation (symmetrised).

    Raises:
        ValueError: shapes that do not match ``H`` ``(d, d)``; on concrete inputs also NaN/inf or
            :math:`s^\top y \le 0` (under ``jit`` these are not checked: use :func:`curvature_ok`).

    References:
        Jin & Mokhtari, NeurIPS 2025, arXiv:2507.00361, Eq. (3) (inverse form); Nocedal & Wright, Eq. (6.17).

    Example:
        >>> import jax.numpy as jnp
        >>> Hp = inverse_bfgs_update(jnp.eye(2), jnp.array([1.0, 0.0]), jnp.array([2.0, 0.0]))
        >>> Hp.tolist()
        [[0.5, 0.0], [0.0, 1.0]]
    """
    check_secant_pair(H, s, y, "H")
    H_new = inverse_update(H, s, y)
    return 0.5 * (H_new + H_new.T)


def inverse_update(H: jax.Array, s: jax.Array, y: jax.Array) -> jax.Array:
    """:func:`inverse_bfgs_update` without the argument checks or the final symmetrisation (an exactly symmetric
    ``H`` stays exactly symmetric, as in :func:`direct_update`), for callers that guard with :func:`curvature_ok`."""
    return inverse_update_finite(H, s, y)[0]


def inverse_update_finite(H: jax.Array, s: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
    r""":func:`inverse_update` and whether its scalar coefficient :math:`c = \rho^2 y^\top H y + \rho` is finite.

    With a finite ``H``, ``s`` and ``y``, :math:`H_+ = H - \rho(s (Hy)^\top + (Hy) s^\top) + c\, ss^\top` is finite
    exactly when :math:`c` is (up to an overflow of the products; :math:`c` finite implies :math:`\rho` finite). A
    caller can so decide to keep the update from a scalar, before the ``(d, d)`` result exists, and select it in
    the same pass that builds it.

    Returns:
        ``((d, d) updated H, scalar bool)``.
    """
    rho = 1.0 / jnp.vdot(y, s)
    Hy = H @ y
    c = rho * rho * jnp.vdot(y, Hy) + rho
    return H - rho * (jnp.outer(s, Hy) + jnp.outer(Hy, s)) + c * jnp.outer(s, s), jnp.isfinite(c)
