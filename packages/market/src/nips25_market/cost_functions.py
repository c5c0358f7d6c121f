r"""Duality-based cost-function market makers (DCFMMs): LMSR and the quadratic market.

A DCFMM over :math:`n` Arrow-Debreu securities keeps the outstanding shares :math:`q \in \mathbb{R}^n` and prices
trades with a convex cost :math:`C(q) = \sup_{\mu \in \Delta_n} \langle \mu, q \rangle - R(\mu)`; the instantaneous
price is :math:`p(q) = \nabla C(q) \in \Delta_n` and a bundle :math:`r` costs :math:`C(q + r) - C(q)`
(Abernethy, Chen & Wortman Vaughan 2013; Nueve & Waggoner 2025, Sec. 2). The payment splits into a linear part and
a Bregman divergence, :math:`C(q+r) - C(q) = \langle p(q), r\rangle + D_C(q + r, q)`, the decomposition the Smooth
Quadratic Prediction Market (:mod:`nips25_market.smooth_quadratic`) starts from.

Every method is a pure JAX function of the state: ``jit``- and ``vmap``-clean; float64 when
``jax_enable_x64`` is on, which importing the package does not do (:mod:`nips25_market.precision`). The markets
are JAX pytrees (``b`` a leaf, ``n`` static), so they pass through ``jax.jit`` as arguments and ``jax.vmap`` maps
over their liquidity: ``jax.vmap(lambda b: LMSR(4, b=b).cost(q))(bs)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

from nips25_market._checks import as_vector, check_positive, check_simplex
from nips25_market.precision import warn_if_float32
from nips25_market.trace import Trace, realized_loss

__all__ = ["DCFMM", "LMSR", "CostFunctionMarket", "Norm", "QuadraticDCFMM", "project_simplex", "register_pytree"]

Norm = Literal["l2", "linf"]
_NORMS = ("l2", "linf")
_C = TypeVar("_C", bound=type)


def register_pytree(data: Sequence[str], meta: Sequence[str]) -> Any:
    """Class decorator: register a frozen dataclass as a JAX pytree with ``data`` fields as leaves.

    ``meta`` fields are static (hashable, part of the tree structure). Unflattening bypasses ``__init__`` (and so
    ``__post_init__``'s checks), since JAX rebuilds trees with tracers or placeholders as leaves.
    """

    def wrap(cls: _C) -> _C:
        def flatten(obj: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
            return tuple(getattr(obj, f) for f in data), tuple(getattr(obj, f) for f in meta)

        def unflatten(aux: tuple[Any, ...], children: Any) -> Any:
            obj: Any = object.__new__(cls)
            for name, value in (*zip(meta, aux), *zip(data, children)):
                object.__setattr__(obj, name, value)
            return obj

        jax.tree_util.register_pytree_node(cls, flatten, unflatten)
        return cls

    return wrap


def _check_n(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int (number of outcomes), got {type(n).__name__}")
    if n < 2:
        raise ValueError(f"n must be >= 2 outcomes, got {n}")
    return n


def _check_norm(norm: object) -> Norm:
    if norm not in _NORMS:
        raise ValueError(f"norm must be one of {_NORMS}, got {norm!r}")
    return norm  # type: ignore[return-value]


def _project_simplex_1d(v: jax.Array) -> jax.Array:
    u = jnp.sort(v)[::-1]
    css = jnp.cumsum(u)
    k = jnp.arange(1, v.shape[0] + 1, dtype=v.dtype)
    rho = jnp.sum(u - (css - 1.0) / k > 0)
    theta = (jnp.take(css, rho - 1) - 1.0) / rho
    return jnp.maximum(v - theta, 0.0)


def project_simplex(v: jax.Array) -> jax.Array:
    r"""Euclidean projection onto the probability simplex, :math:`\Pi_\Delta(v) = \arg\min_{\mu\in\Delta}\|\mu-v\|_2`.

    Sort-based algorithm (Held, Wolfe & Crowder 1974; Duchi et al. 2008): with :math:`u` sorted decreasingly,
    :math:`\rho = \max\{k : u_k - (\sum_{j\le k} u_j - 1)/k > 0\}`, :math:`\theta = (\sum_{j\le\rho} u_j - 1)/\rho`
    and :math:`\Pi_\Delta(v) = \max(v - \theta, 0)`.

    Args:
        v: ``(..., n)`` real array; the projection acts on the last axis.

    Returns:
        ``(..., n)`` array of probability vectors.

    Raises:
        ValueError: if ``v`` is empty, a scalar, or holds NaN/inf.

    Example:
        >>> import numpy as np
        >>> np.asarray(project_simplex(jnp.array([2.0, 0.0]))).tolist()
        [1.0, 0.0]
    """
    v = as_vector(v, "v")
    return jnp.vectorize(_project_simplex_1d, signature="(n)->(n)")(v)


class CostFunctionMarket:
    """Interface shared by every market maker of this package (state ``q``, bundle ``r``, both ``(..., n)``)."""

    n: int

    def cost(self, q: jax.Array) -> jax.Array:
        """The potential :math:`C(q)` whose gradient is the price; ``(..., n) -> (...)``."""
        raise NotImplementedError

    def price(self, q: jax.Array) -> jax.Array:
        r"""Instantaneous price :math:`p(q) = \nabla C(q) \in \Delta_n`; ``(..., n) -> (..., n)``."""
        raise NotImplementedError

    def quote(self, q: jax.Array, r: jax.Array) -> jax.Array:
        """What the market maker charges for bundle ``r`` at state ``q``; ``(..., n), (..., n) -> (...)``."""
        raise NotImplementedError

    def worst_case_loss(self) -> float:
        """Supremum over outcomes and trade sequences from ``q = 0`` of the market maker's loss."""
        raise NotImplementedError

    def myopic_trade(self, q: jax.Array, belief: jax.Array, *, buy_only: bool = False) -> jax.Array:
        r"""A myopic trader's best bundle :math:`\arg\max_r \langle \mu, r\rangle - \mathrm{quote}(q, r)`."""
        raise NotImplementedError

    def path_payments(self, q: jax.Array, trades: jax.Array, prices: jax.Array | None = None) -> jax.Array:
        """Payments along a path: ``(T+1, n)`` states with ``q[t+1] = q[t] + trades[t]`` -> ``(T,)`` quotes.

        The default quotes every trade at its state (one batched :meth:`quote`); a DCFMM telescopes its cost; the
        SQPM reuses ``prices`` (``(T+1, n)``, :meth:`price` of ``q``) when given.
        """
        return self.quote(q[..., :-1, :], trades)

    def _q(self, q: jax.Array, name: str = "q") -> jax.Array:
        return as_vector(q, name, self.n)

    def _mu(self, mu: jax.Array, name: str = "mu") -> jax.Array:
        return check_simplex(mu, name, self.n)

    def trade(self, q: jax.Array, r: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Execute bundle ``r`` at state ``q``.

        Args:
            q: ``(..., n)`` outstanding shares.
            r: ``(..., n)`` bundle bought (negative entries sell).

        Returns:
            ``(q + r, payment)`` with ``payment = quote(q, r)``.

        Raises:
            ValueError: if a shape is not ``(..., n)`` or a value is NaN/inf.
        """
        q = self._q(q)
        r = self._q(r, "r")
        return q + r, self.quote(q, r)

    def realized_loss(self, trace: Trace, outcome: Any) -> jax.Array:
        """Market maker's loss on ``trace`` once ``outcome`` occurs (see :func:`nips25_market.realized_loss`)."""
        return realized_loss(trace, outcome)


class DCFMM(CostFunctionMarket):
    r"""A duality-based cost-function market maker: quote :math:`C(q+r) - C(q)`, price :math:`\nabla C(q)`."""

    b: Any

    def regularizer(self, mu: jax.Array) -> jax.Array:
        r"""The convex conjugate :math:`R(\mu)` on the simplex; ``(..., n) -> (...)``."""
        raise NotImplementedError

    def state_for_price(self, mu: jax.Array) -> jax.Array:
        r"""A state :math:`q` with :math:`p(q) = \mu` (a subgradient of :math:`R` at :math:`\mu`)."""
        raise NotImplementedError

    def smoothness(self, norm: Norm = "l2") -> Any:
        r"""Smoothness constant :math:`L` of :math:`C` in ``norm``: :math:`D_C(q+r, q) \le \frac{L}{2}\|r\|^2`."""
        raise NotImplementedError

    def quote(self, q: jax.Array, r: jax.Array) -> jax.Array:
        r"""DCFMM payment :math:`C(q + r) - C(q)` for bundle ``r`` at state ``q`` (Sec. 2).

        Args:
            q: ``(..., n)`` outstanding shares.
            r: ``(..., n)`` bundle.

        Returns:
            ``(...)`` payment in currency units.

        Raises:
            ValueError: if a shape is not ``(..., n)`` or a value is NaN/inf.
        """
        q = self._q(q)
        r = self._q(r, "r")
        return self.cost(q + r) - self.cost(q)

    def path_payments(self, q: jax.Array, trades: jax.Array, prices: jax.Array | None = None) -> jax.Array:
        """Payments along a path of states: :math:`C(q_{t+1}) - C(q_t)`, one cost evaluation per state."""
        c = self.cost(q)
        return c[..., 1:] - c[..., :-1]

    def bregman(self, q: jax.Array, r: jax.Array) -> jax.Array:
        r"""Bregman part of the payment, :math:`D_C(q + r, q) = C(q+r) - C(q) - \langle p(q), r \rangle \ge 0`.

        Args:
            q: ``(..., n)`` outstanding shares.
            r: ``(..., n)`` bundle.

        Returns:
            ``(...)`` the divergence (the DCFMM's price-impact charge).
        """
        q = self._q(q)
        r = self._q(r, "r")
        return self.cost(q + r) - self.cost(q) - jnp.sum(self.price(q) * r, axis=-1)

    def myopic_trade(self, q: jax.Array, belief: jax.Array, *, buy_only: bool = False) -> jax.Array:
        r"""Best bundle of a risk-neutral trader with belief :math:`\mu`: move the price to :math:`\mu`.

        In a DCFMM the profit :math:`\langle\mu, r\rangle - C(q+r) + C(q)` is maximised where
        :math:`p(q + r) = \mu`; by translation invariance any :math:`r + c\mathbf{1}` is optimal too. We return the
        zero-sum optimum, or with ``buy_only`` the optimum shifted so that :math:`\min_x r_x = 0`.

        Args:
            q: ``(n,)`` outstanding shares.
            belief: ``(n,)`` probability vector :math:`\mu`.
            buy_only: return a bundle with non-negative entries.

        Returns:
            ``(n,)`` the bundle :math:`r`.
        """
        q = self._q(q)
        belief = self._mu(belief, "belief")
        r = self.state_for_price(belief) - q
        r = r - jnp.mean(r, axis=-1, keepdims=True)
        if buy_only:
            r = r - jnp.min(r, axis=-1, keepdims=True)
        return r


@register_pytree(data=("b",), meta=("n",))
@dataclass(frozen=True, eq=False)
class LMSR(DCFMM):
    r"""Hanson's logarithmic market scoring rule as a DCFMM.

    :math:`R(\mu) = b\sum_x \mu_x\log\mu_x`, :math:`C(q) = b\log\sum_x e^{q_x/b}`, :math:`p(q) = \mathrm{softmax}(q/b)`;
    worst-case loss :math:`b\ln n`. Computed with ``logsumexp``/``softmax``: stable for :math:`|q/b|` up to ~1e300.

    Args:
        n: number of outcomes, ``>= 2``.
        b: liquidity, ``> 0`` (currency units; larger means smaller price impact and larger worst-case loss): a
            Python/numpy real or a 0-d JAX array; a traced ``b`` (``jax.vmap`` over liquidity) is accepted unchecked.

    Example:
        >>> mm = LMSR(4, b=10.0)
        >>> round(mm.worst_case_loss(), 6)
        13.862944
    """

    n: int
    b: Any = 1.0

    def __post_init__(self) -> None:
        _check_n(self.n)
        object.__setattr__(self, "b", check_positive(self.b, "b"))
        warn_if_float32(type(self).__name__)

    def cost(self, q: jax.Array) -> jax.Array:
        """LMSR cost :math:`b\\,\\mathrm{logsumexp}(q/b)`; ``(..., n) -> (...)``."""
        q = self._q(q)
        return self.b * logsumexp(q / self.b, axis=-1)

    def price(self, q: jax.Array) -> jax.Array:
        """LMSR price :math:`\\mathrm{softmax}(q/b)`; ``(..., n) -> (..., n)``."""
        q = self._q(q)
        return jax.nn.softmax(q / self.b, axis=-1)

    def regularizer(self, mu: jax.Array) -> jax.Array:
        """Negative entropy :math:`b\\sum_x \\mu_x \\log \\mu_x` (with :math:`0 \\log 0 = 0`).

        Raises:
            ValueError: if ``mu`` is not ``(..., n)`` probability vectors (finite, ``>= 0``, summing to 1 within 1e-6).
        """
        mu = self._mu(mu)
        return self.b * jnp.sum(jax.scipy.special.xlogy(mu, mu), axis=-1)

    def state_for_price(self, mu: jax.Array) -> jax.Array:
        """:math:`b\\log\\mu` (entries of :math:`\\mu` floored at the smallest positive float64).

        Raises:
            ValueError: if ``mu`` is not ``(..., n)`` probability vectors (finite, ``>= 0``, summing to 1 within 1e-6).
        """
        mu = self._mu(mu)
        return self.b * jnp.log(jnp.maximum(mu, jnp.finfo(jnp.float64).tiny))

    def smoothness(self, norm: Norm = "l2") -> Any:
        r"""Smoothness of LMSR's cost: :math:`1/b` in ℓ∞, :math:`1/(2b)` in ℓ2.

        The ℓ2 constant follows from :math:`\lambda_{\max}(\mathrm{diag}\,p - pp^\top) \le 1/2`.
        """
        return 0.5 / self.b if _check_norm(norm) == "l2" else 1.0 / self.b

    def worst_case_loss(self) -> Any:
        """:math:`b \\ln n` (attained as one outcome is bought without bound and then occurs)."""
        return self.b * math.log(self.n)


@register_pytree(data=("b",), meta=("n",))
@dataclass(frozen=True, eq=False)
class QuadraticDCFMM(DCFMM):
    r"""The quadratic-scoring-rule DCFMM.

    :math:`R(\mu) = \frac{b}{2}\|\mu\|_2^2`, :math:`p(q) = \Pi_\Delta(q/b)` (Euclidean projection onto the simplex),
    :math:`C(q) = \langle p, q\rangle - \frac{b}{2}\|p\|_2^2`; worst-case loss :math:`\frac{b}{2}(1 - \frac1n)`.

    Args:
        n: number of outcomes, ``>= 2``.
        b: liquidity, ``> 0``.

    Example:
        >>> QuadraticDCFMM(2, b=4.0).worst_case_loss()
        1.0
    """

    n: int
    b: Any = 1.0

    def __post_init__(self) -> None:
        _check_n(self.n)
        object.__setattr__(self, "b", check_positive(self.b, "b"))
        warn_if_float32(type(self).__name__)

    def price(self, q: jax.Array) -> jax.Array:
        """:math:`\\Pi_\\Delta(q/b)`; ``(..., n) -> (..., n)``."""
        q = self._q(q)
        return project_simplex(q / self.b)

    def cost(self, q: jax.Array) -> jax.Array:
        """:math:`\\langle p, q\\rangle - \\frac{b}{2}\\|p\\|^2` with :math:`p = \\Pi_\\Delta(q/b)`."""
        q = self._q(q)
        p = project_simplex(q / self.b)
        return jnp.sum(p * q, axis=-1) - 0.5 * self.b * jnp.sum(p * p, axis=-1)

    def regularizer(self, mu: jax.Array) -> jax.Array:
        """:math:`\\frac{b}{2}\\|\\mu\\|_2^2` on the simplex.

        Raises:
            ValueError: if ``mu`` is not ``(..., n)`` probability vectors (finite, ``>= 0``, summing to 1 within 1e-6).
        """
        mu = self._mu(mu)
        return 0.5 * self.b * jnp.sum(mu * mu, axis=-1)

    def state_for_price(self, mu: jax.Array) -> jax.Array:
        """:math:`b\\mu` (the projection of :math:`\\mu \\in \\Delta` is itself).

        Raises:
            ValueError: if ``mu`` is not ``(..., n)`` probability vectors (finite, ``>= 0``, summing to 1 within 1e-6).
        """
        return self.b * self._mu(mu)

    def smoothness(self, norm: Norm = "l2") -> Any:
        r"""Smoothness of the quadratic cost: :math:`1/b` in ℓ2 (:math:`\Pi_\Delta` is 1-Lipschitz), :math:`n/b` in ℓ∞.

        The ℓ∞ constant follows from :math:`\|r\|_2^2 \le n\|r\|_\infty^2` (valid, not claimed tight).
        """
        return 1.0 / self.b if _check_norm(norm) == "l2" else self.n / self.b

    def worst_case_loss(self) -> Any:
        """:math:`\\frac{b}{2}(1 - 1/n)`: :math:`R` at a vertex minus :math:`R` at the uniform distribution."""
        return 0.5 * self.b * (1.0 - 1.0 / self.n)
