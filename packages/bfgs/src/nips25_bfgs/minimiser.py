r"""BFGS with weak-Wolfe steps as an ``optimistix.AbstractMinimiser`` (Jin & Mokhtari 2025, Algorithm 1).

``optimistix.minimise(fn, nips25_bfgs.BFGS(rtol, atol), y0)`` runs the iteration of :func:`nips25_bfgs.bfgs`: one
optimistix step is one BFGS iteration, the weak-Wolfe log-bisection search included (optimistix's own searches see
only :math:`f` at a trial point, so a curvature condition cannot be an ``optimistix.AbstractSearch``; the search
therefore lives inside the step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import optimistix as optx
from jax.flatten_util import ravel_pytree

from nips25_bfgs.initial_hessian import InitialHessian, identity_scale, initial_hessian
from nips25_bfgs.iteration import Iterate, bfgs_iteration, direction, inverse_of, inverse_of_scaled_identity
from nips25_bfgs.linesearch import WeakWolfe
from nips25_bfgs.solver import FORMS

__all__ = ["BFGS", "BFGSMinimiserState"]

TERMINATIONS = ("newton_decrement", "cauchy")


class BFGSMinimiserState(eqx.Module):
    """State of :class:`BFGS`: the current :class:`~nips25_bfgs.iteration.Iterate` (flattened), the last step's
    diagnostics and the counts (``n_iter`` accepted steps, ``n_fev`` value-and-gradient evaluations, ``n_skipped``
    updates skipped for :math:`s^\\top y \\le 0`), ``terminate`` and ``result``."""

    it: Iterate
    eta: jax.Array
    unit_step: jax.Array
    n_iter: jax.Array
    n_fev: jax.Array
    n_skipped: jax.Array
    terminate: jax.Array
    result: optx.RESULTS


class BFGS(optx.AbstractMinimiser):  # type: ignore[misc]
    r"""BFGS with weak-Wolfe log-bisection steps from any positive-definite :math:`B_0`, for ``optimistix.minimise``.

    .. math::
        d_t = -B_t^{-1} g_t,\quad y_{t+1} = y_t + \eta_t d_t,\quad
        B_{t+1} = B_t - \frac{B_t s_t s_t^\top B_t}{s_t^\top B_t s_t} + \frac{y_t y_t^\top}{s_t^\top y_t}

    with :math:`\eta_t` meeting both weak-Wolfe conditions (first trial :math:`\eta = 1`).

    Termination (``termination``): ``"newton_decrement"`` (default, affine invariant) stops when
    :math:`g^\top B^{-1} g / 2 \le \text{atol} + \text{rtol}\,|f|`; ``"cauchy"`` is optimistix's own test on the
    change of ``y`` and ``f`` (``norm``), as ``optimistix.BFGS`` uses. A failed search ends the solve with
    ``RESULTS.nonlinear_divergence`` (the last iterate kept), unless the predicted decrease :math:`-g^\top d/2` is
    already below :math:`16\varepsilon|f|` (float64's floor: then the solve ends successfully); a non-finite
    direction ends it with ``RESULTS.nonfinite``.
    ``solution.stats`` adds ``n_iter``, ``n_fev`` and ``n_skipped``; ``solution.state.eta`` and ``.unit_step`` hold
    the last step.

    Args:
        rtol: relative tolerance, ``>= 0``.
        atol: absolute tolerance, ``>= 0``.
        norm: norm of the ``"cauchy"`` test (default ``optimistix.max_norm``).
        B0: ``"identity"``, ``"hessian"`` (:math:`\nabla^2 f(y_0)` by autodiff, at ``init``), a positive scalar, a
            ``(d, d)`` SPD matrix or a callable ``flat_y0 -> (d, d)``; ``d`` is the flattened size of ``y0``.
        line_search: :class:`~nips25_bfgs.WeakWolfe` constants.
        form: ``"inverse"`` (update :math:`H = B^{-1}`) or ``"direct"`` (update :math:`B`, Cholesky solve).
        termination: ``"newton_decrement"`` or ``"cauchy"``.

    Raises:
        ValueError: negative tolerances, unknown ``form``/``termination``; a bad ``B0`` (at ``init``).
        TypeError: ``line_search`` not a :class:`~nips25_bfgs.WeakWolfe`.

    References:
        Jin & Mokhtari, NeurIPS 2025, arXiv:2507.00361, Algorithm 1.

    Example:
        >>> import jax, jax.numpy as jnp, optimistix as optx
        >>> with jax.enable_x64(True):
        ...     fn = lambda y, args: jnp.sum((y - args) ** 2) + jnp.sum(y**4)
        ...     sol = optx.minimise(fn, BFGS(rtol=1e-12, atol=1e-12), jnp.zeros(3), args=1.0)
        ...     print(sol.result == optx.RESULTS.successful, jnp.allclose(sol.value, 0.589755, atol=1e-6))
        True True
    """

    rtol: float
    atol: float
    norm: Callable[[Any], jax.Array] = optx.max_norm
    B0: InitialHessian = "identity"
    line_search: WeakWolfe = WeakWolfe()
    form: str = "inverse"
    termination: str = "newton_decrement"

    def __check_init__(self) -> None:
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValueError(f"{name} must be a real number >= 0, got {value!r}")
        if not isinstance(self.line_search, WeakWolfe):
            raise TypeError(f"line_search must be a WeakWolfe (see weak_wolfe()), got {type(self.line_search)}")
        if self.form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, got {self.form!r}")
        if self.termination not in TERMINATIONS:
            raise ValueError(f"termination must be one of {TERMINATIONS}, got {self.termination!r}")
        if isinstance(self.B0, (str, bool, int, float)) and self.B0 != "hessian":
            initial_hessian(self.B0, None, jnp.zeros(1))  # a bad string or scalar B0 fails here, not inside a solve

    def _flat(self, fn: Any, y: Any, args: Any) -> tuple[Any, Callable[[jax.Array], Any]]:
        _, unravel = ravel_pytree(y)

        def value_and_grad(x: jax.Array) -> tuple[tuple[jax.Array, Any], jax.Array]:
            (f, aux), g = jax.value_and_grad(lambda z: fn(unravel(z), args), has_aux=True)(x)
            return (f, aux), g

        return value_and_grad, unravel

    def init(
        self,
        fn: Any,
        y: Any,
        args: Any,
        options: dict[str, Any],
        f_struct: Any,
        aux_struct: Any,
        tags: frozenset[object],
    ) -> BFGSMinimiserState:
        x, _ = ravel_pytree(y)
        value_and_grad, unravel = self._flat(fn, y, args)
        (f, aux), g = value_and_grad(x)
        inverse = self.form == "inverse"
        c = identity_scale(self.B0)
        if inverse and c is not None:  # (c I)^-1 without the O(d^3) Cholesky, bit for bit inverse_of(c I)
            M = inverse_of_scaled_identity(jnp.asarray(c, x.dtype), x.shape[0])
        else:
            B = initial_hessian(self.B0, lambda z: fn(unravel(z), args)[0], x)
            M = inverse_of(B) if inverse else B
        it = Iterate(x=x, f=f, g=g, M=M, d=direction(M, g, inverse=inverse), aux=aux)
        finite = jnp.isfinite(f) & jnp.all(jnp.isfinite(g)) & jnp.all(jnp.isfinite(it.d))
        return BFGSMinimiserState(
            it=it,
            eta=jnp.asarray(jnp.nan, x.dtype),
            unit_step=jnp.asarray(False),
            n_iter=jnp.int32(0),
            n_fev=jnp.int32(1),
            n_skipped=jnp.int32(0),
            terminate=~finite | self._converged(it),
            result=optx.RESULTS.where(finite, optx.RESULTS.successful, optx.RESULTS.nonfinite),
        )

    def _converged(self, it: Iterate) -> jax.Array:
        return -0.5 * jnp.vdot(it.g, it.d) <= self.atol + self.rtol * jnp.abs(it.f)

    def step(
        self,
        fn: Any,
        y: Any,
        args: Any,
        options: dict[str, Any],
        state: BFGSMinimiserState,
        tags: frozenset[object],
    ) -> tuple[Any, BFGSMinimiserState, Any]:
        value_and_grad, unravel = self._flat(fn, y, args)
        nxt, info = bfgs_iteration(
            value_and_grad, state.it, line_search=self.line_search, inverse=self.form == "inverse"
        )
        if self.termination == "newton_decrement":
            converged = self._converged(nxt)
        else:
            # optimistix's Cauchy test: |dy| < atol + rtol |y| in `norm`, and |df| < atol + rtol |f|
            y_small = self.norm(unravel(jnp.abs(nxt.x - state.it.x) / (self.atol + self.rtol * jnp.abs(nxt.x)))) < 1
            f_small = jnp.abs(nxt.f - state.it.f) < self.atol + self.rtol * jnp.abs(nxt.f)
            converged = y_small & f_small & info.success
        ok = info.success
        # a search that fails because no decrease is representable (g^T d / 2 within a few ulps of |f|) has reached
        # float64's floor: that ends the solve successfully, at the kept iterate
        at_floor = ~ok & (-0.5 * jnp.vdot(state.it.g, state.it.d) <= 16 * jnp.finfo(nxt.f.dtype).eps * jnp.abs(nxt.f))
        converged = converged | at_floor
        result = optx.RESULTS.where(
            ok | at_floor,
            optx.RESULTS.where(info.finite, optx.RESULTS.successful, optx.RESULTS.nonfinite),
            optx.RESULTS.nonlinear_divergence,
        )
        new_state = BFGSMinimiserState(
            it=nxt,
            eta=jnp.where(ok, info.eta, jnp.nan),
            unit_step=ok & (info.eta == 1.0),
            n_iter=state.n_iter + ok.astype(jnp.int32),
            n_fev=state.n_fev + info.n_trials,
            n_skipped=state.n_skipped + info.skipped.astype(jnp.int32),
            terminate=converged | ~ok | ~info.finite,
            result=result,
        )
        return unravel(nxt.x), new_state, nxt.aux

    def terminate(
        self,
        fn: Any,
        y: Any,
        args: Any,
        options: dict[str, Any],
        state: BFGSMinimiserState,
        tags: frozenset[object],
    ) -> tuple[jax.Array, optx.RESULTS]:
        return state.terminate, state.result

    def postprocess(
        self,
        fn: Any,
        y: Any,
        aux: Any,
        args: Any,
        options: dict[str, Any],
        state: BFGSMinimiserState,
        tags: frozenset[object],
        result: optx.RESULTS,
    ) -> tuple[Any, Any, dict[str, Any]]:
        return y, aux, {"n_iter": state.n_iter, "n_fev": state.n_fev, "n_skipped": state.n_skipped}
