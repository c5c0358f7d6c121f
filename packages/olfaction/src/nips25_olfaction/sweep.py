"""The paper's experiment: odour discrimination for the four conditions across noise levels and seeds."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import jax
import numpy as np
from numpy.typing import ArrayLike, NDArray

from nips25_olfaction.circuit import Circuit, simulate
from nips25_olfaction.noise import OUNoise, WhiteNoise
from nips25_olfaction.params import CONDITIONS, CircuitParams
from nips25_olfaction.readout import READOUTS, accuracy
from nips25_olfaction.sparseness import active_fraction, sparseness
from nips25_shared import progress

__all__ = ["SweepResult", "sweep"]


@dataclass(frozen=True)
class SweepResult:
    """Accuracies and coding statistics of a sweep.

    Attributes:
        conditions: condition names, length C.
        noise_levels: sigma values (Hz), length L.
        seeds: seeds, length S.
        readouts: readout names, length R.
        accuracy: held-out accuracy, shape ``(R, C, L, S)``.
        active: fraction of active KCs, shape ``(C, L, S)``.
        population_sparseness: Treves-Rolls population sparseness, shape ``(C, L, S)``.
    """

    conditions: tuple[str, ...]
    noise_levels: tuple[float, ...]
    seeds: tuple[int, ...]
    readouts: tuple[str, ...]
    accuracy: NDArray[np.float64]
    active: NDArray[np.float64]
    population_sparseness: NDArray[np.float64]

    def mean_se(self, readout: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Mean and standard error over seeds of the accuracy, each of shape ``(C, L)``."""
        acc = self.accuracy[self.readouts.index(readout)]
        n = acc.shape[-1]
        se = acc.std(axis=-1, ddof=1) / np.sqrt(n) if n > 1 else np.zeros(acc.shape[:-1])
        return acc.mean(axis=-1), se


def sweep(
    pn_rates: ArrayLike,
    params: CircuitParams,
    *,
    noise_levels: tuple[float, ...],
    seeds: tuple[int, ...],
    conditions: tuple[str, ...] = CONDITIONS,
    readouts: tuple[str, ...] = ("mbon", "centroid"),
    n_kc: int = 2000,
    claws: int = 6,
    n_train: int = 20,
    n_test: int = 20,
    noise_kind: Literal["ou", "white"] = "ou",
    noise_tau: float = 20e-3,
) -> SweepResult:
    """Train/test odour identification for every (condition, noise level, seed).

    For each seed a new wiring (key ``seed``) and new noise (key ``seed + 10_000``) are drawn; the four conditions
    share the wiring and the noise of a seed, so their differences are paired. Each odour gets ``n_train`` trials
    to fit the readout and ``n_test`` fresh trials to score it, all at the same noise level.

    Args:
        pn_rates: PN rates (Hz), shape ``(K, n_pn)``, ``K >= 2``.
        params: circuit constants (calibrated gains).
        noise_levels: sigma values (Hz), each ``>= 0``.
        seeds: seeds, at least one.
        conditions: subset of ``("none", "LI", "SFA", "LI+SFA")``.
        readouts: subset of ``("mbon", "centroid", "logistic")``.
        n_kc, claws: wiring size.
        n_train, n_test: trials per odour for fitting and for scoring.
        noise_kind: ``"ou"`` (Ornstein-Uhlenbeck, correlation time ``noise_tau``) or ``"white"``.
        noise_tau: OU correlation time (s).

    Returns:
        A :class:`SweepResult`.

    Raises:
        ValueError: on empty or out-of-range arguments.
    """
    rates = np.asarray(pn_rates, dtype=np.float64)
    if rates.ndim != 2 or rates.shape[0] < 2:
        raise ValueError(f"pn_rates must have shape (K >= 2, n_pn), got {rates.shape}")
    if not noise_levels or any(not np.isfinite(s) or s < 0 for s in noise_levels):
        raise ValueError(f"noise_levels must be non-empty and >= 0, got {noise_levels}")
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    bad = [c for c in conditions if c not in CONDITIONS] + [r for r in readouts if r not in READOUTS]
    if bad or not conditions or not readouts:
        raise ValueError(f"unknown or empty conditions/readouts: {bad or (conditions, readouts)}")
    if n_train < 1 or n_test < 1:
        raise ValueError(f"n_train and n_test must be >= 1, got {n_train}, {n_test}")
    if noise_kind not in ("ou", "white"):
        raise ValueError(f"noise_kind must be 'ou' or 'white', got {noise_kind!r}")
    k = rates.shape[0]
    labels = np.repeat(np.arange(k), n_train)
    test_labels = np.repeat(np.arange(k), n_test)
    acc = np.zeros((len(readouts), len(conditions), len(noise_levels), len(seeds)))
    act = np.zeros((len(conditions), len(noise_levels), len(seeds)))
    sparse = np.zeros_like(act)
    cells = [(s, ln) for s in range(len(seeds)) for ln in range(len(noise_levels))]
    for si, li in progress(cells, desc="sweep"):
        seed, sigma = seeds[si], float(noise_levels[li])
        base = Circuit.random(jax.random.key(seed), n_pn=rates.shape[1], n_kc=n_kc, claws=claws, params=params)
        noise = OUNoise(sigma, noise_tau) if noise_kind == "ou" else WhiteNoise(sigma)
        for ci, cond in enumerate(conditions):
            counts = np.asarray(
                simulate(
                    replace(base).with_condition(cond),
                    rates,
                    noise=noise,
                    n_trials=n_train + n_test,
                    key=jax.random.key(seed + 10_000 + li),
                )
            )
            train = counts[:, :n_train].reshape(-1, n_kc)
            test = counts[:, n_train:].reshape(-1, n_kc)
            for ri, kind in enumerate(readouts):
                acc[ri, ci, li, si] = accuracy(train, labels, test, test_labels, kind=kind)  # type: ignore[arg-type]
            act[ci, li, si] = active_fraction(counts)
            sparse[ci, li, si] = sparseness(counts) if counts.any() else 1.0
    return SweepResult(
        tuple(conditions), tuple(map(float, noise_levels)), tuple(seeds), tuple(readouts), acc, act, sparse
    )
