r"""The Smooth Quadratic Prediction Market (SQPM) of Nueve & Waggoner (NeurIPS 2025).

The DCFMM payment :math:`\langle p(q), r\rangle + D_C(q+r, q)` is split, and its Bregman part is replaced by the
quadratic upper bound that :math:`L`-smoothness of :math:`C` gives (Sec. 3, reconstructed; see the README):

.. math::
    \mathrm{quote}(q, r) = \langle \nabla C(q), r \rangle + \frac{L}{2}\|r\|^2, \qquad q \leftarrow q + r.

The price rule stays :math:`p(q) = \nabla C(q)`; the fee is decoupled from it. A myopic trader with belief
:math:`\mu` then buys :math:`r^\star = \arg\max_r \langle \mu - p, r\rangle - \frac{L}{2}\|r\|^2`, which in the
2-norm is :math:`(\mu - p)/L`: one steepest-descent step of size :math:`1/L` on
:math:`F(q) = C(q) - \langle\mu, q\rangle`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

import jax
import jax.numpy as jnp

from nips25_market._checks import check_positive, is_traced
from nips25_market.cost_functions import DCFMM, CostFunctionMarket, Norm, _check_norm, register_pytree

__all__ = ["FeeOn", "SmoothQuadratic"]

FeeOn = Literal["bundle", "zero_sum"]
_FEE_ON = ("bundle", "zero_sum")


@register_pytree(data=("base", "L"), meta=("norm", "fee_on", "n"))
@dataclass(frozen=True, eq=False)
class SmoothQuadratic(CostFunctionMarket):
    r"""Smooth Quadratic Prediction Market over a DCFMM ``base`` (Nueve & Waggoner 2025, Sec. 3).

    Prices are the base's, :math:`p(q) = \nabla C(q)`; a bundle :math:`r` costs
    :math:`\langle p(q), r\rangle + \frac{L}{2}\|\tilde r\|^2` with :math:`\tilde r = r` (``fee_on="bundle"``) or its
    zero-sum part :math:`r - \bar r\mathbf{1}` (``fee_on="zero_sum"``). Since :math:`C` is :math:`L`-smooth, the fee
    is at least the base's Bregman charge on every trade, so the SQPM earns at least what the DCFMM earns on any
    trade sequence, and
    :math:`\mathrm{rev}_{SQ} - \mathrm{rev}_{DC} = \sum_t \frac{L}{2}\|\tilde r_t\|^2 - D_C(q_{t+1}, q_t)`.

    Args:
        base: the DCFMM whose cost :math:`C` sets prices (``LMSR`` or ``QuadraticDCFMM``).
        L: smoothness constant of :math:`C` in ``norm``; ``None`` takes the base's tight bound
            (LMSR: :math:`1/(2b)` in ℓ2, :math:`1/b` in ℓ∞; quadratic: :math:`1/b` in ℓ2, :math:`n/b` in ℓ∞).
            A smaller ``L`` than the base's bound voids the revenue guarantee (a ``UserWarning`` says so); a larger one
            is allowed. A 0-d JAX array or a tracer is accepted (unchecked when traced), as for the base's ``b``.
        norm: ``"l2"`` (steepest descent is gradient descent) or ``"linf"`` (sign-gradient steps).
        fee_on: ``"bundle"`` (fee on :math:`\|r\|`, the brief's reading) or ``"zero_sum"`` (fee on the zero-sum part,
            which restores translation invariance :math:`\mathrm{quote}(q, r + c\mathbf 1) = \mathrm{quote}(q, r) + c`);
            ``"zero_sum"`` is implemented for ``norm="l2"``.

    Raises:
        TypeError: if ``base`` is not a :class:`~nips25_market.DCFMM`.
        ValueError: if ``L <= 0`` or not finite, ``norm``/``fee_on`` unknown, or ``zero_sum`` with ``linf``.

    Warns:
        UserWarning: if ``L`` is below the base's smoothness constant in ``norm`` (the revenue guarantee is void).

    References:
        Nueve & Waggoner, "Smooth Quadratic Prediction Markets", NeurIPS 2025, arXiv:2505.02959, Sec. 3-4.

    Example:
        >>> from nips25_market import LMSR
        >>> mm = SmoothQuadratic(LMSR(2, b=1.0))
        >>> mm.L
        0.5
        >>> float(mm.quote(jnp.zeros(2), jnp.array([1.0, 0.0])))  # 0.5 * 1 + 0.25 * 1
        0.75
    """

    base: DCFMM
    L: Any = None
    norm: Norm = "l2"
    fee_on: FeeOn = "bundle"
    n: int = field(init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.base, DCFMM):
            raise TypeError(f"base must be a DCFMM (LMSR or QuadraticDCFMM), got {type(self.base).__name__}")
        _check_norm(self.norm)
        if self.fee_on not in _FEE_ON:
            raise ValueError(f"fee_on must be one of {_FEE_ON}, got {self.fee_on!r}")
        if self.fee_on == "zero_sum" and self.norm != "l2":
            raise ValueError("fee_on='zero_sum' is implemented for norm='l2' only")
        bound = self.base.smoothness(self.norm)
        L = bound if self.L is None else check_positive(self.L, "L")
        if not (is_traced(bound) or is_traced(L)) and bool(bound > L):
            warnings.warn(
                f"L={float(L):g} is below the base market's smoothness constant {float(bound):g} ({self.norm}): "
                "the fee can fall below the base's Bregman charge, so the SQPM's revenue guarantee over the DCFMM no "
                "longer holds",
                UserWarning,
                stacklevel=3,
            )
        object.__setattr__(self, "L", L if isinstance(L, jax.Array) else float(L))
        object.__setattr__(self, "n", self.base.n)

    @property
    def smoothness_constant(self) -> Any:
        """The :math:`L` in use (the base's bound when none was given)."""
        assert self.L is not None
        return self.L

    def cost(self, q: jax.Array) -> jax.Array:
        """The base's cost :math:`C(q)`, the potential whose gradient is the SQPM price."""
        return self.base.cost(q)

    def price(self, q: jax.Array) -> jax.Array:
        r"""Instantaneous price :math:`p(q) = \nabla C(q)` of the base; ``(..., n) -> (..., n)``."""
        return self.base.price(q)

    def fee(self, r: jax.Array) -> jax.Array:
        r"""Quadratic fee :math:`\frac{L}{2}\|\tilde r\|^2` (replaces the Bregman term); ``(..., n) -> (...)``.

        Args:
            r: ``(..., n)`` bundle.

        Returns:
            ``(...)`` fee, with :math:`\tilde r` the bundle or its zero-sum part (``fee_on``).
        """
        r = self._q(r, "r")
        if self.fee_on == "zero_sum":
            r = r - jnp.mean(r, axis=-1, keepdims=True)
        sq = jnp.sum(r * r, axis=-1) if self.norm == "l2" else jnp.max(jnp.abs(r), axis=-1) ** 2
        return 0.5 * self.smoothness_constant * sq

    def quote(self, q: jax.Array, r: jax.Array) -> jax.Array:
        r"""SQPM payment :math:`\langle p(q), r\rangle + \frac{L}{2}\|\tilde r\|^2` (Sec. 3).

        Args:
            q: ``(..., n)`` outstanding shares.
            r: ``(..., n)`` bundle (negative entries sell).

        Returns:
            ``(...)`` payment; never below the base DCFMM's :math:`C(q+r) - C(q)` when ``L`` is at least the base's
            smoothness constant.

        Raises:
            ValueError: if a shape is not ``(..., n)`` or a value is NaN/inf.
        """
        q = self._q(q)
        r = self._q(r, "r")
        return jnp.sum(self.price(q) * r, axis=-1) + self.fee(r)

    def path_payments(self, q: jax.Array, trades: jax.Array, prices: jax.Array | None = None) -> jax.Array:
        r"""Payments along a path, :math:`\langle p(q_t), r_t\rangle + \mathrm{fee}(r_t)`, reusing ``prices``."""
        if prices is None:
            return super().path_payments(q, trades)
        return jnp.sum(prices[..., :-1, :] * trades, axis=-1) + self.fee(trades)

    def bregman(self, q: jax.Array, r: jax.Array) -> jax.Array:
        """The base's Bregman charge :math:`D_C(q+r, q)`, which the fee upper-bounds."""
        return self.base.bregman(q, r)

    def worst_case_loss(self) -> Any:
        r"""Upper bound on the loss: the base's worst case (:math:`b\ln n` for LMSR).

        Every SQPM payment is at least the DCFMM payment, so the loss on any sequence is at most the DCFMM's on the
        same sequence; splitting a purchase into ever smaller pieces approaches the bound, so it is the supremum.
        """
        return self.base.worst_case_loss()

    def myopic_trade(self, q: jax.Array, belief: jax.Array, *, buy_only: bool = False) -> jax.Array:
        r"""Best bundle of a myopic trader with belief :math:`\mu` (closed forms, Sec. 4-5).

        With :math:`d = \mu - p(q)`: ℓ2 and ``fee_on="bundle"``: :math:`r = d / L` (buy-only:
        :math:`\max(d, 0)/L`); ``"zero_sum"``: the same zero-sum step (buy-only: :math:`(d - \min_x d_x)/L`);
        ℓ∞: :math:`r = \frac{\|d\|_1}{L}\,\mathrm{sign}(d)` (buy-only: :math:`\frac{\sum_x d_x^+}{L}\mathbf 1[d > 0]`).

        Args:
            q: ``(n,)`` outstanding shares.
            belief: ``(n,)`` probability vector.
            buy_only: restrict to :math:`r \ge 0`.

        Returns:
            ``(n,)`` the optimal bundle.
        """
        q = self._q(q)
        belief = self._q(belief, "belief")
        d = belief - self.price(q)
        d = d - jnp.mean(d, axis=-1, keepdims=True)
        inv_l = 1.0 / self.smoothness_constant
        if self.norm == "linf":
            if buy_only:
                pos = jnp.maximum(d, 0.0)
                return inv_l * jnp.sum(pos, axis=-1, keepdims=True) * (d > 0)
            return inv_l * jnp.sum(jnp.abs(d), axis=-1, keepdims=True) * jnp.sign(d)
        if not buy_only:
            return inv_l * d
        if self.fee_on == "zero_sum":
            return inv_l * (d - jnp.min(d, axis=-1, keepdims=True))
        return inv_l * jnp.maximum(d, 0.0)
