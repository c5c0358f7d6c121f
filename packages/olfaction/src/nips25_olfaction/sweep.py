"""The paper's experiment: odour discrimination for the four conditions across noise levels and seeds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike, NDArray

from nips25_olfaction.circuit import Circuit, _check_int, random_claws, simulate
from nips25_olfaction.noise import OUNoise, WhiteNoise
from nips25_olfaction.params import CONDITIONS, CircuitParams
from nips25_olfaction.readout import READOUTS, accuracy
from nips25_olfaction.sparseness import active_fraction, sparseness
from nips25_shared import progress

__all__ = ["SweepResult", "simulate_noise_levels", "sweep"]


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
        mean_count: mean spikes per KC per trial, shape ``(C, L, S)``.
    """

    conditions: tuple[str, ...]
    noise_levels: tuple[float, ...]
    seeds: tuple[int, ...]
    readouts: tuple[str, ...]
    accuracy: NDArray[np.float64]
    active: NDArray[np.float64]
    population_sparseness: NDArray[np.float64]
    mean_count: NDArray[np.float64]

    def mean_se(self, readout: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Mean and standard error over seeds of the accuracy, each of shape ``(C, L)``."""
        acc = self.accuracy[self.readouts.index(readout)]
        n = acc.shape[-1]
        se = acc.std(axis=-1, ddof=1) / np.sqrt(n) if n > 1 else np.zeros(acc.shape[:-1])
        return acc.mean(axis=-1), se


def simulate_noise_levels(
    circuit: Circuit,
    pn_rates: ArrayLike,
    *,
    sigmas: ArrayLike,
    keys: jax.Array,
    n_trials: int,
    noise_kind: Literal["ou", "white"] = "ou",
    noise_tau: float = 20e-3,
) -> jax.Array:
    """:func:`simulate` at every noise level at once: one ``jax.vmap`` over ``(sigma, key)`` pairs, one program.

    The vmapped public path of a noise sweep (what :func:`sweep` runs per condition and seed); the same circuit and
    odours at each level. Equal to calling :func:`simulate` level by level with the same keys.

    Args:
        circuit: wiring, modules and constants.
        pn_rates: PN rates (Hz), shape ``(K, n_pn)`` or ``(K, T, n_pn)``.
        sigmas: noise standard deviations (Hz), shape ``(L,)``, each ``>= 0``.
        keys: one PRNG key per level, shape ``(L,)`` (e.g. ``jax.random.split(key, L)``).
        n_trials: trials per odour and level.
        noise_kind: ``"ou"`` (Ornstein-Uhlenbeck, correlation time ``noise_tau``) or ``"white"``.
        noise_tau: OU correlation time (s).

    Returns:
        Spike counts, float32, shape ``(L, K, n_trials, n_kc)``.

    Raises:
        ValueError: if ``sigmas`` is not a non-empty 1-D array of values ``>= 0``, ``keys`` has another length, or
            ``noise_kind`` is unknown; as :func:`simulate` otherwise.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from nips25_olfaction import Circuit, CircuitParams
        >>> c = Circuit(jnp.ones((2, 1)), li=False, sfa=False, params=CircuitParams(w_pn=0.02, window=0.05))
        >>> simulate_noise_levels(c, [[100.0]], sigmas=[0.0, 50.0], keys=jax.random.split(jax.random.key(0), 2),
        ...                       n_trials=3).shape
        (2, 1, 3, 2)
    """
    levels = sigmas if isinstance(sigmas, jax.Array) else jnp.asarray(np.asarray(sigmas, dtype=np.float32))
    if levels.ndim != 1 or levels.shape[0] == 0:
        raise ValueError(f"sigmas must be a non-empty 1-D array, got shape {levels.shape}")
    if not isinstance(levels, jax.core.Tracer) and not bool(jnp.all(jnp.isfinite(levels) & (levels >= 0))):
        raise ValueError("sigmas must be finite and >= 0 (Hz)")
    if keys.shape != levels.shape:
        raise ValueError(f"keys must have shape {levels.shape} (one per level), got {keys.shape}")
    if noise_kind not in ("ou", "white"):
        raise ValueError(f"noise_kind must be 'ou' or 'white', got {noise_kind!r}")

    def one(sigma: jax.Array, key: jax.Array) -> jax.Array:
        noise = OUNoise(sigma, noise_tau) if noise_kind == "ou" else WhiteNoise(sigma)  # type: ignore[arg-type]
        return simulate(circuit, pn_rates, noise=noise, n_trials=n_trials, key=key)

    return jax.vmap(one)(levels, keys)


def sweep(
    pn_rates: ArrayLike,
    params: CircuitParams | Mapping[str, CircuitParams],
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

    For each seed a new wiring (key ``seed``) and new noise (key ``seed + 10_000``, split per level) are drawn; the
    conditions share the wiring and the noise of a seed, so their differences are paired. Each odour gets
    ``n_train`` trials to fit the readout and ``n_test`` fresh trials to score it, all at the same noise level. The
    counts equal those of :func:`simulate_noise_levels` with the same keys (the levels run one after another,
    which is faster on CPU; on an accelerator call :func:`simulate_noise_levels` directly).

    Args:
        pn_rates: PN rates (Hz), shape ``(K, n_pn)`` or ``(K, T, n_pn)``, ``K >= 2``.
        params: circuit constants, one for every condition or ``{condition: params}`` (e.g. from
            :func:`~nips25_olfaction.calibrate_matched`, every condition at the same sparseness).
        noise_levels: sigma values (Hz), each ``>= 0``.
        seeds: seeds, at least one.
        conditions: subset of ``("none", "LI", "SFA", "LI+SFA")``.
        readouts: subset of ``("mbon", "mbon_binary", "centroid", "logistic")``.
        n_kc, claws: wiring size.
        n_train, n_test: trials per odour for fitting and for scoring.
        noise_kind: ``"ou"`` (Ornstein-Uhlenbeck, correlation time ``noise_tau``) or ``"white"``.
        noise_tau: OU correlation time (s).

    Returns:
        A :class:`SweepResult`.

    Raises:
        ValueError: on empty or out-of-range arguments, or a ``params`` mapping missing a condition.
    """
    rates = np.asarray(pn_rates, dtype=np.float64)
    if rates.ndim not in (2, 3) or rates.shape[0] < 2:
        raise ValueError(f"pn_rates must have shape (K >= 2, [T,] n_pn), got {rates.shape}")
    if not noise_levels or any(not np.isfinite(s) or s < 0 for s in noise_levels):
        raise ValueError(f"noise_levels must be non-empty and >= 0, got {noise_levels}")
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    bad = [c for c in conditions if c not in CONDITIONS] + [r for r in readouts if r not in READOUTS]
    if bad or not conditions or not readouts:
        raise ValueError(f"unknown or empty conditions/readouts: {bad or (conditions, readouts)}")
    n_train, n_test = _check_int(n_train, "n_train"), _check_int(n_test, "n_test")
    if n_train < 1 or n_test < 1:
        raise ValueError(f"n_train and n_test must be >= 1, got {n_train}, {n_test}")
    if noise_kind not in ("ou", "white"):
        raise ValueError(f"noise_kind must be 'ou' or 'white', got {noise_kind!r}")
    per_condition = params if isinstance(params, Mapping) else dict.fromkeys(conditions, params)
    missing = [c for c in conditions if c not in per_condition]
    if missing:
        raise ValueError(f"params has no constants for conditions {missing}")
    k = rates.shape[0]
    labels = np.repeat(np.arange(k), n_train)
    test_labels = np.repeat(np.arange(k), n_test)
    shape = (len(conditions), len(noise_levels), len(seeds))
    acc = np.zeros((len(readouts), *shape))
    act, sparse, mean_count = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    sigmas = np.asarray(noise_levels, dtype=np.float32)
    cells = [(si, ci) for si in range(len(seeds)) for ci in range(len(conditions))]
    for si, ci in progress(cells, desc="sweep"):
        seed, cond = seeds[si], conditions[ci]
        wiring = random_claws(jax.random.key(seed), n_kc, rates.shape[-1], claws)
        circuit = Circuit(wiring, params=per_condition[cond]).with_condition(cond)
        keys = jax.random.split(jax.random.key(seed + 10_000), len(noise_levels))
        # Level by level with the keys simulate_noise_levels would use (the same counts): on CPU one level's state
        # stays in cache, and the vmapped program over all levels costs 1.3x more CPU time (2 EPYC cores).
        for li in range(len(noise_levels)):
            sigma = float(sigmas[li])
            noise = OUNoise(sigma, noise_tau) if noise_kind == "ou" else WhiteNoise(sigma)
            counts = np.asarray(simulate(circuit, rates, noise=noise, n_trials=n_train + n_test, key=keys[li]))
            train = counts[:, :n_train].reshape(-1, n_kc)
            test = counts[:, n_train:].reshape(-1, n_kc)
            for ri, kind in enumerate(readouts):
                acc[ri, ci, li, si] = accuracy(train, labels, test, test_labels, kind=kind)  # type: ignore[arg-type]
            act[ci, li, si] = active_fraction(counts)
            sparse[ci, li, si] = sparseness(counts) if counts.any() else 1.0
            mean_count[ci, li, si] = float(counts.mean())
    return SweepResult(
        tuple(conditions), tuple(map(float, noise_levels)), tuple(seeds), tuple(readouts), acc, act, sparse,
        mean_count,
    )  # fmt: skip
