r"""Noise sweeps in one compiled program: an algorithm run on persistent noisy oracles for a grid of noise levels
and realisations, with ``jax.vmap`` over both axes (the sweep-style loop of the reproduction, vectorised).

Each cell :math:`(\sigma_a, k_b)` splits :math:`k_b` into a noise key and an algorithm key, builds
:math:`\tilde f = ` ``PersistentNoisyOracle(f, sigma=sigma_a, key=noise_key)`` and runs the algorithm on
:math:`\tilde f` (the *naive* arm of the paper's comparison). Inputs placed on several devices (a ``keys`` batch
sharded with ``jax.sharding``) stay sharded: the cells are independent, so XLA splits the batch across devices.
"""

from __future__ import annotations

from typing import Any, Literal

import jax
import jax.numpy as jnp

from nips25_submodular._checks import concrete
from nips25_submodular.continuous_greedy import measured_continuous_greedy
from nips25_submodular.double_greedy import double_greedy
from nips25_submodular.greedy import check_problem, greedy
from nips25_submodular.matroids import Free, Partition
from nips25_submodular.oracle import NOISE_FAMILIES, PersistentNoisyOracle
from nips25_submodular.selection import Selection
from nips25_submodular.set_functions import SetFunction

__all__ = ["SWEEP_ALGORITHMS", "noisy_sweep"]

SWEEP_ALGORITHMS = ("greedy", "double_greedy", "measured_continuous_greedy")


def noisy_sweep(
    f: SetFunction,
    algorithm: Literal["greedy", "double_greedy", "measured_continuous_greedy"],
    *,
    sigmas: Any,
    keys: jax.Array,
    matroid: Partition | None = None,
    noise: str = "gaussian",
    mode: str = "mult",
    monotone: bool = False,
    **algorithm_kwargs: Any,
) -> Selection:
    r"""Run ``algorithm`` on persistent noisy oracles of ``f`` for every noise level and key, vectorised.

    Equivalent to the loop ``[[algorithm(PersistentNoisyOracle(f, sigma=s, key=kn), ..., key=ka) for k in keys]
    for s in sigmas]`` with ``kn, ka = jax.random.split(k)``, but one ``jit(vmap(vmap(...)))`` program: one
    compilation, and a ``keys`` (or ``sigmas``) batch sharded over devices keeps its sharding.

    Args:
        f: the noiseless set function, ground set size ``n``.
        algorithm: ``"greedy"``, ``"double_greedy"`` or ``"measured_continuous_greedy"``.
        sigmas: noise levels ``(S,)``, non-negative floats.
        keys: PRNG keys ``(K,)`` (``jax.random.split(key, K)``), one noise realisation and algorithm seed each.
        matroid: the constraint (default ``Free(n)``; ``double_greedy`` needs a free matroid).
        noise, mode: the oracle's noise family and mode (see :class:`PersistentNoisyOracle`).
        monotone: passed to measured continuous greedy.
        **algorithm_kwargs: static keyword arguments of the algorithm (``randomized``, ``delta``, ``n_samples``,
            ``stop_at_nonpositive``, ...).

    Returns:
        A :class:`Selection` whose arrays have leading axes ``(S, K)``: ``mask`` bool ``(S, K, n)``, ``queries``
        int32 ``(S, K)``; the true values are ``jax.vmap(jax.vmap(f.value))(sel.mask)``.

    Raises:
        ValueError: if ``algorithm``, ``noise`` or ``mode`` is unknown, ``sigmas`` is not a 1-D batch of
            non-negative finite values, ``keys`` is not a 1-D batch of PRNG keys, or the sizes differ.

    Example:
        >>> from nips25_submodular import Modular
        >>> sel = noisy_sweep(Modular([1.0, -1.0, 2.0]), "double_greedy", sigmas=[0.0, 0.1],
        ...                   keys=jax.random.split(jax.random.key(0), 4))
        >>> sel.mask.shape, sel.mask[0].tolist() == [[True, False, True]] * 4
        ((2, 4, 3), True)
    """
    if algorithm not in SWEEP_ALGORITHMS:
        raise ValueError(f"algorithm must be one of {SWEEP_ALGORITHMS}, got {algorithm!r}")
    if noise not in NOISE_FAMILIES:
        raise ValueError(f"noise must be one of {NOISE_FAMILIES}, got {noise!r}")
    if mode not in ("mult", "add"):
        raise ValueError(f"mode must be 'mult' or 'add', got {mode!r}")
    matroid = Free(f.n) if matroid is None and isinstance(f, SetFunction) else matroid
    check_problem(f, matroid)
    s = sigmas if isinstance(sigmas, jax.Array) else jnp.asarray(sigmas, dtype=jnp.float32)
    if s.ndim != 1 or s.shape[0] == 0:
        raise ValueError(f"sigmas must be a non-empty 1-D array of noise levels, got shape {s.shape}")
    if concrete(s) and not bool(jnp.all(jnp.isfinite(s) & (s >= 0))):
        raise ValueError("sigmas must be finite and >= 0")
    if not (isinstance(keys, jax.Array) and jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key)):
        raise ValueError("keys must be a batch of PRNG keys, e.g. jax.random.split(jax.random.key(0), K)")
    if keys.ndim != 1 or keys.shape[0] == 0:
        raise ValueError(f"keys must be a non-empty 1-D batch of PRNG keys, got shape {keys.shape}")

    def cell(sigma: jax.Array, key: jax.Array) -> Selection:
        k_noise, k_alg = jax.random.split(key)
        oracle = PersistentNoisyOracle(f, sigma=sigma, noise=noise, mode=mode, key=k_noise)  # type: ignore[arg-type]
        if algorithm == "greedy":
            return greedy(oracle, matroid, **algorithm_kwargs)
        if algorithm == "double_greedy":
            return double_greedy(oracle, matroid, key=k_alg, **algorithm_kwargs)
        return measured_continuous_greedy(oracle, matroid, key=k_alg, monotone=monotone, **algorithm_kwargs)

    return jax.jit(jax.vmap(jax.vmap(cell, in_axes=(None, 0)), in_axes=(0, None)))(s, keys)
