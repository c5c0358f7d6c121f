r"""A market's history (:class:`Trace`) and the market maker's loss on it, below markets, traders and simulation.

After outcome :math:`x` the market maker pays out :math:`q_T[x] - q_0[x]` and has received :math:`\sum_t` payments,
so its loss is :math:`q_T[x] - q_0[x] - \sum_t \mathrm{pay}_t` (Nueve & Waggoner 2025, Sec. 2).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nips25_market._checks import is_traced

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


def realized_loss(trace: Trace, outcome: Any) -> jax.Array:
    r"""Market maker's loss once ``outcome`` occurs: :math:`q_T[x] - q_0[x] - \sum_t \mathrm{pay}_t`.

    Traceable: ``jit``/``vmap`` over traces and outcomes work (a traced outcome is not range-checked).

    Args:
        trace: a :class:`Trace` (fields may carry leading batch axes, as from :func:`~nips25_market.replay_batch`).
        outcome: index ``x`` in ``[0, n)`` of the realised outcome: a Python int or an integer JAX/numpy scalar.

    Returns:
        0-d float array (the trace's dtype): the loss in currency units, negative meaning profit; with batched
        traces, one loss per batch entry (shape ``trace.payments.shape[:-1]``).

    Raises:
        ValueError: if a concrete ``outcome`` is out of range.
        TypeError: if ``outcome`` is not an integer.

    Example:
        >>> import numpy as np
        >>> from nips25_market import LMSR, replay
        >>> tr = replay(LMSR(2, b=1.0), np.array([[1.0, 0.0]]))
        >>> round(float(realized_loss(tr, 0)), 6)  # 1 - (log(1 + e) - log 2)
        0.379885
    """
    n = trace.q.shape[-1]
    if isinstance(outcome, (jax.Array, np.ndarray, np.generic)) and not isinstance(outcome, bool):
        if jnp.ndim(outcome) != 0 or not jnp.issubdtype(jnp.result_type(outcome), jnp.integer):
            raise TypeError(
                f"outcome must be an integer scalar index, got {jnp.result_type(outcome)} of shape {jnp.shape(outcome)}"
            )
        if not is_traced(outcome) and not 0 <= int(outcome) < n:
            raise ValueError(f"outcome must be in [0, {n}), got {int(outcome)}")
    elif isinstance(outcome, bool) or not isinstance(outcome, int):
        raise TypeError(f"outcome must be an int index, got {type(outcome).__name__}")
    elif not 0 <= outcome < n:
        raise ValueError(f"outcome must be in [0, {n}), got {outcome}")
    shares = jnp.take(trace.q[..., -1, :] - trace.q[..., 0, :], outcome, axis=-1)
    return shares - jnp.sum(trace.payments, axis=-1)


def worst_outcome_loss(trace: Trace) -> jax.Array:
    """The largest :func:`realized_loss` over all outcomes of ``trace`` (the sequence's worst case).

    Returns:
        0-d float array (or one per batch entry for batched traces); traceable.

    Example:
        >>> import numpy as np
        >>> from nips25_market import LMSR, replay
        >>> round(float(worst_outcome_loss(replay(LMSR(2, b=1.0), np.array([[1.0, 0.0]])))), 6)
        0.379885
    """
    return jnp.max(trace.q[..., -1, :] - trace.q[..., 0, :], axis=-1) - jnp.sum(trace.payments, axis=-1)
