"""Preprocessing time vs clients and samples: PPMPR (ours) vs the EP-MPD-style private hard-dedup tree (peer).

Both use the same openmined-psi primitive on the same clients. Each cell is the median of ``--repeats`` runs in a
fresh child process, whose peak RSS is reported. Ratio = EP-MPD tree / PPMPR (> 1 means PPMPR is faster).

    python benchmarks/bench_fedrw.py [--repeats 3] [--clients 2 4 8 16] [--items 256 1024]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics

import numpy as np
from nips25_fedrw import OpenMinedPSI, ep_mpd_hard_dedup, load_corpus, overlapping_clients, ppmpr

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
            res = ppmpr(clients, backend=psi, seed=r)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--clients", type=int, nargs="+", default=[2, 4, 8, 16])
    parser.add_argument("--items", type=int, nargs="+", default=[256, 1024])
    args = parser.parse_args()
    grid = [(k, args.items[0]) for k in args.clients] + [(4, n) for n in args.items[1:]]
    ctx = mp.get_context("spawn")
    print(f"median of {args.repeats} runs; times in seconds; ratio = EP-MPD tree / PPMPR (>1: PPMPR faster)")
    head = ("K", "items", "PPMPR par", "tree par", "ratio par", "PPMPR ser", "tree ser", "ratio ser", "PSI runs",
            "MB ours/tree", "peak RSS MB ours/tree")  # fmt: skip
    print(" | ".join(head))
    for k, n in grid:
        with ctx.Pool(1, maxtasksperchild=1) as pool:
            ours = pool.apply(_measure, ("ppmpr", k, n, args.repeats))
        with ctx.Pool(1, maxtasksperchild=1) as pool:
            peer = pool.apply(_measure, ("tree", k, n, args.repeats))
        row = (k, n, f"{ours['parallel']:.3f}", f"{peer['parallel']:.3f}", f"{peer['parallel'] / ours['parallel']:.2f}",
               f"{ours['serial']:.3f}", f"{peer['serial']:.3f}", f"{peer['serial'] / ours['serial']:.2f}",
               f"{ours['runs']}/{peer['runs']}", f"{ours['mb']:.2f}/{peer['mb']:.2f}",
               f"{ours['peak_mb']:.0f}/{peer['peak_mb']:.0f}")  # fmt: skip
        print(" | ".join(str(x) for x in row), flush=True)


if __name__ == "__main__":
    main()
