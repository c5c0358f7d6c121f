"""Preprocessing time vs clients: PPMPR (ours) vs EP-MPD's own Type I / Type II protocol and the 0.1 tree (peers).

Every method runs on the same clients (``nips25_fedrw.reproduce.time_preprocessing``: overlapping sonnet/joke
lines, ``--repeats`` timed runs after a warm-up, median and min-max reported). "par" is each protocol's parallel
accounting (PPMPR: slowest pair per round; EP-MPD: its own, slowest party per parallel step, Type II's OPRF setup
summed over clients as in EP-MPD's code); "ser" is the serial wall time in one process. Ratio = baseline / PPMPR
(> 1 means PPMPR is faster). The machine's 1-minute load average is printed per row.

With ``--real-parallel``, also the 0.2.0 check of real parallelism: each round's pairs' PSI runs (both
directions) in parallel worker processes (K/2, started before timing) against the same runs one after another.

    python benchmarks/bench_fedrw.py [--repeats 3] [--clients 2 4 8 16] [--items 256] [--real-parallel]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import time

import numpy as np
from nips25_fedrw import OpenMinedPSI, load_corpus, overlapping_clients, round_robin_schedule
from nips25_fedrw.reproduce import time_preprocessing


def _pool(n_items: int) -> list[str]:
    pool = list(dict.fromkeys(load_corpus("sonnets") + load_corpus("jokes")))
    return pool + [f"{pool[i % len(pool)]} #{i}" for i in range(max(0, 2 * n_items - len(pool)))]


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


def _cell(t: dict[str, float]) -> str:
    return f"{t['parallel_median']:.3f} [{t['parallel_min']:.3f}-{t['parallel_max']:.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--clients", type=int, nargs="+", default=[2, 4, 8, 16])
    parser.add_argument("--items", type=int, nargs="+", default=[256])
    parser.add_argument("--real-parallel", action="store_true", help="also time pairs in real worker processes")
    args = parser.parse_args()
    grid = [(k, args.items[0]) for k in args.clients] + [(4, n) for n in args.items[1:]]
    print(f"{args.repeats} repeats; seconds, median [min-max]; ratio = baseline / PPMPR (>1: PPMPR faster); "
          f"{os.cpu_count()} CPU core(s)")  # fmt: skip
    head = ("K", "items", "load", "PPMPR par", "EP-MPD I par", "EP-MPD II par", "tree par", "I/PPMPR", "II/PPMPR",
            "tree/PPMPR", "PPMPR ser", "I ser", "II ser", "MB PPMPR/I/II", "same kept")  # fmt: skip
    print(" | ".join(head))
    for k, n in grid:
        t = time_preprocessing(k, n, repeats=args.repeats)
        p, one, two, tree = t["ppmpr"], t["ep_mpd_type1"], t["ep_mpd_type2"], t["tree_psi"]
        row = (k, n, f"{t['load_1min']:.1f}", _cell(p), _cell(one), _cell(two), _cell(tree),
               f"{t['ratio']['ep_mpd_type1']:.3f}", f"{t['ratio']['ep_mpd_type2']:.3f}",
               f"{t['ratio']['tree_psi']:.2f}",
               f"{p['serial_median']:.3f}", f"{one['serial_median']:.3f}", f"{two['serial_median']:.3f}",
               f"{p['mb']:.2f}/{one['mb']:.2f}/{two['mb']:.2f}", t["exact_same_kept"])  # fmt: skip
        print(" | ".join(str(x) for x in row), flush=True)
    if args.real_parallel:
        ctx = mp.get_context("spawn")
        print("K | items | PSI real par (workers) | PSI ser | real speed-up")
        for k, n in grid:
            real, one_by_one, workers = _real_parallel(k, n, args.repeats, ctx)
            print(f"{k} | {n} | {real:.3f} ({workers}) | {one_by_one:.3f} | {one_by_one / real:.2f}", flush=True)


if __name__ == "__main__":
    main()
