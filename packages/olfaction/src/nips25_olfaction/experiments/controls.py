"""Planted inputs of the positive controls: settings in which a mechanism is known to act (CONTRACT 4a).

* :func:`gain_jittered` (lateral inhibition): every trial presents the odour at a random concentration, a common
  gain on all PN rates. Global feedback inhibition normalises the total KC activity, so it removes this common-mode
  nuisance; LI must help here if the readout can see it.
* :func:`onset_then_common` (adaptation): the odour-specific pattern is on only for a short onset, then every odour
  continues with the same sustained pattern. Without adaptation the counts are dominated by the uninformative
  sustained firing; adaptation suppresses sustained firing (and marks the KCs that fired at onset), so SFA must help
  here if the readout can see rate changes.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["gain_jittered", "onset_then_common"]


def gain_jittered(pn_rates: NDArray[np.float64], gains: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per-trial concentration jitter: trial ``t`` of odour ``k`` presents ``gains[k, t] * pn_rates[k]``.

    Args:
        pn_rates: PN rates (Hz), shape ``(K, n_pn)`` or ``(K, T, n_pn)``.
        gains: positive gains, shape ``(K, n_trials)`` (e.g. log-normal).

    Returns:
        Rates, shape ``(K, n_trials, n_pn)`` or ``(K, n_trials, T, n_pn)``; simulate each trial as its own row with
        ``n_trials=1``.
    """
    if gains.ndim != 2 or gains.shape[0] != pn_rates.shape[0] or np.any(gains <= 0):
        raise ValueError(f"gains must be positive with shape ({pn_rates.shape[0]}, n_trials), got {gains.shape}")
    g = gains.reshape(gains.shape + (1,) * (pn_rates.ndim - 1))
    return g * pn_rates[:, None]


def onset_then_common(
    pn_rates: NDArray[np.float64], n_steps: int, onset_steps: int, *, sustained: NDArray[np.float64] | None = None
) -> NDArray[np.float64]:
    """Odour-specific PN rates for the first ``onset_steps`` steps, then a pattern common to every odour.

    Args:
        pn_rates: PN rates (Hz), shape ``(K, n_pn)``.
        n_steps: steps in the window (``CircuitParams.n_steps``).
        onset_steps: steps of odour-specific input, ``1 <= onset_steps < n_steps``.
        sustained: the common pattern ``(n_pn,)``; default the mean of ``pn_rates`` over odours.

    Returns:
        Time-varying rates, shape ``(K, n_steps, n_pn)``.
    """
    if not 1 <= onset_steps < n_steps:
        raise ValueError(f"onset_steps must be in [1, {n_steps}), got {onset_steps}")
    common = pn_rates.mean(axis=0) if sustained is None else sustained
    out = np.broadcast_to(common, (pn_rates.shape[0], n_steps, pn_rates.shape[1])).copy()
    out[:, :onset_steps] = pn_rates[:, None, :]
    return out
