"""Benchmark: time per iteration and iterations to a 1e-8 gap, ours vs SciPy BFGS vs optimistix BFGS.

Each (problem, method) runs in its own spawned process, so its peak resident memory is its own. Wall time is the
median of ``--repeats`` runs after one warm-up run; the warm-up minus the median is reported as compile time
(excluded for every method). Time per iteration is that median divided by the run's own BFGS iterations, counted
the same way for every method: accepted steps (an iterate update with its Hessian update). optimistix's ``step``
calls also count rejected trial points, so its iterations are ``state.num_accepted_steps``, and its evaluations the
``step`` calls. Time per function evaluation (value and gradient) is shown beside it: our weak-Wolfe search
evaluates the gradient at every trial point, optimistix's Armijo backtracking only at accepted ones, SciPy's strong
Wolfe search sometimes a value alone (its ``nfev`` and ``njev`` differ then).

* ours_identity / ours_hessian: ``bfgs(fun, x0, B0=..., f_star=f*, tol=gap)`` (history off, the default).
* ours_optimistix: our :class:`nips25_bfgs.BFGS` through ``optimistix.minimise``, B0 = I, run for as many steps as
  ours_identity needed (``rtol = atol = 0``, ``max_steps`` fixed).
* optimistix: ``optimistix.minimise(fn, optimistix.BFGS(rtol=0, atol=0), x0, max_steps=k)`` with ``k`` its steps to
  the gap (counted first by stepping it).
* scipy: ``scipy.optimize.minimize(method="BFGS", jac=True)`` on the jitted value-and-gradient, gtol 1e-12.

    python benchmarks/bench_bfgs.py [--repeats 5] [--gap 1e-8] [--problems breast_cancer,logsumexp,...]
        [--methods ours_identity,optimistix,...]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time
from typing import Any

from nips25_shared.bench import measure, peak_rss_mib

METHODS = ("ours_identity", "ours_hessian", "ours_optimistix", "scipy", "optimistix")


def _runner(problem: str, method: str, gap: float) -> Any:
    """Return ``run() -> (iterations to the gap or None, f evals, g evals, BFGS iterations the time is divided by)``."""
    import jax
    import jax.numpy as jnp
    from nips25_bfgs import BFGS, bfgs, load_problem, newton_solve
    from nips25_bfgs.baselines import optimistix_bfgs, scipy_bfgs

    prob = load_problem(problem)
    f_star = float(newton_solve(prob.fun, prob.x0).f)
    if method in ("ours_identity", "ours_hessian"):
        b0 = "hessian" if method == "ours_hessian" else "identity"

        def run() -> tuple[int | None, int, int, int]:
            res = bfgs(prob.fun, prob.x0, B0=b0, f_star=f_star, tol=gap, max_iter=5000)
            res.x.block_until_ready()
            n = int(res.n_iter)
            return (n if int(res.status) == 0 else None), int(res.n_fev), int(res.n_gev), n

        return run
    if method == "scipy":

        def run() -> tuple[int | None, int, int, int]:
            r = scipy_bfgs(prob.fun, prob.x0, f_star=f_star, gap=gap, max_iter=5000)
            return r.iters_to_gap, r.n_fev, r.n_gev, r.n_iter

        return run
    import optimistix as optx

    fn = jax.tree_util.Partial(_fn, prob.fun)
    if method == "ours_optimistix":
        steps = int(bfgs(prob.fun, prob.x0, f_star=f_star, tol=gap, max_iter=5000).n_iter)
        solver: Any = BFGS(rtol=0.0, atol=0.0)
    else:
        steps = optimistix_bfgs(prob.fun, prob.x0, f_star=f_star, gap=gap, max_steps=20000).iters_to_gap or 20000
        solver = optx.BFGS(rtol=0.0, atol=0.0)

    def run() -> tuple[int | None, int, int, int]:
        sol = optx.minimise(fn, solver, prob.x0, max_steps=steps, throw=False)
        jnp.asarray(sol.value).block_until_ready()
        n = int(sol.stats["num_steps"])
        gap_hit = float(prob.fun(sol.value)) - f_star <= gap
        fev = int(sol.stats["n_fev"]) if "n_fev" in sol.stats else n  # optimistix: one trial point per step
        accepted = int(sol.stats["n_iter"]) if "n_iter" in sol.stats else int(sol.state.num_accepted_steps)
        return (n if gap_hit else None), fev, fev, accepted

    return run


def _fn(fun: Any, y: Any, args: Any) -> Any:
    return fun(y)


def _measure(problem: str, method: str, gap: float, repeats: int, queue: Any) -> None:
    import jax
    from nips25_bfgs.baselines import has_optimistix

    if "optimistix" in method and not has_optimistix():
        queue.put({"problem": problem, "method": method, "skipped": "optimistix not installed"})
        return
    with jax.enable_x64(True):
        run = _runner(problem, method, gap)
        t = time.perf_counter()
        run()  # the warm-up run, timed apart: it carries the compile time
        first = time.perf_counter() - t
        timed = measure(run, repeats=repeats, memory="none")
    med, out = timed.seconds, timed.result
    queue.put({
        "problem": problem, "method": method, "iters": out[0], "fev": out[1], "gev": out[2], "time_s": med,
        "per_iter_s": med / max(out[3], 1), "n_timed": out[3], "per_fev_s": med / max(out[1], 1),
        "compile_s": max(first - med, 0.0),
        "peak_rss_mb": peak_rss_mib(),
    })  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--gap", type=float, default=1e-8)
    ap.add_argument("--problems", default="breast_cancer,logsumexp,hard_cubic,digits")
    ap.add_argument("--methods", default=",".join(METHODS), help=f"a subset of {','.join(METHODS)}")
    args = ap.parse_args()
    methods = args.methods.split(",")
    if unknown := set(methods) - set(METHODS):
        ap.error(f"unknown --methods {sorted(unknown)}; choose from {METHODS}")
    ctx = mp.get_context("spawn")
    rows = []
    for problem in args.problems.split(","):
        for method in methods:
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
    print(f"\nTo f - f* <= {args.gap:g}; time = median of {args.repeats} runs after a warm-up (compile excluded);")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs.")
    print("iters: steps to the gap; BFGS its: accepted steps the time is divided by; evals/it: f/g evals per BFGS it.")
    head = (
        f"{'problem':<14}{'method':<17}{'iters':>7}{'BFGS its':>9}{'f/g evals':>11}{'evals/it':>9}{'time ms':>10}"
        f"{'us/iter':>9}{'us/eval':>9}{'compile s':>11}{'peak MB':>9}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        if "skipped" in r:
            print(f"{r['problem']:<14}{r['method']:<17} skipped: {r['skipped']}")
            continue
        iters = "n/r" if r["iters"] is None else str(r["iters"])
        print(
            f"{r['problem']:<14}{r['method']:<17}{iters:>7}{r['n_timed']:>9}{r['fev']:>6}/{r['gev']:<4}"
            f"{r['fev'] / max(r['n_timed'], 1):>9.2f}{1e3 * r['time_s']:>10.1f}{1e6 * r['per_iter_s']:>9.1f}"
            f"{1e6 * r['per_fev_s']:>9.1f}{r['compile_s']:>11.2f}{r['peak_rss_mb']:>9.0f}"
        )
    print("\nRatios ours / peer: time per iteration (target <= 1.0), time per evaluation, iterations to the gap:")
    for problem in args.problems.split(","):
        by = {r["method"]: r for r in rows if r["problem"] == problem and "skipped" not in r}
        for ours in ("ours_identity", "ours_optimistix"):
            for peer in ("scipy", "optimistix"):
                a, p = by.get(ours), by.get(peer)
                if not (a and p):
                    continue
                iters = f"{a['iters'] / p['iters']:.2f}" if a["iters"] and p["iters"] else "n/a"
                print(
                    f"  {problem:<14} {ours:<16} vs {peer:<11} time/iter {a['per_iter_s'] / p['per_iter_s']:.2f}  "
                    f"time/eval {a['per_fev_s'] / p['per_fev_s']:.2f}  iterations {iters}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
