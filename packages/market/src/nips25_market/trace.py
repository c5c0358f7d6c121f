r"""A market's history (:class:`Trace`) and the market maker's loss on it, below markets, traders and simulation.

After outcome :math:`x` the market maker pays out :math:`q_T[x] - q_0[x]` and has received :math:`\sum_t` payments,
so its loss is :math:`q_T[x] - q_0[x] - \sum_t \mathrm{pay}_t` (Nueve & Waggoner 2025, Sec. 2).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Trace", "realized_loss", "worst_outcome_loss"]


class Trace(NamedTuple):
    """A market's history over ``T`` trades.

    Attributes:
        q: ``(T+1, n)`` states, ``q[0]`` the initial one.
        prices: ``(T+1, n)`` instantaneous prices at each state.
        trades: ``(T, n)`` bundles bought.
        payments: ``(T,)`` what each trader paid.
    """

    q: jax.Array
    prices: jax.Array
    trades: jax.Array
    payments: jax.Array


def realized_loss(trace: Trace, outcome: int) -> float:
    r"""Market maker's loss once ``outcome`` occurs: :math:`q_T[x] - q_0[x] - \sum_t \mathrm{pay}_t`.

    Args:
        trace: a :class:`Trace`.
        outcome: index ``x`` in ``[0, n)`` of the realised outcome.

    Returns:
        The loss in currency units (negative means profit).

    Raises:
        ValueError: if ``outcome`` is out of range.
        TypeError: if ``outcome`` is not an integer.
    """
    if isinstance(outcome, bool) or not isinstance(outcome, (int, np.integer)):
        raise TypeError(f"outcome must be an int index, got {type(outcome).__name__}")
    n = trace.q.shape[-1]
    if not 0 <= int(outcome) < n:
        raise ValueError(f"outcome must be in [0, {n}), got {outcome}")
    return float(trace.q[-1, outcome] - trace.q[0, outcome] - jnp.sum(trace.payments))


def worst_outcome_loss(trace: Trace) -> float:
    """The largest :func:`realized_loss` over all outcomes of ``trace`` (the sequence's worst case)."""
    return float(jnp.max(trace.q[-1] - trace.q[0]) - jnp.sum(trace.payments))
