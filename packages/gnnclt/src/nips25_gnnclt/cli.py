"""``nips25-gnnclt``: ``reproduce`` (the headline experiment), ``simulate`` (a custom CLT grid) and ``run`` (the
real-graph check on your own labelled graph)."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nips25_gnnclt.connectome import class_mean_check
from nips25_gnnclt.experiment import GridConfig, clt_grid, default_model
from nips25_gnnclt.graph_files import read_labelled_graph
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


def _positive_float(text: str) -> float:
    """An argparse ``type`` for one finite number ``> 0``."""
    values = _floats(text)
    if len(values) != 1:
        raise argparse.ArgumentTypeError(f"expected one number, got {text!r}")
    return values[0]


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
    run = sub.add_parser(
        "run",
        help="real-graph check on your own graph: class means of A^k X against nu^k Q^k M of the fitted SBM",
        description="Read an edge list and a node-label table (the layout of the embedded Drosophila files: "
        "edges 'source,target[,weight]', labels 'node,cell_type'; .csv or .tsv), symmetrise and binarise the graph, "
        "fit a CSBM, attach features one-hot(class) + N(0, noise^2 I) and compare the class means of A^k X with "
        "nu_hat^k Q_hat^k M_hat.",
    )
    run.add_argument("--edges", type=Path, required=True, help="edges file: one edge per row")
    run.add_argument("--labels", type=Path, required=True, help="labels file: one node per row (fixes the order)")
    run.add_argument("--source-column", default="source", help="edges: source node column (source)")
    run.add_argument("--target-column", default="target", help="edges: target node column (target)")
    run.add_argument("--weight-column", default=None, help="edges: weight column, >= 0; 0 = no edge (none: all 1)")
    run.add_argument("--node-column", default="node", help="labels: node id column (node)")
    run.add_argument("--label-column", default="cell_type", help="labels: class column (cell_type)")
    run.add_argument("--k", type=_ints, default=(1, 2, 3), help="comma-separated depths (1,2,3)")
    run.add_argument("--noise", type=_positive_float, default=0.5, help="feature-noise standard deviation > 0 (0.5)")
    run.add_argument("--seed", type=seed_int, default=0)
    run.add_argument("--out", type=Path, default=None, help="also write the numbers to this JSON file")
    run.add_argument("-q", "--quiet", action="count", default=0)
    run.add_argument("-v", "--verbose", action="count", default=0)
    run.set_defaults(subparser=run)  # so that a bad file is reported as a usage error of ``run``
    return parser


def _run(args: argparse.Namespace) -> int:
    """``nips25-gnnclt run``: every input problem ends in argparse's usage error (exit status 2), not a traceback."""
    parser: argparse.ArgumentParser = args.subparser
    try:
        A, y, classes = read_labelled_graph(
            args.edges,
            args.labels,
            source=args.source_column,
            target=args.target_column,
            weight=args.weight_column,
            node=args.node_column,
            label=args.label_column,
        )
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    counts = np.bincount(y, minlength=classes.size)
    small = [f"{c!r} ({m})" for c, m in zip(classes.tolist(), counts.tolist(), strict=True) if m < 2]
    if small:
        parser.error(
            f"labels file {args.labels}, column {args.label_column!r}: every class needs >= 2 nodes (a class "
            f"covariance is fitted); got {', '.join(small)}"
        )
    try:
        res = class_mean_check(A, y, jax_key(args.seed), ks=args.k, noise=args.noise)
    except ValueError as exc:
        parser.error(f"the graph of {args.edges} with the labels of {args.labels}: {exc}")
    print(f"n = {res['n']}, K = {res['K']}, nu_hat (average degree) = {res['nu_hat']:.4g}")
    print("classes: " + ", ".join(f"{c} ({m})" for c, m in zip(classes.tolist(), counts.tolist(), strict=True)))
    print(f"{'k':>3} {'rel error':>10} {'cosine':>8}")
    for k, row in res["per_k"].items():
        print(f"{k:3d} {row['rel_error']:10.4f} {row['cosine']:8.4f}")
    if args.out is not None:
        summary: dict[str, Any] = {
            "edges": str(args.edges),
            "labels": str(args.labels),
            "seed": args.seed,
            "noise": args.noise,
            "n": res["n"],
            "K": res["K"],
            "classes": classes.tolist(),
            "class_counts": counts.tolist(),
            "nu_hat": res["nu_hat"],
            "per_k": {
                str(k): {name: np.asarray(v).tolist() for name, v in row.items()} for k, row in res["per_k"].items()
            },
        }
        try:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(summary, indent=2) + "\n")
        except OSError as exc:
            parser.error(f"--out {args.out}: {exc}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nips25-gnnclt`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        run_reproduce(reproduce, args)
        return 0
    configure_logging(args.verbose - args.quiet)
    if args.command == "run":
        return _run(args)
    model = default_model()
    for nu in args.nu:
        try:
            model.edge_probabilities(n=args.n, nu=nu)
        except ValueError as exc:
            parser.error(f"--nu {nu:g} with --n {args.n}: {exc}")
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
