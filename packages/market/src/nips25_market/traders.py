r"""Myopic traders: risk-neutral agents who maximise expected profit of one trade under their belief.

A trader with belief :math:`\mu \in \Delta_n` facing quote :math:`Q(q, r)` buys
:math:`r^\star = \arg\max_r \langle \mu, r\rangle - Q(q, r)` (Nueve & Waggoner 2025, Sec. 4), optionally subject to

* a budget :math:`B`: the worst case of the trade, :math:`Q(q, r) - \min_x r_x \le B` (Sec. 5, reconstructed);
* buy-only securities: :math:`r \ge 0` (Sec. 5).

Without a budget every market has a closed form (``myopic_trade`` of the market). With one, the concave problem
with a convex constraint is solved by SLSQP on the epigraph form (variables :math:`r, s`; :math:`s \le r_x`,
:math:`Q(q,r) - s \le B`) with JAX gradients; when the unconstrained optimum already fits the budget it is returned.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import minimize

from nips25_market._checks import check_positive, check_simplex
from nips25_market.cost_functions import CostFunctionMarket
from nips25_market.smooth_quadratic import SmoothQuadratic

__all__ = ["MyopicTrader", "worst_case_spend"]


def worst_case_spend(mm: CostFunctionMarket, q: jax.Array, r: jax.Array) -> jax.Array:
    r"""The trader's worst-case loss from buying ``r``: :math:`Q(q, r) - \min_x r_x` (what a budget bounds).

    Args:
        mm: the market maker.
        q: ``(n,)`` state.
        r: ``(n,)`` bundle.

    Returns:
        Scalar, ``>= 0`` in every market without arbitrage.
    """
    return mm.quote(q, r) - jnp.min(jnp.asarray(r), axis=-1)


@dataclass(frozen=True, eq=False)
class MyopicTrader:
    r"""A myopic, risk-neutral trader with a belief, an optional budget and an optional buy-only restriction.

    Args:
        belief: ``(n,)`` probability vector :math:`\mu` (entries >= 0, sum 1).
        budget: bound :math:`B > 0` on :math:`Q(q, r) - \min_x r_x`, or ``None`` for no bound.
        buy_only: only non-negative bundles.
        tol: solver tolerance of the budget-constrained problem.

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
    budget: float | None = None
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

        Args:
            mm: market maker with ``n`` equal to the belief's length.
            q: ``(n,)`` current state.

        Returns:
            ``(n,)`` optimal bundle under the trader's constraints.

        Raises:
            ValueError: if ``mm.n`` differs from the belief's length, ``q`` has the wrong shape or is not finite, or
                a budget is combined with an ℓ∞ SQPM (non-smooth fee; not supported).
        """
        if mm.n != self.belief.shape[0]:
            raise ValueError(f"mm has n={mm.n} outcomes but belief has {self.belief.shape[0]}")
        q = mm._q(q)
        if q.ndim != 1:
            raise ValueError(f"q must have shape (n,), got {tuple(q.shape)}")
        r = mm.myopic_trade(q, self.belief, buy_only=self.buy_only)
        if self.budget is None or float(worst_case_spend(mm, q, r)) <= self.budget:
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


@partial(jax.jit, static_argnums=0)
def _neg_profit(mm: CostFunctionMarket, z: jax.Array, q: jax.Array, mu: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Value and gradient of minus the expected profit in the epigraph variables ``z = (r, s)``."""
    return jax.value_and_grad(lambda z: mm.quote(q, z[: mm.n]) - jnp.sum(mu * z[: mm.n]))(z)


@partial(jax.jit, static_argnums=0)
def _spend_epigraph(mm: CostFunctionMarket, z: jax.Array, q: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Value and gradient of ``quote(q, r) - s`` (the budget constraint's left side) in ``z = (r, s)``."""
    return jax.value_and_grad(lambda z: mm.quote(q, z[: mm.n]) - z[mm.n])(z)
