"""Simulated KC-neuron-seconds per wall-clock second: ours (jit + vmap) vs Brian2 (the field's standard simulator,
numpy code-generation target: no compiler needed) on the same network, and vs a plain numpy time loop (second peer).

Same network everywhere: N_KC KCs with 6 claws on 24 PNs, OU noise on every PN of every trial, current-based LIF
with refractoriness, spike-frequency adaptation and APL-like global inhibition (a 5 ms trace of the trial's mean KC
rate), exponential Euler at 0.5 ms over 200 ms, N_ODORS x N_TRIALS independent trials. Brian2 runs the trials as
one network of N_ODORS * N_TRIALS * N_KC neurons (one inhibitory trace per trial), which is how a Brian2 user batches
trials.

Run: ``uvx nox -s bench-olfaction`` (JAX and numpy only: the workspace lock cannot hold brian2 >= 2.10, which needs
numpy 2, beside a package pinned to numpy < 2), or with the Brian2 peer in its own Python >= 3.12 venv:
``uv venv -p 3.13 /tmp/b2 && uv pip install --python /tmp/b2/bin/python brian2 -e shared -e packages/olfaction &&
/tmp/b2/bin/python packages/olfaction/benchmarks/bench_olfaction.py``.
"""

from __future__ import annotations

import itertools
import math
import time

import jax
import numpy as np
from nips25_olfaction import Circuit, CircuitParams, OUNoise, olsen_pn, simulate, synthetic_odors

from nips25_shared.bench import median_seconds, peak_rss_mib

N_KC, N_ODORS, N_TRIALS, REPEATS = 2000, 4, 4, 5
SIGMA, TAU_NOISE = 20.0, 20e-3


def numpy_loop(conn: np.ndarray, rates: np.ndarray, p: CircuitParams, sigma: float, rng: np.random.Generator):
    """The same LIF + SFA + LI + OU update as ``simulate``, a Python loop over time steps, numpy over trials."""
    n_kc, n_pn = conn.shape
    batch = np.repeat(rates, N_TRIALS, axis=0)
    b = batch.shape[0]
    dm, dl, ds = (math.exp(-p.dt / t) for t in (p.tau_m, p.tau_li, p.tau_sfa))
    dn = math.exp(-p.dt / TAU_NOISE)
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


def brian2_network(conn: np.ndarray, rates: np.ndarray, p: CircuitParams, sigma: float, seed: int):
    """The same network in Brian2 (numpy target). Returns ``(run, counts)``: a callable that simulates the window and
    a callable giving the spike counts ``(N_ODORS * N_TRIALS, N_KC)`` of the last run."""
    import brian2 as b2

    b2.prefs.codegen.target = "numpy"
    b2.prefs.logging.console_log_level = "ERROR"
    b2.seed(seed)
    n_kc, n_pn = conn.shape
    n_run = rates.shape[0] * N_TRIALS
    b2.defaultclock.dt = p.dt * b2.second
    second = b2.second
    ns = {
        "tau_n": TAU_NOISE * second, "sigma_n": sigma, "tau_m": p.tau_m * second, "tau_sfa": p.tau_sfa * second,
        "tau_li": p.tau_li * second, "w_pn": p.w_pn, "w_li": p.w_li, "g_sfa": p.g_sfa, "theta": p.theta,
        "v_reset": p.v_reset, "delta_a": p.delta_a, "n_kc": float(n_kc),
    }  # fmt: skip
    pns = b2.NeuronGroup(
        n_run * n_pn,
        "deta/dt = -eta / tau_n + sigma_n * sqrt(2 / tau_n) * xi : 1\nrate : 1",
        method="euler",
        namespace=ns,
    )
    pns.rate = np.repeat(rates, N_TRIALS, axis=0).ravel()
    pns.eta = sigma * np.random.default_rng(seed).standard_normal(n_run * n_pn)
    kcs = b2.NeuronGroup(
        n_run * n_kc,
        """dv/dt = (i_pn - w_li * z_apl - g_sfa * a - v) / tau_m : 1 (unless refractory)
        da/dt = -a / tau_sfa : 1
        i_pn : 1
        z_apl : 1""",
        threshold="v >= theta",
        reset="v = v_reset\na += delta_a",
        refractory=p.t_ref * second,
        method="exact",
        namespace=ns,
    )
    apl = b2.NeuronGroup(n_run, "dz/dt = -z / tau_li : 1", method="exact", namespace=ns)
    post, pre = np.nonzero(conn)  # claws: KC post receives PN pre
    trial = np.repeat(np.arange(n_run), len(pre))
    s_pn = b2.Synapses(pns, kcs, "i_pn_post = w_pn * clip(rate_pre + eta_pre, 0, inf) : 1 (summed)", namespace=ns)
    s_pn.connect(i=np.tile(pre, n_run) + trial * n_pn, j=np.tile(post, n_run) + trial * n_kc)
    s_up = b2.Synapses(kcs, apl, on_pre="z_post += 1 / (n_kc * tau_li) * second", namespace=ns)
    s_up.connect(i=np.arange(n_run * n_kc), j=np.repeat(np.arange(n_run), n_kc))
    s_down = b2.Synapses(apl, kcs, "z_apl_post = z_pre : 1 (summed)", namespace=ns)
    s_down.connect(i=np.repeat(np.arange(n_run), n_kc), j=np.arange(n_run * n_kc))
    monitor = b2.SpikeMonitor(kcs, record=False)
    net = b2.Network(pns, kcs, apl, s_pn, s_up, s_down, monitor)
    net.store()

    def run() -> None:
        net.restore()
        net.run(p.window * second)

    def counts() -> np.ndarray:
        return np.asarray(monitor.count[:]).reshape(n_run, n_kc)

    return run, counts


