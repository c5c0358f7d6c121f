"""The peers, run to the same gap on the same problems: SciPy's BFGS and optimistix's BFGS.

Counts come from each peer's own loop: SciPy's ``callback`` (one call per iteration) with ``nfev``/``njev``;
optimistix ``step`` calls (one step is one trial point; its search is Armijo backtracking).
"""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import Partial

__all__ = ["PeerResult", "has_optimistix", "optimistix_bfgs", "scipy_bfgs"]


class PeerResult(NamedTuple):
    """Iterations (or steps) until ``f - f_star <= gap`` (``None`` if never), evaluations, final gap, x."""

    iters_to_gap: int | None
    n_iter: int
    n_fev: int
    n_gev: int
    final_gap: float
    x: np.ndarray


@jax.jit
def _value_and_grad(fun: Partial, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    return jax.value_and_grad(fun)(x)


def scipy_bfgs(
    fun: Partial, x0: jax.Array, *, f_star: float, gap: float = 1e-10, max_iter: int = 2000, H0: Any = None
) -> PeerResult:
    """``scipy.optimize.minimize(method="BFGS")`` (strong Wolfe, c1=1e-4, c2=0.9) with gtol=1e-12.

    Args:
        fun: ``(d,) -> scalar`` JAX objective (value and gradient are jitted and handed to SciPy as float64).
        x0: ``(d,)`` start.
        f_star: optimal value for the gap.
        gap: target :math:`f - f_*`.
        max_iter: SciPy's ``maxiter``.
        H0: optional ``(d, d)`` initial inverse Hessian (SciPy's ``hess_inv0``).

    Returns:
        :class:`PeerResult`; ``iters_to_gap`` is the first iteration whose iterate has ``f - f_star <= gap``.
    """
    from scipy.optimize import minimize

    def fg(x: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = _value_and_grad(fun, jnp.asarray(x))
        return float(f), np.asarray(g, dtype=np.float64)

    gaps: list[float] = []
    options: dict[str, Any] = {"gtol": 1e-12, "maxiter": max_iter}
    if H0 is not None:
        options["hess_inv0"] = np.asarray(H0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = minimize(
            fg, np.asarray(x0, dtype=np.float64), jac=True, method="BFGS", options=options,
            callback=lambda intermediate_result: gaps.append(float(intermediate_result.fun) - f_star),
        )  # fmt: skip
    hit = next((i + 1 for i, g in enumerate(gaps) if g <= gap), None)
    return PeerResult(hit, int(res.nit), int(res.nfev), int(res.njev), float(res.fun) - f_star, np.asarray(res.x))


def has_optimistix() -> bool:
    """Whether the optional peer ``optimistix`` is installed (``pip install nips25-bfgs[peers]``)."""
    return importlib.util.find_spec("optimistix") is not None


def optimistix_bfgs(
    fun: Partial, x0: jax.Array, *, f_star: float, gap: float = 1e-10, max_steps: int = 5000
) -> PeerResult:
    """``optimistix.BFGS`` (identity start, Armijo backtracking) stepped until a trial point reaches the gap.

    Args:
        fun: ``(d,) -> scalar`` JAX objective.
        x0: ``(d,)`` start.
        f_star: optimal value for the gap.
        gap: target :math:`f - f_*`.
        max_steps: most ``step`` calls.

    Returns:
        :class:`PeerResult`; ``iters_to_gap`` counts ``step`` calls (one trial point each); ``n_fev = n_gev`` counts
        the same (optimistix evaluates value and gradient together).

    Raises:
        ModuleNotFoundError: optimistix is not installed.
    """
    if not has_optimistix():
        raise ModuleNotFoundError("optimistix_bfgs needs optimistix: pip install 'nips25-bfgs[peers]'")
    import optimistix as optx

    return _optx_run(optx.BFGS(rtol=1e-14, atol=1e-14), fun, x0, jnp.asarray(f_star, x0.dtype), gap, max_steps)


@jax.jit(static_argnames=("solver", "max_steps"))
def _optx_run_jit(
    solver: Any, fun: Partial, x0: jax.Array, f_star: jax.Array, gap: float, max_steps: int
) -> tuple[jax.Array, jax.Array, jax.Array]:
    fn = Partial(_with_aux, fun)
    f_struct = jax.ShapeDtypeStruct((), x0.dtype)
    state = solver.init(fn, x0, None, {}, f_struct, None, frozenset())

    def cond(c: tuple[Any, ...]) -> jax.Array:
        k, _, _, best = c
        return (k < max_steps) & (best > gap)

    def body(c: tuple[Any, ...]) -> tuple[Any, ...]:
        k, y, st, best = c
        y, st, _ = solver.step(fn, y, None, {}, st, frozenset())
        return k + 1, y, st, jnp.minimum(best, fun(y) - f_star)

    k, y, _, best = jax.lax.while_loop(cond, body, (jnp.int32(0), x0, state, fun(x0) - f_star))
    return k, y, best


def _with_aux(fun: Partial, y: jax.Array, args: Any) -> tuple[jax.Array, None]:
    return fun(y), None


def _optx_run(solver: Any, fun: Partial, x0: jax.Array, f_star: jax.Array, gap: float, max_steps: int) -> PeerResult:
    k, y, best = _optx_run_jit(solver, fun, x0, f_star, gap, max_steps)
    k, best = int(k), float(best)
    hit = k if best <= gap else None
    return PeerResult(hit, k, k, k, best, np.asarray(y))
