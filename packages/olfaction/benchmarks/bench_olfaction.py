"""Simulated KC-neuron-seconds per wall-clock second: ours (jit + vmap) vs a plain numpy time loop of the same
network (Brian2 is not a dependency; the numpy loop implements the identical update).

Run: ``uvx nox -s bench-olfaction`` (or ``python benchmarks/bench_olfaction.py``).
"""

from __future__ import annotations

import itertools
import math
import time

import jax
import numpy as np
from nips25_olfaction import Circuit, CircuitParams, OUNoise, olsen_pn, simulate, synthetic_odors

from nips25_shared.bench import median_seconds, peak_rss_mib

N_KC, N_ODORS, N_TRIALS, REPEATS = 2000, 8, 8, 5


def numpy_loop(conn: np.ndarray, rates: np.ndarray, p: CircuitParams, sigma: float, rng: np.random.Generator):
    """The same LIF + SFA + LI + OU update as ``simulate``, a Python loop over time steps, numpy over trials."""
    n_kc, n_pn = conn.shape
    batch = np.repeat(rates, N_TRIALS, axis=0)
    b = batch.shape[0]
    dm, dl, ds = (math.exp(-p.dt / t) for t in (p.tau_m, p.tau_li, p.tau_sfa))
    dn = math.exp(-p.dt / 20e-3)
    v, a, counts = np.zeros((b, n_kc)), np.zeros((b, n_kc)), np.zeros((b, n_kc))
    refr, z = np.zeros((b, n_kc), int), np.zeros((b, 1))
    xi = sigma * rng.standard_normal((b, n_pn))
    for _ in range(p.n_steps):
        pn = np.maximum(batch + xi, 0.0)
        v_inf = p.w_pn * pn @ conn.T - p.w_li * z - p.g_sfa * a
        rf = refr > 0
        v = np.where(rf, p.v_reset, v_inf + (v - v_inf) * dm)
        spike = (v >= p.theta) & ~rf
        v = np.where(spike, p.v_reset, v)
        refr = np.where(spike, p.ref_steps, np.maximum(refr - 1, 0))
        a = a * ds + p.delta_a * spike
        z = z * dl + (1 - dl) * spike.mean(axis=1, keepdims=True) / p.dt
        xi = xi * dn + sigma * math.sqrt(1 - dn**2) * rng.standard_normal(xi.shape)
        counts += spike
    return counts


def main() -> None:
    p = CircuitParams(window=0.2, w_pn=2.6e-3, w_li=0.03, g_sfa=0.25)
    rates = olsen_pn(synthetic_odors(np.random.default_rng(0), N_ODORS))
    circuit = Circuit.random(jax.random.key(0), n_pn=24, n_kc=N_KC, params=p)
    work = N_KC * N_ODORS * N_TRIALS * p.window  # neuron-seconds simulated per run
    t0 = time.perf_counter()
    simulate(circuit, rates, noise=OUNoise(20.0), n_trials=N_TRIALS, key=jax.random.key(0)).block_until_ready()
    compile_s = time.perf_counter() - t0
    keys = itertools.count(1)  # a fresh key per timed run

    def ours() -> None:
        key = jax.random.key(next(keys))
        simulate(circuit, rates, noise=OUNoise(20.0), n_trials=N_TRIALS, key=key).block_until_ready()

    t_ours = median_seconds(ours, repeats=REPEATS)
    conn = np.asarray(circuit.connectivity, dtype=np.float64)
    seeds = itertools.count(0)
    t_peer = median_seconds(
        lambda: numpy_loop(conn, rates, p, 20.0, np.random.default_rng(next(seeds))), repeats=max(2, REPEATS // 2)
    )
    peak = peak_rss_mib()
    print(f"network: {N_KC} KCs, {N_ODORS} odours x {N_TRIALS} trials, {p.window * 1e3:g} ms at dt {p.dt * 1e3:g} ms")
    print(f"ours (jax jit+vmap): {work / t_ours:,.0f} neuron-s/s (median {t_ours:.3f} s; compile {compile_s:.2f} s)")
    print(f"peer (numpy loop):   {work / t_peer:,.0f} neuron-s/s (median {t_peer:.3f} s)")
    print(f"speed ratio ours/peer: {t_peer / t_ours:.2f}x   peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    main()
