r"""The potential of the Hessian approximation, the analysis object of the convergence theory (Jin & Mokhtari 2025).

The theory measures :math:`B_t` in the metric of the Hessian at the optimum, :math:`H_* = \nabla^2 f(x_*)`, through
the weighted matrix :math:`\tilde B = H_*^{-1/2} B H_*^{-1/2}` and the potential

.. math::
    \Psi(A) = \operatorname{tr}(A) - d - \log\det(A) = \sum_i (\lambda_i - 1 - \log\lambda_i) \ge 0,

which vanishes only at :math:`A = I`. :math:`\Psi(\tilde B)` is invariant under a linear change of variables.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from nips25_bfgs.checks import check_square, is_concrete

__all__ = ["psi", "psi_weighted", "weighted_matrix"]


def psi(A: jax.Array) -> jax.Array:
    r"""Potential :math:`\Psi(A) = \operatorname{tr} A - d - \log\det A` of a symmetric positive-definite matrix.

    Args:
        A: ``(d, d)`` symmetric positive-definite.

    Returns:
        Scalar :math:`\Psi(A) \ge 0`; ``nan`` when ``A`` is not positive definite under ``jit``.

    Raises:
        ValueError: ``A`` not a square ``(d, d)`` array; on concrete inputs also NaN/inf or not positive definite.

    References:
        Jin & Mokhtari, NeurIPS 2025, arXiv:2507.00361 (potential function); Byrd & Nocedal (1989).

    Example:
        >>> import jax.numpy as jnp
        >>> float(psi(jnp.eye(3)))
        0.0
    """
    check_square(A, "A")
    if is_concrete(A):
        try:
            np.linalg.cholesky(0.5 * (np.asarray(A, np.float64) + np.asarray(A, np.float64).T))
        except np.linalg.LinAlgError:
            raise ValueError("A must be positive definite (Cholesky failed)") from None
    L = jnp.linalg.cholesky(A)
    logdet = 2.0 * jnp.sum(jnp.log(jnp.diagonal(L)))
    return jnp.trace(A) - A.shape[-1] - logdet


def weighted_matrix(B: jax.Array, H_star: jax.Array) -> jax.Array:
    r"""The weighted approximation :math:`\tilde B = L^{-1} B L^{-\top}` with :math:`H_* = L L^\top` (Cholesky).

    :math:`\tilde B` is similar to :math:`H_*^{-1/2} B H_*^{-1/2}`, so both have the same trace, determinant and
    potential; the Cholesky factor replaces the symmetric square root.

    Args:
        B: ``(d, d)`` symmetric positive-definite Hessian approximation.
        H_star: ``(d, d)`` symmetric positive-definite Hessian at the optimum.

    Returns:
        ``(d, d)`` the weighted matrix.

    Example:
        >>> import jax.numpy as jnp
        >>> weighted_matrix(3.0 * jnp.eye(2), 4.0 * jnp.eye(2)).tolist()
        [[0.75, 0.0], [0.0, 0.75]]
    """
    L = jnp.linalg.cholesky(H_star)
    left = jax.scipy.linalg.solve_triangular(L, B, lower=True)
    return jax.scipy.linalg.solve_triangular(L, left.T, lower=True).T


def psi_weighted(M: jax.Array, H_star: jax.Array, *, inverse: bool = False) -> jax.Array:
    r"""Potential :math:`\Psi(\tilde B)` of the weighted approximation, from :math:`B` or from :math:`H = B^{-1}`.

    For the inverse form, :math:`\tilde B^{-1} = L^\top H L` and :math:`\Psi(\tilde B) = \operatorname{tr}
    (\tilde B) - d + \log\det(\tilde B^{-1})` with :math:`\tilde B = (L^\top H L)^{-1}`.

    Args:
        M: ``(d, d)`` the approximation :math:`B`, or :math:`H = B^{-1}` when ``inverse`` is true.
        H_star: ``(d, d)`` symmetric positive-definite Hessian at the optimum.
        inverse: whether ``M`` is the inverse approximation.

    Returns:
        Scalar :math:`\Psi(\tilde B)`.
    """
    if not inverse:
        return psi(weighted_matrix(M, H_star))
    L = jnp.linalg.cholesky(H_star)
    C = L.T @ M @ L
    C = 0.5 * (C + C.T)
    R = jnp.linalg.cholesky(C)
    R_inv = jax.scipy.linalg.solve_triangular(R, jnp.eye(C.shape[0], dtype=C.dtype), lower=True)
    return jnp.sum(R_inv**2) - C.shape[0] + 2.0 * jnp.sum(jnp.log(jnp.diagonal(R)))
