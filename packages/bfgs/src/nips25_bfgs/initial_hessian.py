r"""The initial Hessian approximation :math:`B_0`: any symmetric positive-definite matrix (Jin & Mokhtari 2025).

The theory allows any positive-definite :math:`B_0`; its constants depend on :math:`B_0` only through the
affine-invariant potential :math:`\Psi(H_*^{-1/2} B_0 H_*^{-1/2})`. With :math:`B_0 = \nabla^2 f(x_0)` the whole
iteration is invariant under :math:`x = Ay`; with :math:`B_0 = cI` it is not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import Partial

from nips25_bfgs.checks import check_matrix_spd, check_positive, check_scalar_output, is_concrete

__all__ = ["InitialHessian", "initial_hessian"]

InitialHessian = str | float | int | jax.Array | Callable[[jax.Array], jax.Array]
"""``"identity"``, ``"hessian"``, a positive scalar ``c`` (:math:`cI`), a ``(d, d)`` SPD matrix, or ``x0 -> B0``."""


@jax.jit
def _hessian_at(fun: Partial, x0: jax.Array) -> jax.Array:
    check_scalar_output(fun, x0)  # at trace time: a vector-valued fun is named, not JAX's Hessian error
    H = jax.hessian(fun)(x0)
    return (0.5 * (H + H.T)).astype(x0.dtype)


def identity_scale(B0: Any) -> float | None:
    """``c`` when ``B0`` is :math:`cI`: ``"identity"`` (``c = 1``) or a positive scalar (checked); else ``None``."""
    if isinstance(B0, str) and B0 == "identity":
        return 1.0
    if isinstance(B0, (int, float, np.integer, np.floating)) and not isinstance(B0, bool):
        return check_positive(B0, "B0")
    return None


def initial_hessian(B0: Any, fun: Callable[[jax.Array], jax.Array] | None, x0: jax.Array) -> jax.Array:
    r"""Resolve a :math:`B_0` specification to a ``(d, d)`` symmetric positive-definite matrix.

    Args:
        B0: ``"identity"`` (:math:`I`), ``"hessian"`` (:math:`\nabla^2 f(x_0)` by automatic differentiation), a
            positive scalar :math:`c` (:math:`cI`), a ``(d, d)`` symmetric positive-definite array, or a callable
            ``x0 -> (d, d)`` array.
        fun: the objective, ``(d,) -> ()``; needed only for ``"hessian"``.
        x0: ``(d,)`` the starting point.

    Returns:
        ``(d, d)`` matrix in the dtype of ``x0``.

    Raises:
        ValueError: unknown string, non-positive scalar, wrong shape, NaN/inf, asymmetric or not positive definite.
        TypeError: ``B0`` of an unsupported type.

    Example:
        >>> import jax.numpy as jnp
        >>> initial_hessian(2.0, None, jnp.zeros(2)).tolist()
        [[2.0, 0.0], [0.0, 2.0]]
    """
    d = x0.shape[0]
    dtype = x0.dtype
    if isinstance(B0, str):
        if B0 == "identity":
            return jnp.eye(d, dtype=dtype)
        if B0 == "hessian":
            if fun is None:
                raise ValueError('B0="hessian" needs the objective; pass a (d, d) matrix instead')
            H = _hessian_at(fun if isinstance(fun, Partial) else Partial(fun), x0)
            if is_concrete(H):
                check_matrix_spd(H, 'B0="hessian" (the Hessian at x0)', d)
            return H
        raise ValueError(
            f'B0 must be "identity", "hessian", a positive scalar, a (d, d) matrix or a callable, got {B0!r}'
        )
    if isinstance(B0, (bool,)):
        raise TypeError(f"B0 must not be a bool, got {B0!r}")
    if isinstance(B0, (int, float)):
        c = check_positive(B0, "B0")
        return c * jnp.eye(d, dtype=dtype)
    M = B0(x0) if callable(B0) and not hasattr(B0, "shape") else B0
    if not hasattr(M, "shape"):
        raise TypeError(
            f"B0 must be a string, a positive scalar, a (d, d) array or a callable, got {type(B0).__name__}"
        )
    M = jnp.asarray(M, dtype=dtype)
    if M.ndim == 0:
        if is_concrete(M):
            check_positive(float(M), "B0")
        return M * jnp.eye(d, dtype=dtype)
    check_matrix_spd(M, "B0", d)
    return 0.5 * (M + M.T)  # the checked asymmetry (<= 1e-8 relative) removed: the updates keep exact symmetry
