"""Benchmark: iterations, f/g evaluations and wall time to a 1e-8 gap, ours vs SciPy BFGS vs optimistix BFGS.

Each (problem, method) runs in its own spawned process, so its peak resident memory is its own. Wall time is the
median of ``--repeats`` runs after one warm-up run; the warm-up minus the median is reported as compile time.

    python benchmarks/bench_bfgs.py [--repeats 5] [--gap 1e-8] [--problems breast_cancer,logsumexp,...]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from typing import Any

from nips25_shared.bench import measure, peak_rss_mib

METHODS = ("ours_identity", "ours_hessian", "scipy", "optimistix")


def _measure(problem: str, method: str, gap: float, repeats: int, queue: Any) -> None:
    import jax
    from nips25_bfgs import bfgs, load_problem, newton_solve
    from nips25_bfgs.baselines import has_optimistix, optimistix_bfgs, scipy_bfgs

    with jax.enable_x64(True):
        prob = load_problem(problem)
        f_star = float(newton_solve(prob.fun, prob.x0).f)
        if method.startswith("ours"):
            b0 = "hessian" if method == "ours_hessian" else "identity"

            def run() -> tuple[int | None, int, int]:
                res = bfgs(prob.fun, prob.x0, B0=b0, f_star=f_star, tol=gap, max_iter=5000)
                res.x.block_until_ready()
                return (int(res.n_iter) if int(res.status) == 0 else None), int(res.n_fev), int(res.n_gev)
        elif method == "scipy":

            def run() -> tuple[int | None, int, int]:
                r = scipy_bfgs(prob.fun, prob.x0, f_star=f_star, gap=gap, max_iter=5000)
                return r.iters_to_gap, r.n_fev, r.n_gev
        else:
            if not has_optimistix():
                queue.put({"problem": problem, "method": method, "skipped": "optimistix not installed"})
                return

            def run() -> tuple[int | None, int, int]:
                r = optimistix_bfgs(prob.fun, prob.x0, f_star=f_star, gap=gap, max_steps=20000)
                return r.iters_to_gap, r.n_fev, r.n_gev

        t = time.perf_counter()
        run()  # the warm-up run, timed apart: it carries the compile time
        first = time.perf_counter() - t
        timed = measure(run, repeats=repeats, memory="none")
    med, out = timed.seconds, timed.result
    queue.put({
        "problem": problem, "method": method, "iters": out[0], "fev": out[1], "gev": out[2], "time_s": med,
        "compile_s": max(first - med, 0.0), "peak_rss_mb": peak_rss_mib(),
    })  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--gap", type=float, default=1e-8)
    ap.add_argument("--problems", default="breast_cancer,logsumexp,hard_cubic,digits")
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    rows = []
    for problem in args.problems.split(","):
        for method in METHODS:
            queue = ctx.Queue()
            proc = ctx.Process(target=_measure, args=(problem, method, args.gap, args.repeats, queue))
            proc.start()
            try:
                row = queue.get(timeout=1800)
            except Exception:  # the child died (its traceback is on stderr)
                row = {"problem": problem, "method": method, "skipped": f"failed (exit code {proc.exitcode})"}
            proc.join()
            rows.append(row)
            print(f"  measured {problem} / {method}", flush=True)
    print(f"\nTo f - f* <= {args.gap:g}; time = median of {args.repeats} runs after a warm-up (compile excluded).")
    head = f"{'problem':<14}{'method':<15}{'iters':>7}{'f/g evals':>11}{'time ms':>10}{'compile s':>11}{'peak MB':>9}"
    print(head)
    print("-" * len(head))
    for r in rows:
        if "skipped" in r:
            print(f"{r['problem']:<14}{r['method']:<15} skipped: {r['skipped']}")
            continue
        iters = "n/r" if r["iters"] is None else str(r["iters"])
        print(
            f"{r['problem']:<14}{r['method']:<15}{iters:>7}{r['fev']:>6}/{r['gev']:<4}{1e3 * r['time_s']:>10.1f}"
            f"{r['compile_s']:>11.2f}{r['peak_rss_mb']:>9.0f}"
        )
    print("\nRatios ours_identity / peer (iterations, wall time):")
    for problem in args.problems.split(","):
        by = {r["method"]: r for r in rows if r["problem"] == problem and "skipped" not in r}
        ours = by.get("ours_identity")
        for peer in ("scipy", "optimistix"):
            p = by.get(peer)
            if ours and p and ours["iters"] and p["iters"]:
                print(
                    f"  {problem:<14} vs {peer:<11} iterations {ours['iters'] / p['iters']:.2f}  "
                    f"time {ours['time_s'] / p['time_s']:.2f}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
