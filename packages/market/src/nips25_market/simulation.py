r"""Trade sequences: replaying given bundles, simulating myopic traders, and the market maker's loss.

The state evolves as :math:`q_{t+1} = q_t + r_t`, trader :math:`t` pays :math:`\mathrm{quote}(q_t, r_t)`. After
outcome :math:`x` the market maker pays out :math:`q_T[x] - q_0[x]` and has received :math:`\sum_t` payments, so its
loss is :math:`q_T[x] - q_0[x] - \sum_t \mathrm{pay}_t` (Nueve & Waggoner 2025, Sec. 2).

Layering: :mod:`~nips25_market.trace` and the markets sit below the traders, and this module on top of both;
``Trace``, ``realized_loss`` and ``worst_outcome_loss`` live in :mod:`nips25_market.trace` and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from nips25_market._checks import as_matrix, as_vector, check_simplex
from nips25_market.cost_functions import CostFunctionMarket
from nips25_market.trace import Trace, realized_loss, worst_outcome_loss
from nips25_market.traders import MyopicTrader

__all__ = ["Trace", "realized_loss", "replay", "replay_batch", "simulate", "simulate_batch", "worst_outcome_loss"]


@partial(jax.jit, static_argnums=0)
def _replay(mm: CostFunctionMarket, trades: jax.Array, q0: jax.Array) -> Trace:
    def step(q: jax.Array, r: jax.Array) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
        return q + r, (q + r, mm.quote(q, r))

    _, (qs, pays) = jax.lax.scan(step, q0, trades)
    q = jnp.concatenate([q0[None], qs])
    return Trace(q=q, prices=mm.price(q), trades=trades, payments=pays)


@partial(jax.jit, static_argnums=0)
def _simulate_myopic(
    mm: CostFunctionMarket, beliefs: jax.Array, buy_only: jax.Array, q0: jax.Array, active: jax.Array | None = None
) -> Trace:
    def step(q: jax.Array, inp: tuple[jax.Array, jax.Array, jax.Array]) -> tuple[jax.Array, tuple[jax.Array, ...]]:
        mu, bo, act = inp
        r = jnp.where(bo, mm.myopic_trade(q, mu, buy_only=True), mm.myopic_trade(q, mu, buy_only=False))
        r = jnp.where(act, r, 0.0)
        return q + r, (q + r, r, mm.quote(q, r))

    active = jnp.ones(beliefs.shape[0], dtype=bool) if active is None else active
    _, (qs, trades, pays) = jax.lax.scan(step, q0, (beliefs, buy_only, active))
    q = jnp.concatenate([q0[None], qs])
    return Trace(q=q, prices=mm.price(q), trades=trades, payments=pays)


def _q0(mm: CostFunctionMarket, q0: Any) -> jax.Array:
    return jnp.zeros(mm.n) if q0 is None else as_vector(q0, "q0", mm.n, batch=False)


def replay(mm: CostFunctionMarket, trades: Any, *, q0: Any = None) -> Trace:
    """Execute a fixed sequence of bundles in ``mm`` (one ``lax.scan``, jit-compiled per market).

    Args:
        mm: the market maker (hashable; one compilation per market and shape).
        trades: ``(T, n)`` bundles.
        q0: ``(n,)`` initial state, zeros by default.

    Returns:
        The :class:`Trace`.

    Raises:
        ValueError: if ``trades`` is not ``(T, n)``, empty, or not finite; or ``q0`` is not ``(n,)``.

    Example:
        >>> import numpy as np
        >>> from nips25_market import LMSR
        >>> tr = replay(LMSR(2, b=1.0), np.array([[1.0, 0.0]]))
        >>> round(float(tr.payments[0]), 6)  # log(1 + e) - log 2
        0.620115
    """
    return _replay(mm, as_matrix(trades, "trades", mm.n), _q0(mm, q0))


def simulate(mm: CostFunctionMarket, traders: Sequence[MyopicTrader] | Any, *, q0: Any = None) -> Trace:
    """Let myopic traders arrive one at a time, each buying its best bundle at the current state.

    Args:
        mm: the market maker.
        traders: a sequence of :class:`MyopicTrader`, or a ``(T, n)`` array of beliefs (unconstrained traders).
            Without budgets the whole sequence runs as one jit-compiled ``lax.scan``; with budgets a Python loop
            calls the constrained solver.
        q0: ``(n,)`` initial state, zeros by default.

    Returns:
        The :class:`Trace`.

    Raises:
        ValueError: if there are no traders, a belief is off the simplex, or lengths disagree with ``mm.n``.
    """
    start = _q0(mm, q0)
    if isinstance(traders, Sequence) and len(traders) > 0 and all(isinstance(t, MyopicTrader) for t in traders):
        if any(t.belief.shape[0] != mm.n for t in traders):
            raise ValueError(f"every trader's belief must have length n={mm.n}")
        if all(t.budget is None for t in traders):
            beliefs = jnp.stack([t.belief for t in traders])
            flags = jnp.asarray([t.buy_only for t in traders])
            return _simulate_myopic(mm, beliefs, flags, start)
        q, trades = start, []
        for t in traders:
            r = t.best_trade(mm, q)
            trades.append(r)
            q = q + r
        return replay(mm, jnp.stack(trades), q0=start)
    if isinstance(traders, Sequence) and len(traders) == 0:
        raise ValueError("traders must not be empty")
    beliefs = check_simplex(as_matrix(traders, "traders", mm.n), "traders")
    return _simulate_myopic(mm, beliefs, jnp.zeros(beliefs.shape[0], dtype=bool), start)


def replay_batch(mm: CostFunctionMarket, trades: Any) -> Trace:
    """:func:`replay` of ``S`` independent sequences from ``q = 0`` at once (``vmap``); pad with zero bundles.

    Args:
        mm: the market maker.
        trades: ``(S, T, n)`` bundles; a zero bundle costs nothing and leaves the state unchanged.

    Returns:
        A :class:`Trace` whose fields carry a leading ``S`` axis.

    Raises:
        ValueError: if ``trades`` is not ``(S, T, n)`` or not finite.
    """
    arr = as_vector(trades, "trades", mm.n)
    if arr.ndim != 3:
        raise ValueError(f"trades must have shape (S, T, n={mm.n}), got {tuple(arr.shape)}")
    return _replay_batch(mm, arr)


@partial(jax.jit, static_argnums=0)
def _replay_batch(mm: CostFunctionMarket, trades: jax.Array) -> Trace:
    return jax.vmap(lambda tr: _replay(mm, tr, jnp.zeros(mm.n)))(trades)


@partial(jax.jit, static_argnums=0)
def _simulate_batch(mm: CostFunctionMarket, beliefs: jax.Array, flags: jax.Array, active: jax.Array) -> Trace:
    return jax.vmap(lambda b, a: _simulate_myopic(mm, b, flags, jnp.zeros(mm.n), a))(beliefs, active)


def simulate_batch(mm: CostFunctionMarket, beliefs: Any, *, active: Any = None, buy_only: bool = False) -> Trace:
    """:func:`simulate` of ``S`` independent markets of unconstrained myopic traders at once, from ``q = 0``.

    Args:
        mm: the market maker.
        beliefs: ``(S, T, n)`` probability vectors.
        active: ``(S, T)`` booleans; inactive slots trade nothing (padding for unequal lengths). All by default.
        buy_only: every trader is restricted to ``r >= 0``.

    Returns:
        A :class:`Trace` whose fields carry a leading ``S`` axis.

    Raises:
        ValueError: if shapes disagree or a belief is off the simplex.
    """
    arr = check_simplex(as_vector(beliefs, "beliefs", mm.n), "beliefs")
    if arr.ndim != 3:
        raise ValueError(f"beliefs must have shape (S, T, n={mm.n}), got {tuple(arr.shape)}")
    act = jnp.ones(arr.shape[:2], dtype=bool) if active is None else jnp.asarray(active, dtype=bool)
    if act.shape != arr.shape[:2]:
        raise ValueError(f"active must have shape {tuple(arr.shape[:2])}, got {tuple(act.shape)}")
    flags = jnp.full(arr.shape[1], bool(buy_only))
    return _simulate_batch(mm, arr, flags, act)
