r"""Reference minimiser: Newton's method with Armijo backtracking, for :math:`x_*`, :math:`f_*` and :math:`H_*`.

The theory's gaps :math:`f(x_t) - f_*` and the potential :math:`\Psi(H_*^{-1/2} B_t H_*^{-1/2})` need the
optimum to near machine precision; Newton's quadratic convergence gives it in a few steps in float64.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import Partial

from nips25_bfgs.checks import as_float_array, check_positive, check_scalar_output, check_vector, is_concrete
from nips25_bfgs.initial_hessian import _hessian_at
from nips25_bfgs.solver import as_partial

__all__ = ["NewtonResult", "newton_solve"]


class NewtonResult(NamedTuple):
    """Result of :func:`newton_solve`: ``x`` ``(d,)``, ``f``, ``hess`` ``(d, d)`` at ``x``, ``n_iter``,
    ``decrement`` (:math:`\\lambda^2/2 = g^\\top \\nabla^2 f^{-1} g / 2` at ``x``)."""

    x: jax.Array
    f: jax.Array
    hess: jax.Array
    n_iter: jax.Array
    decrement: jax.Array


@jax.jit
def _newton(fun: Partial, x0: jax.Array, rtol: jax.Array, atol: jax.Array, max_iter: jax.Array) -> NewtonResult:
    vg = jax.value_and_grad(fun)
    hess = jax.hessian(fun)

    def newton_step(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
        f, g = vg(x)
        H = hess(x)
        d = -jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(H, lower=True), g)
        return f, g, d, -0.5 * jnp.vdot(g, d)

    def cond(c: tuple[Any, ...]) -> jax.Array:
        t, _, f, _, dec, moved = c
        return (t < max_iter) & (dec > atol + rtol * jnp.abs(f)) & moved

    def body(c: tuple[Any, ...]) -> tuple[Any, ...]:
        t, x, f, d, dec, _ = c
        slope = -2.0 * dec

        def bt_cond(b: tuple[jax.Array, jax.Array, jax.Array]) -> jax.Array:
            eta, f_new, k = b
            return ~(f_new <= f + 1e-4 * eta * slope) & (k < 60)

        def bt_body(b: tuple[jax.Array, jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array, jax.Array]:
            eta, _, k = b
            eta = 0.5 * eta
            return eta, fun(x + eta * d), k + 1

        one = jnp.ones((), x.dtype)
        eta, f_new, _ = jax.lax.while_loop(bt_cond, bt_body, (one, fun(x + d), jnp.int32(0)))
        x_try = x + eta * d
        f_n, _, d_n, dec_n = newton_step(x_try)
        # A step counts only if it makes progress: Armijo, and f falls in floating point or (f already at its
        # rounding floor, quadratic phase) the decrement still halves. At the decrement's own rounding floor
        # neither happens (``f + 1e-4 eta slope`` rounds to ``f``, so Armijo alone accepts ``f_new == f``
        # forever) and the loop stops: "no step decreases f".
        moved = (f_new <= f + 1e-4 * eta * slope) & ((f_new < f) | (dec_n < 0.5 * dec))
        keep = lambda new, old: jnp.where(moved, new, old)  # noqa: E731
        return t + 1, keep(x_try, x), keep(f_n, f), keep(d_n, d), keep(dec_n, dec), moved

    f0, _, d0, dec0 = newton_step(x0)
    t, x, f, _, dec, _ = jax.lax.while_loop(cond, body, (jnp.int32(0), x0, f0, d0, dec0, jnp.asarray(True)))
    return NewtonResult(x=x, f=f, hess=hess(x), n_iter=t, decrement=dec)


def newton_solve(
    fun: Callable[[jax.Array], jax.Array],
    x0: Any,
    *,
    rtol: float = 1e-22,
    atol: float = 1e-30,
    max_iter: int = 100,
) -> NewtonResult:
    r"""Minimise a smooth strictly convex ``fun`` by Newton's method with Armijo backtracking.

    :math:`x_{k+1} = x_k - \eta_k \nabla^2 f(x_k)^{-1} \nabla f(x_k)`, :math:`\eta_k` halved from 1 until
    :math:`f` decreases sufficiently; stops when :math:`\lambda_k^2/2 \le \text{atol} + \text{rtol}\,|f(x_k)|`
    or no step decreases ``f``.

    The test is relative because the decrement :math:`\lambda^2 = g^\top \nabla^2 f^{-1} g` computed in float64
    has a floor set by the rounding of :math:`g`, which scales with the size of ``f``'s terms: about
    :math:`\varepsilon^2 |f| \kappa` (:math:`\varepsilon = 2.2 \cdot 10^{-16}`). ``rtol = 1e-22`` sits above that
    floor for conditionings up to about :math:`10^9` and still resolves :math:`f_*` to :math:`10^{-22} |f_*|`
    (:math:`\lambda^2/2` estimates :math:`f - f_*`) and :math:`x_*` to :math:`\lambda \approx 1.4 \cdot 10^{-11}
    |f_*|^{1/2}` in the local norm; Newton's quadratic phase usually lands well below either bound.

    Args:
        fun: ``(d,) -> scalar``, twice differentiable, strictly convex.
        x0: ``(d,)`` finite start (a list of numbers is read as an array).
        rtol: relative tolerance on :math:`\lambda^2/2`, ``>= 0``.
        atol: absolute tolerance on :math:`\lambda^2/2`, ``>= 0`` (matters when :math:`f_* \approx 0`);
            ``rtol`` and ``atol`` must not both be zero.
        max_iter: most Newton steps, ``>= 1``.

    Returns:
        :class:`NewtonResult`.

    Raises:
        ValueError: bad ``x0``, ``rtol``, ``atol``, ``max_iter``; ``fun`` that does not return a real scalar;
            ``fun`` whose Hessian at ``x0`` is not positive
            definite (not strictly convex there, e.g. linear or concave); Newton did not converge (``max_iter`` steps
            with :math:`\lambda^2/2` above the tolerance, or a non-finite value or decrement). Both checks need
            concrete inputs: under ``jit`` check ``decrement`` yourself.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> with jax.enable_x64(True):
        ...     res = newton_solve(lambda x: jnp.sum(jnp.cosh(x - 1.0)), jnp.zeros(3))
        ...     print(jnp.allclose(res.x, 1.0))
        True
    """
    x0 = as_float_array(x0, "x0")
    check_vector(x0, "x0")
    rtol = check_positive(rtol, "rtol", allow_zero=True)
    atol = check_positive(atol, "atol", allow_zero=True)
    if rtol == 0.0 and atol == 0.0:
        raise ValueError("rtol and atol must not both be 0")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"max_iter must be an int >= 1, got {max_iter!r}")
    fun_p = as_partial(fun)
    check_scalar_output(fun_p, x0)
    if is_concrete(x0):
        H0 = np.asarray(_hessian_at(fun_p, x0), dtype=np.float64)
        try:
            if not np.all(np.isfinite(H0)):
                raise np.linalg.LinAlgError
            np.linalg.cholesky(H0)
        except np.linalg.LinAlgError:
            raise ValueError(
                "fun: the Hessian at x0 is not positive definite (newton_solve needs a strictly convex fun)"
            ) from None
    dt = x0.dtype
    res = _newton(fun_p, x0, jnp.asarray(rtol, dt), jnp.asarray(atol, dt), jnp.asarray(max_iter, jnp.int32))
    if is_concrete(res):
        dec, f = float(res.decrement), float(res.f)
        tol = atol + rtol * abs(f)
        if not (np.isfinite(dec) and np.isfinite(f)) or (int(res.n_iter) >= max_iter and dec > tol):
            raise ValueError(
                f"fun: Newton did not converge (n_iter={int(res.n_iter)}, decrement={dec!r}, f={f!r}, "
                f"tolerance atol + rtol |f| = {tol!r})"
            )
    return res
