r"""BFGS and the weak-Wolfe search as composable optax transformations, for users who drive the loop themselves.

Two pieces, chained the way ``optax.lbfgs`` chains ``scale_by_lbfgs`` and ``scale_by_zoom_linesearch``:

* :func:`scale_by_bfgs` turns the gradient into the preconditioned gradient :math:`H_t g_t` (:math:`H = B^{-1}`),
  after the BFGS update with the pair :math:`s = x_t - x_{t-1}`, :math:`y = g_t - g_{t-1}` of the previous call;
* :func:`scale_by_weak_wolfe_linesearch` scales a descent direction :math:`d` by a step :math:`\eta` meeting both
  weak-Wolfe conditions (log-bisection), and keeps ``value`` and ``grad`` at the new point in its state, so
  ``optax.value_and_grad_from_state`` reuses them.

:func:`bfgs_transform` is ``optax.chain(scale_by_bfgs(...), optax.scale(-1.0), scale_by_weak_wolfe_linesearch(...))``:
one ``update`` is one BFGS iteration of :func:`nips25_bfgs.bfgs`, with the same iterates. The search also composes
with other directions (``optax.chain(optax.scale(-1.0), scale_by_weak_wolfe_linesearch())`` is gradient descent
with weak-Wolfe steps).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from nips25_bfgs.checks import check_scalar_output
from nips25_bfgs.initial_hessian import InitialHessian, initial_hessian
from nips25_bfgs.iteration import direction, inverse_of
from nips25_bfgs.linesearch import WeakWolfe, weak_wolfe_log_bisection
from nips25_bfgs.solver import FORMS
from nips25_bfgs.update import curvature_ok, direct_update, inverse_update

__all__ = [
    "ScaleByBFGSState",
    "WeakWolfeLinesearchState",
    "bfgs_transform",
    "scale_by_bfgs",
    "scale_by_weak_wolfe_linesearch",
]


class ScaleByBFGSState(NamedTuple):
    """State of :func:`scale_by_bfgs`.

    Attributes:
        n_calls: calls so far (int32).
        approx: ``(d, d)`` :math:`H = B^{-1}` (inverse form) or :math:`B` (direct form) after the last update.
        params: ``(d,)`` flattened params of the last call (:math:`x_{t-1}`).
        updates: ``(d,)`` flattened gradient of the last call (:math:`g_{t-1}`).
        n_skipped: updates skipped because :math:`s^\\top y \\le 0` (or non-finite) while :math:`s \\ne 0`.
    """

    n_calls: jax.Array
    approx: jax.Array
    params: jax.Array
    updates: jax.Array
    n_skipped: jax.Array


class WeakWolfeLinesearchState(NamedTuple):
    """State of :func:`scale_by_weak_wolfe_linesearch` (``value``/``grad`` for ``optax.value_and_grad_from_state``).

    Attributes:
        value: :math:`f` at the params after the last update (``inf`` before the first).
        grad: gradient there, shaped like the params.
        eta: last accepted step size (``nan`` if the search failed).
        ls_trials: trial points of the last search (int32).
        unit_step: the last search accepted :math:`\\eta = 1`.
        ls_success: the last search met both weak-Wolfe conditions (otherwise the update was zero).
        n_iter: successful searches so far (int32).
    """

    value: jax.Array
    grad: Any
    eta: jax.Array
    ls_trials: jax.Array
    unit_step: jax.Array
    ls_success: jax.Array
    n_iter: jax.Array


def _check_line_search(line_search: WeakWolfe | None) -> WeakWolfe:
    ls = WeakWolfe() if line_search is None else line_search
    if not isinstance(ls, WeakWolfe):
        raise TypeError(f"line_search must be a WeakWolfe (see weak_wolfe()), got {type(ls).__name__}")
    return ls


def scale_by_weak_wolfe_linesearch(
    line_search: WeakWolfe | None = None,
) -> optax.GradientTransformationExtraArgs:
    r"""Scale a descent direction by a weak-Wolfe step found by log-bisection (Jin & Mokhtari 2025, Sec. 2).

    ``update(updates, state, params, *, value, grad, value_fn)`` takes the direction :math:`d` (``updates``, a
    descent direction: :math:`\nabla f^\top d < 0`) and returns :math:`\eta d` with
    :math:`f(x + \eta d) \le f(x) + \alpha\eta\nabla f^\top d` and
    :math:`\nabla f(x + \eta d)^\top d \ge \beta\nabla f^\top d`. On failure (no step within ``max_trials``, or
    :math:`d` not a descent direction) it returns zeros and ``ls_success = False``.

    Args:
        line_search: :class:`WeakWolfe` constants (default ``alpha=1e-4, beta=0.9, eta0=1, max_trials=60``).

    Returns:
        ``optax.GradientTransformationExtraArgs`` whose state is a :class:`WeakWolfeLinesearchState`.

    Raises:
        TypeError: ``line_search`` not a :class:`WeakWolfe`.
        ValueError: ``update`` without ``params``, ``value``, ``grad`` or ``value_fn``; ``value_fn`` not returning a
            real scalar.

    References:
        Jin & Mokhtari, NeurIPS 2025, arXiv:2507.00361, Sec. 2; Jin, Jiang & Mokhtari, NeurIPS 2024,
        arXiv:2404.16731 (log-bisection).

    Example:
        >>> import jax, jax.numpy as jnp, optax
        >>> f = lambda x: jnp.sum((x - 3.0) ** 2)
        >>> opt = optax.chain(optax.scale(-0.01), scale_by_weak_wolfe_linesearch())  # gradient descent, eta * 0.01
        >>> x = jnp.zeros(2); state = opt.init(x); g = jax.grad(f)(x)
        >>> updates, state = opt.update(g, state, x, value=f(x), grad=g, value_fn=f)
        >>> float(optax.tree.get(state, "eta")), [round(v, 6) for v in optax.apply_updates(x, updates).tolist()]
        (8.0, [0.48, 0.48])
    """
    ls = _check_line_search(line_search)

    def init_fn(params: Any) -> WeakWolfeLinesearchState:
        x, _ = ravel_pytree(params)
        if x.size == 0:
            raise ValueError("params must not be empty")
        return WeakWolfeLinesearchState(
            value=jnp.asarray(jnp.inf, x.dtype),
            grad=jax.tree.map(jnp.zeros_like, params),
            eta=jnp.asarray(jnp.nan, x.dtype),
            ls_trials=jnp.int32(0),
            unit_step=jnp.asarray(False),
            ls_success=jnp.asarray(False),
            n_iter=jnp.int32(0),
        )

    def update_fn(
        updates: Any,
        state: WeakWolfeLinesearchState,
        params: Any = None,
        *,
        value: jax.Array | None = None,
        grad: Any = None,
        value_fn: Callable[..., jax.Array] | None = None,
        **extra_args: Any,
    ) -> tuple[Any, WeakWolfeLinesearchState]:
        if params is None or value is None or grad is None or value_fn is None:
            raise ValueError("scale_by_weak_wolfe_linesearch.update needs params, value=, grad= and value_fn=")
        x, unravel = ravel_pytree(params)
        d, _ = ravel_pytree(updates)
        g, _ = ravel_pytree(grad)
        check_scalar_output(lambda p: value_fn(p, **extra_args), params, "value_fn")
        value_and_grad = jax.value_and_grad(lambda p: value_fn(p, **extra_args))

        def phi(eta: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
            f_new, grad_new = value_and_grad(unravel(x + eta * d))
            g_new = ravel_pytree(grad_new)[0]
            return f_new, jnp.vdot(g_new, d), g_new

        res = weak_wolfe_log_bisection(phi, value, jnp.vdot(g, d), line_search=ls)
        ok = res.success
        new_state = WeakWolfeLinesearchState(
            value=jnp.where(ok, res.value, value),
            grad=unravel(jnp.where(ok, res.aux, g)),
            eta=jnp.where(ok, res.eta, jnp.nan),
            ls_trials=res.n_trials,
            unit_step=ok & (res.eta == 1.0),
            ls_success=ok,
            n_iter=state.n_iter + ok.astype(jnp.int32),
        )
        return unravel(jnp.where(ok, res.eta * d, jnp.zeros_like(d))), new_state

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def scale_by_bfgs(*, B0: InitialHessian = "identity", form: str = "inverse") -> optax.GradientTransformation:
    r"""Precondition the gradient by the BFGS inverse Hessian approximation, :math:`g_t \mapsto H_t g_t` (Eq. (3)).

    At call :math:`t \ge 1` the approximation is first updated with :math:`s = x_t - x_{t-1}` and
    :math:`y = g_t - g_{t-1}` from the params and gradients of the previous call (skipped, and counted, when
    :math:`s^\top y \le 0` while :math:`s \ne 0`). Follow it with ``optax.scale(-1.0)`` and a line search, as
    :func:`bfgs_transform` does. Like ``optax.scale_by_lbfgs`` it needs ``params``.

    Args:
        B0: ``"identity"``, a positive scalar :math:`c`, a ``(d, d)`` SPD matrix or a callable
            ``flat_params -> (d, d)`` (``"hessian"`` needs the objective: pass ``jax.hessian(f)(x0)`` instead).
        form: ``"inverse"`` (update :math:`H`, :math:`O(d^2)`) or ``"direct"`` (update :math:`B`, Cholesky solve).

    Returns:
        ``optax.GradientTransformation`` whose state is a :class:`ScaleByBFGSState`.

    Raises:
        ValueError: unknown ``form``, ``B0="hessian"``, a bad string or scalar ``B0`` (here), a bad matrix ``B0``
            (at ``init``); ``update`` without ``params``.

    References:
        Jin & Mokhtari, NeurIPS 2025, arXiv:2507.00361, Eq. (3) and Algorithm 1.

    Example:
        >>> import jax.numpy as jnp
        >>> opt = scale_by_bfgs(B0=4.0)
        >>> x = jnp.zeros(2); state = opt.init(x)
        >>> opt.update(jnp.array([1.0, -4.0]), state, x)[0].tolist()  # H_0 g = g / 4
        [0.25, -1.0]
    """
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    if isinstance(B0, str) and B0 == "hessian":
        raise ValueError('B0="hessian" needs the objective: pass B0=jax.hessian(f)(x0) instead')
    if isinstance(B0, (str, bool, int, float)) or getattr(B0, "ndim", None) == 0:
        initial_hessian(B0, None, jnp.zeros(1))  # validate a string or scalar B0 now, not at init()
    inverse = form == "inverse"

    def init_fn(params: Any) -> ScaleByBFGSState:
        x, _ = ravel_pytree(params)
        if x.size == 0:
            raise ValueError("params must not be empty")
        B = initial_hessian(B0, None, x)
        return ScaleByBFGSState(
            n_calls=jnp.int32(0),
            approx=inverse_of(B) if inverse else B,
            params=x,
            updates=jnp.zeros_like(x),
            n_skipped=jnp.int32(0),
        )

    def update_fn(updates: Any, state: ScaleByBFGSState, params: Any = None) -> tuple[Any, ScaleByBFGSState]:
        if params is None:
            raise ValueError("scale_by_bfgs.update needs params")
        x, _ = ravel_pytree(params)
        g, unravel = ravel_pytree(updates)
        s, y = x - state.params, g - state.updates
        moved = (state.n_calls > 0) & jnp.any(s != 0)
        pair_ok = moved & curvature_ok(s, y)
        M = state.approx
        M = jnp.where(pair_ok, inverse_update(M, s, y) if inverse else direct_update(M, s, y), M)
        new_state = ScaleByBFGSState(
            n_calls=state.n_calls + 1,
            approx=M,
            params=x,
            updates=g,
            n_skipped=state.n_skipped + (moved & ~pair_ok).astype(jnp.int32),
        )
        return unravel(-direction(M, g, inverse=inverse)), new_state

    return optax.GradientTransformation(init_fn, update_fn)


def bfgs_transform(
    *, B0: InitialHessian = "identity", line_search: WeakWolfe | None = None, form: str = "inverse"
) -> optax.GradientTransformationExtraArgs:
    r"""BFGS with weak-Wolfe log-bisection steps as one optax transformation (Jin & Mokhtari 2025, Algorithm 1).

    ``optax.chain(scale_by_bfgs(B0=B0, form=form), optax.scale(-1.0), scale_by_weak_wolfe_linesearch(line_search))``:
    ``update(grads, state, params, *, value, grad, value_fn)`` returns :math:`\eta_t d_t` with
    :math:`d_t = -B_t^{-1}\nabla f(x_t)`; apply it with ``optax.apply_updates``. The iterates equal those of
    :func:`nips25_bfgs.bfgs` with the same ``B0``.

    Args:
        B0: see :func:`scale_by_bfgs`.
        line_search: :class:`WeakWolfe` constants.
        form: ``"inverse"`` or ``"direct"``.

    Returns:
        ``optax.GradientTransformationExtraArgs``; ``update`` needs ``params`` and the keyword arguments ``value``
        (:math:`f` at ``params``), ``grad`` and ``value_fn`` (the objective, ``params -> scalar``). Read the search
        diagnostics with ``optax.tree.get(state, "eta")`` (also ``"unit_step"``, ``"ls_trials"``, ``"n_iter"``).

    Raises:
        ValueError: as :func:`scale_by_bfgs` and :func:`scale_by_weak_wolfe_linesearch`.
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
    ls = _check_line_search(line_search)
    return optax.chain(scale_by_bfgs(B0=B0, form=form), optax.scale(-1.0), scale_by_weak_wolfe_linesearch(ls))
