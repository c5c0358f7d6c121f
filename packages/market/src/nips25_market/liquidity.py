r"""Liquidity: choosing :math:`b`, and adaptive liquidity for the Smooth Quadratic Prediction Market.

Because the SQPM decouples the price rule from the fee (Nueve & Waggoner 2025, Sec. 6), liquidity can change
between trades without moving prices. Our reconstruction keeps a price state :math:`s` with
:math:`p = \nabla C_1(s)` (the base market at :math:`b = 1`) and, at liquidity :math:`b_t`, charges
:math:`\langle p, r\rangle + \frac{L_1}{2 b_t}\|r\|^2` and moves :math:`s \leftarrow s + r/b_t`. For a constant
:math:`b` this is exactly :class:`~nips25_market.SmoothQuadratic` over the base with liquidity :math:`b`
(:math:`s = q/b`). The schedule grows with traded volume, :math:`b_t = b_0 + \alpha V_t`,
:math:`V_t = \sum_{s<t}\|r_s\|_1` (the liquidity-sensitive idea of Othman et al. 2013, applied to the SQPM fee).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import jax
import jax.numpy as jnp

from nips25_market._checks import as_vector, check_positive, check_simplex
from nips25_market.cost_functions import DCFMM, LMSR, QuadraticDCFMM, register_pytree
from nips25_market.trace import Trace

__all__ = ["VolumeLiquidity", "b_for_loss_budget", "simulate_adaptive"]


def b_for_loss_budget(n: int, budget: float, *, market: Literal["lmsr", "quadratic"] = "lmsr") -> float:
    r"""The liquidity :math:`b` whose worst-case loss equals ``budget``.

    LMSR: :math:`b = B / \ln n`; quadratic: :math:`b = 2B / (1 - 1/n)`. The SQPM over either base has the same
    worst-case bound, so the same :math:`b` applies.

    Args:
        n: number of outcomes (``>= 2``).
        budget: the largest loss the market maker accepts, currency units (``> 0``).
        market: ``"lmsr"`` or ``"quadratic"``.

    Returns:
        :math:`b > 0`.

    Raises:
        ValueError: if ``n < 2``, ``budget <= 0`` or ``market`` is unknown.

    Example:
        >>> round(b_for_loss_budget(4, 13.8629436112), 6)
        10.0
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"n must be an int >= 2, got {n!r}")
    budget = check_positive(budget, "budget")
    if market == "lmsr":
        return budget / math.log(n)
    if market == "quadratic":
        return 2.0 * budget / (1.0 - 1.0 / n)
    raise ValueError(f"market must be 'lmsr' or 'quadratic', got {market!r}")


@register_pytree(data=("b0", "alpha"), meta=())
@dataclass(frozen=True, eq=False)
class VolumeLiquidity:
    r"""Liquidity schedule :math:`b_t = b_0 + \alpha V_t` with :math:`V_t` the volume traded before trade :math:`t`.

    A JAX pytree: ``b0`` and ``alpha`` may be traced (``jax.vmap`` over a liquidity sweep).

    Args:
        b0: initial liquidity (``> 0``).
        alpha: growth per unit of volume, :math:`\|r\|_1` (``>= 0``; 0 gives a constant :math:`b`).

    Example:
        >>> float(VolumeLiquidity(b0=10.0, alpha=0.5)(4.0))
        12.0
    """

    b0: Any = 1.0
    alpha: Any = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "b0", check_positive(self.b0, "b0"))
        object.__setattr__(self, "alpha", check_positive(self.alpha, "alpha", allow_zero=True))

    def __call__(self, volume: jax.Array) -> jax.Array:
        """:math:`b` after ``volume`` shares have traded."""
        return self.b0 + self.alpha * jnp.asarray(volume)


@jax.jit
def _adaptive(unit: DCFMM, schedule: VolumeLiquidity, beliefs: jax.Array) -> tuple[Trace, jax.Array]:
    n = unit.n
    l1 = unit.smoothness("l2")

    def step(carry: tuple[jax.Array, jax.Array, jax.Array], mu: jax.Array) -> tuple[Any, tuple[jax.Array, ...]]:
        s, q, vol = carry
        b = schedule(vol)
        p = unit.price(s)
        d = mu - p
        r = (d - jnp.mean(d)) * b / l1
        pay = jnp.sum(p * r) + 0.5 * (l1 / b) * jnp.sum(r * r)
        return (s + r / b, q + r, vol + jnp.sum(jnp.abs(r))), (q + r, p, r, pay, b)

    zero = jnp.zeros(n)
    (s, _, _), (qs, ps, rs, pays, bs) = jax.lax.scan(step, (zero, zero, jnp.zeros(())), beliefs)
    trace = Trace(
        q=jnp.concatenate([zero[None], qs]),
        prices=jnp.concatenate([ps, unit.price(s)[None]]),
        trades=rs,
        payments=pays,
    )
    return trace, bs


def simulate_adaptive(
    base: Literal["lmsr", "quadratic"], beliefs: Any, schedule: VolumeLiquidity
) -> tuple[Trace, jax.Array]:
    """Myopic ℓ2 traders in an SQPM whose liquidity follows ``schedule`` (module docstring).

    Args:
        base: ``"lmsr"`` or ``"quadratic"``; the number of outcomes is ``beliefs.shape[1]``.
        beliefs: ``(T, n)`` probability vectors, one per arriving trader.
        schedule: the :class:`VolumeLiquidity` schedule.

    Returns:
        ``(trace, b)``: the :class:`~nips25_market.Trace` (``q`` = shares sold, from 0) and ``(T,)`` liquidity used
        for each trade. With ``alpha = 0`` it equals ``simulate(SmoothQuadratic(base(n, b0)), beliefs)``.

    Raises:
        ValueError: if ``beliefs`` is not ``(T, n)`` on the simplex or ``base`` is unknown.
    """
    if base not in ("lmsr", "quadratic"):
        raise ValueError(f"base must be 'lmsr' or 'quadratic', got {base!r}")
    if not isinstance(schedule, VolumeLiquidity):
        raise TypeError(f"schedule must be a VolumeLiquidity, got {type(schedule).__name__}")
    arr = as_vector(beliefs, "beliefs")
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise ValueError(f"beliefs must have shape (T, n >= 2), got {tuple(arr.shape)}")
    n = int(arr.shape[1])
    beliefs = check_simplex(arr, "beliefs", n)
    unit: DCFMM = LMSR(n, b=1.0) if base == "lmsr" else QuadraticDCFMM(n, b=1.0)
    return _adaptive(unit, schedule, beliefs)
