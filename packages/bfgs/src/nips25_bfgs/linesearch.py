r"""The weak-Wolfe line search by log-bisection (Jin & Mokhtari 2025, Sec. 2; Jin, Jiang & Mokhtari 2024, Alg. 2).

A step size :math:`\eta` along a descent direction :math:`d` is accepted when both weak-Wolfe conditions hold,

.. math::
    f(x + \eta d) \le f(x) + \alpha \eta \, g^\top d, \qquad \nabla f(x + \eta d)^\top d \ge \beta \, g^\top d,

with :math:`0 < \alpha < 1/2` and :math:`\alpha < \beta < 1`. The search starts at :math:`\eta = \eta_0` (one by
default, which the unit-step phase of the theory needs) with the bracket :math:`[lo, hi] = [0, \infty)`. When
Armijo fails, :math:`hi \leftarrow \eta`; when Armijo holds but the curvature condition fails, :math:`lo \leftarrow
\eta`. The next trial is :math:`2\eta` while :math:`hi = \infty`, :math:`\eta / 2` while :math:`lo = 0`, and the
geometric mean :math:`\sqrt{lo \cdot hi}` otherwise (bisection in :math:`\log \eta`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["LineSearchResult", "WeakWolfe", "weak_wolfe", "weak_wolfe_log_bisection"]


@dataclass(frozen=True)
class WeakWolfe:
    """Hyper-parameters of the weak-Wolfe log-bisection search.

    ``alpha = 1e-4`` and ``beta = 0.9`` are the usual quasi-Newton constants (the paper's values were not
    retrieved); the theory only needs ``0 < alpha < 1/2`` and ``alpha < beta < 1``.

    Attributes:
        alpha: sufficient-decrease (Armijo) constant, ``0 < alpha < 1/2``.
        beta: curvature constant, ``alpha < beta < 1``.
        eta0: first trial step, ``> 0`` (``1.0`` keeps the unit-step phase of the theory observable).
        max_trials: most trial points per search, ``>= 1``; on exhaustion the search reports failure.
    """

    alpha: float = 1e-4
    beta: float = 0.9
    eta0: float = 1.0
    max_trials: int = 60

    def __post_init__(self) -> None:
        for name in ("alpha", "beta", "eta0"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite real number, got {value!r}")
        if not 0.0 < self.alpha < 0.5:
            raise ValueError(f"alpha must be in (0, 1/2), got {self.alpha}")
        if not self.alpha < self.beta < 1.0:
            raise ValueError(f"beta must be in (alpha, 1) = ({self.alpha}, 1), got {self.beta}")
        if not self.eta0 > 0.0:
            raise ValueError(f"eta0 must be > 0, got {self.eta0}")
        if isinstance(self.max_trials, bool) or not isinstance(self.max_trials, int) or self.max_trials < 1:
            raise ValueError(f"max_trials must be an int >= 1, got {self.max_trials!r}")


def weak_wolfe(*, alpha: float = 1e-4, beta: float = 0.9, eta0: float = 1.0, max_trials: int = 60) -> WeakWolfe:
    """Build the weak-Wolfe log-bisection search used by :func:`nips25_bfgs.bfgs` (validated :class:`WeakWolfe`).

    Example:
        >>> weak_wolfe(alpha=1e-3, beta=0.5).beta
        0.5
    """
    return WeakWolfe(alpha=alpha, beta=beta, eta0=eta0, max_trials=max_trials)


class LineSearchResult(NamedTuple):
    """Outcome of one search.

    Attributes:
        eta: accepted step (the last trial when ``success`` is false), scalar.
        value: :math:`\\phi(\\eta)`, scalar.
        slope: :math:`\\phi'(\\eta)`, scalar.
        aux: whatever ``phi`` returned beside value and slope at ``eta`` (e.g. the new point and gradient).
        n_trials: trial points evaluated (function and gradient evaluations), int32.
        success: both weak-Wolfe conditions hold at ``eta``.
        trials: ``(max_trials,)`` the trial steps in order, ``nan`` after the last one.
    """

    eta: jax.Array
    value: jax.Array
    slope: jax.Array
    aux: Any
    n_trials: jax.Array
    success: jax.Array
    trials: jax.Array


def weak_wolfe_log_bisection(
    phi: Callable[[jax.Array], tuple[jax.Array, jax.Array, Any]],
    value0: jax.Array | float,
    slope0: jax.Array | float,
    *,
    line_search: WeakWolfe | None = None,
) -> LineSearchResult:
    r"""Find a step meeting both weak-Wolfe conditions by log-bisection (jit- and vmap-clean).

    With :math:`\phi(\eta) = f(x + \eta d)`, a trial is accepted when
    :math:`\phi(\eta) \le \phi(0) + \alpha\eta\phi'(0)` and :math:`\phi'(\eta) \ge \beta\phi'(0)`. A non-finite
    value or slope counts as an Armijo failure (the step shrinks), so a steep start never yields NaN.

    Args:
        phi: ``eta -> (value, slope, aux)`` with ``value = f(x + eta d)``, ``slope = grad f(x + eta d) . d``
            (scalars) and ``aux`` any pytree of fixed structure, returned for the accepted step.
        value0: :math:`\phi(0)`, finite scalar.
        slope0: :math:`\phi'(0) = g^\top d`, negative for a descent direction.
        line_search: the constants (:class:`WeakWolfe`); defaults to ``WeakWolfe()``.

    Returns:
        A :class:`LineSearchResult`; ``success`` is false when ``max_trials`` trials did not satisfy both conditions
        or ``slope0`` is not negative.

    References:
        Jin & Mokhtari, "Affine-Invariant Global Non-Asymptotic Convergence Analysis of BFGS under
        Self-Concordance", NeurIPS 2025, arXiv:2507.00361, Sec. 2 (weak Wolfe); the log-bisection rule follows
        Jin, Jiang & Mokhtari, NeurIPS 2024, arXiv:2404.16731.

    Example:
        >>> import jax.numpy as jnp
        >>> phi = lambda t: ((t - 3.0) ** 2, 2.0 * (t - 3.0), None)
        >>> res = weak_wolfe_log_bisection(phi, 9.0, -6.0, line_search=WeakWolfe(beta=0.5))
        >>> float(res.eta), int(res.n_trials)
        (2.0, 2)
    """
    ls = WeakWolfe() if line_search is None else line_search
    value0 = jnp.asarray(value0)
    dtype = jnp.result_type(value0.dtype, jnp.float32)
    value0 = value0.astype(dtype)
    slope0 = jnp.asarray(slope0, dtype=dtype)
    eta_init = jnp.asarray(ls.eta0, dtype=dtype)
    value_s, slope_s, aux_s = jax.eval_shape(phi, eta_init)
    aux0 = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), aux_s)
    zero = jnp.zeros((), dtype)
    init = (
        jnp.int32(0),
        eta_init,
        zero,
        jnp.asarray(jnp.inf, dtype),
        jnp.asarray(jnp.nan, value_s.dtype),
        jnp.asarray(jnp.nan, slope_s.dtype),
        aux0,
        jnp.asarray(False),
        jnp.full((ls.max_trials,), jnp.nan, dtype),
        eta_init,
    )

    def cond(carry: tuple[Any, ...]) -> jax.Array:
        k, *_, done, _, _ = carry
        return (~done) & (k < ls.max_trials) & (slope0 < 0)

    def body(carry: tuple[Any, ...]) -> tuple[Any, ...]:
        k, eta, lo, hi, _, _, _, _, trials, _ = carry
        value, slope, aux = phi(eta)
        finite = jnp.isfinite(value) & jnp.isfinite(slope)
        armijo = finite & (value <= value0 + ls.alpha * eta * slope0)
        curvature = slope >= ls.beta * slope0
        accept = armijo & curvature
        hi = jnp.where(armijo, hi, eta)
        lo = jnp.where(armijo & ~curvature, eta, lo)
        nxt = jnp.where(jnp.isinf(hi), 2.0 * eta, jnp.where(lo == 0, 0.5 * eta, jnp.sqrt(lo * hi)))
        trials = trials.at[k].set(eta)
        return (k + 1, jnp.where(accept, eta, nxt), lo, hi, value, slope, aux, accept, trials, eta)

    k, _, _, _, value, slope, aux, done, trials, last = jax.lax.while_loop(cond, body, init)
    return LineSearchResult(eta=last, value=value, slope=slope, aux=aux, n_trials=k, success=done, trials=trials)
