"""Benchmarks: exact trellis vs brute-force enumeration (3^N vs (2N-3)!!), sampling throughput, kT vs fastjet.

Run: ``uvx nox -s bench-treegen`` (or ``python benchmarks/bench_treegen.py``). Each timing is the median of
several runs; peak memory is the Python-heap peak (tracemalloc) of one run plus the process's max RSS.
"""

from __future__ import annotations

import numpy as np
import torch
from nips25_treegen import TreeGen, TreeGenConfig, Trellis, brute_force, kt_cluster, n_trees, simulate

from nips25_shared.bench import measure, median_seconds, peak_rss_mib


def main() -> None:
    torch.set_num_threads(2)
    print("## Exact trellis vs brute-force enumeration (log Z and MAP)")
    print(
        "| N | trees (2N-3)!! | trellis s | brute force s | ratio trellis/brute | peak MiB trellis | peak MiB brute |"
    )
    print("|---|---|---|---|---|---|---|")
    for n in range(4, 12):
        leaves = simulate(1, n_leaves=(n, n), seed=n)[0].leaves
        trellis = measure(lambda leaves=leaves: Trellis(leaves).log_partition(), repeats=3, memory="tracemalloc")
        t_tr, m_tr = trellis.seconds, trellis.peak_mib
        if n <= 8:
            brute = measure(lambda leaves=leaves: brute_force(leaves), repeats=1 if n == 8 else 3, memory="tracemalloc")
            t_bf, m_bf = brute.seconds, brute.peak_mib
            print(f"| {n} | {n_trees(n)} | {t_tr:.4f} | {t_bf:.4f} | {t_tr / t_bf:.3g} | {m_tr:.1f} | {m_bf:.1f} |")
        else:
            print(f"| {n} | {n_trees(n)} | {t_tr:.4f} | not run | - | {m_tr:.1f} | - |")

    print("\n## Sampling throughput (trees per second)")
    print("| N | TreeGen (d=64, 3 layers, 30 steps) | exact trellis sampler | ratio TreeGen/trellis |")
    print("|---|---|---|---|")
    torch.manual_seed(0)
    model = TreeGen(TreeGenConfig(n_max=10)).eval()
    for n in (6, 8, 10):
        jets = simulate(20, n_leaves=(n, n), seed=n)
        leaves = np.stack([j.leaves for j in jets])
        t_tg = median_seconds(lambda leaves=leaves: model.sample(leaves, n_samples=50, n_steps=30), repeats=2)
        tr = Trellis(jets[0].leaves)
        t_ex = median_seconds(lambda tr=tr: tr.sample(1000, seed=0), repeats=2)
        tg_rate, ex_rate = 1000 / t_tg, 1000 / t_ex
        print(f"| {n} | {tg_rate:.0f} | {ex_rate:.0f} | {tg_rate / ex_rate:.3g} |")

    print("\n## Generalised kT (ee distance, R = pi): ours vs fastjet, 200 jets with 9..12 leaves")
    jets = simulate(200, n_leaves=(9, 12), seed=1)
    kt = measure(lambda: [kt_cluster(j.leaves, p=1.0, distance="ee") for j in jets], repeats=3, memory="tracemalloc")
    t_ours, m_ours = kt.seconds, kt.peak_mib
    try:
        import fastjet
    except ImportError:
        print(f"ours {t_ours:.4f} s (peak {m_ours:.1f} MiB); fastjet not installed (pip install nips25-treegen[peers])")
    else:

        def run_fastjet() -> None:
            jet_def = fastjet.JetDefinition(fastjet.ee_genkt_algorithm, np.pi, 1.0)
            for j in jets:
                particles = [fastjet.PseudoJet(float(px), float(py), float(pz), float(e)) for e, px, py, pz in j.leaves]
                fastjet.ClusterSequence(particles, jet_def).exclusive_jets(1)

        fj = measure(run_fastjet, repeats=3, memory="tracemalloc")
        t_fj, m_fj = fj.seconds, fj.peak_mib
        print("| method | s | peak MiB |\n|---|---|---|")
        print(f"| ours (numpy) | {t_ours:.4f} | {m_ours:.1f} |\n| fastjet | {t_fj:.4f} | {m_fj:.1f} |")
        print(f"ratio ours/fastjet: {t_ours / t_fj:.3g}")
    print(f"\nprocess max RSS: {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
