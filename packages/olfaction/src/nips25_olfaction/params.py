"""Hyper-parameters of the Kenyon-cell (KC) layer: leaky integrate-and-fire, lateral inhibition, adaptation.

Units: seconds for times, Hz for rates; membrane potential is dimensionless, measured from rest (``E_L = 0``) in
units of the spike threshold (``theta = 1``), and input currents are expressed as the steady potential they
produce (``R I``), so ``w_pn`` is "threshold units per Hz of PN input".
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import jax
import numpy as np

__all__ = ["CONDITIONS", "CircuitParams"]

CONDITIONS = ("none", "LI", "SFA", "LI+SFA")


@dataclass(frozen=True)
class CircuitParams:
    r"""Parameters of the KC layer (Li et al., NeurIPS 2025, Sec. 2; constants reconstructed, see README "Choices").

    KC membrane (exponential Euler over ``dt``):

    .. math::
        \tau_m \dot V = -V + w_{pn} \sum_{j \in \mathrm{claws}} \mathrm{PN}_j(t) - w_{li} z(t) - g_{sfa} a(t),

    a spike when :math:`V \ge \theta`, then :math:`V \leftarrow V_{reset}` for ``t_ref``.
    Adaptation (SFA): :math:`\tau_{sfa} \dot a = -a`, :math:`a \mathrel{+}= \Delta a` per spike.
    Lateral inhibition (APL-like global feedback): :math:`\tau_{li} \dot z = -z + r_{pop}(t)`, where
    :math:`r_{pop}` is the mean KC firing rate (Hz) of the population.

    The three gains ``w_pn``, ``w_li``, ``g_sfa`` may be JAX tracers (``jax.vmap`` over strengths); the time
    constants, ``theta``, ``v_reset``, ``dt`` and ``window`` fix the compiled program and must be Python floats.

    Attributes:
        tau_m: membrane time constant (s).
        theta: spike threshold (dimensionless, > v_reset).
        v_reset: reset potential.
        t_ref: absolute refractory period (s).
        dt: integration step (s).
        window: simulated response window (s); spikes are counted over all of it.
        w_pn: PN-to-KC synaptic gain (threshold units per Hz), same for every claw.
        tau_li: time constant of the inhibitory trace (s); the paper's 5 ms.
        w_li: inhibition strength (threshold units per Hz of mean KC rate); used when LI is on.
        tau_sfa: adaptation time constant (s); the paper's 50 ms.
        delta_a: jump of the adaptation variable per spike.
        g_sfa: adaptation strength (threshold units per unit of ``a``); used when SFA is on.
    """

    tau_m: float = 10e-3
    theta: float = 1.0
    v_reset: float = 0.0
    t_ref: float = 2e-3
    dt: float = 0.5e-3
    window: float = 0.2
    w_pn: float = 2.5e-3
    tau_li: float = 5e-3
    w_li: float = 0.05
    tau_sfa: float = 50e-3
    delta_a: float = 1.0
    g_sfa: float = 0.05

    def __post_init__(self) -> None:
        for name in ("tau_m", "theta", "v_reset", "t_ref", "dt", "window", "tau_li", "tau_sfa", "delta_a"):
            if not isinstance(getattr(self, name), numbers.Real):
                raise TypeError(f"{name} must be a real number, got {getattr(self, name)!r}")
        for name in ("w_pn", "w_li", "g_sfa"):
            value = getattr(self, name)
            if not isinstance(value, (numbers.Real, jax.Array, np.ndarray)) or getattr(value, "ndim", 0) != 0:
                raise TypeError(f"{name} must be a real scalar, got {value!r}")
        for name in ("tau_m", "dt", "window", "tau_li", "tau_sfa", "delta_a"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and > 0, got {value}")
        for name in ("t_ref", "w_pn", "w_li", "g_sfa"):
            value = getattr(self, name)
            if name != "t_ref" and isinstance(value, jax.core.Tracer):
                continue  # a gain traced by jit/vmap (a sweep over strengths): checked by the caller's values
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be finite and >= 0, got {value}")
        if not (math.isfinite(self.theta) and math.isfinite(self.v_reset) and self.theta > self.v_reset):
            raise ValueError(f"theta must be finite and > v_reset, got theta={self.theta}, v_reset={self.v_reset}")
        if self.dt > min(self.tau_m, self.tau_li, self.tau_sfa):
            raise ValueError(f"dt must not exceed the shortest time constant, got dt={self.dt}")
        if self.window < self.dt:
            raise ValueError(f"window must be at least one step dt={self.dt}, got {self.window}")
        for name in ("window", "t_ref"):  # simulated on the dt grid: a remainder would be rounded away silently
            steps = getattr(self, name) / self.dt
            if abs(steps - round(steps)) > 1e-6:
                raise ValueError(f"{name} must be a whole number of steps dt={self.dt}, got {getattr(self, name)}")

    @property
    def n_steps(self) -> int:
        """Number of integration steps in the response window."""
        return round(self.window / self.dt)

    @property
    def ref_steps(self) -> int:
        """Refractory period in steps."""
        return round(self.t_ref / self.dt)
