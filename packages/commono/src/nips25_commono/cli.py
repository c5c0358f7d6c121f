"""Command line: ``nips25-commono reproduce | demo | generate | score``."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nips25_commono.dataset import load_common_o, load_predictions, write_common_o
from nips25_commono.detection import TemplateMatcher
from nips25_commono.library import EmojiLibrary, ObjectLibrary, ProceduralLibrary
from nips25_commono.models import AllOptions, NoisyOracle, NoneOption, RandomGuess
from nips25_commono.reproduce import reproduce
from nips25_commono.scene import SUBSET_OBJECTS, SceneGenerator, control_example
from nips25_commono.scoring import ScoreReport, evaluate, score
from nips25_shared import add_common_arguments, configure_logging, positive_int, run_reproduce, seed_int

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nips25-commono", description="Common-O Bench tooling.")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="the paper's analyses on generated scenes; writes reports/commono/")
    add_common_arguments(rep, slug="commono")
    demo = sub.add_parser("demo", help="generated questions, every weight-free baseline, a printed table")
    demo.add_argument("--n", type=positive_int, default=500, help="questions per subset (default 500)")
    demo.add_argument("--library", choices=["emoji", "procedural"], default="emoji")
    demo.add_argument("--seed", type=seed_int, default=0)
    demo.add_argument("-q", "--quiet", action="count", default=0)
    gen = sub.add_parser("generate", help="write generated questions as Common-O-layout parquet")
    gen.add_argument("--n", type=positive_int, default=100, help="number of questions (default 100)")
    gen.add_argument("--subset", choices=sorted(SUBSET_OBJECTS), default="main")
    gen.add_argument("--library", choices=["emoji", "procedural"], default="emoji")
    gen.add_argument("--seed", type=seed_int, default=0)
    gen.add_argument("--out", type=Path, required=True, help="output .parquet file")
    sc = sub.add_parser("score", help="score a model's replies (JSONL with id and response) on local Common-O files")
    sc.add_argument("--pred", type=Path, required=True, help="JSONL, one {'id': ..., 'response': ...} per line")
    sc.add_argument("--data", type=Path, required=True, help="a Common-O parquet file or directory")
    sc.add_argument("--subset", choices=["main", "complex"], default="main")
    sc.add_argument("--none-is-hallucination", action="store_true", help="count a wrong 'None' as hallucination")
    return parser


def _library(name: str) -> ObjectLibrary:
    return EmojiLibrary() if name == "emoji" else ProceduralLibrary()


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


def _demo(args: argparse.Namespace) -> None:
    configure_logging(-args.quiet)
    library = _library(args.library)
    rows: list[tuple[str, ScoreReport, ScoreReport]] = []
    calib = SceneGenerator(library, n_objects=(3, 16), seed=10_000 + args.seed).examples(max(10, args.n // 5))
    matcher = TemplateMatcher(library, sizes=SceneGenerator(library).config.size_range_px)
    matcher.calibrate([control_example(ex, which=w) for ex in calib for w in (0, 1)])
    models = {
        "TemplateMatcher": matcher,
        "NoisyOracle(0.1, 0.05)": NoisyOracle(seed=args.seed),
        "RandomGuess(0.5)": RandomGuess(seed=args.seed),
        "AllOptions": AllOptions(),
        "NoneOption": NoneOption(),
    }
    data = {
        s: SceneGenerator(library, n_objects=r, seed=args.seed * 10 + i).examples(args.n, subset=s)
        for i, (s, r) in enumerate(SUBSET_OBJECTS.items())
    }
    for name, model in models.items():
        main_report = evaluate(model, data["main"], desc=f"{name} main")
        rows.append((name, main_report, evaluate(model, data["complex"], desc=f"{name} complex")))
    print("| model | acc 3-8 | halluc 3-8 | acc 8-16 | halluc 8-16 |")
    print("|---|---|---|---|---|")
    for name, main, cx in rows:
        print(
            f"| {name} | {main.accuracy:.3f} | {main.hallucination_rate:.3f} | {cx.accuracy:.3f} | "
            f"{cx.hallucination_rate:.3f} |"
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-commono``; returns the exit status (2 on a user error)."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "reproduce":
            run_reproduce(reproduce, args)
        elif args.command == "demo":
            _demo(args)
        elif args.command == "generate":
            if args.out.suffix != ".parquet":
                raise ValueError(f"--out must name a .parquet file, got {args.out}")
            gen = SceneGenerator(_library(args.library), n_objects=SUBSET_OBJECTS[args.subset], seed=args.seed)
            print(write_common_o(gen.examples(args.n, subset=args.subset), args.out))
        else:
            examples = load_common_o(args.data, subset=args.subset)
            replies = load_predictions(args.pred)
            known = {ex.uid for ex in examples}
            unknown = sorted(set(replies) - known)
            if unknown:
                raise ValueError(f"--pred holds {len(unknown)} ids not in --data (first: {unknown[0]!r})")
            report = score(
                [replies.get(ex.uid, "") for ex in examples], examples, none_is_hallucination=args.none_is_hallucination
            )
            summary = report.summary()
            summary["missing_predictions"] = sum(ex.uid not in replies for ex in examples)
            print(json.dumps(_finite(summary), indent=2))
    except (ValueError, TypeError, FileNotFoundError, KeyError) as err:
        parser.error(f"{args.command}: {err}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
