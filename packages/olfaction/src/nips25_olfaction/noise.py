"""Input noise on the projection-neuron (PN) rates: white Gaussian or Ornstein-Uhlenbeck (the swept variable)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import jax

__all__ = ["Noise", "OUNoise", "WhiteNoise", "noise_step"]


def _check_sigma(sigma: object) -> None:
    if isinstance(sigma, jax.core.Tracer):  # jax.vmap over noise levels: shape/dtype only
        if sigma.ndim != 0:
            raise ValueError(f"sigma must be a scalar, got shape {sigma.shape}")
        return
    if isinstance(sigma, bool) or (not isinstance(sigma, numbers.Real) and getattr(sigma, "ndim", None) != 0):
        raise TypeError(f"sigma must be a real scalar (Hz), got {sigma!r}")
    if not (math.isfinite(sigma) and sigma >= 0):  # type: ignore[arg-type, operator]
        raise ValueError(f"sigma must be finite and >= 0, got {sigma}")


@dataclass(frozen=True)
class WhiteNoise:
    r"""Independent Gaussian noise at every step: :math:`\xi_t \sim \mathcal N(0, \sigma^2)` per PN.

    Attributes:
        sigma: standard deviation (Hz), ``>= 0``; may be a traced scalar (``jax.vmap`` over noise levels).
    """

    sigma: float

    def __post_init__(self) -> None:
        _check_sigma(self.sigma)

    def decay_over(self, dt: float) -> float:
        """Factor :math:`e^{-dt/\tau}` carried from one sample to the next (0: independent samples)."""
        del dt
        return 0.0


@dataclass(frozen=True)
class OUNoise:
    r"""Ornstein-Uhlenbeck noise :math:`d\xi = -\xi/\tau\,dt + \sigma\sqrt{2/\tau}\,dW` (stationary variance
    :math:`\sigma^2`).

    Sampled exactly: :math:`\xi_{t+dt} = \xi_t e^{-dt/\tau} + \sigma\sqrt{1 - e^{-2dt/\tau}}\,\eta`, started from the
    stationary law, so ``sigma`` is the standard deviation of the noise at every time (as for :class:`WhiteNoise`).

    Attributes:
        sigma: stationary standard deviation (Hz), ``>= 0``; may be a traced scalar (``jax.vmap`` over levels).
        tau: correlation time (s), ``> 0``.
    """

    sigma: float
    tau: float = 20e-3

    def __post_init__(self) -> None:
        _check_sigma(self.sigma)
        if isinstance(self.tau, bool) or not isinstance(self.tau, numbers.Real):
            raise TypeError(f"tau must be a real number (s), got {self.tau!r}")
        if not (math.isfinite(self.tau) and self.tau > 0):
            raise ValueError(f"tau must be finite and > 0, got {self.tau}")

    def decay_over(self, dt: float) -> float:
        """Factor :math:`e^{-dt/\tau}` carried from one sample to the next."""
        return math.exp(-dt / self.tau)


Noise = WhiteNoise | OUNoise


def noise_step(xi: jax.Array, key: jax.Array, sigma: jax.Array, decay: float) -> jax.Array:
    r"""One exact step of a stationary Gaussian AR(1) process: :math:`\xi' = d\,\xi + \sigma\sqrt{1-d^2}\,\eta`.

    ``decay = 0`` gives white noise, ``decay = exp(-dt/tau)`` the exact OU transition; the stationary standard
    deviation is ``sigma`` in both cases.
    """
    return xi * decay + sigma * math.sqrt(1.0 - decay**2) * jax.random.normal(key, xi.shape)
