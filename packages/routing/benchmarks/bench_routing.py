"""Routing throughput (queries/s) of PORT (faiss HNSW + argmax) beside exact kNN routing and BatchSplit.

Side by side in one process, on the same history and query stream: PORT after its learning phase (ANN estimate +
price-adjusted argmax) at the official ``efSearch`` 50 and at the smallest ``efSearch`` whose recall@5 reaches the
target on held-out calibration queries (``ANNEstimator.tune_ef_search``), PORT on the exact faiss index, KNN-Perf on
scikit-learn's brute-force cosine kNN (the paper's exact-kNN baseline) and BatchSplit (per-batch HiGHS MILP).
History sizes 10k and 100k, 384-d clustered unit vectors (MiniLM's width), 11 models, batches of 256.

Under load the absolute numbers move with the machine; two references timed in the same run let them be read
anyway: a fixed float32 matmul (GFLOP/s, before and after each size) and the exact faiss-flat router (the
"vs exact" ratio). Also printed: the recall@5 / speed of every ``efSearch`` tried, the share of PORT's route time
in each stage (validation, normalisation, faiss search, the k-mean gather, scores + tie-broken argmax), and how
many decisions PORT at each ``efSearch`` shares with PORT on the exact index.

    python packages/routing/benchmarks/bench_routing.py [--sizes 10000 100000] [--repeats 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import faiss
import numpy as np
from nips25_routing import ANNEstimator, BatchSplitRouter, GreedyRouter, HistoryStore, PORTRouter, recall_at_k
from nips25_routing.estimation import l2_normalize
from nips25_routing.ties import argmax_random_ties

from nips25_shared.bench import median_seconds, peak_rss_mib

BATCH = 256
SWEEP = (8, 12, 16, 24, 32, 50)
EF_SWEEP = (8, 12, 16, 24, 32, 48, 64, 96, 128)


def clustered(rng: np.random.Generator, n: int, dim: int, centers: np.ndarray) -> np.ndarray:
    label = rng.integers(0, len(centers), size=n)
    return (centers[label] + 0.35 * rng.normal(size=(n, dim)) / np.sqrt(dim)).astype(np.float32)


def batches(x: np.ndarray) -> list[np.ndarray]:
    return [x[i : i + BATCH] for i in range(0, len(x), BATCH)]


def routed_in_batches(router: object, stream: np.ndarray) -> Callable[[], None]:
    parts = batches(stream)

    def run() -> None:
        for b in parts:
            router.route(b)  # type: ignore[attr-defined]

    return run


def reference_gflops(rng: np.random.Generator, dim: int) -> float:
    """GFLOP/s of one fixed float32 matmul, (256, D) @ (D, 10000), median of 20: the machine's speed right now."""
    a = rng.normal(size=(BATCH, dim)).astype(np.float32)
    b = rng.normal(size=(dim, 10_000)).astype(np.float32)
    return 2 * BATCH * dim * 10_000 / median_seconds(lambda: a @ b, repeats=20) / 1e9


def stage_shares(router: PORTRouter, stream: np.ndarray, repeats: int) -> dict[str, float]:
    """Seconds per stage of ``PORTRouter.route`` over ``stream`` (each stage re-run alone on the same batches)."""
    est, parts = router.estimator, batches(stream)
    checked = [est.check_queries(b) for b in parts]
    normed = [l2_normalize(q) for q in checked]
    idx = [est._index.search(q, est.k)[1] for q in normed]
    dg = [(est.history.quality[i].mean(axis=1), est.history.cost[i].mean(axis=1)) for i in idx]
    rng = np.random.default_rng(0)
    stages: dict[str, Callable[[], object]] = {
        "validate": lambda: [est.check_queries(b) for b in parts],
        "normalise": lambda: [l2_normalize(q) for q in checked],
        "faiss search": lambda: [est._index.search(q, est.k) for q in normed],
        "k-mean gather": lambda: [est._quality_cost[i].mean(axis=1) for i in idx],
        "scores + argmax": lambda: [argmax_random_ties(router.scores(d, g), rng) for d, g in dg],
    }
    return {name: median_seconds(fn, repeats=repeats) for name, fn in stages.items()}