def main() -> None:
    p = CircuitParams(window=0.2, w_pn=2.6e-3, w_li=0.03, g_sfa=0.25)
    rates = olsen_pn(synthetic_odors(np.random.default_rng(0), N_ODORS))
    circuit = Circuit.random(jax.random.key(0), n_pn=24, n_kc=N_KC, params=p)
    work = N_KC * N_ODORS * N_TRIALS * p.window  # neuron-seconds simulated per run
    t0 = time.perf_counter()
    ref = simulate(circuit, rates, noise=OUNoise(SIGMA, TAU_NOISE), n_trials=N_TRIALS, key=jax.random.key(0))
    ref.block_until_ready()
    compile_s = time.perf_counter() - t0
    keys = itertools.count(1)  # a fresh key per timed run

    def ours() -> None:
        key = jax.random.key(next(keys))
        simulate(circuit, rates, noise=OUNoise(SIGMA, TAU_NOISE), n_trials=N_TRIALS, key=key).block_until_ready()

    t_ours = median_seconds(ours, repeats=REPEATS)
    conn = np.asarray(circuit.connectivity, dtype=np.float64)
    seeds = itertools.count(0)
    t_numpy = median_seconds(
        lambda: numpy_loop(conn, rates, p, SIGMA, np.random.default_rng(next(seeds))), repeats=max(2, REPEATS // 2)
    )
    print(f"network: {N_KC} KCs, {N_ODORS} odours x {N_TRIALS} trials, {p.window * 1e3:g} ms at dt {p.dt * 1e3:g} ms")
    print(f"ours (jax jit+vmap): {work / t_ours:,.0f} neuron-s/s (median {t_ours:.3f} s; compile {compile_s:.2f} s)")
    print(f"numpy loop:          {work / t_numpy:,.0f} neuron-s/s (median {t_numpy:.3f} s)")
    try:
        import brian2  # noqa: F401
    except ImportError:
        print("brian2 not installed: Brian2 peer skipped. It needs Python >= 3.12 (brian2 2.9, the last release for")
        print("  3.11, does not import with numpy 2); see the README 'Performance' section for the command.")
    else:
        t0 = time.perf_counter()
        run, counts = brian2_network(conn, rates, p, SIGMA, seed=0)
        build_s = time.perf_counter() - t0
        t_brian = median_seconds(run, repeats=2, warmup=1)
        ours_mean = float(np.asarray(ref).mean()) / p.window
        print(f"brian2 (numpy):      {work / t_brian:,.0f} neuron-s/s (median {t_brian:.3f} s; build {build_s:.2f} s)")
        print(f"mean KC rate: ours {ours_mean:.2f} Hz, brian2 {counts().mean() / p.window:.2f} Hz (same network)")
        print(f"speed ratio ours/brian2: {t_brian / t_ours:.2f}x")
    print(f"speed ratio ours/numpy loop: {t_numpy / t_ours:.2f}x   peak RSS {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
