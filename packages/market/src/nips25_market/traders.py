r"""Myopic traders: risk-neutral agents who maximise expected profit of one trade under their belief.

A trader with belief :math:`\mu \in \Delta_n` facing quote :math:`Q(q, r)` buys
:math:`r^\star = \arg\max_r \langle \mu, r\rangle - Q(q, r)` (Nueve & Waggoner 2025, Sec. 4), optionally subject to

* a budget :math:`B`: the worst case of the trade, :math:`Q(q, r) - \min_x r_x \le B` (Sec. 5, reconstructed);
* buy-only securities: :math:`r \ge 0` (Sec. 5).

Without a budget every market has a closed form (``myopic_trade`` of the market). With a budget in the ℓ2 SQPM
(fee on the bundle, not buy-only) the problem is solved in JAX by duality (:func:`budget_trade`, traceable, one
bisection in ``lax.fori_loop``); the other budgeted cases (DCFMMs, buy-only, the zero-sum fee) are solved by SLSQP
on the epigraph form (variables :math:`r, s`; :math:`s \le r_x`, :math:`Q(q,r) - s \le B`) with JAX gradients, on
concrete inputs only. When the unconstrained optimum already fits the budget it is returned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import minimize

from nips25_market._checks import as_vector, check_positive, check_simplex, is_traced
from nips25_market.cost_functions import CostFunctionMarket, project_simplex, register_pytree
from nips25_market.smooth_quadratic import SmoothQuadratic

__all__ = ["MyopicTrader", "budget_trade", "has_closed_form_budget", "worst_case_spend"]

_BISECTIONS = 64  # halvings of t in [0, 1]: past float64 resolution (2^-53), so the result is the float optimum


def worst_case_spend(mm: CostFunctionMarket, q: jax.Array, r: jax.Array) -> jax.Array:
    r"""The trader's worst-case loss from buying ``r``: :math:`Q(q, r) - \min_x r_x` (what a budget bounds).

    Args:
        mm: the market maker.
        q: ``(..., n)`` state.
        r: ``(..., n)`` bundle.

    Returns:
        ``(...)``, ``>= 0`` in every market without arbitrage.

    Example:
        >>> import numpy as np
        >>> from nips25_market import LMSR, SmoothQuadratic
        >>> float(worst_case_spend(SmoothQuadratic(LMSR(2, b=1.0)), np.zeros(2), np.array([1.0, 0.0])))
        0.75
    """
    return mm.quote(q, r) - jnp.min(jnp.asarray(r), axis=-1)


def has_closed_form_budget(mm: CostFunctionMarket, *, buy_only: bool = False) -> bool:
    """True when :func:`budget_trade` applies: an ℓ2 :class:`SmoothQuadratic` with ``fee_on="bundle"``, not buy-only."""
    return isinstance(mm, SmoothQuadratic) and mm.norm == "l2" and mm.fee_on == "bundle" and not buy_only


def budget_trade(mm: SmoothQuadratic, q: jax.Array, belief: jax.Array, budget: Any) -> jax.Array:
    r"""Best bundle of a myopic trader with a budget in the ℓ2 SQPM (fee on the bundle), by duality.

    The problem :math:`\max_r \langle\mu, r\rangle - Q(r)` s.t. :math:`Q(r) - \min_x r_x \le B`, with
    :math:`Q(r) = \langle p, r\rangle + \frac L2\|r\|^2`, has the Lagrangian maximiser (multiplier
    :math:`\lambda = t/(1-t)`, :math:`t \in [0, 1]`, and :math:`\min_x r_x = \min_{w \in \Delta}\langle w, r\rangle`
    exchanged with the max by the minimax theorem)

    .. math::
        r(t) = \frac{(1-t)\mu + t\,w(t) - p}{L}, \qquad w(t) = \Pi_\Delta\!\Big(\frac{p - (1-t)\mu}{t}\Big),

    :math:`r(0) = (\mu - p)/L` the unconstrained trade and :math:`r(1) = 0`. The spend of :math:`r(t)` falls with
    :math:`t`, so a bisection finds the :math:`t` where it equals :math:`B` (complementary slackness); the feasible
    end of the bracket is returned, so the spend never exceeds :math:`B`.

    Args:
        mm: an ℓ2 :class:`SmoothQuadratic` with ``fee_on="bundle"``.
        q: ``(n,)`` state.
        belief: ``(n,)`` probability vector :math:`\mu`.
        budget: :math:`B > 0` (may be traced), or ``math.inf`` for no bound.

    Returns:
        ``(n,)`` the optimal bundle; traceable (``jit``/``vmap``/``lax.scan``).

    Raises:
        ValueError: if ``mm`` is not such a market, or a concrete ``budget`` is not finite and ``> 0``.

    Example:
        >>> import numpy as np
        >>> from nips25_market import LMSR, SmoothQuadratic, worst_case_spend
        >>> mm = SmoothQuadratic(LMSR(3, b=1.0))
        >>> r = budget_trade(mm, np.zeros(3), np.array([0.8, 0.1, 0.1]), 0.2)
        >>> round(float(worst_case_spend(mm, np.zeros(3), r)), 9)
        0.2
    """
    if not has_closed_form_budget(mm):
        raise ValueError("budget_trade needs an l2 SmoothQuadratic with fee_on='bundle' (others: MyopicTrader)")
    q = as_vector(q, "q", mm.n, batch=False)
    mu = as_vector(belief, "belief", mm.n, batch=False)
    if not is_traced(budget) and not (isinstance(budget, float) and budget == math.inf):
        budget = check_positive(budget, "budget")
    return _budget_trade(mm, q, mu, jnp.asarray(budget, q.dtype))


@jax.jit
def _budget_trade(mm: SmoothQuadratic, q: jax.Array, mu: jax.Array, budget: jax.Array) -> jax.Array:
    """:func:`budget_trade` after its checks, compiled once per market structure (eager calls stay fast)."""
    p = mm.price(q)
    inv_l = 1.0 / mm.smoothness_constant

    def trade(t: jax.Array) -> jax.Array:
        w = project_simplex((p - (1.0 - t) * mu) / t)
        return ((1.0 - t) * mu + t * w - p) * inv_l

    def spend(r: jax.Array) -> jax.Array:
        return jnp.sum(p * r) + 0.5 * mm.smoothness_constant * jnp.sum(r * r) - jnp.min(r)

    def halve(_: int, bracket: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        over = spend(trade(mid)) > budget
        return jnp.where(over, mid, lo), jnp.where(over, hi, mid)

    zero, one = jnp.zeros((), p.dtype), jnp.ones((), p.dtype)
    _, hi = jax.lax.fori_loop(0, _BISECTIONS, halve, (zero, one))
    free = (mu - p) * inv_l
    return jnp.where(spend(free) <= budget, free, trade(hi))


@register_pytree(data=("belief", "budget"), meta=("buy_only", "tol"))
@dataclass(frozen=True, eq=False)
class MyopicTrader:
    r"""A myopic, risk-neutral trader with a belief, an optional budget and an optional buy-only restriction.

    A JAX pytree (``belief`` and ``budget`` are leaves), so traders pass through ``jax.jit`` as arguments.

    Args:
        belief: ``(n,)`` probability vector :math:`\mu` (entries >= 0, sum 1).
        budget: bound :math:`B > 0` on :math:`Q(q, r) - \min_x r_x`, or ``None`` for no bound.
        buy_only: only non-negative bundles.
        tol: tolerance of the SLSQP solver used for the budgeted cases without a closed form.

    Raises:
        ValueError: if ``belief`` is not a finite probability vector, ``budget <= 0`` or ``tol <= 0``.

    Example:
        >>> import numpy as np
        >>> from nips25_market import LMSR, SmoothQuadratic
        >>> mm = SmoothQuadratic(LMSR(2, b=1.0))
        >>> np.asarray(MyopicTrader(np.array([0.75, 0.25])).best_trade(mm, np.zeros(2))).round(6).tolist()
        [0.5, -0.5]
    """

    belief: Any
    budget: Any = None
    buy_only: bool = False
    tol: float = 1e-12

    def __post_init__(self) -> None:
        object.__setattr__(self, "belief", check_simplex(self.belief, "belief"))
        if self.belief.ndim != 1:
            raise ValueError(f"belief must have shape (n,), got {tuple(self.belief.shape)}")
        if self.budget is not None:
            object.__setattr__(self, "budget", check_positive(self.budget, "budget"))
        if not isinstance(self.buy_only, bool):
            raise TypeError(f"buy_only must be a bool, got {type(self.buy_only).__name__}")
        check_positive(self.tol, "tol")

    def profit(self, mm: CostFunctionMarket, q: jax.Array, r: jax.Array) -> jax.Array:
        r"""Expected profit :math:`\langle\mu, r\rangle - Q(q, r)` under the trader's belief."""
        return jnp.sum(self.belief * jnp.asarray(r), axis=-1) - mm.quote(q, r)

    def best_trade(self, mm: CostFunctionMarket, q: jax.Array) -> jax.Array:
        """The bundle this trader buys at state ``q`` of market ``mm``.

        Traceable (``jit``/``vmap``) except for a budget without a closed form (DCFMMs, buy-only, the zero-sum or
        ℓ∞ fee), which the SLSQP solver handles on concrete inputs.

        Args:
            mm: market maker with ``n`` equal to the belief's length.
            q: ``(n,)`` current state.

        Returns:
            ``(n,)`` optimal bundle under the trader's constraints.

        Raises:
            ValueError: if ``mm.n`` differs from the belief's length, ``q`` has the wrong shape or is not finite, or
                a binding budget is combined with an ℓ∞ SQPM (non-smooth fee; not supported).
            TypeError: if a budget without a closed form meets traced inputs (SLSQP runs on concrete values only).
        """
        if mm.n != self.belief.shape[0]:
            raise ValueError(f"mm has n={mm.n} outcomes but belief has {self.belief.shape[0]}")
        q = mm._q(q)
        if q.ndim != 1:
            raise ValueError(f"q must have shape (n,), got {tuple(q.shape)}")
        r = mm.myopic_trade(q, self.belief, buy_only=self.buy_only)
        if self.budget is None:
            return r
        if has_closed_form_budget(mm, buy_only=self.buy_only):
            return budget_trade(mm, q, self.belief, self.budget)  # type: ignore[arg-type]
        leaves = jax.tree_util.tree_leaves((mm, q, self.belief, self.budget))
        if any(is_traced(x) for x in leaves):
            raise TypeError(
                "a budget without a closed form (DCFMM, buy-only, zero-sum or linf fee) is solved by SLSQP on concrete "
                "values: call best_trade outside jit/vmap, or use an l2 SmoothQuadratic with fee_on='bundle'"
            )
        if float(worst_case_spend(mm, q, r)) <= float(self.budget):
            return r
        if isinstance(mm, SmoothQuadratic) and mm.norm == "linf":
            raise ValueError("budget-bounded traders need a smooth quote: use norm='l2' (got norm='linf')")
        return self._solve_budget(mm, q)

    def _solve_budget(self, mm: CostFunctionMarket, q: jax.Array) -> jax.Array:
        n = mm.n
        budget = float(self.budget)  # type: ignore[arg-type]
        floor = np.hstack([np.eye(n), -np.ones((n, 1))])  # r_x - s >= 0
        constraints = [
            {
                "type": "ineq",
                "fun": lambda z: budget - float(_spend_epigraph(mm, jnp.asarray(z), q)[0]),
                "jac": lambda z: -np.asarray(_spend_epigraph(mm, jnp.asarray(z), q)[1]),
            },
            {"type": "ineq", "fun": lambda z: floor @ z, "jac": lambda z: floor},
        ]
        bounds = [(0.0, None) if self.buy_only else (None, None)] * n + [(None, None)]
        res = minimize(
            lambda z: tuple(np.asarray(v, dtype=np.float64) for v in _neg_profit(mm, jnp.asarray(z), q, self.belief)),
            np.zeros(n + 1),
            jac=True,
            method="SLSQP",
            bounds=bounds,
            constraints=constraints,
            options={"ftol": self.tol, "maxiter": 500},
        )
        r = np.asarray(res.x[:n])
        if self.buy_only:
            r = np.maximum(r, 0.0)
        # Tiny infeasibility left by the solver is removed by scaling towards r = 0: spend(t r) <= t spend(r) for
        # t in [0, 1] (convex quote, zero at r = 0), and r >= 0 is kept.
        spend = float(worst_case_spend(mm, q, jnp.asarray(r)))
        if spend > budget:
            r = r * (budget / spend)
        return jnp.asarray(r)


@jax.jit
def _neg_profit(mm: CostFunctionMarket, z: jax.Array, q: jax.Array, mu: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Value and gradient of minus the expected profit in the epigraph variables ``z = (r, s)``."""
    return jax.value_and_grad(lambda z: mm.quote(q, z[: mm.n]) - jnp.sum(mu * z[: mm.n]))(z)


@jax.jit
def _spend_epigraph(mm: CostFunctionMarket, z: jax.Array, q: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Value and gradient of ``quote(q, r) - s`` (the budget constraint's left side) in ``z = (r, s)``."""
    return jax.value_and_grad(lambda z: mm.quote(q, z[: mm.n]) - z[mm.n])(z)
