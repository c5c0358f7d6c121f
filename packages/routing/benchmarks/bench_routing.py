"""Routing throughput (queries/s) of PORT (faiss HNSW + argmax) beside exact kNN routing and BatchSplit.

Side by side in one process, on the same history and query stream: PORT after its learning phase (ANN estimate +
price-adjusted argmax), PORT on the exact faiss index, KNN-Perf on scikit-learn's brute-force cosine kNN (the
paper's exact-kNN baseline) and BatchSplit (per-batch HiGHS MILP). History sizes 10k and 100k, 384-d clustered
unit vectors (MiniLM's width), 11 models. A timing is the median of several runs; peak RSS is printed beside it.

    python packages/routing/benchmarks/bench_routing.py [--sizes 10000 100000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from nips25_routing import ANNEstimator, BatchSplitRouter, GreedyRouter, HistoryStore, PORTRouter

from nips25_shared.bench import median_seconds, peak_rss_mib


def clustered(rng: np.random.Generator, n: int, dim: int, centers: np.ndarray) -> np.ndarray:
    label = rng.integers(0, len(centers), size=n)
    return (centers[label] + 0.35 * rng.normal(size=(n, dim)) / np.sqrt(dim)).astype(np.float32)


def routed_in_batches(router: object, stream: np.ndarray, batch: int) -> Callable[[], None]:
    def run() -> None:
        for i in range(0, len(stream), batch):
            router.route(stream[i : i + batch])  # type: ignore[attr-defined]

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--models", type=int, default=11)
    ap.add_argument("--queries", type=int, default=4096)
    ap.add_argument("--batchsplit-queries", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(64, args.dim))
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    m = args.models
    print(f"{args.queries} queries in batches of 256, {args.dim}-d, {m} models; median of {args.repeats} runs")
    print(f"{'history':>8} {'router':<28} {'queries/s':>11} {'ms/query':>9} {'vs PORT':>8} {'peak RSS MiB':>13}")
    for size in args.sizes:
        hist = HistoryStore(
            clustered(rng, size, args.dim, centers),
            rng.uniform(size=(size, m)),
            rng.uniform(1e-5, 3e-3, size=(size, m)),
        )
        stream = clustered(rng, args.queries, args.dim, centers)
        budgets = np.full(m, 1.0)
        t0 = time.perf_counter()
        hnsw = ANNEstimator(hist, backend="faiss-hnsw")
        build = time.perf_counter() - t0
        flat = ANNEstimator(hist, backend="faiss-flat")
        exact = ANNEstimator(hist, backend="sklearn")
        port = PORTRouter(hnsw, budgets, n_total=args.queries)
        port_flat = PORTRouter(flat, budgets, n_total=args.queries)
        for r in (port, port_flat):  # learning phase and the one-time dual fit happen before the timed runs
            r.route(stream[: r.n_learn + 1])
        rows = [
            ("PORT (faiss HNSW, ours)", routed_in_batches(port, stream, 256), args.queries),
            ("PORT (faiss flat, exact)", routed_in_batches(port_flat, stream, 256), args.queries),
            ("KNN-Perf (sklearn exact)", routed_in_batches(GreedyRouter(exact, budgets), stream, 256), args.queries),
        ]
        bs_stream = stream[: args.batchsplit_queries]
        bs = ("BatchSplit (HiGHS MILP)", routed_in_batches(BatchSplitRouter(hnsw, budgets), bs_stream, 256))
        results = []
        for name, fn, n in rows:
            results.append((name, n / median_seconds(fn, repeats=args.repeats), peak_rss_mib()))
        results.append(
            (bs[0], len(bs_stream) / median_seconds(bs[1], repeats=max(1, args.repeats // 2)), peak_rss_mib())
        )
        ours = results[0][1]
        for name, qps, rss in results:
            print(f"{size:>8} {name:<28} {qps:>11.0f} {1e3 / qps:>9.4f} {ours / qps:>7.2f}x {rss:>13.0f}")
        print(f"{size:>8} HNSW index build {build:.1f} s")
    print("ratio column: PORT (HNSW) queries/s divided by that router's (above 1: ours is faster)")


if __name__ == "__main__":
    main()
