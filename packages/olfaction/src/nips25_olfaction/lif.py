"""Closed forms of the leaky integrate-and-fire neuron used by the KC layer (f-I curve and its inverse)."""

from __future__ import annotations

import math

from nips25_olfaction.params import CircuitParams

__all__ = ["lif_rate", "lif_v_inf"]


def lif_rate(v_inf: float, params: CircuitParams) -> float:
    r"""Firing rate (Hz) of a LIF neuron under constant drive (its f-I curve).

    .. math:: r = \left[t_{ref} + \tau_m \ln\frac{V_\infty - V_{reset}}{V_\infty - \theta}\right]^{-1}
        \quad (V_\infty > \theta), \qquad r = 0 \text{ otherwise}.

    Args:
        v_inf: steady potential of the drive, :math:`R I` (threshold units).
        params: membrane constants (``tau_m``, ``t_ref``, ``theta``, ``v_reset``).

    Returns:
        Rate in Hz (continuous time; a simulation with step ``dt`` quantises spike times to the grid).

    Example:
        >>> round(lif_rate(2.0, CircuitParams()), 2)  # 1 / (2 ms + 10 ms * ln 2)
        111.96
    """
    if not math.isfinite(v_inf):
        raise ValueError(f"v_inf must be finite, got {v_inf}")
    if v_inf <= params.theta:
        return 0.0
    return 1.0 / (params.t_ref + params.tau_m * math.log((v_inf - params.v_reset) / (v_inf - params.theta)))


def lif_v_inf(rate: float, params: CircuitParams) -> float:
    """Inverse of :func:`lif_rate`: the steady drive giving ``rate`` Hz (``0 < rate < 1 / t_ref``).

    Args:
        rate: firing rate (Hz), ``0 < rate < 1 / t_ref``.
        params: membrane constants.

    Returns:
        Steady potential :math:`V_\\infty` (threshold units), ``> theta``.

    Raises:
        ValueError: if ``rate`` is out of range.

    Example:
        >>> round(lif_v_inf(lif_rate(2.0, CircuitParams()), CircuitParams()), 12)
        2.0
    """
    if not (math.isfinite(rate) and rate > 0) or rate * params.t_ref >= 1.0:
        raise ValueError(f"rate must be in (0, 1/t_ref), got {rate}")
    e = math.exp((1.0 / rate - params.t_ref) / params.tau_m)
    return (e * params.theta - params.v_reset) / (e - 1.0)
