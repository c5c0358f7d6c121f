"""The PN-to-KC circuit: sparse random claws, KC leaky integrate-and-fire with adaptation and APL-like inhibition."""

from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass, field, replace
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike

from nips25_olfaction.noise import Noise, OUNoise, WhiteNoise, noise_step
from nips25_olfaction.params import CONDITIONS, CircuitParams

__all__ = ["Circuit", "is_traced", "random_claws", "simulate"]


def is_traced(x: object) -> bool:
    """True for a JAX tracer (inside ``jit``/``vmap``/``grad``): value checks are skipped there, shape and dtype
    checks are not."""
    return isinstance(x, jax.core.Tracer)


def _check_key(key: object) -> None:
    if not (isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)):
        raise TypeError(f"key must be a typed JAX PRNG key (jax.random.key(seed)), got {type(key).__name__}")


def _check_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r}")
    return int(value)


def random_claws(key: jax.Array, n_kc: int, n_pn: int, claws: int) -> jax.Array:
    """PN-to-KC connectivity: every KC draws exactly ``claws`` distinct PNs uniformly at random.

    Args:
        key: JAX PRNG key (connectivity only; noise uses its own key).
        n_kc: number of Kenyon cells.
        n_pn: number of projection neurons (glomeruli).
        claws: inputs per KC, ``1 <= claws <= n_pn`` (adult fly: 6-7).

    Returns:
        0/1 matrix, shape ``(n_kc, n_pn)``, float32, every row summing to ``claws``.

    Raises:
        ValueError: if a size is out of range.

    Example:
        >>> import jax
        >>> random_claws(jax.random.key(0), 3, 5, 2).sum(axis=1).tolist()
        [2.0, 2.0, 2.0]
    """
    _check_key(key)
    n_kc, n_pn, claws = _check_int(n_kc, "n_kc"), _check_int(n_pn, "n_pn"), _check_int(claws, "claws")
    if n_kc < 1 or n_pn < 1:
        raise ValueError(f"n_kc and n_pn must be >= 1, got {n_kc}, {n_pn}")
    if not 1 <= claws <= n_pn:
        raise ValueError(f"claws must be in [1, n_pn={n_pn}], got {claws}")
    scores = jax.random.uniform(key, (n_kc, n_pn))
    chosen = jnp.argsort(scores, axis=1)[:, :claws]
    return jnp.zeros((n_kc, n_pn), jnp.float32).at[jnp.arange(n_kc)[:, None], chosen].set(1.0)


@dataclass(frozen=True)
class Circuit:
    """A fly mushroom-body circuit: fixed PN-to-KC connectivity plus which modules are on.

    Attributes:
        connectivity: 0/1 matrix ``(n_kc, n_pn)``.
        li: lateral inhibition (APL-like global feedback onto KCs) on or off.
        sfa: spike-frequency adaptation of KCs on or off.
        params: membrane, LI and SFA constants.
    """

    connectivity: jax.Array
    li: bool = True
    sfa: bool = True
    params: CircuitParams = field(default_factory=CircuitParams)

    def __post_init__(self) -> None:
        c = self.connectivity
        if not hasattr(c, "shape") or isinstance(c, np.ndarray):
            c = jnp.asarray(c, jnp.float32)
            object.__setattr__(self, "connectivity", c)
        if c.ndim != 2 or c.size == 0:
            raise ValueError(f"connectivity must be a non-empty (n_kc, n_pn) matrix, got shape {c.shape}")
        if not is_traced(c) and not bool(jnp.all((c == 0) | (c == 1))):
            raise ValueError("connectivity must hold only 0 and 1")

    @classmethod
    def random(
        cls,
        key: jax.Array,
        *,
        n_pn: int,
        n_kc: int = 2000,
        claws: int = 6,
        li: bool = True,
        sfa: bool = True,
        params: CircuitParams | None = None,
    ) -> Circuit:
        """A circuit with :func:`random_claws` connectivity (``key`` fixes the wiring only).

        Args:
            key: JAX PRNG key of the wiring (``jax.random.key(seed)``); the noise takes its own key in
                :func:`simulate`.
            n_pn: projection neurons (glomeruli), the width of the odours.
            n_kc: Kenyon cells.
            claws: PN inputs per KC, ``1 <= claws <= n_pn``.
            li, sfa: modules on or off (or use :meth:`with_condition`).
            params: constants (default :class:`CircuitParams`).

        Returns:
            The :class:`Circuit`, connectivity float32 ``(n_kc, n_pn)``.

        Raises:
            TypeError, ValueError: as :func:`random_claws`.
        """
        return cls(random_claws(key, n_kc, n_pn, claws), li=li, sfa=sfa, params=params or CircuitParams())

    @property
    def n_kc(self) -> int:
        return int(self.connectivity.shape[0])

    @property
    def n_pn(self) -> int:
        return int(self.connectivity.shape[1])

    def with_condition(self, condition: str) -> Circuit:
        """The same wiring under one of the paper's conditions ``"none"``, ``"LI"``, ``"SFA"``, ``"LI+SFA"``."""
        if condition not in CONDITIONS:
            raise ValueError(f"condition must be one of {CONDITIONS}, got {condition!r}")
        return replace(self, li="LI" in condition, sfa="SFA" in condition)


