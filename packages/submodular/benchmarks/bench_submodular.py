"""Greedy facility-location selection: nips25-submodular vs apricot-select, same similarity matrix and k.

Both run naive (non-lazy) greedy (apricot's lazy greedy is timed too) on the identical precomputed similarity
matrix of scikit-learn's digits (an RBF kernel) and select the same ``k`` exemplars. A timing is the median of
several runs after one warm-up (JAX compile / numba JIT excluded; first-call times are printed separately). Peak
memory is the peak RSS of a fresh subprocess running only one library.

    python benchmarks/bench_submodular.py [--n 1000] [--k 50] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np

from nips25_shared.bench import median_seconds, peak_rss_mib


def similarity(n: int) -> np.ndarray:
    """RBF similarity of the first ``n`` digits (pixels / 16, gamma = 1 / median squared distance), float64."""
    from sklearn.datasets import load_digits
    from sklearn.metrics.pairwise import euclidean_distances

    x = load_digits().data[:n] / 16.0
    d2 = euclidean_distances(x, squared=True)
    return np.exp(-d2 / np.median(d2))


def run_ours(sim: np.ndarray, k: int) -> list[int]:
    from nips25_submodular import FacilityLocation, Uniform, greedy

    return greedy(FacilityLocation(sim), Uniform(sim.shape[1], k)).order.tolist()


def run_apricot(sim: np.ndarray, k: int, optimizer: str = "naive") -> list[int]:
    from apricot import FacilityLocationSelection

    sel = FacilityLocationSelection(k, metric="precomputed", optimizer=optimizer, verbose=False)
    return sel.fit(sim).ranking.tolist()


def run_apricot_lazy(sim: np.ndarray, k: int) -> list[int]:
    return run_apricot(sim, k, optimizer="lazy")


RUNNERS = {"nips25-submodular": run_ours, "apricot-select": run_apricot, "apricot-select-lazy": run_apricot_lazy}


def measure(name: str, n: int, k: int, repeats: int) -> dict[str, object]:
    sim = similarity(n)
    start = time.perf_counter()
    ranking = RUNNERS[name](sim, k)
    first = time.perf_counter() - start
    median_s = median_seconds(lambda: RUNNERS[name](sim, k), repeats=repeats)
    return {"first_s": first, "median_s": median_s, "peak_rss_mb": peak_rss_mib(), "ranking": ranking}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="ground-set size (digits rows), <= 1797")
    parser.add_argument("--k", type=int, default=50, help="exemplars selected")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", choices=sorted(RUNNERS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only:
        print(json.dumps(measure(args.only, args.n, args.k, args.repeats)))
        return 0
    results = {}
    for name in RUNNERS:
        cmd = [sys.executable, __file__, "--only", name, "--n", str(args.n), "--k", str(args.k)]
        out = subprocess.run([*cmd, "--repeats", str(args.repeats)], check=True, capture_output=True, text=True)
        results[name] = json.loads(out.stdout.strip().splitlines()[-1])
    ours, peer = results["nips25-submodular"], results["apricot-select"]
    agree = ours["ranking"] == peer["ranking"]
    common = len(set(ours["ranking"]) & set(peer["ranking"]))
    print(f"greedy facility location, digits n={args.n}, k={args.k}, median of {args.repeats} runs after warm-up")
    print(f"{'library':<20}{'median s':>10}{'first call s':>14}{'peak RSS MB':>13}")
    for name, r in results.items():
        print(f"{name:<20}{r['median_s']:>10.4f}{r['first_s']:>14.2f}{r['peak_rss_mb']:>13.0f}")
    lazy = results["apricot-select-lazy"]
    print(f"ratio ours/peer (median time, naive greedy both): {ours['median_s'] / peer['median_s']:.3f}")
    print(f"ratio ours/peer-lazy (apricot's lazy greedy): {ours['median_s'] / lazy['median_s']:.3f}")
    print(f"same ranking: {agree} ({common}/{args.k} exemplars in common; float32 vs float64 ties may differ)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
