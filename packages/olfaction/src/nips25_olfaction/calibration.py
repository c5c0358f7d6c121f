"""Calibration of the free constants on documented principles, on held-out odours, before any claim is measured.

The paper's constants were not retrieved, so three gains are set by rules fixed in advance (README "Choices"):

1. ``w_pn``: without LI or SFA and without noise, a mean 20% of KCs respond (fire >= 1 spike) to an odour;
   blocking APL roughly doubles the ~10% active fraction seen in flies.
2. ``w_li``: with LI on, the active fraction falls to 10%, the middle of the 5-15% measured in flies.
3. ``g_sfa``: a KC held at twice threshold fires, once adapted, at half its unadapted rate (mean-field closed form).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import jax
import numpy as np
from numpy.typing import ArrayLike

from nips25_olfaction.circuit import Circuit, simulate
from nips25_olfaction.lif import lif_rate, lif_v_inf
from nips25_olfaction.noise import WhiteNoise
from nips25_olfaction.params import CONDITIONS, CircuitParams

__all__ = ["CalibrationTargets", "calibrate", "calibrate_matched", "sfa_gain_for_ratio"]


@dataclass(frozen=True)
class CalibrationTargets:
    """The principles of the calibration (fixed before running; see module docstring)."""

    active_none: float = 0.20
    active_li: float = 0.10
    sfa_rate_ratio: float = 0.5
    sfa_drive: float = 2.0

    def __post_init__(self) -> None:
        if not 0.0 < self.active_li < self.active_none < 1.0:
            raise ValueError(f"need 0 < active_li < active_none < 1, got {self.active_li}, {self.active_none}")
        if not 0.0 < self.sfa_rate_ratio < 1.0:
            raise ValueError(f"sfa_rate_ratio must be in (0, 1), got {self.sfa_rate_ratio}")
        if self.sfa_drive <= 1.0:
            raise ValueError(f"sfa_drive must exceed the threshold 1.0, got {self.sfa_drive}")


def sfa_gain_for_ratio(params: CircuitParams, *, ratio: float = 0.5, drive: float = 2.0) -> float:
    r"""Adaptation strength that lowers a LIF neuron's steady rate under drive ``drive`` (x theta) by ``ratio``.

    Mean-field: adapted, :math:`\langle a \rangle = \Delta a\, r\, \tau_{sfa}`, so the rate solves
    :math:`r = f(V - g\,\Delta a\, r\, \tau_{sfa})`; with :math:`r = \rho f(V)`,
    :math:`g = (V - f^{-1}(\rho f(V))) / (\Delta a\, \rho f(V)\, \tau_{sfa})`.

    Args:
        params: membrane and adaptation constants (``theta``, ``tau_m``, ``t_ref``, ``v_reset``, ``delta_a``,
            ``tau_sfa``).
        ratio: adapted over unadapted steady rate, in ``(0, 1)``.
        drive: steady drive in units of ``theta``, finite and ``> 1``.

    Returns:
        ``g_sfa`` (threshold units per unit of the adaptation variable ``a``), a float.

    Raises:
        ValueError: if ``ratio`` or ``drive`` is out of range.

    References:
        Li et al., NeurIPS 2025 (SFA, 50 ms); the calibration rule is ours (README "Choices").
    """
    if not 0.0 < ratio < 1.0:
        raise ValueError(f"ratio must be in (0, 1), got {ratio}")
    if not (np.isfinite(drive) and drive > 1.0):
        raise ValueError(f"drive must be finite and > 1 (in units of theta), got {drive}")
    v = drive * params.theta
    r = ratio * lif_rate(v, params)
    return (v - lif_v_inf(r, params)) / (params.delta_a * r * params.tau_sfa)


def _bisect(
    f: Callable[[float], float], lo: float, hi: float, target: float, *, increasing: bool, iters: int = 30
) -> float:
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if (f(mid) < target) == increasing:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _check_tolerance(tolerance: float) -> None:
    if not (np.isfinite(tolerance) and 0.0 < tolerance < 1.0):
        raise ValueError(f"tolerance must be in (0, 1) (a gap in active fraction), got {tolerance}")


def _active_fraction_fn(pn_rates: ArrayLike, circuit: Circuit) -> Callable[[CircuitParams, str], float]:
    """Noise-free fraction of KCs firing >= 1 spike, as a function of (params, condition)."""
    rates = np.asarray(pn_rates, dtype=np.float64)
    if rates.ndim != 2 or rates.shape[0] == 0 or rates.shape[1] != circuit.n_pn:
        raise ValueError(f"pn_rates must have shape (K >= 1, n_pn={circuit.n_pn}), got {rates.shape}")
    if not np.all(np.isfinite(rates)) or np.any(rates < 0):
        raise ValueError("pn_rates must be finite and >= 0 (Hz)")
    key = jax.random.key(0)  # the calibration is noise-free: the key draws nothing that matters
    silent = WhiteNoise(0.0)

    def active(params: CircuitParams, condition: str) -> float:
        c = replace(circuit, params=params).with_condition(condition)
        return float(np.mean(np.asarray(simulate(c, rates, noise=silent, n_trials=1, key=key)) > 0))

    return active


def calibrate(
    pn_rates: ArrayLike,
    circuit: Circuit,
    *,
    targets: CalibrationTargets | None = None,
    tolerance: float = 0.02,
) -> CircuitParams:
    """Set ``w_pn``, ``w_li`` and ``g_sfa`` of ``circuit.params`` by the principles above, noise-free.

    Args:
        pn_rates: PN rates of held-out calibration odours, shape ``(K, n_pn)`` (not the odours of the test).
        circuit: wiring and the other constants.
        targets: the calibration principles (defaults above).
        tolerance: largest accepted gap between a reached and a targeted active fraction.

    Returns:
        A copy of ``circuit.params`` with the three gains set.

    Raises:
        ValueError: if ``pn_rates`` is malformed, ``tolerance`` is not in ``(0, 1)``, or a target active fraction
            cannot be reached within ``tolerance`` (e.g. silent odours, or too few PN inputs to activate that many
            KCs).
    """
    _check_tolerance(tolerance)
    targets = targets or CalibrationTargets()
    active = _active_fraction_fn(pn_rates, circuit)

    p = circuit.params
    w_pn = _bisect(lambda w: active(replace(p, w_pn=w), "none"), 0.0, 0.05, targets.active_none, increasing=True)
    p = replace(p, w_pn=w_pn)
    reached = active(p, "none")
    if abs(reached - targets.active_none) > tolerance:
        raise ValueError(
            f"pn_rates cannot drive {targets.active_none:.0%} of KCs (reached {reached:.1%} at w_pn={w_pn:.3g}); "
            "are the odours silent?"
        )
    w_li = _bisect(lambda w: active(replace(p, w_li=w), "LI"), 0.0, 1.0, targets.active_li, increasing=False)
    reached = active(replace(p, w_li=w_li), "LI")
    if abs(reached - targets.active_li) > tolerance:
        raise ValueError(f"lateral inhibition cannot bring activity to {targets.active_li:.0%} (reached {reached:.1%})")
    g_sfa = sfa_gain_for_ratio(p, ratio=targets.sfa_rate_ratio, drive=targets.sfa_drive)
    return replace(p, w_li=w_li, g_sfa=g_sfa)


def calibrate_matched(
    pn_rates: ArrayLike,
    circuit: Circuit,
    *,
    targets: CalibrationTargets | None = None,
    tolerance: float = 0.02,
    native: CircuitParams | None = None,
) -> dict[str, CircuitParams]:
    """Per-condition constants that give every condition the same KC sparseness (``targets.active_li`` active).

    Starts from :func:`calibrate` (the native calibration: one ``w_pn`` for all, ``w_li`` set with LI alone, the
    closed-form ``g_sfa``), then, noise-free on the calibration odours:

    * ``"none"`` and ``"SFA"``: ``w_pn`` lowered until ``active_li`` of KCs respond (the feed-forward circuit made as
      sparse by a weaker input);
    * ``"LI"`` and ``"LI+SFA"``: ``w_li`` re-set with that condition's modules on (SFA lowers the population rate
      and so weakens the inhibition; reusing LI's ``w_li`` would leave LI+SFA less sparse than LI).

    Args:
        pn_rates: PN rates of held-out calibration odours, shape ``(K, n_pn)``.
        circuit: wiring and the other constants.
        targets: the calibration principles; ``targets.active_li`` is the matched active fraction.
        tolerance: largest accepted gap between a reached and the targeted active fraction.
        native: the result of :func:`calibrate` on the same odours, circuit and targets, if already computed (it
            is then not recomputed; passing another circuit's constants gives constants for that one).

    Returns:
        ``{condition: CircuitParams}`` for the four conditions of :data:`CONDITIONS`.

    Raises:
        ValueError: as :func:`calibrate`, or if a condition cannot reach the target within ``tolerance``.
    """
    _check_tolerance(tolerance)
    targets = targets or CalibrationTargets()
    if native is None:
        native = calibrate(pn_rates, circuit, targets=targets, tolerance=tolerance)
    active = _active_fraction_fn(pn_rates, circuit)
    goal = targets.active_li
    out: dict[str, CircuitParams] = {}
    for condition in CONDITIONS:

        def reached_at(w: float, condition: str = condition) -> float:
            field = "w_li" if "LI" in condition else "w_pn"
            return active(replace(native, **{field: w}), condition)

        if "LI" in condition:
            params = replace(native, w_li=_bisect(reached_at, 0.0, 1.0, goal, increasing=False))
        else:
            params = replace(native, w_pn=_bisect(reached_at, 0.0, native.w_pn, goal, increasing=True))
        reached = active(params, condition)
        if abs(reached - goal) > tolerance:
            raise ValueError(f"condition {condition!r} cannot reach {goal:.0%} active KCs (reached {reached:.1%})")
        out[condition] = params
    return out
