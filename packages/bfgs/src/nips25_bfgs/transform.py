r"""BFGS with the weak-Wolfe search as an optax ``GradientTransformationExtraArgs``, for users who drive the loop.

One ``update`` call is one BFGS iteration of :func:`nips25_bfgs.bfgs`: direction :math:`d = -B^{-1}g`, the
weak-Wolfe log-bisection search on ``value_fn``, the returned update :math:`\eta d`, then the BFGS update with the
gradient at the new point. The state keeps ``value`` and ``grad`` at the new point, so
``optax.value_and_grad_from_state`` reuses them and each iteration costs only the search's evaluations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from nips25_bfgs.initial_hessian import InitialHessian, initial_hessian
from nips25_bfgs.linesearch import WeakWolfe, weak_wolfe_log_bisection
from nips25_bfgs.solver import FORMS, direction
from nips25_bfgs.update import curvature_ok, direct_update, inverse_update

__all__ = ["BFGSState", "bfgs_transform"]


class BFGSState(NamedTuple):
    """State of :func:`bfgs_transform`.

    Attributes:
        n_iter: iterations done (int32).
        approx: ``(d, d)`` :math:`H = B^{-1}` (inverse form) or :math:`B` (direct form).
        value: :math:`f` at the params after the last update (``inf`` before the first).
        grad: gradient at the params after the last update, shaped like the params.
        eta: last accepted step size (``nan`` if the search failed).
        ls_trials: trial points of the last search.
        unit_step: the last search accepted :math:`\\eta = 1`.
        ls_success: the last search met both weak-Wolfe conditions (otherwise the update was zero).
        n_skipped: BFGS updates skipped because :math:`s^\\top y \\le 0`.
    """

    n_iter: jax.Array
    approx: jax.Array
    value: jax.Array
    grad: Any
    eta: jax.Array
    ls_trials: jax.Array
    unit_step: jax.Array
    ls_success: jax.Array
    n_skipped: jax.Array


def bfgs_transform(
    *, B0: InitialHessian = "identity", line_search: WeakWolfe | None = None, form: str = "inverse"
) -> optax.GradientTransformationExtraArgs:
    r"""BFGS with weak-Wolfe log-bisection steps as an optax transformation (Jin & Mokhtari 2025, Algorithm 1).

    ``update(grads, state, params, *, value, value_fn)`` returns :math:`\eta_t d_t` with
    :math:`d_t = -B_t^{-1}\nabla f(x_t)`; apply it with ``optax.apply_updates``.

    Args:
        B0: ``"identity"``, a positive scalar :math:`c`, a ``(d, d)`` SPD matrix or a callable
            ``flat_params -> (d, d)`` (``"hessian"`` needs the objective: pass ``jax.hessian(f)(x0)`` instead).
        line_search: :class:`WeakWolfe` constants.
        form: ``"inverse"`` or ``"direct"``.

    Returns:
        ``optax.GradientTransformationExtraArgs``; ``update`` needs the keyword arguments ``value`` (:math:`f` at
        ``params``) and ``value_fn`` (the objective, ``params -> scalar``).

    Raises:
        ValueError: unknown ``form``, ``B0="hessian"``, a bad string or scalar ``B0`` (here), a bad matrix ``B0`` (at
            ``init``); ``update`` without ``value``, ``value_fn`` or ``params``.
        TypeError: ``line_search`` not a :class:`WeakWolfe`.

    References:
        Jin & Mokhtari, NeurIPS 2025, arXiv:2507.00361, Algorithm 1.

    Example:
        >>> import jax, jax.numpy as jnp, optax
        >>> f = lambda x: jnp.sum((x - 1.0) ** 2)
        >>> opt = bfgs_transform(B0=2.0)
        >>> x = jnp.zeros(3); state = opt.init(x)
        >>> value_and_grad = optax.value_and_grad_from_state(f)
        >>> value, grad = value_and_grad(x, state=state)
        >>> updates, state = opt.update(grad, state, x, value=value, grad=grad, value_fn=f)
        >>> jnp.allclose(optax.apply_updates(x, updates), 1.0).item()
        True
    """
    ls = WeakWolfe() if line_search is None else line_search
    if not isinstance(ls, WeakWolfe):
        raise TypeError(f"line_search must be a WeakWolfe (see weak_wolfe()), got {type(ls).__name__}")
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    if isinstance(B0, str) and B0 == "hessian":
        raise ValueError('B0="hessian" needs the objective: pass B0=jax.hessian(f)(x0) to bfgs_transform')
    if isinstance(B0, (str, bool, int, float)) or getattr(B0, "ndim", None) == 0:
        initial_hessian(B0, None, jnp.zeros(1))  # validate a string or scalar B0 now, not at init()
    inverse = form == "inverse"

    def init_fn(params: Any) -> BFGSState:
        x, _ = ravel_pytree(params)
        if x.size == 0:
            raise ValueError("params must not be empty")
        B = initial_hessian(B0, None, x)
        eye = jnp.eye(x.shape[0], dtype=x.dtype)
        M = jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(B, lower=True), eye) if inverse else B
        return BFGSState(
            n_iter=jnp.int32(0),
            approx=M,
            value=jnp.asarray(jnp.inf, x.dtype),
            grad=jax.tree.map(jnp.zeros_like, params),
            eta=jnp.asarray(jnp.nan, x.dtype),
            ls_trials=jnp.int32(0),
            unit_step=jnp.asarray(False),
            ls_success=jnp.asarray(False),
            n_skipped=jnp.int32(0),
        )

    def update_fn(
        updates: Any,
        state: BFGSState,
        params: Any = None,
        *,
        value: jax.Array | None = None,
        value_fn: Callable[[Any], jax.Array] | None = None,
        **extra_args: Any,
    ) -> tuple[Any, BFGSState]:
        if params is None or value is None or value_fn is None:
            raise ValueError("bfgs_transform.update needs params, value= and value_fn= (see the example)")
        x, unravel = ravel_pytree(params)
        g, _ = ravel_pytree(updates)
        M = state.approx
        d = direction(M, g, inverse=inverse)
        value_and_grad = jax.value_and_grad(value_fn)

        def phi(eta: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
            f_new, grad_new = value_and_grad(unravel(x + eta * d))
            g_new = ravel_pytree(grad_new)[0]
            return f_new, jnp.vdot(g_new, d), g_new

        res = weak_wolfe_log_bisection(phi, value, jnp.vdot(g, d), line_search=ls)
        ok = res.success
        s = jnp.where(ok, res.eta * d, jnp.zeros_like(d))
        g_new = jnp.where(ok, res.aux, g)
        y = g_new - g
        pair_ok = ok & curvature_ok(s, y)
        M_upd = inverse_update(M, s, y) if inverse else direct_update(M, s, y)
        new_state = BFGSState(
            n_iter=state.n_iter + ok.astype(jnp.int32),
            approx=jnp.where(pair_ok, M_upd, M),
            value=jnp.where(ok, res.value, value),
            grad=unravel(g_new),
            eta=jnp.where(ok, res.eta, jnp.nan),
            ls_trials=res.n_trials,
            unit_step=ok & (res.eta == 1.0),
            ls_success=ok,
            n_skipped=state.n_skipped + (ok & ~pair_ok).astype(jnp.int32),
        )
        return unravel(s), new_state

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)