def decisions(est: ANNEstimator, budgets: np.ndarray, stream: np.ndarray) -> np.ndarray:
    """Exploitation-phase decisions of a fresh PORT router (seed 0) over ``stream``."""
    router = PORTRouter(est, budgets, n_total=len(stream))
    return np.concatenate([router.route(x) for x in batches(stream)])[router.n_learn :]


# 0.1.0's idle figures of the official configuration (HNSW M=32, efConstruction 200, efSearch 50), batches of 256,
# 2 threads, load average 1-3 (2026-11-30): the anchor of the idle estimates below (same-run ratio x this figure)
IDLE_REFERENCE_QPS = {10_000: 23_053.0, 100_000: 5_218.0}


def hnsw_index(base: np.ndarray, m: int, ef_construction: int, kind: str = "flat", metric: str = "ip") -> faiss.Index:
    """faiss HNSW over ``base``: ``kind`` flat (float32), sq8 or fp16 storage; inner product or L2 (same order)."""
    dim = base.shape[1]
    mt = faiss.METRIC_INNER_PRODUCT if metric == "ip" else faiss.METRIC_L2
    if kind == "flat":
        index = faiss.IndexHNSWFlat(dim, m, mt)
    else:
        qt = faiss.ScalarQuantizer.QT_8bit if kind == "sq8" else faiss.ScalarQuantizer.QT_fp16
        index = faiss.IndexHNSWSQ(dim, qt, m, mt)
        index.train(base)
    index.hnsw.efConstruction = ef_construction
    index.add(base)
    return index


def ivf_index(base: np.ndarray, nlist: int, kind: str = "flat") -> faiss.Index:
    """faiss IVF over ``base`` on inner product: ``kind`` flat (float32), fp16 or sq8 storage of the listed vectors."""
    quantizer = faiss.IndexFlatIP(base.shape[1])
    if kind == "flat":
        index = faiss.IndexIVFFlat(quantizer, base.shape[1], nlist, faiss.METRIC_INNER_PRODUCT)
    else:
        qt = faiss.ScalarQuantizer.QT_8bit if kind == "sq8" else faiss.ScalarQuantizer.QT_fp16
        index = faiss.IndexIVFScalarQuantizer(quantizer, base.shape[1], nlist, qt, faiss.METRIC_INNER_PRODUCT)
    index.train(base)
    index.add(base)
    return index


def configurations(
    size: int, quantised: bool, official: faiss.Index
) -> list[tuple[str, Callable[[np.ndarray], faiss.Index]]]:
    """The faiss configurations tried at one history size (name, builder over the normalised history).

    The official configuration (M 32, efConstruction 200) is a copy of ``official``, already built (its build time
    is printed with the history).
    """
    root = round(np.sqrt(size))
    out: list[tuple[str, Callable[[np.ndarray], faiss.Index]]] = [
        ("HNSW M32 efC200 IP", lambda b: faiss.clone_index(official)),
        ("HNSW M16 efC200 IP", lambda b: hnsw_index(b, 16, 200)),
    ]
    if quantised:
        out += [
            ("HNSW M16 efC100 IP", lambda b: hnsw_index(b, 16, 100)),
            ("HNSW M16 efC200 L2", lambda b: hnsw_index(b, 16, 200, metric="l2")),
            ("HNSW-SQ8 M16 efC200 IP", lambda b: hnsw_index(b, 16, 200, kind="sq8")),
            ("HNSW-fp16 M16 efC200 IP", lambda b: hnsw_index(b, 16, 200, kind="fp16")),
        ]
    out += [
        (f"IVFFlat nlist {root} IP", lambda b: ivf_index(b, root)),
        (f"IVFFlat nlist {4 * root} IP", lambda b: ivf_index(b, 4 * root)),
        # half / a quarter of the bytes read per listed vector: the 100k search is bound by memory traffic (0.2.3)
        (f"IVF-fp16 nlist {root} IP", lambda b: ivf_index(b, root, "fp16")),
        (f"IVF-SQ8 nlist {root} IP", lambda b: ivf_index(b, root, "sq8")),
    ]
    return out


