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

from statistics import NormalDist

import numpy as np
from numpy.typing import NDArray

__all__ = ["balanced_gains", "gain_jittered", "onset_then_common"]


def balanced_gains(
    rng: np.random.Generator, n_odors: int, n_train: int, n_test: int, *, log_sd: float
) -> NDArray[np.float64]:
    """Log-normal concentration gains, stratified so that every odour gets the same gains in a shuffled order.

    The training trials of every odour carry the same ``n_train`` quantiles ``exp(log_sd * z_i)``,
    ``z_i = Phi^-1((i + 1/2) / n_train)`` (and the test trials the ``n_test`` quantiles), each odour in its own
    random order. So no odour's mean gain differs from another's by sampling chance: with independent draws the odour
    whose training trials happened to be loudest takes a large common-mode component into its Hebbian weights and
    wins almost every test trial, whatever the circuit (0.2.0's combined control: 70 of 80 test trials named the
    loudest odour in every condition).

    Args:
        rng: seeded generator (the order of the gains).
        n_odors, n_train, n_test: sizes, each ``>= 1``.
        log_sd: standard deviation of the log gain, ``>= 0``.

    Returns:
        Gains, shape ``(n_odors, n_train + n_test)`` (training trials first).

    Example:
        >>> g = balanced_gains(np.random.default_rng(0), 3, 4, 2, log_sd=0.5)
        >>> g.shape, bool(np.allclose(g[:, :4].mean(axis=1), g[0, :4].mean()))
        ((3, 6), True)
    """
    if min(n_odors, n_train, n_test) < 1 or not (np.isfinite(log_sd) and log_sd >= 0):
        raise ValueError(f"need n_odors, n_train, n_test >= 1 and log_sd >= 0, got {n_odors, n_train, n_test, log_sd}")
    inv_cdf = NormalDist().inv_cdf

    def strata(n: int) -> NDArray[np.float64]:
        q = np.exp(log_sd * np.array([inv_cdf((i + 0.5) / n) for i in range(n)]))
        return np.stack([rng.permutation(q) for _ in range(n_odors)])

    return np.concatenate([strata(n_train), strata(n_test)], axis=1)


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
