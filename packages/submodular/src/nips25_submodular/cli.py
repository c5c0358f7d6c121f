"""``nips25-submodular``: ``reproduce`` the headline experiment, or ``run`` one max-cut noise experiment."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

import jax
import numpy as np

from nips25_shared import add_common_arguments, configure_logging, jax_key, run_reproduce, seed_int
from nips25_submodular.double_greedy import double_greedy
from nips25_submodular.instances import MAX_CUT_GRAPHS, max_cut_graph, read_edgelist
from nips25_submodular.matroids import Free
from nips25_submodular.meta import PRACTICAL, VOID_GUARANTEE, noisy_meta
from nips25_submodular.oracle import NOISE_FAMILIES, PersistentNoisyOracle
from nips25_submodular.reproduce import reproduce

__all__ = ["main"]


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    methods = [m.strip() for m in args.method.split(",") if m.strip()]
    bad = [m for m in methods if m not in ("naive", "meta", "noiseless")]
    if bad or not methods:  # usage errors exit with status 2 (argparse's convention) via parser.error
        parser.error(f"--method must list naive, meta and/or noiseless, got {args.method!r}")
    if args.sigma < 0 or not np.isfinite(args.sigma):
        parser.error(f"--sigma must be finite and >= 0, got {args.sigma}")
    if args.seeds < 1:
        parser.error(f"--seeds must be >= 1, got {args.seeds}")
    if args.time_limit <= 0 or not np.isfinite(args.time_limit):
        parser.error(f"--time-limit must be finite and > 0, got {args.time_limit}")
    configure_logging(args.verbose - args.quiet)
    if args.edgelist is not None:
        try:
            inst = read_edgelist(args.edgelist, exact_opt=args.exact_opt, time_limit=args.time_limit)
        except (OSError, ValueError) as err:
            parser.error(str(err))
        if "meta" in methods and inst.f.n <= PRACTICAL.h:
            parser.error(f"--method meta needs more than h={PRACTICAL.h} nodes, but {args.edgelist} has {inst.f.n}")
    else:
        inst = max_cut_graph(args.graph)
    values: dict[str, list[float]] = {m: [] for m in methods}
    queries: dict[str, int] = {}
    for rep in range(args.seeds):
        k_noise, k_alg = jax.random.split(jax.random.fold_in(jax_key(args.seed), rep))
        oracle = PersistentNoisyOracle(inst.f, sigma=args.sigma, noise=args.noise, mode=args.mode, key=k_noise)
        for m in methods:
            if m == "meta":
                sel = noisy_meta(oracle, Free(inst.f.n), "double_greedy", key=k_alg, monotone=False)
            else:
                sel = double_greedy(inst.f if m == "noiseless" else oracle, key=k_alg)
            values[m].append(float(inst.f(sel.mask)))
            queries[m] = sel.queries
    summary = {
        "graph": args.graph if args.edgelist is None else str(args.edgelist),
        "n": inst.f.n,
        "opt": inst.opt,
        "total_weight": inst.total_weight,
        "sigma": args.sigma,
        "seeds": args.seeds,
        "mean_cut": {m: float(np.mean(v)) for m, v in values.items()},
        "se_cut": {m: float(np.std(v, ddof=1) / np.sqrt(len(v))) if len(v) > 1 else 0.0 for m, v in values.items()},
        "queries": queries,
    }
    print(json.dumps(summary, indent=2))
    if "meta" in methods:
        print(f"note: meta uses the practical preset (h=8, t=3, m=56); guarantee: {VOID_GUARANTEE}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-submodular``; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="nips25-submodular",
        description="Submodular maximization under a persistent noisy oracle (Bhawalkar et al., NeurIPS 2025).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the headline experiment and write the report")
    add_common_arguments(rep, slug="submodular")
    run = sub.add_parser("run", help="max-cut under noise: naive vs meta double greedy on one graph")
    run.add_argument("--graph", choices=sorted(MAX_CUT_GRAPHS), default="davis", help="a bundled graph")
    run.add_argument(
        "--edgelist",
        metavar="PATH",
        default=None,
        help="your own graph instead of --graph: lines 'u v [weight]' (whitespace or commas; '#' comments)",
    )
    run.add_argument(
        "--exact-opt", action="store_true", help="with --edgelist: solve the max cut exactly (MILP) for 'opt'"
    )
    run.add_argument("--time-limit", type=float, default=60.0, help="seconds for --exact-opt (default 60)")
    run.add_argument("--sigma", type=float, default=0.2, help="noise standard deviation (default 0.2)")
    run.add_argument("--noise", choices=NOISE_FAMILIES, default="gaussian")
    run.add_argument("--mode", choices=("mult", "add"), default="mult")
    run.add_argument("--method", default="naive,meta", help="comma list of naive, meta, noiseless")
    run.add_argument("--seeds", type=int, default=20)
    run.add_argument("--seed", type=seed_int, default=0)
    run.add_argument("-v", "--verbose", action="count", default=0)
    run.add_argument("-q", "--quiet", action="count", default=0)
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        run_reproduce(reproduce, args)
        return 0
    return _run(args, run)


if __name__ == "__main__":
    raise SystemExit(main())
