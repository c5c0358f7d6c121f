"""Benchmark: CSBM sampling + A^k X, nips25-gnnclt (JAX, O(n nu) sampler, BCOO) vs the fastest peer a user would write.

Peers: (1) a numpy blockwise sampler (per block pair, a binomial edge count, then that many uniform pairs, made
unique; scipy sparse products), the O(n nu) sampler a user would write in a few lines: the headline ratio;
(2) networkx's `stochastic_block_model(sparse=True)` + scipy sparse, which is O(n^2) (kept for reference, small n).

Same work on both sides: the experiment's CSBM (K = 2, B = [[1.5, .5], [.5, 1]]) with the same class sizes,
edge probabilities nu B / n, Gaussian features, then k sparse products. Timings are medians over repeats (the
first JAX call, which compiles, is reported separately); memory is the peak resident-set growth during a run,
sampled every 5 ms from /proc/self/statm (JAX buffers are invisible to tracemalloc).

    python benchmarks/bench_gnnclt.py                       # n = 1e4, 2e4 side by side; n = 1e5 ours only
    python benchmarks/bench_gnnclt.py --n 100000 --peer-repeats 1   # the peer at 1e5 too (many minutes)

networkx 3.6's stochastic_block_model(sparse=True) still draws one Bernoulli per pair in the diagonal blocks (a
Python loop over n_a (n_a - 1) / 2 pairs), so its cost grows like n^2: at n = 1e5 that is ~2.5e9 draws, many
minutes per run on a shared 2-core machine, which is why the default runs the peer at 1e4 and 2e4 only.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
from typing import Any

import jax
import networkx as nx
import numpy as np
from nips25_gnnclt import default_model, graph_power, sample_csbm

from nips25_shared.bench import measure, median_seconds


def ours(n: int, nu: float, k: int, seed: int) -> Any:
    s = sample_csbm(default_model(), jax.random.key(seed), n=n, nu=nu)
    h = graph_power(s.A, s.X, k)
    h.block_until_ready()
    return float(h[0, 0])


def peer(n: int, nu: float, k: int, seed: int) -> Any:
    model = default_model()
    rng = np.random.default_rng(seed)
    y = rng.choice(2, size=n, p=model.pi)
    sizes = np.bincount(y, minlength=2).tolist()
    g = nx.stochastic_block_model(sizes, (nu * model.B / n).tolist(), seed=seed, sparse=True)
    A = nx.to_scipy_sparse_array(g, format="csr", dtype=np.float32)
    labels = np.repeat(np.arange(2), sizes)
    X = (model.means[labels] + rng.normal(size=(n, 2)) @ np.sqrt(model.cov)).astype(np.float32)
    h = X
    for _ in range(k):
        h = A @ h
    return float(h[0, 0])


def numpy_blockwise(n: int, nu: float, k: int, seed: int) -> Any:
    """The O(n nu) sampler a user would write: per block pair a binomial edge count, then uniform distinct pairs."""
    import scipy.sparse as sp

    model = default_model()
    rng = np.random.default_rng(seed)
    y = rng.choice(2, size=n, p=model.pi)
    sizes = np.bincount(y, minlength=2)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    rows, cols = [], []
    for a in range(2):
        for b in range(a, 2):
            n_pairs = sizes[a] * (sizes[a] - 1) // 2 if a == b else sizes[a] * sizes[b]
            m = rng.binomial(n_pairs, nu * model.B[a, b] / n)
            i = rng.integers(starts[a], starts[a + 1], size=m)
            j = rng.integers(starts[b], starts[b + 1], size=m)
            keep = i != j
            i, j = np.minimum(i[keep], j[keep]), np.maximum(i[keep], j[keep])
            pairs = np.unique(i.astype(np.int64) * n + j)
            rows.append(pairs // n)
            cols.append(pairs % n)
    r, c = np.concatenate(rows), np.concatenate(cols)
    A = sp.csr_array((np.ones(2 * r.size, np.float32), (np.concatenate([r, c]), np.concatenate([c, r]))), shape=(n, n))
    labels = np.repeat(np.arange(2), sizes)
    X = (model.means[labels] + rng.normal(size=(n, 2)) @ np.sqrt(model.cov)).astype(np.float32)
    h = X
    for _ in range(k):
        h = A @ h
    return float(h[0, 0])


def run(n: int, nu: float, k: int, repeats: int, peer_repeats: int) -> None:
    first = median_seconds(lambda: ours(n, nu, k, 99), repeats=1)
    # one call per seed; each samples its peak RSS growth every 5 ms
    ours_runs = [measure(lambda s=s: ours(n, nu, k, s), repeats=1, memory="rss") for s in range(repeats)]
    t_ours = statistics.median(r.seconds for r in ours_runs)
    m_ours = max(r.peak_mib for r in ours_runs)
    print(f"n={n} nu={nu:g} k={k}: ours first call (with compile) {first:.2f} s")
    print(f"  ours  median of {repeats}: {t_ours:8.3f} s   peak RSS growth {m_ours:8.1f} MiB")
    np_runs = [measure(lambda s=s: numpy_blockwise(n, nu, k, s), repeats=1, memory="rss") for s in range(repeats)]
    t_np = statistics.median(r.seconds for r in np_runs)
    m_np = max(r.peak_mib for r in np_runs)
    print(f"  numpy blockwise median of {repeats}: {t_np:8.3f} s   peak RSS growth {m_np:8.1f} MiB")
    print(f"  ratio ours/numpy blockwise: time {t_ours / t_np:.3f}, memory {m_ours / max(m_np, 1e-9):.3f}")
    if peer_repeats < 1:
        print("  networkx peer skipped (--peer-repeats 0)")
        return
    peer_runs = [measure(lambda s=s: peer(n, nu, k, s), repeats=1, memory="rss") for s in range(peer_repeats)]
    t_peer = statistics.median(r.seconds for r in peer_runs)
    m_peer = max(r.peak_mib for r in peer_runs)
    print(
        f"  networkx median of {peer_repeats}: {t_peer:8.3f} s   peak RSS growth {m_peer:8.1f} MiB  (networkx + scipy)"
    )
    print(
        f"  ratio ours/networkx: time {t_ours / t_peer:.4f} (speed-up x{t_peer / t_ours:.1f}), "
        f"memory {m_ours / max(m_peer, 1e-9):.3f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="*", default=[10_000, 20_000, 100_000])
    ap.add_argument("--nu", type=float, default=100.0)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peer-repeats", type=int, nargs="*", default=[3, 1, 0], help="per --n entry")
    args = ap.parse_args()
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; jax {jax.__version__}, "
        f"networkx {nx.__version__}"
    )
    for i, n in enumerate(args.n):
        reps = args.peer_repeats[min(i, len(args.peer_repeats) - 1)]
        run(n, args.nu, args.k, args.repeats, reps)


if __name__ == "__main__":
    main()
