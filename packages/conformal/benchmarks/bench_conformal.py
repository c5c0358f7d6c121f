"""Prediction-set throughput: 10k instances x 5 views x 100 classes, ours vs crepes per view + aggregation.

Both sides start from the same non-conformity scores (the base model's cost is common to both and left out):
calibration scores of 100 classes (n_y = 50 each) and test scores (B, m, C).

* ours: ``MondrianCalibration`` counts + exact-law sum aggregation (``multi_input_pvalues``).
* crepes: ``ConformalClassifier`` fitted with ``bins=y`` (Mondrian), non-smoothed ``predict_p`` per class on that
  class's column of the B*m views (crepes' own ``WrapClassifier`` with ``class_cond=True`` loops the same way but
  passes all C columns each time), then the same exact-law sum aggregation of its p-values.

Prints the median wall time over repeats (after one warm-up run; one more, traced, gives the peak memory), instances/s,
peak traced memory and the ratio ours/peer, and checks that both give the same prediction sets.
"""

from __future__ import annotations

import argparse

import numpy as np
from nips25_conformal import MondrianCalibration, NullLaw, multi_input_pvalues
from nips25_conformal.aggregation import SumStatistic

from nips25_shared.bench import measure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--instances", type=int, default=10_000)
    parser.add_argument("--views", type=int, default=5)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--n-cal", type=int, default=50, help="calibration points per class")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--alpha", type=float, default=0.1)
    args = parser.parse_args()
    from crepes import ConformalClassifier

    rng = np.random.default_rng(0)
    b, m, c, n = args.instances, args.views, args.classes, args.n_cal
    cal_y = np.repeat(np.arange(c), n)
    cal_scores = rng.random(cal_y.size)
    test_scores = rng.random((b, m, c))

    def ours() -> np.ndarray:
        calib = MondrianCalibration.from_scores(cal_scores, cal_y, np.arange(c))
        return multi_input_pvalues(calib, test_scores, aggregation="sum") > args.alpha

    def peer() -> np.ndarray:
        cc = ConformalClassifier().fit(cal_scores, bins=cal_y)
        flat = test_scores.reshape(b * m, c)
        # one column per call: crepes' WrapClassifier passes all C columns per class, 100x more work
        p = np.column_stack([cc.predict_p(flat[:, [k]], np.full(b * m, k), smoothing=False)[:, 0] for k in range(c)])
        counts = np.sort(np.rint(p * (n + 1) - 1).astype(np.int64).reshape(b, m, c), axis=1)
        null = SumStatistic().exact_null(NullLaw(n, m))
        return null.pvalue(counts.sum(axis=1).astype(np.float64)) > args.alpha

    # one warm-up run each, the timed runs, then one traced run for the peak memory
    ours_run = measure(ours, repeats=args.repeats, warmup=1, memory="tracemalloc")
    peer_run = measure(peer, repeats=args.repeats, warmup=1, memory="tracemalloc")
    t_ours, mem_ours, sets_ours = ours_run.seconds, ours_run.peak_mib, ours_run.result
    t_peer, mem_peer, sets_peer = peer_run.seconds, peer_run.peak_mib, peer_run.result
    assert np.array_equal(sets_ours, sets_peer), "ours and crepes+aggregation disagree"
    print(f"workload: {b} instances x {m} views x {c} classes, n_y={n}, median of {args.repeats} runs")
    print(f"ours   : {t_ours:8.3f} s  {b / t_ours:12.0f} instances/s  peak {mem_ours:8.1f} MiB")
    print(f"crepes : {t_peer:8.3f} s  {b / t_peer:12.0f} instances/s  peak {mem_peer:8.1f} MiB")
    print(f"ratio ours/crepes (time): {t_ours / t_peer:.4f}  (speed-up {t_peer / t_ours:.1f}x); identical sets: True")


if __name__ == "__main__":
    main()
