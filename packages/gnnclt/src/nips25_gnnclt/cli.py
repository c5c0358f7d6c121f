"""``nips25-gnnclt``: ``reproduce`` (the headline experiment) and ``simulate`` (a custom CLT grid)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence

from nips25_gnnclt.experiment import GridConfig, clt_grid, default_model
from nips25_gnnclt.reproduce import reproduce
from nips25_shared import add_common_arguments, configure_logging, jax_key, run_reproduce, seed_int

__all__ = ["main"]


def _floats(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from exc
    if not all(math.isfinite(v) and v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected finite numbers > 0, got {text!r}")
    return values


def _ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from exc
    if min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected integers >= 1, got {text!r}")
    return values


def _int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type`` for an integer ``>= minimum`` (argparse reports a violation with exit status 2)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from exc
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nips25-gnnclt", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the headline experiment and write results.json/report.md")
    add_common_arguments(rep, slug="gnnclt")
    sim = sub.add_parser("simulate", help="CLT checks on the default CSBM for chosen n, nu and k")
    sim.add_argument("--n", type=_int_at_least(16), default=40_000, help="nodes (default 40000)")
    sim.add_argument("--nu", type=_floats, default=(25.0, 100.0, 400.0), help="comma-separated nu (25,100,400)")
    sim.add_argument("--k", type=_ints, default=(1, 2, 3), help="comma-separated depths (1,2,3)")
    sim.add_argument("--n-proj", type=_int_at_least(1), default=32, help="directions of the sliced W1 (32)")
    sim.add_argument("--head-per-class", type=_int_at_least(2), default=500, help="embeddings per class for CE (500)")
    sim.add_argument("--head-steps", type=_int_at_least(1), default=100, help="L-BFGS steps per head (100)")
    sim.add_argument("--seed", type=seed_int, default=0)
    sim.add_argument("-q", "--quiet", action="count", default=0)
    sim.add_argument("-v", "--verbose", action="count", default=0)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nips25-gnnclt`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        run_reproduce(reproduce, args)
        return 0
    model = default_model()
    for nu in args.nu:
        try:
            model.edge_probabilities(n=args.n, nu=nu)
        except ValueError as exc:
            parser.error(f"--nu {nu:g} with --n {args.n}: {exc}")
    configure_logging(args.verbose - args.quiet)
    cfg = GridConfig(
        n=args.n,
        nus=args.nu,
        ks=args.k,
        n_proj=args.n_proj,
        head_per_class=args.head_per_class,
        head_steps=args.head_steps,
    )
    rows = clt_grid(model, jax_key(args.seed), cfg)
    print(
        f"{'nu':>8} {'k':>3} {'W1 theory':>10} {'W1 naive':>10} {'cov err':>9} {'collapse':>9} "
        f"{'CE gap':>8} {'bound':>8}"
    )
    for r in rows:
        print(
            f"{r['nu']:8g} {r['k']:3d} {r['w1_sliced']:10.4f} {r['w1_sliced_naive']:10.4f} {r['cov_error']:9.4f} "
            f"{r['collapse_ratio']:9.4f} {r['min_objective_gap']:8.4f} {r['min_objective_bound']:8.4f}"
        )
    return 0
