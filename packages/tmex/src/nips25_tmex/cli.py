"""Command line: ``nips25-tmex reproduce | demo | score``."""

from __future__ import annotations

import argparse
import json
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from nips25_shared import add_common_arguments, configure_logging, run_reproduce, seed_everything, seed_int
from nips25_tmex.gcm import DegenerateResidualWarning
from nips25_tmex.measurement import tmex
from nips25_tmex.reproduce import ReproduceConfig, demonstration, reproduce

__all__ = ["main"]


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _load(path: Path, name: str) -> np.ndarray:
    """Read ``.npy`` or comma-separated ``.csv`` (an optional first row of column names, all non-numeric)."""
    if not path.is_file():
        raise ValueError(f"--{name}: no such file {path}")
    if path.suffix == ".npy":
        try:
            return np.load(path, allow_pickle=False)
        except (OSError, ValueError) as err:
            raise ValueError(f"--{name}: cannot read {path} as a numeric .npy array ({err})") from err
    try:
        lines = [line for line in path.read_text().splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"--{name}: cannot read {path} as a .csv text file ({err})") from err
    if not lines:
        raise ValueError(f"--{name}: {path} holds no data")
    skip = int(not any(_is_number(cell) for cell in lines[0].split(",")))  # a header row of names
    try:
        return np.loadtxt(lines[skip:], delimiter=",", ndmin=2)
    except ValueError as err:
        note = " (rows counted after the header)" if skip else ""
        raise ValueError(f"--{name}: cannot read {path} as a numeric .csv array ({err}){note}") from err


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nips25-tmex", description="T-MEX measurement-exclusivity score.")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the paper's headline experiments; write reports/tmex/")
    add_common_arguments(rep, slug="tmex")
    demo = sub.add_parser("demo", help="T-MEX, MCC and R² of the measurement kinds (paper's demonstration)")
    demo.add_argument("--k", type=int, nargs="+", default=[3, 20], help="numbers of latents (default 3 20)")
    demo.add_argument("--n", type=int, default=250, help="samples per SCM (default 250)")
    demo.add_argument("--reps", type=int, default=5, help="random SCMs per k (default 5)")
    demo.add_argument("--seed", type=seed_int, default=0)
    demo.add_argument("-q", "--quiet", action="count", default=0)
    score = sub.add_parser("score", help="T-MEX of a representation file against a latents file (.npy or .csv)")
    score.add_argument("--latents", type=Path, required=True, help="(n, k) latents")
    score.add_argument("--representation", type=Path, required=True, help="(n, m) representation, one column a block")
    score.add_argument("--alpha", type=float, default=0.05, help="level of each test, in (0, 1) (default 0.05)")
    score.add_argument("--test", choices=["gcm", "pcm", "kci"], default="gcm", help="CI test (default gcm)")
    score.add_argument("--regressor", choices=["lm", "krr", "rf"], default="lm", help="regression (default lm)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-tmex``; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        run_reproduce(reproduce, args)
        return 0
    if args.command == "demo":
        configure_logging(-args.quiet)
        config = ReproduceConfig(demo_ks=tuple(args.k), demo_n=args.n, demo_reps=args.reps)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateResidualWarning)
            table = demonstration(config, seed_everything(args.seed))
        print("| k | kind | mean T-MEX | mean MCC | mean R² |")
        print("|---|---|---|---|---|")
        for key, rows in table.items():
            for kind, v in rows.items():
                print(f"| {key[2:]} | {kind} | {v['tmex']:.2f} | {v['mcc']:.3f} | {v['r2']:.3f} |")
        return 0
    try:
        z = _load(args.latents, "latents")
        h = _load(args.representation, "representation")
        if h.shape[0] != z.shape[0]:
            raise ValueError(
                f"--representation {args.representation} has {h.shape[0]} rows but --latents {args.latents} has "
                f"{z.shape[0]}; expected one row per sample in both files"
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateResidualWarning)
            res = tmex(z, h if h.ndim == 2 else h[:, None], alpha=args.alpha, test=args.test, regressor=args.regressor)
    except (ValueError, TypeError, OSError) as err:  # user errors: bad files, shapes, values; exits with status 2
        parser.error(f"score: {err}")
    print(json.dumps({"score": res.score, "estimated_graph": res.estimated_graph.astype(int).tolist(),
                      "p_values": res.p_values.tolist()}))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