def interleaved_ratio(fn: Callable[[], object], ref: Callable[[], object], repeats: int) -> tuple[float, float, float]:
    """Seconds of ``fn`` and of ``ref`` (medians) and the median of per-pair ratios ref/fn, timed alternately."""
    a, b = [], []
    for _ in range(repeats):
        a.append(median_seconds(fn, repeats=1))
        b.append(median_seconds(ref, repeats=1))
    ratios = np.asarray(b) / np.asarray(a)
    return float(np.median(a)), float(np.median(b)), float(np.median(ratios))


def sweep_configurations(
    hist: HistoryStore,
    stream: np.ndarray,
    calib: np.ndarray,
    budgets: np.ndarray,
    official: faiss.Index,
    args: argparse.Namespace,
) -> tuple[str, PORTRouter, ANNEstimator]:
    """Every configuration, tuned on ``calib`` to the recall target; route speed beside the official one, same run.

    Returns the pick by the rule (fastest PORT route at held-out recall@5 >= target) as ``(name, router, est)``.
    """
    size = hist.size
    base = l2_normalize(hist.embeddings)
    held = stream[: args.calibration]
    ref_index = _copy_hnsw(official, 50)
    ref_est = ANNEstimator(hist, index=ref_index)
    ref_port = PORTRouter(ref_est, budgets, n_total=len(stream))
    ref_port.route(stream[: ref_port.n_learn + 1])
    ref_run = routed_in_batches(ref_port, stream)
    idle_ref = IDLE_REFERENCE_QPS.get(size)
    print(f"{'configuration':<26} {'build s':>7} {'param':>11} {'rec calib':>9} {'rec held':>8} {'route q/s':>9} "
          f"{'ref q/s':>8} {'x ref':>6} {'idle est.':>9}")  # fmt: skip
    best: tuple[float, str, PORTRouter, ANNEstimator] | None = None
    for name, build in configurations(size, size <= args.quantised_max, official):
        t0 = time.perf_counter()
        index = build(base)
        built = time.perf_counter() - t0
        est = ANNEstimator(hist, index=index)
        if name.startswith("IVF"):
            value, rec_c = est.tune_nprobe(calib, target_recall=args.target_recall)
            param = f"nprobe {value}"
        else:
            value, rec_c = est.tune_ef_search(calib, target_recall=args.target_recall, candidates=EF_SWEEP)
            param = f"efSearch {value}"
        rec_h = est.recall(held)
        port = PORTRouter(est, budgets, n_total=len(stream))
        port.route(stream[: port.n_learn + 1])
        sec, sec_ref, ratio = interleaved_ratio(routed_in_batches(port, stream), ref_run, args.repeats)
        qps, qps_ref = len(stream) / sec, len(stream) / sec_ref
        idle = f"{ratio * idle_ref:>9.0f}" if idle_ref else f"{'':>9}"
        print(f"{name:<26} {built:>7.1f} {param:>11} {rec_c:>9.3f} {rec_h:>8.3f} {qps:>9.0f} {qps_ref:>8.0f} "
              f"{ratio:>5.2f}x {idle}", flush=True)  # fmt: skip
        if rec_h >= args.target_recall and (best is None or ratio > best[0]):
            best = (ratio, f"{name}, {param}", port, est)
    if best is None:
        raise SystemExit(f"no configuration reached held-out recall@5 >= {args.target_recall}")
    ratio, name, port, est = best
    print(f"pick (fastest at held-out recall@5 >= {args.target_recall}): {name}, {ratio:.2f}x the official "
          f"configuration" + (f", idle estimate {ratio * idle_ref:.0f} q/s" if idle_ref else ""))  # fmt: skip
    # the pick's batch size and thread count, each beside the official configuration at batches of 256
    threads = faiss.omp_get_max_threads()
    for batch in (256, 1024, 4096):
        for nt in sorted({1, threads}):
            faiss.omp_set_num_threads(nt)
            parts = [stream[i : i + batch] for i in range(0, len(stream), batch)]

            def run(p: list[np.ndarray] = parts) -> None:
                for b in p:
                    port.route(b)

            sec = median_seconds(run, repeats=args.repeats)
            faiss.omp_set_num_threads(threads)
            sec_ref = median_seconds(ref_run, repeats=1)
            r = sec_ref / sec
            idle = f", idle estimate {r * idle_ref:.0f} q/s" if idle_ref else ""
            print(f"  pick at batch {batch}, {nt} faiss thread(s): {len(stream) / sec:.0f} q/s, "
                  f"{r:.2f}x official (256, {threads} threads){idle}")  # fmt: skip
    faiss.omp_set_num_threads(threads)
    return name, port, est


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--models", type=int, default=11)
    ap.add_argument("--queries", type=int, default=4096, help="timed stream for the PORT/HNSW rows")
    ap.add_argument("--exact-queries", type=int, default=512, help="timed stream for the exact-kNN rows")
    ap.add_argument("--batchsplit-queries", type=int, default=1024)
    ap.add_argument("--calibration", type=int, default=1024, help="held-out queries that choose efSearch")
    ap.add_argument("--target-recall", type=float, default=0.95)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, help="faiss OpenMP threads (default: faiss's, all cores)")
    ap.add_argument("--quantised-max", type=int, default=10_000, help="largest history for the SQ8/fp16/L2/efC100 rows")
    ap.add_argument("--no-sweep", action="store_true", help="skip the configuration sweep")
    args = ap.parse_args()
    if args.threads is not None:
        faiss.omp_set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(64, args.dim))
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    m = args.models
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; faiss threads {faiss.omp_get_max_threads()}")
    print(f"{args.dim}-d, {m} models, batches of {BATCH}; median of {args.repeats} runs")
    for size in args.sizes:
        hist = HistoryStore(
            clustered(rng, size, args.dim, centers),
            rng.uniform(size=(size, m)),
            rng.uniform(1e-5, 3e-3, size=(size, m)),
        )
        stream = clustered(rng, args.queries, args.dim, centers)
        calib = clustered(rng, args.calibration, args.dim, centers)
        budgets = np.full(m, 1.0)
        ref_before = reference_gflops(rng, args.dim)
        t0 = time.perf_counter()
        official = hnsw_index(l2_normalize(hist.embeddings), 32, 200)  # the official configuration, built once
        build = time.perf_counter() - t0
        hnsw = ANNEstimator(hist, index=_copy_hnsw(official, 50))
        print(f"\n## history {size}: HNSW build {build:.1f} s; reference matmul {ref_before:.1f} GFLOP/s")
        if not args.no_sweep:
            print("### faiss configurations, each tuned to the recall target on the calibration queries")
            sweep_configurations(hist, stream, calib, budgets, official, args)
            print("### the official configuration in detail")
        print(f"{'efSearch':>8} {'recall@5 (calib)':>17} {'search q/s':>11}")
        exact_calib = hnsw.exact_neighbors(calib)
        normed = [l2_normalize(b) for b in batches(calib)]
        for ef in SWEEP:
            hnsw.set_ef_search(ef)
            search = hnsw._index.search
            qps = len(calib) / median_seconds(lambda s=search, q=normed: [s(x, 5) for x in q], repeats=args.repeats)
            rec = recall_at_k(hnsw.neighbors(calib), exact_calib)
            print(f"{ef:>8} {rec:>17.4f} {qps:>11.0f}")
        tuned_ef, tuned_calib = hnsw.tune_ef_search(calib, target_recall=args.target_recall, candidates=SWEEP)
        held = stream[: args.calibration]
        tuned_recall = hnsw.recall(held)
        hnsw_tuned = hnsw
        hnsw50 = ANNEstimator(hist, index=_copy_hnsw(hnsw._index, 50))
        recall50 = hnsw50.recall(held)
        flat = ANNEstimator(hist, backend="faiss-flat")
        exact = ANNEstimator(hist, backend="sklearn")
        port50 = PORTRouter(hnsw50, budgets, n_total=args.queries)
        port_tuned = PORTRouter(hnsw_tuned, budgets, n_total=args.queries)
        port_flat = PORTRouter(flat, budgets, n_total=args.queries)
        for r in (port50, port_tuned, port_flat):  # learning phase and the one-time dual fit before the timed runs
            r.route(stream[: r.n_learn + 1])
        ex = stream[: args.exact_queries]
        bs = stream[: args.batchsplit_queries]
        tuned_name = f"PORT, HNSW tuned ef={tuned_ef} (rec {tuned_recall:.3f})"
        rows = [
            (tuned_name, routed_in_batches(port_tuned, stream), len(stream)),
            (f"PORT, HNSW default ef=50 (rec {recall50:.3f})", routed_in_batches(port50, stream), len(stream)),
            ("PORT, faiss flat (exact)", routed_in_batches(port_flat, ex), len(ex)),
            ("KNN-Perf, sklearn exact", routed_in_batches(GreedyRouter(exact, budgets), ex), len(ex)),
            ("BatchSplit, HiGHS MILP", routed_in_batches(BatchSplitRouter(hnsw_tuned, budgets), bs), len(bs)),
        ]
        results = [(name, n / median_seconds(fn, repeats=args.repeats), peak_rss_mib()) for name, fn, n in rows]
        ref_after = reference_gflops(rng, args.dim)
        ref = (ref_before + ref_after) / 2
        flat_qps = results[2][1]
        head = f"{'router':<36} {'queries/s':>10} {'ms/query':>9} {'vs exact':>9} {'q/s per GFLOP/s':>16}"
        print(head + f" {'RSS MiB':>8}")
        for name, qps, rss in results:
            print(f"{name:<36} {qps:>10.0f} {1e3 / qps:>9.4f} {qps / flat_qps:>8.2f}x {qps / ref:>16.1f} {rss:>8.0f}")
        print(f"reference matmul {ref_before:.1f} -> {ref_after:.1f} GFLOP/s; tuned on calibration: ef {tuned_ef}, "
              f"recall {tuned_calib:.4f}; held-out recall {tuned_recall:.4f}")  # fmt: skip
        shares = stage_shares(port_tuned, stream, args.repeats)
        total = sum(shares.values())
        print("PORT route time by stage (ef tuned): " + ", ".join(f"{k} {v / total:.1%}" for k, v in shares.items()))
        ref_dec = decisions(flat, budgets, held)
        agree_t = float((decisions(hnsw_tuned, budgets, held) == ref_dec).mean())
        agree_50 = float((decisions(hnsw50, budgets, held) == ref_dec).mean())
        print(f"decisions shared with PORT on the exact index ({len(held)} queries): ef={tuned_ef} {agree_t:.3f}, "
              f"ef=50 {agree_50:.3f}")  # fmt: skip
    print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("vs exact: that router's queries/s over PORT on the exact faiss-flat index, same run")


def _copy_hnsw(index: faiss.Index, ef: int) -> faiss.Index:
    """A second handle on the same HNSW graph (a deep copy) searched with ``efSearch = ef``: no second build."""
    copy = faiss.clone_index(index)
    copy.hnsw.efSearch = ef
    return copy


if __name__ == "__main__":
    main()
