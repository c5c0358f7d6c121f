"""Preprocessing time vs clients and samples: PPMPR (ours) vs the EP-MPD-style private hard-dedup tree (peer).

Both use the same openmined-psi primitive on the same clients. Each cell is the median of ``--repeats`` runs in a
fresh child process, whose peak RSS is reported. Ratio = EP-MPD tree / PPMPR (> 1 means PPMPR is faster).

"par" is simulated (sum over rounds of the slowest pair, each PSI timed alone). "PSI real par" runs each round's
pairs' PSI runs (both directions) truly in parallel, one worker process per pair (K/2 processes, started before
timing), and sums the wall clock of the rounds (IPC included); "PSI ser" runs the same pair runs one after another
in one process; "real speed-up" = ser / real par. This machine has 2 cores, so at most 2 pairs truly run at once:
for K > 4 the K/2 workers share 2 cores and the speed-up is capped near 2.

    python benchmarks/bench_fedrw.py [--repeats 3] [--clients 2 4 8 16] [--items 256 1024]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import time

import numpy as np
from nips25_fedrw import (
    OpenMinedPSI,
    ep_mpd_hard_dedup,
    load_corpus,
    overlapping_clients,
    ppmpr_in_process,
    round_robin_schedule,
)

from nips25_shared.bench import peak_rss_mib


def _pool(n_items: int) -> list[str]:
    pool = list(dict.fromkeys(load_corpus("sonnets") + load_corpus("jokes")))
    return pool + [f"{pool[i % len(pool)]} #{i}" for i in range(max(0, 2 * n_items - len(pool)))]


def _measure(method: str, k: int, n_items: int, repeats: int) -> dict[str, float]:
    clients = overlapping_clients(_pool(n_items), k, n_items, np.random.default_rng([k, n_items]))
    psi = OpenMinedPSI()
    par, ser, runs, mb = [], [], 0, 0.0
    for r in range(repeats):
        if method == "ppmpr":
            res = ppmpr_in_process(clients, backend=psi, seed=r)
            par.append(res.timings["parallel"])
            ser.append(res.timings["total"])
            runs, mb = res.psi_runs, res.transcript_bytes / 1e6
        else:
            tree = ep_mpd_hard_dedup(clients, backend=psi)
            par.append(tree.parallel_seconds)
            ser.append(tree.seconds)
            runs, mb = tree.psi_runs, tree.transcript_bytes / 1e6
    peak_mb = peak_rss_mib()
    return {"parallel": statistics.median(par), "serial": statistics.median(ser), "runs": runs, "mb": mb,
            "peak_mb": peak_mb}  # fmt: skip


def _pair_psi(a: list[bytes], b: list[bytes]) -> tuple[int, int]:
    """Both directions of one pair's PSI (what a pair of clients runs in a round); the intersection sizes."""
    psi = OpenMinedPSI()
    return len(psi.intersect(a, b).indices), len(psi.intersect(b, a).indices)


def _real_parallel(k: int, n_items: int, repeats: int, ctx: mp.context.SpawnContext) -> tuple[float, float, int]:
    """Medians over repeats of the rounds' summed wall clock: pairs in parallel processes, and one after another."""
    clients = overlapping_clients(_pool(n_items), k, n_items, np.random.default_rng([k, n_items]))
    items = [c.distinct()[0] for c in clients]
    rounds = round_robin_schedule(k)
    workers = max(len(r) for r in rounds)
    par, ser = [], []
    with ctx.Pool(workers) as pool:
        pool.starmap(_pair_psi, [(items[0][:4], items[1][:4])] * workers)  # start and import in every worker
        for _ in range(repeats):
            start = time.perf_counter()
            for pairs in rounds:
                pool.starmap(_pair_psi, [(items[i], items[j]) for i, j in pairs])
            par.append(time.perf_counter() - start)
            start = time.perf_counter()
            for pairs in rounds:
                for i, j in pairs:
                    _pair_psi(items[i], items[j])
            ser.append(time.perf_counter() - start)
    return statistics.median(par), statistics.median(ser), workers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--clients", type=int, nargs="+", default=[2, 4, 8, 16])
    parser.add_argument("--items", type=int, nargs="+", default=[256, 1024])
    args = parser.parse_args()
    grid = [(k, args.items[0]) for k in args.clients] + [(4, n) for n in args.items[1:]]
    ctx = mp.get_context("spawn")
    print(f"median of {args.repeats} runs; times in seconds; ratio = EP-MPD tree / PPMPR (>1: PPMPR faster)")
    print(f"real par: each round's pairs in parallel worker processes on {os.cpu_count()} CPU core(s)")
    head = ("K", "items", "PPMPR par", "tree par", "ratio par", "PPMPR ser", "tree ser", "ratio ser", "PSI runs",
            "MB ours/tree", "peak RSS MB ours/tree", "PSI real par (workers)", "PSI ser", "real speed-up")  # fmt: skip
    print(" | ".join(head))
    for k, n in grid:
        with ctx.Pool(1, maxtasksperchild=1) as pool:
            ours = pool.apply(_measure, ("ppmpr", k, n, args.repeats))
        with ctx.Pool(1, maxtasksperchild=1) as pool:
            peer = pool.apply(_measure, ("tree", k, n, args.repeats))
        real, one_by_one, workers = _real_parallel(k, n, args.repeats, ctx)
        row = (k, n, f"{ours['parallel']:.3f}", f"{peer['parallel']:.3f}", f"{peer['parallel'] / ours['parallel']:.2f}",
               f"{ours['serial']:.3f}", f"{peer['serial']:.3f}", f"{peer['serial'] / ours['serial']:.2f}",
               f"{ours['runs']}/{peer['runs']}", f"{ours['mb']:.2f}/{peer['mb']:.2f}",
               f"{ours['peak_mb']:.0f}/{peer['peak_mb']:.0f}", f"{real:.3f} ({workers})", f"{one_by_one:.3f}",
               f"{one_by_one / real:.2f}")  # fmt: skip
        print(" | ".join(str(x) for x in row), flush=True)


if __name__ == "__main__":
    main()
