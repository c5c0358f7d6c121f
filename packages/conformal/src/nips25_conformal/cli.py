"""``nips25-conformal``: ``reproduce`` (the headline experiment), ``demo`` (one dataset, one m, all methods) and
``run`` (a user's own one-row-per-view CSV)."""

from __future__ import annotations

import argparse
import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

from nips25_conformal.classifier import AGGREGATIONS
from nips25_conformal.reproduce import EXACT, RULES, ExperimentConfig, reproduce, run_experiment
from nips25_shared import add_common_arguments, configure_logging, run_reproduce, seed_int
from nips25_shared.cache import atomic_write

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


ESTIMATORS = ("logistic", "gaussian-nb", "random-forest")


def _estimator(name: str, seed: int) -> object:
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if name == "gaussian-nb":
        return GaussianNB()
    if name == "random-forest":
        return RandomForestClassifier(n_estimators=200, random_state=seed)
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from nips25_conformal.user_data import read_views_csv, run_on_table

    configure_logging(args.verbose - args.quiet)
    features = [f.strip() for f in args.features.split(",")] if args.features else None
    try:
        table = read_views_csv(args.data, label=args.label, object_id=args.object, split=args.split, features=features)
        result = run_on_table(
            table,
            estimator=_estimator(args.estimator, args.seed),
            aggregation=args.aggregation,
            alpha=args.alpha,
            seed=args.seed,
        )
    except (ValueError, TypeError, OSError) as err:  # user errors: bad files, columns, values; exit status 2
        parser.error(f"run: {err}")
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        parser.error(f"--out: cannot create the folder {args.out} ({err.strerror or err})")
    buf = io.StringIO(newline="")
    out = csv.writer(buf)
    out.writerow(["object", "n_views", "label", "set", *(f"p_{c}" for c in result.classes)])
    for b, obj in enumerate(result.objects):
        chosen = " ".join(str(c) for c in result.classes[result.sets[b]])
        out.writerow([obj, result.n_views[b], result.labels[b], chosen, *(f"{p:.6g}" for p in result.p_values[b])])
    atomic_write(args.out / "sets.csv", buf.getvalue().encode())
    atomic_write(args.out / "summary.json", (json.dumps(result.summary, indent=2) + "\n").encode())
    print(json.dumps(result.summary))
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
    run = sub.add_parser(
        "run",
        help="prediction sets for a user's CSV (one row per view: label, object id, numeric features)",
        description="Fit on the training views, calibrate per class on the calibration views, and write one set "
        "per test object (its views aggregated, paper Sec. 3-4) to OUT/sets.csv and a summary to OUT/summary.json.",
    )
    run.add_argument("--data", type=Path, required=True, help="CSV file, header first, one row per view")
    run.add_argument("--label", required=True, help="label column (empty cell: an object to predict)")
    run.add_argument("--object", required=True, help="object-id column (the rows of one object are its views)")
    run.add_argument("--split", default=None, help="optional split column: train / calibration (cal) / test")
    run.add_argument("--features", default=None, help="comma-separated feature columns (default: all others)")
    run.add_argument("--aggregation", default="sum", choices=AGGREGATIONS, help="aggregation statistic (default sum)")
    run.add_argument("--alpha", type=float, default=0.1, help="miscoverage level in (0, 1) (default 0.1)")
    run.add_argument("--estimator", choices=ESTIMATORS, default="logistic", help="base classifier (default logistic)")
    run.add_argument("--seed", type=seed_int, default=0, help="seed of the split by object (when none is given)")
    run.add_argument("--out", type=Path, required=True, help="output folder for sets.csv and summary.json")
    run.add_argument("-v", "--verbose", action="count", default=0)
    run.add_argument("-q", "--quiet", action="count", default=0)
    args = parser.parse_args(argv)
    if args.command == "run":
        return _run(run, args)
    if args.command == "reproduce":
        run_reproduce(reproduce, args)
        return 0
    args.data = args.data.replace("-", "_")
    return _demo(args)
