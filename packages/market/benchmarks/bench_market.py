"""Replaying a trade sequence in a 50-outcome market: ours (JAX, jit) vs vectorised numpy (the peer).

The peer is what a user would write in numpy for the same work (issue 41): the states are a prefix sum
(``np.cumsum``), LMSR payments the differences of ``b logsumexp(q / b)`` along the path (``scipy.special``), SQPM
payments ``<p(q_t), r_t> + (L/2)||r_t||^2`` with ``p = softmax(q / b)``; like our ``replay`` it returns the states,
the prices at every state and the payments. We time our LMSR (DCFMM) and our Smooth Quadratic market (LMSR base)
through ``replay``, each against its own numpy peer; each timing is the median of several runs after a warm-up
(compilation excluded, reported apart). The old peer, a Python loop over trades, is kept as a last row.
Peak memory: ``tracemalloc`` peak of Python allocations for the numpy peers, and the process' peak RSS for all.
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np
from nips25_market import LMSR, SmoothQuadratic, replay
from scipy.special import logsumexp, softmax

from nips25_shared.bench import measure, median_seconds, peak_rss_mib

jax.config.update("jax_enable_x64", True)  # a script may set the global flag; the library no longer does


def numpy_lmsr(trades: np.ndarray, b: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised numpy LMSR replay: states, prices and payments ``C(q_{t+1}) - C(q_t)``, C = b logsumexp(q / b)."""
    q = np.vstack([np.zeros((1, trades.shape[1])), np.cumsum(trades, axis=0)])
    cost = b * logsumexp(q / b, axis=1)
    return q, softmax(q / b, axis=1), np.diff(cost)


def numpy_sqpm(trades: np.ndarray, b: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised numpy SQPM replay (LMSR base, L = 1/(2b)): payments <p(q_t), r_t> + (L/2)||r_t||^2."""
    q = np.vstack([np.zeros((1, trades.shape[1])), np.cumsum(trades, axis=0)])
    prices = softmax(q / b, axis=1)
    pays = np.einsum("tn,tn->t", prices[:-1], trades) + (0.25 / b) * np.einsum("tn,tn->t", trades, trades)
    return q, prices, pays


def numpy_lmsr_loop(trades: np.ndarray, b: float) -> np.ndarray:
    """The old peer: a Python loop over trades, payments only."""
    q = np.zeros(trades.shape[1])
    pays = np.empty(trades.shape[0])
    cost = b * logsumexp(q / b)
    for t, r in enumerate(trades):
        q = q + r
        new = b * logsumexp(q / b)
        pays[t] = new - cost
        cost = new
    return pays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50, help="outcomes (default 50)")
    parser.add_argument("--trades", type=int, default=20_000, help="trades per run (default 20000)")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs; the median is reported (default 7)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    b = 100.0
    trades = rng.normal(size=(args.trades, args.n)) * 5.0

    rows = []
    for name, mm, peer in (
        ("LMSR", LMSR(args.n, b=b), numpy_lmsr),
        ("SQPM", SmoothQuadratic(LMSR(args.n, b=b)), numpy_sqpm),
    ):
        ref = measure(lambda peer=peer: peer(trades, b), repeats=args.repeats, warmup=1, memory="tracemalloc")
        start = time.perf_counter()
        tr = replay(mm, trades)
        tr.payments.block_until_ready()
        compile_s = time.perf_counter() - start
        np.testing.assert_allclose(np.asarray(tr.payments), ref.result[2], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(np.asarray(tr.prices), ref.result[1], rtol=1e-9, atol=1e-12)
        t = median_seconds(lambda mm=mm: jax.block_until_ready(replay(mm, trades)), repeats=args.repeats)
        rows.append((f"numpy {name}, vectorised (peer)", ref.seconds, ref.seconds, None, ref.peak_mib))
        rows.append((f"ours: {name}, jit replay", t, ref.seconds, compile_s, None))
    loop = measure(lambda: numpy_lmsr_loop(trades, b), repeats=3, memory="none")
    rows.append(("numpy LMSR, Python loop (old peer)", loop.seconds, rows[0][1], None, None))
    rss_mb = peak_rss_mib()
    print(f"n = {args.n} outcomes, {args.trades} trades, median of {args.repeats} runs, {jax.default_backend()}")
    head = f"{'implementation':<36}{'median s':>10}{'trades/s':>12}{'ours/peer':>11}{'first call s':>14}"
    print(f"{head}{'peak MiB':>10}")
    for name, t, peer_t, c, mem in rows:
        ratio = f"{t / peer_t:.3f}" if name.startswith("ours") else "-"
        first = f"{c:.2f}" if c is not None else "-"
        peak = f"{mem:.1f}" if mem is not None else "-"
        print(f"{name:<36}{t:>10.4f}{args.trades / t:>12.0f}{ratio:>11}{first:>14}{peak:>10}")
    print("ours/peer: each of ours against the vectorised numpy peer of the same market")
    print(f"process peak RSS {rss_mb:.0f} MiB")


if __name__ == "__main__":
    main()
