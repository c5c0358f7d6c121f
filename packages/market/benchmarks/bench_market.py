"""Trades per second in a 50-outcome market: ours (JAX, jit + lax.scan) vs a plain numpy LMSR loop (the peer).

The issue's peer is "a plain numpy LMSR": the textbook loop a user would write (logsumexp cost difference per trade),
run on the same random trade sequence. We time our LMSR (DCFMM) and our Smooth Quadratic market (LMSR base) through
``replay``; each timing is the median of several runs after a warm-up (compilation excluded, reported apart).
Peak memory: ``tracemalloc`` peak of Python allocations for the numpy loop, and the process' peak RSS for all.
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np
from nips25_market import LMSR, SmoothQuadratic, replay
from scipy.special import logsumexp

from nips25_shared.bench import measure, median_seconds, peak_rss_mib

jax.config.update("jax_enable_x64", True)  # a script may set the global flag; the library no longer does


def numpy_lmsr(trades: np.ndarray, b: float) -> tuple[np.ndarray, np.ndarray]:
    """Plain numpy LMSR: payments C(q + r) - C(q) with C = b logsumexp(q / b), one trade at a time."""
    q = np.zeros(trades.shape[1])
    pays = np.empty(trades.shape[0])
    cost = b * logsumexp(q / b)
    for t, r in enumerate(trades):
        q = q + r
        new = b * logsumexp(q / b)
        pays[t] = new - cost
        cost = new
    return q, pays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50, help="outcomes (default 50)")
    parser.add_argument("--trades", type=int, default=20_000, help="trades per run (default 20000)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs; the median is reported (default 5)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    b = 100.0
    trades = rng.normal(size=(args.trades, args.n)) * 5.0

    peer = measure(lambda: numpy_lmsr(trades, b), repeats=args.repeats, warmup=1, memory="tracemalloc")
    t_np, peak_np, (_, pay_np) = peer.seconds, peer.peak_mib, peer.result

    rows = [("numpy LMSR loop (peer)", t_np, 0.0)]
    for name, mm in (
        ("ours: LMSR (jit scan)", LMSR(args.n, b=b)),
        ("ours: SQPM (jit scan)", SmoothQuadratic(LMSR(args.n, b=b))),
    ):
        start = time.perf_counter()
        tr = replay(mm, trades)
        tr.payments.block_until_ready()
        compile_s = time.perf_counter() - start
        if name.startswith("ours: LMSR"):
            assert np.allclose(np.asarray(tr.payments), pay_np, atol=1e-8), "LMSR payments disagree with the peer"
        t = median_seconds(lambda mm=mm: replay(mm, trades).payments.block_until_ready(), repeats=args.repeats)
        rows.append((name, t, compile_s))
    rss_mb = peak_rss_mib()
    print(f"n = {args.n} outcomes, {args.trades} trades, median of {args.repeats} runs, CPU")
    print(f"{'implementation':<26}{'median s':>10}{'trades/s':>14}{'ours/peer time':>16}{'first call s':>14}")
    for name, t, c in rows:
        print(f"{name:<26}{t:>10.4f}{args.trades / t:>14.0f}{t / t_np:>16.3f}{c:>14.2f}")
    print(f"peak memory: numpy loop {peak_np:.2f} MiB (tracemalloc); process peak RSS {rss_mb:.0f} MiB")


if __name__ == "__main__":
    main()
