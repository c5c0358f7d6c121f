r"""BFGS with weak-Wolfe steps and an opt-in per-iteration history (Jin & Mokhtari 2025, Alg. 1) in one while loop.

Iteration: :math:`d_t = -B_t^{-1} g_t`, :math:`x_{t+1} = x_t + \eta_t d_t` with :math:`\eta_t` from the weak-Wolfe
log-bisection search, then the BFGS update of :math:`B_t` (or of :math:`H_t = B_t^{-1}`) with
:math:`s_t = x_{t+1} - x_t`, :math:`y_t = g_{t+1} - g_t`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import Partial

from nips25_bfgs.checks import (
    as_float_array,
    check_matrix_spd,
    check_positive,
    check_scalar_output,
    check_vector,
    is_concrete,
)
from nips25_bfgs.initial_hessian import InitialHessian, identity_scale, initial_hessian
from nips25_bfgs.iteration import Iterate, bfgs_iteration, direction, inverse_of, inverse_of_scaled_identity
from nips25_bfgs.linesearch import WeakWolfe
from nips25_bfgs.potential import psi_weighted

__all__ = [
    "CONVERGED",
    "F_STAR_TOO_HIGH",
    "LINE_SEARCH_FAILED",
    "MAX_ITER",
    "NON_FINITE",
    "STATUS_MESSAGES",
    "BFGSResult",
    "History",
    "bfgs",
    "stop_value",
]

RUNNING = -1
CONVERGED = 0
MAX_ITER = 1
LINE_SEARCH_FAILED = 2
NON_FINITE = 3
F_STAR_TOO_HIGH = 4
STATUS_MESSAGES = {
    CONVERGED: "converged: the stopping quantity fell to tol",
    MAX_ITER: "max_iter reached",
    LINE_SEARCH_FAILED: "the weak-Wolfe search found no step within max_trials (last finite iterate kept)",
    NON_FINITE: "non-finite value, gradient or direction (last finite iterate kept)",
    F_STAR_TOO_HIGH: "f(x) < f_star - tol: the given f_star is not the optimal value (it is too high)",
}
STOPS = ("newton_decrement", "f_gap", "grad_norm")
FORMS = ("inverse", "direct")


class History(NamedTuple):
    """Per-iteration record, fixed length ``max_iter + 1`` (entry ``t`` belongs to iterate :math:`x_t`).

    Attributes:
        valid: ``(T,)`` bool, iterate ``t`` was reached (``t <= n_iter``).
        x: ``(T, d)`` iterates :math:`x_t` (flattened when ``x0`` is a pytree).
        f: ``(T,)`` :math:`f(x_t)`.
        gap: ``(T,)`` :math:`f(x_t) - f_*` (``nan`` without ``f_star``).
        grad_norm: ``(T,)`` :math:`\\|g_t\\|_2` (not affine invariant).
        newton_decrement: ``(T,)`` :math:`\\lambda_t = (g_t^\\top B_t^{-1} g_t)^{1/2}` (affine invariant).
        potential: ``(T,)`` :math:`\\Psi(H_*^{-1/2} B_t H_*^{-1/2})` (``nan`` without ``hess_star``).
        eta: ``(T,)`` step size taken from :math:`x_t` (``nan`` where no step was taken).
        ls_trials: ``(T,)`` int32, trial points of the search from :math:`x_t`.
        unit_step: ``(T,)`` bool, the search accepted :math:`\\eta_t = 1`.
    """

    valid: jax.Array
    x: jax.Array
    f: jax.Array
    gap: jax.Array
    grad_norm: jax.Array
    newton_decrement: jax.Array
    potential: jax.Array
    eta: jax.Array
    ls_trials: jax.Array
    unit_step: jax.Array


class BFGSResult(NamedTuple):
    """Result of :func:`bfgs` (a pytree: jit, vmap and ``jax.device_get`` work on it).

    Attributes:
        x: the final iterate, shaped like ``x0``.
        f: :math:`f(x)`.
        grad: :math:`\\nabla f(x)`, flattened ``(d,)``.
        n_iter: BFGS iterations (accepted steps).
        n_fev: function evaluations (1 + every trial point).
        n_gev: gradient evaluations (equal to ``n_fev``: value and gradient are evaluated together).
        status: one of ``CONVERGED``, ``MAX_ITER``, ``LINE_SEARCH_FAILED``, ``NON_FINITE``, ``F_STAR_TOO_HIGH``
            (an iterate reached :math:`f(x) < f_* - \text{tol}`, so ``f_star`` is wrong; see ``STATUS_MESSAGES``).
        n_skipped: updates skipped because :math:`s^\\top y \\le 0` or non-finite (zero in exact arithmetic).
        approx: ``(d, d)`` the final :math:`H_t = B_t^{-1}` (``form="inverse"``) or :math:`B_t` (``form="direct"``).
        history: the :class:`History` with ``history=True``, else ``None``.
    """

    x: Any
    f: jax.Array
    grad: jax.Array
    n_iter: jax.Array
    n_fev: jax.Array
    n_gev: jax.Array
    status: jax.Array
    n_skipped: jax.Array
    approx: jax.Array
    history: History | None


@dataclass(frozen=True)
class _Ravelled:
    """Calls a pytree objective on a flat vector (hashable, so jit can cache on it)."""

    treedef: Any
    shapes: tuple[tuple[int, ...], ...]

    def unravel(self, z: jax.Array) -> Any:
        sizes = [math.prod(s) for s in self.shapes]
        pieces = jnp.split(z, np.cumsum(sizes)[:-1]) if len(sizes) > 1 else [z]
        return jax.tree.unflatten(self.treedef, [p.reshape(s) for p, s in zip(pieces, self.shapes)])

    def __call__(self, fun: Callable[[Any], jax.Array], z: jax.Array) -> jax.Array:
        return fun(self.unravel(z))


def as_partial(fun: Callable[..., jax.Array]) -> Partial:
    """Wrap ``fun`` in ``jax.tree_util.Partial`` so jitted solvers cache on the function, not on each call."""
    if not callable(fun):
        raise TypeError(f"fun must be callable, got {type(fun).__name__}")
    return fun if isinstance(fun, Partial) else Partial(fun)


def flatten_problem(fun: Callable[[Any], jax.Array], x0: Any) -> tuple[Partial, jax.Array, _Ravelled | None]:
    """Return ``(flat objective, flat x0, unraveller or None)``; arrays of shape ``(d,)`` pass through."""
    fun_p = as_partial(fun)
    x0 = as_float_array(x0, "x0")
    if hasattr(x0, "shape"):
        if x0.ndim != 1:
            raise ValueError(f"x0 must have shape (d,) (or be a pytree of arrays), got shape {tuple(x0.shape)}")
        return fun_p, x0, None
    leaves, treedef = jax.tree.flatten(x0)
    if not leaves:
        raise ValueError("x0 must not be empty")
    for i, leaf in enumerate(leaves):
        if not hasattr(leaf, "shape"):
            raise TypeError(f"x0 leaf {i} must be an array, got {type(leaf).__name__}")
    rav = _Ravelled(treedef, tuple(tuple(leaf.shape) for leaf in leaves))
    dtype = jnp.result_type(*leaves)
    flat = jnp.concatenate([jnp.ravel(leaf).astype(dtype) for leaf in leaves])
    return Partial(rav, fun_p), flat, rav


@functools.partial(jax.jit, static_argnames=("d",))
def _scaled_eye(c: jax.Array, d: int) -> jax.Array:
    return c * jnp.eye(d, dtype=c.dtype)


def stop_value(stop: str, f: jax.Array, g: jax.Array, d: jax.Array, f_star: Any) -> jax.Array:
    r"""The stopping quantity: :math:`\lambda^2/2 = -g^\top d / 2` (``newton_decrement``), :math:`f - f_*`
    (``f_gap``) or :math:`\|g\|_2` (``grad_norm``)."""
    if stop == "newton_decrement":
        return -0.5 * jnp.vdot(g, d)
    if stop == "f_gap":
        return f - f_star
    return jnp.linalg.norm(g)


def _empty_history(T: int, d: int, dtype: Any) -> History:
    full = functools.partial(jnp.full, (T,), jnp.nan, dtype)
    return History(
        valid=jnp.zeros((T,), bool),
        x=jnp.full((T, d), jnp.nan, dtype),
        f=full(),
        gap=full(),
        grad_norm=full(),
        newton_decrement=full(),
        potential=full(),
        eta=full(),
        ls_trials=jnp.zeros((T,), jnp.int32),
        unit_step=jnp.zeros((T,), bool),
    )


def _record(
    h: History, t: jax.Array, ok: jax.Array, it: Iterate, f_star: Any, hess_star: Any, *, inverse: bool
) -> History:
    """Write iterate ``t`` (only the entries of a reached iterate: ``ok``)."""
    nan = jnp.asarray(jnp.nan, it.x.dtype)
    gap = nan if f_star is None else it.f - f_star
    pot = nan if hess_star is None else psi_weighted(it.M, hess_star, inverse=inverse)
    dec = jnp.sqrt(jnp.maximum(-jnp.vdot(it.g, it.d), 0.0))
    pick = functools.partial(jnp.where, ok)
    return h._replace(
        valid=h.valid.at[t].set(ok),
        x=h.x.at[t].set(pick(it.x, jnp.nan)),
        f=h.f.at[t].set(pick(it.f, nan)),
        gap=h.gap.at[t].set(pick(gap, nan)),
        grad_norm=h.grad_norm.at[t].set(pick(jnp.linalg.norm(it.g), nan)),
        newton_decrement=h.newton_decrement.at[t].set(pick(dec, nan)),
        potential=h.potential.at[t].set(pick(pot, nan)),
    )


@functools.partial(jax.jit, static_argnames=("line_search", "max_iter", "form", "stop", "history"))
def _solve(
    fun: Partial,
    x0: jax.Array,
    B0: jax.Array,
    b0_scale: jax.Array,
    tol: jax.Array,
    f_star: jax.Array | None,
    hess_star: jax.Array | None,
    *,
    line_search: WeakWolfe,
    max_iter: int,
    form: str,
    stop: str,
    history: bool,
) -> BFGSResult:
    check_scalar_output(fun, x0)  # at trace time only: the compiled solve is cached per objective and shape
    inverse = form == "inverse"
    value_and_grad = jax.value_and_grad(lambda z: (fun(z), None), has_aux=True)
    (f0, _), g0 = value_and_grad(x0)
    if inverse:  # B0 = c I (b0_scale = c, not nan): H0 without the O(d^3) Cholesky inverse, bit for bit the same

        def start(M: jax.Array) -> tuple[jax.Array, jax.Array]:
            return M, direction(M, g0, inverse=True)

        general = lambda B: start(inverse_of(B))  # noqa: E731
        scaled = lambda _: start(inverse_of_scaled_identity(b0_scale, x0.shape[0]))  # noqa: E731
        M0, d0 = jax.lax.cond(jnp.isnan(b0_scale), general, scaled, B0)
    else:
        M0, d0 = B0, direction(B0, g0, inverse=False)
    it0 = Iterate(x=x0, f=f0, g=g0, M=M0, d=d0, aux=None)
    hist = None
    if history:
        hist = _empty_history(max_iter + 1, x0.shape[0], x0.dtype)
        hist = _record(hist, jnp.int32(0), jnp.asarray(True), it0, f_star, hess_star, inverse=inverse)
    finite0 = jnp.isfinite(f0) & jnp.all(jnp.isfinite(g0)) & jnp.all(jnp.isfinite(it0.d))
    status0 = jnp.where(finite0, RUNNING, NON_FINITE)
    if f_star is not None:  # x0 already below f_star - tol: f_star is wrong, nothing to iterate
        status0 = jnp.where(finite0 & (f0 - f_star < -tol), F_STAR_TOO_HIGH, status0)
    status0 = status0.astype(jnp.int32)
    carry0 = (jnp.int32(0), it0, jnp.int32(1), status0, jnp.int32(0), hist)

    def cond(carry: tuple[Any, ...]) -> jax.Array:
        t, it, _, status, _, _ = carry
        return (status == RUNNING) & ~(stop_value(stop, it.f, it.g, it.d, f_star) <= tol) & (t < max_iter)

    def body(carry: tuple[Any, ...]) -> tuple[Any, ...]:
        t, it, n_fev, status, n_skipped, h = carry
        nxt, info = bfgs_iteration(value_and_grad, it, line_search=line_search, inverse=inverse)
        ok = info.success
        if h is not None:
            h = h._replace(
                eta=h.eta.at[t].set(jnp.where(ok, info.eta, jnp.nan)),
                ls_trials=h.ls_trials.at[t].set(info.n_trials),
                unit_step=h.unit_step.at[t].set(ok & (info.eta == 1.0)),
            )
            h = _record(h, jnp.minimum(t + 1, max_iter), ok, nxt, f_star, hess_star, inverse=inverse)
        status = jnp.where(ok, jnp.where(info.finite, RUNNING, NON_FINITE), LINE_SEARCH_FAILED).astype(jnp.int32)
        return (
            t + ok.astype(jnp.int32),
            nxt,
            n_fev + info.n_trials,
            status,
            n_skipped + info.skipped.astype(jnp.int32),
            h,
        )

    t, it, n_fev, status, n_skipped, hist = jax.lax.while_loop(cond, body, carry0)
    done = stop_value(stop, it.f, it.g, it.d, f_star) <= tol
    status = jnp.where(status == RUNNING, jnp.where(done, CONVERGED, MAX_ITER), status)
    if f_star is not None:
        status = jnp.where(it.f - f_star < -tol, F_STAR_TOO_HIGH, status)
    status = status.astype(jnp.int32)
    return BFGSResult(
        x=it.x, f=it.f, grad=it.g, n_iter=t, n_fev=n_fev, n_gev=n_fev, status=status, n_skipped=n_skipped,
        approx=it.M, history=hist,
    )  # fmt: skip


def bfgs(
    fun: Callable[[Any], jax.Array],
    x0: Any,
    *,
    B0: InitialHessian = "identity",
    line_search: WeakWolfe | None = None,
    max_iter: int = 500,
    tol: float = 1e-10,
    stop: str = "auto",
    f_star: float | jax.Array | None = None,
    hess_star: jax.Array | None = None,
    form: str = "inverse",
    history: bool = False,
) -> BFGSResult:
    r"""Minimise a smooth convex ``fun`` by BFGS with weak-Wolfe log-bisection steps (Jin & Mokhtari 2025, Alg. 1).

    .. math::
        d_t = -B_t^{-1} g_t,\quad x_{t+1} = x_t + \eta_t d_t,\quad
        B_{t+1} = B_t - \frac{B_t s_t s_t^\top B_t}{s_t^\top B_t s_t} + \frac{y_t y_t^\top}{s_t^\top y_t},

    with :math:`\eta_t` satisfying both weak-Wolfe conditions (first trial :math:`\eta = 1`). For a strictly convex,
    strongly self-concordant ``fun`` and any positive-definite :math:`B_0` the paper proves a global linear rate,
    then unit steps and a superlinear rate, with affine-invariant constants. With ``B0="hessian"`` and an
    affine-invariant stop (``newton_decrement`` or ``f_gap``) the iterates of :math:`f(Ay)` are
    :math:`A^{-1}` times those of :math:`f(x)`.

    The solver is jit-able (``jax.jit(lambda x: bfgs(f, x).x)``) and vmap-able over ``x0``; the compiled loop is
    cached per objective, so reuse one function object (or a ``jax.tree_util.Partial``) across calls.

    Args:
        fun: objective ``x -> scalar``; ``x`` has the structure of ``x0``. Use float64 (``jax.enable_x64``) for
            gaps below about ``1e-7``.
        x0: ``(d,)`` real floating array (a list or tuple of numbers is read as one), or a pytree of arrays
            (flattened internally).
        B0: initial Hessian approximation: ``"identity"``, ``"hessian"`` (:math:`\nabla^2 f(x_0)`), a positive
            scalar :math:`c` (:math:`cI`), a ``(d, d)`` SPD matrix or a callable ``x0_flat -> (d, d)``.
        line_search: :class:`WeakWolfe` constants (default ``alpha=1e-4, beta=0.9, eta0=1, max_trials=60``).
        max_iter: most BFGS iterations, ``>= 1`` (also the history length minus one).
        tol: stop when the stopping quantity is ``<= tol``, ``> 0``.
        stop: ``"newton_decrement"`` (:math:`g^\top B^{-1} g / 2 \le` tol), ``"f_gap"`` (:math:`f - f_* \le` tol,
            needs ``f_star``), ``"grad_norm"`` (:math:`\|g\|_2 \le` tol; not affine invariant) or ``"auto"``
            (``f_gap`` when ``f_star`` is given, else ``newton_decrement``).
        f_star: optimal value :math:`f_*`, for the ``f_gap`` stop and the ``history.gap`` record. A value above an
            attained one is an error: ``ValueError`` when :math:`f(x_0) < f_* - \text{tol}` (on concrete inputs;
            under ``jit``/``vmap`` that solve stops at :math:`x_0` with ``status == F_STAR_TOO_HIGH``), else the
            result has ``status == F_STAR_TOO_HIGH`` instead of ``CONVERGED``.
        hess_star: ``(d, d)`` SPD :math:`\nabla^2 f(x_*)`, to record the potential :math:`\Psi(\tilde B_t)`
            (needs ``history=True``; :math:`O(d^3)` per iteration).
        form: ``"inverse"`` (update :math:`H = B^{-1}`, :math:`O(d^2)` per step) or ``"direct"`` (update
            :math:`B`, Cholesky solve, :math:`O(d^3)`).
        history: record the per-iteration :class:`History` (``(max_iter + 1, d)`` iterates and the scalars).
            Off by default: the loop then carries only the current iterate and runs faster.

    Returns:
        A :class:`BFGSResult` with the final iterate, counts, status and (``history=True``) the :class:`History`.

    Raises:
        TypeError: ``fun`` not callable, ``x0`` not a floating array, ``line_search`` not a :class:`WeakWolfe`.
        ValueError: empty or non-finite ``x0``, ``fun`` not returning a real scalar, non-finite value or gradient
            at ``x0``, a bad ``B0`` (see :func:`nips25_bfgs.initial_hessian`), ``max_iter < 1``, ``tol <= 0``,
            unknown ``stop``/``form``,
            ``stop="f_gap"`` without ``f_star``, ``f_star`` above :math:`f(x_0) + \text{tol}`, a bad ``hess_star``
            or ``hess_star`` without ``history=True``.

    References:
        Jin & Mokhtari, "Affine-Invariant Global Non-Asymptotic Convergence Analysis of BFGS under
        Self-Concordance", NeurIPS 2025, arXiv:2507.00361, Algorithm 1 and Theorems on linear/superlinear rates.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> with jax.enable_x64(True):
        ...     A = jnp.array([[3.0, 1.0], [1.0, 2.0]])
        ...     res = bfgs(lambda x: 0.5 * x @ A @ x - x.sum(), jnp.zeros(2), B0="hessian")
        ...     print(int(res.n_iter), jnp.allclose(A @ res.x, 1.0))
        1 True
    """
    fun_flat, x, rav = flatten_problem(fun, x0)
    check_vector(x, "x0")
    ls = WeakWolfe() if line_search is None else line_search
    if not isinstance(ls, WeakWolfe):
        raise TypeError(f"line_search must be a WeakWolfe (see weak_wolfe()), got {type(ls).__name__}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter must be an int >= 1, got {max_iter!r}")
    tol = check_positive(tol, "tol")
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    if stop == "auto":
        stop = "f_gap" if f_star is not None else "newton_decrement"
    if stop not in STOPS:
        raise ValueError(f"stop must be 'auto' or one of {STOPS}, got {stop!r}")
    if stop == "f_gap" and f_star is None:
        raise ValueError('stop="f_gap" needs f_star')
    d = x.shape[0]
    f_s = None
    if f_star is not None:
        f_s = jnp.asarray(f_star, dtype=x.dtype) if isinstance(f_star, jax.Array) else np.asarray(f_star, x.dtype)
        if f_s.ndim != 0:
            raise ValueError(f"f_star must be a scalar, got shape {tuple(f_s.shape)}")
        if is_concrete(f_s) and not np.isfinite(float(f_s)):
            raise ValueError(f"f_star must be finite, got {f_star!r}")
    h_s = None
    if hess_star is not None and not history:
        raise ValueError("hess_star is only used for history.potential: pass history=True with it")
    if hess_star is not None:
        h_s = jnp.asarray(hess_star, dtype=x.dtype)
        check_matrix_spd(h_s, "hess_star", d)
    c = identity_scale(B0)
    if c is None:
        B, b0_scale = initial_hessian(B0, fun_flat, x), np.asarray(np.nan, x.dtype)
    else:  # c I in one compiled call (an eager jnp.eye costs ~0.1 ms, more than a small solve), same entries
        b0_scale = np.asarray(c, x.dtype)  # NumPy scalars: a jnp.asarray dispatches an op (~0.1 ms) each
        B = _scaled_eye(b0_scale, d)
    res = _solve(
        fun_flat, x, B, b0_scale, np.asarray(tol, x.dtype), f_s, h_s, line_search=ls, max_iter=int(max_iter), form=form,
        stop=stop, history=bool(history),
    )  # fmt: skip
    if is_concrete(res.status) and int(res.n_iter) == 0:  # one host sync per call, after the solve
        status = int(res.status)
        if status == NON_FINITE:
            raise ValueError("fun or its gradient is not finite at x0 (or B0 gives a non-finite direction)")
        if status == F_STAR_TOO_HIGH and f_s is not None and float(res.f) < float(f_s) - tol:
            raise ValueError(
                f"f_star={float(f_s)!r} is above f(x0)={float(res.f)!r} (by more than tol={tol!r}): f_star must be "
                "the optimal value, a lower bound of f"
            )
    if rav is not None:
        res = res._replace(x=rav.unravel(res.x))
    return res