def _trial(
    drive_pn: jax.Array,
    key: jax.Array,
    connectivity: jax.Array,
    p: CircuitParams,
    gains: jax.Array,
    sigma: jax.Array,
    noise_decay: float,
    record_raster: bool,
) -> tuple[jax.Array, jax.Array]:
    """One trial of one odour: scan over time steps. ``drive_pn`` is ``(n_pn,)`` (constant) or ``(T, n_pn)``.
    Returns (spike counts (n_kc,), raster (T, n_kc) or empty)."""
    n_kc, n_pn = connectivity.shape
    decay_m = math.exp(-p.dt / p.tau_m)
    decay_li = math.exp(-p.dt / p.tau_li)
    decay_sfa = math.exp(-p.dt / p.tau_sfa)
    w_pn, w_li, g_sfa = gains[0], gains[1], gains[2]
    key0, key_steps = jax.random.split(key)
    xi0 = sigma * jax.random.normal(key0, (n_pn,))
    keys = jax.random.split(key_steps, p.n_steps)
    drive = jnp.broadcast_to(drive_pn, (p.n_steps, n_pn))

    def step(state, inputs):
        k, drive_t = inputs
        v, refr, a, z, xi, counts = state
        pn = jnp.maximum(drive_t + xi, 0.0)
        v_inf = w_pn * (connectivity @ pn) - w_li * z - g_sfa * a
        refractory = refr > 0
        v = jnp.where(refractory, p.v_reset, v_inf + (v - v_inf) * decay_m)
        spike = (v >= p.theta) & ~refractory
        v = jnp.where(spike, p.v_reset, v)
        refr = jnp.where(spike, p.ref_steps, jnp.maximum(refr - 1, 0))
        s = spike.astype(jnp.float32)
        a = a * decay_sfa + p.delta_a * s
        z = z * decay_li + (1.0 - decay_li) * jnp.mean(s) / p.dt
        xi = noise_step(xi, k, sigma, noise_decay)
        out = s if record_raster else jnp.zeros((0,), jnp.float32)
        return (v, refr, a, z, xi, counts + s), out

    zeros = jnp.zeros(n_kc, jnp.float32)
    init = (zeros, jnp.zeros(n_kc, jnp.int32), zeros, jnp.float32(0.0), xi0, zeros)
    (_, _, _, _, _, counts), raster = jax.lax.scan(step, init, (keys, drive))
    return counts, raster


