"""``nips25-conformal``: ``reproduce`` (the headline experiment) and ``demo`` (one dataset, one m, all methods)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from nips25_conformal.reproduce import EXACT, RULES, ExperimentConfig, reproduce, run_experiment
from nips25_shared import add_common_arguments, configure_logging, run_reproduce, seed_int

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    configure_logging(args.verbose - args.quiet)
    sizes = {"japanese_vowels": (10, 25), "digits": (30, 50)}[args.data]
    config = ExperimentConfig(
        args.data, n_train=sizes[0], n_cal=sizes[1], n_splits=args.splits, views=(args.m,), alpha=args.alpha
    )
    result = run_experiment(config, seed=args.seed)
    print(f"{args.data}, m={args.m}, alpha={args.alpha}, {args.splits} splits")
    print(f"{'method':<20}{'mean size':>10}  per-class coverage")
    for a in (*EXACT, *RULES):
        cov = result["coverage"][a][args.m].mean(axis=0)
        print(f"{a:<20}{result['size'][a][args.m].mean():>10.3f}  " + " ".join(f"{c:.3f}" for c in cov))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-conformal``."""
    parser = argparse.ArgumentParser(prog="nips25-conformal", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the headline experiment and write reports/conformal/")
    add_common_arguments(rep, slug="conformal")
    demo = sub.add_parser("demo", help="per-class coverage and set size of every aggregator on one dataset")
    demo.add_argument("--data", choices=("japanese-vowels", "digits"), default="japanese-vowels")
    demo.add_argument("--m", type=int, default=3, help="views per instance (default 3)")
    demo.add_argument("--alpha", type=float, default=0.1, help="miscoverage level (default 0.1)")
    demo.add_argument("--splits", type=int, default=20, help="random splits (default 20)")
    demo.add_argument("--seed", type=seed_int, default=0)
    demo.add_argument("-v", "--verbose", action="count", default=0)
    demo.add_argument("-q", "--quiet", action="count", default=0)
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        run_reproduce(reproduce, args)
        return 0
    args.data = args.data.replace("-", "_")
    return _demo(args)
