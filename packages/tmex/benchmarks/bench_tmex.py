"""T-MEX wall time and peak memory: GCM with linear regressions (ours) vs causal-learn's KCI and Fisher-z.

KCI is the kernel peer (the paper's alternative test); Fisher-z (partial correlation, causal-learn ``fisherz``) is
the fastest linear CI test a user would pick, run on the same 400 (block, latent) pairs as the GCM-LM T-MEX.

Run: ``python packages/tmex/benchmarks/bench_tmex.py [--repeats 5]``. Timings are medians over ``--repeats``
runs in one process on the same data. At ``k = 20, n = 1000`` a full KCI T-MEX (400 tests, O(n^3) each) takes
far longer than a benchmark may, so its time is the median time of ``--kci-tests`` single KCI tests times 400
(labelled "extrapolated"); at ``k = 3, n = 250`` both scores are run in full.
"""

from __future__ import annotations

import argparse
import statistics
import warnings

import numpy as np
from nips25_tmex import DegenerateResidualWarning, kci_available, kci_test, location_scale_scm, measurements, random_dag
from nips25_tmex import tmex as tmex_score

from nips25_shared import configure_logging
from nips25_shared.bench import measure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--kci-tests", type=int, default=3)
    args = parser.parse_args()
    if not kci_available():
        raise SystemExit("the benchmark's peer is KCI: pip install causal-learn")
    warnings.simplefilter("ignore", DegenerateResidualWarning)
    configure_logging(-1)  # no progress bars between the table rows
    rng = np.random.default_rng(0)
    cols = ["setting", "GCM-LM (ours) s", "KCI (causal-learn) s", "ratio ours/peer", "peak MiB ours"]
    cols += ["peak MiB peer", "T-MEX ours / peer"]
    print("| " + " | ".join(cols) + " |")
    print("|---|---|---|---|---|---|---|")

    z = location_scale_scm(250, random_dag(3, rng), rng)
    hz = measurements(z, "partial", rng)
    gcm = measure(lambda: tmex_score(z, hz), repeats=args.repeats, memory="tracemalloc")
    kci = measure(lambda: tmex_score(z, hz, test="kci"), repeats=max(1, args.repeats // 2), memory="tracemalloc")
    t_g, m_g, r_g = gcm.seconds, gcm.peak_mib, gcm.result
    t_k, m_k, r_k = kci.seconds, kci.peak_mib, kci.result
    print(f"| k=3, n=250, full T-MEX (9 tests) | {t_g:.4f} | {t_k:.3f} | {t_g / t_k:.2e} | {m_g:.2f} | {m_k:.2f} "
          f"| {r_g.score} / {r_k.score} |")  # fmt: skip

    z = location_scale_scm(1000, random_dag(20, rng), rng)
    hz = measurements(z, "noisy", rng)
    gcm = measure(lambda: tmex_score(z, hz), repeats=args.repeats, memory="tracemalloc")
    t_g, m_g, r_g = gcm.seconds, gcm.peak_mib, gcm.result
    rest = np.delete(z, 0, axis=1)
    one = [lambda i=i: kci_test(hz[i], z[:, 0], rest) for i in range(args.kci_tests)]
    per_test = []
    m_k = 0.0
    for fn in one:
        single = measure(fn, repeats=1, memory="tracemalloc")
        per_test.append(single.seconds)
        m_k = max(m_k, single.peak_mib)
    t_k = statistics.median(per_test) * 400
    print(f"| k=20, n=1000, full T-MEX (400 tests) | {t_g:.3f} | {t_k:.0f} (extrapolated: 400 x median of "
          f"{args.kci_tests} tests) | {t_g / t_k:.2e} | {m_g:.2f} | {m_k:.2f} | {r_g.score} / n/a |")  # fmt: skip

    from causallearn.utils.cit import CIT

    data = np.hstack([z, *hz])
    k = z.shape[1]

    def fisherz_tmex() -> int:
        test = CIT(data, "fisherz")  # a fresh CIT per run: its p-value cache would otherwise make repeats free
        p = np.array([[test(k + i, j, [c for c in range(k) if c != j]) for j in range(k)] for i in range(len(hz))])
        return int(np.sum((p < 0.05) != np.eye(len(hz), k, dtype=bool)))

    fz = measure(fisherz_tmex, repeats=args.repeats, memory="tracemalloc")
    print(f"| k=20, n=1000, same 400 tests, peer Fisher-z (causal-learn) | {t_g:.3f} | {fz.seconds:.3f} (Fisher-z) "
          f"| {t_g / fz.seconds:.2f} | {m_g:.2f} | {fz.peak_mib:.2f} | {r_g.score} / {fz.result} |")  # fmt: skip


if __name__ == "__main__":
    main()