def simulate(
    circuit: Circuit,
    pn_rates: ArrayLike,
    *,
    noise: Noise,
    n_trials: int,
    key: jax.Array,
    record: Literal["counts", "raster"] = "counts",
) -> jax.Array:
    r"""Simulate KC responses to every odour, ``n_trials`` noisy trials each (``lax.scan`` in time, ``vmap`` over
    trials and odours).

    At each step the PN drive is :math:`\max(\mathrm{PN} + \xi_t, 0)` with :math:`\xi` from ``noise`` (one
    independent noise process per PN, per trial), then the KC layer of :class:`CircuitParams` is advanced by
    exponential Euler.

    Args:
        circuit: wiring, modules and constants.
        pn_rates: mean PN rates (Hz), shape ``(K, n_pn)`` (constant over the window), or ``(K, T, n_pn)`` with
            ``T = params.n_steps`` for a time-varying drive (an odour onset, a pulse); float or int, any device
            placement (a sharded array stays sharded). Traced values (``jit``/``vmap``) are accepted: then only
            shape and dtype are checked.
        noise: :class:`WhiteNoise` or :class:`OUNoise` (``sigma`` in Hz).
        n_trials: trials per odour, ``>= 1``.
        key: JAX PRNG key for the noise (the wiring is fixed by the circuit).
        record: ``"counts"`` (spike counts over the window) or ``"raster"`` (every step).

    Returns:
        ``"counts"``: float32 ``(K, n_trials, n_kc)``; ``"raster"``: float32 ``(K, n_trials, T, n_kc)`` of 0/1.

    Raises:
        ValueError: on malformed ``pn_rates``, ``n_trials < 1``, a PN count that differs from the wiring, or an
            unknown ``record``.
        TypeError: if ``noise`` is not a noise model.

    References:
        Li, Yu, Yu & Zang, "Seemingly Redundant Modules Enhance Robust Odor Learning in Fruit Flies", NeurIPS 2025.

    Example:
        One KC held at twice threshold (111.96 Hz in continuous time) for 100 ms, without and with adaptation:

        >>> import jax, jax.numpy as jnp
        >>> from dataclasses import replace
        >>> c = Circuit(jnp.ones((1, 1)), li=False, sfa=False, params=CircuitParams(w_pn=0.02, window=0.1))
        >>> simulate(c, [[100.0]], noise=WhiteNoise(0.0), n_trials=1, key=jax.random.key(0)).tolist()
        [[[11.0]]]
        >>> adapting = Circuit(c.connectivity, sfa=True, li=False, params=replace(c.params, g_sfa=0.3))
        >>> simulate(adapting, [[100.0]], noise=WhiteNoise(0.0), n_trials=1, key=jax.random.key(0)).tolist()
        [[[7.0]]]
    """
    if isinstance(pn_rates, jax.Array):
        rates = pn_rates
    else:
        try:
            rates = jnp.asarray(np.asarray(pn_rates, dtype=np.float32))
        except (TypeError, ValueError) as exc:
            raise TypeError(f"pn_rates must be a real array (Hz), got {type(pn_rates).__name__}: {exc}") from exc
    if not (jnp.issubdtype(rates.dtype, jnp.floating) or jnp.issubdtype(rates.dtype, jnp.integer)):
        raise TypeError(f"pn_rates must be a real array, got dtype {rates.dtype}")
    n_steps = circuit.params.n_steps
    if rates.ndim not in (2, 3) or rates.shape[0] == 0 or (rates.ndim == 3 and rates.shape[1] != n_steps):
        raise ValueError(f"pn_rates must have shape (K, n_pn) or (K, T={n_steps}, n_pn) with K >= 1, got {rates.shape}")
    if rates.shape[-1] != circuit.n_pn:
        raise ValueError(f"pn_rates has {rates.shape[-1]} PNs, the circuit's wiring has {circuit.n_pn}")
    rates = rates.astype(jnp.float32)
    if not is_traced(rates) and not bool(jnp.all(jnp.isfinite(rates)) & jnp.all(rates >= 0)):
        raise ValueError("pn_rates must be finite and >= 0 (Hz)")
    if isinstance(n_trials, bool) or not isinstance(n_trials, numbers.Integral) or n_trials < 1:
        raise ValueError(f"n_trials must be an int >= 1, got {n_trials!r}")
    n_trials = int(n_trials)
    _check_key(key)
    if not isinstance(noise, (WhiteNoise, OUNoise)):
        raise TypeError(f"noise must be WhiteNoise or OUNoise, got {type(noise).__name__}")
    if record not in ("counts", "raster"):
        raise ValueError(f"record must be 'counts' or 'raster', got {record!r}")
    p = circuit.params
    gains = jnp.stack(
        [jnp.asarray(g, jnp.float32) for g in (p.w_pn, p.w_li if circuit.li else 0.0, p.g_sfa if circuit.sfa else 0.0)]
    )
    # Only the time grid and the noise's memory are compiled in; gains and sigma are traced, so sweeping them
    # (calibration, noise levels) reuses one compiled program.
    structure = replace(p, w_pn=0.0, w_li=0.0, g_sfa=0.0)
    # On one CPU device, odours run in cache-sized chunks; sharded inputs and accelerators get one vmap over all.
    spread = not is_traced(rates) and len(getattr(rates, "sharding", None).device_set) > 1  # type: ignore[union-attr]
    chunk = _TRIALS_PER_CHUNK if jax.default_backend() == "cpu" and not spread else 0
    return _simulate_jit(
        circuit.connectivity,
        rates,
        key,
        gains,
        jnp.asarray(noise.sigma, jnp.float32),
        structure,
        noise.decay_over(p.dt),
        n_trials,
        record == "raster",
        chunk,
    )


_TRIALS_PER_CHUNK = 8


@functools.partial(jax.jit, static_argnames=("p", "noise_decay", "n_trials", "record_raster", "chunk"))
def _simulate_jit(connectivity, rates, key, gains, sigma, p, noise_decay, n_trials, record_raster, chunk):
    n_odors = rates.shape[0]
    keys = jax.random.split(key, (n_odors, n_trials))

    def one(rate, k):
        return _trial(rate, k, connectivity, p, gains, sigma, noise_decay, record_raster)

    per_trial = jax.vmap(one, in_axes=(None, 0))
    if chunk == 0:
        counts, raster = jax.vmap(per_trial, in_axes=(0, 0))(rates, keys)
        return raster if record_raster else counts
    # Odours in sequential chunks of about `chunk` trials (vmapped inside a chunk), not all at once: the
    # state of a chunk stays in cache: 2-2.6x less CPU time than one vmap over every trial on 2 EPYC cores, and
    # the same counts (each trial's key and arithmetic are unchanged).
    batch = max(1, min(n_odors, chunk // n_trials))
    n_chunks = -(-n_odors // batch)
    pad = n_chunks * batch - n_odors  # padded odours are simulated on zero input and dropped
    rates_c = jnp.pad(rates, ((0, pad),) + ((0, 0),) * (rates.ndim - 1)).reshape(n_chunks, batch, *rates.shape[1:])
    raw = jax.random.key_data(keys)
    raw = jnp.pad(raw, ((0, pad),) + ((0, 0),) * (raw.ndim - 1)).reshape(n_chunks, batch, *raw.shape[1:])
    impl = jax.random.key_impl(key)

    def run_chunk(args):
        r, kd = args
        return jax.vmap(per_trial)(r, jax.random.wrap_key_data(kd, impl=impl))

    counts, raster = jax.lax.map(run_chunk, (rates_c, raw))
    out = raster if record_raster else counts
    return out.reshape(n_chunks * batch, *out.shape[2:])[:n_odors]
