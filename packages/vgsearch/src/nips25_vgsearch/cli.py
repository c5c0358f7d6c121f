"""``nips25-vgsearch``: reproduce the headline experiment, or sweep g and n on a task."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from nips25_shared import (
    add_common_arguments,
    configure_logging,
    positive_int,
    run_reproduce,
    seed_everything,
    seed_int,
)

__all__ = ["main"]


def _granularity(text: str) -> int | None:
    if text.lower() in ("inf", "full", "none"):
        return None
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"g must be an int >= 1 or 'inf', got {text!r}") from None


def _writable_dir(path: Path, flag: str, parser: argparse.ArgumentParser) -> None:
    """Create ``path`` as a directory, or exit 2 with one line naming ``flag``."""
    if path.exists() and not path.is_dir():
        parser.error(f"{flag}: {path} exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        parser.error(f"{flag}: cannot create directory {path} ({err.strerror or err})")


def _sweep(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nips25_vgsearch.flops import FlopsModel
    from nips25_vgsearch.sweep import pareto_front, run_sweep

    configure_logging(args.verbose - args.quiet)
    seed_everything(args.seed)
    bad = [n for n in args.n if n % args.beam_width]
    if bad:
        parser.error(f"--n: every n must be a multiple of --beam-width {args.beam_width}, got {bad}")
    if args.task == "arith" and args.max_steps is not None:
        parser.error("--max-steps applies to --task stepchain only (arith chains have a fixed depth of 6 steps)")
    if args.json is not None:  # checked before the sweep, not after it
        if args.json.is_dir():
            parser.error(f"--json: {args.json} is a directory; give a file name")
        _writable_dir(args.json.parent, "--json", parser)
    if args.task == "stepchain":
        from nips25_vgsearch.simulator import StepChainTask

        task = StepChainTask(n_problems=args.problems, seed=args.seed)
        gen, prm, check, flops = task.generator(), task.verifier(), task.is_correct, FlopsModel()
        problems, max_steps = task.problems, 12 if args.max_steps is None else args.max_steps
    else:
        from nips25_vgsearch.arith import ArithChainTask, load_or_train_pair

        arith = ArithChainTask(n_problems=args.problems, seed=args.seed + 7)
        gen, prm, _ = load_or_train_pair(seed=args.seed)  # type: ignore[assignment]
        check, flops = arith.is_correct, FlopsModel(p_gen=gen.n_params, p_ver=prm.n_params)
        problems, max_steps = arith.problems, arith.depth
    points, _ = run_sweep(problems, gen, prm, check, ns=args.n, gs=args.g, beam_width=args.beam_width,
                          max_steps=max_steps, seed=args.seed, flops_model=flops)  # fmt: skip
    front = {(p.method, p.n) for p in pareto_front(points)}
    rows = [{**vars(p), "pareto": (p.method, p.n) in front} for p in points]
    print("| method | n | accuracy | se | FLOPs/problem | verifier calls | Pareto |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['method']} | {r['n']} | {r['accuracy']:.3f} | {r['se']:.3f} | {r['flops']:.3e} | "
              f"{r['verifier_calls']:.1f} | {'*' if r['pareto'] else ''} |")  # fmt: skip
    if args.json is not None:
        try:
            args.json.write_text(json.dumps(rows, indent=2) + "\n")
        except OSError as err:
            parser.error(f"--json: cannot write {args.json} ({err.strerror or err})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-vgsearch``."""
    parser = argparse.ArgumentParser(
        prog="nips25-vgsearch", description="VG-Search (NeurIPS 2025): verifier-guided search with granularity g."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the headline experiment and write a report")
    add_common_arguments(rep, slug="vgsearch")
    swp = sub.add_parser("sweep", help="accuracy-FLOPs table over g and n, with its Pareto front")
    swp.add_argument("--task", choices=("stepchain", "arith"), default="stepchain")
    swp.add_argument("--n", type=positive_int, nargs="+", default=[4, 16, 64], help="candidates per round")
    swp.add_argument("--g", type=_granularity, nargs="+", default=[1, 2, 3, 4, None], help="granularities; 'inf'")
    swp.add_argument("--beam-width", type=positive_int, default=4, help="children per kept beam B2")
    swp.add_argument("--problems", type=positive_int, default=100, help="number of problems")
    swp.add_argument("--max-steps", type=positive_int, default=None,
                     help="depth reached before the last round (stepchain only; default 12)")  # fmt: skip
    swp.add_argument("--json", type=Path, default=None, help="also write the table as JSON here")
    swp.add_argument("--seed", type=seed_int, default=0)
    swp.add_argument("-v", "--verbose", action="count", default=0)
    swp.add_argument("-q", "--quiet", action="count", default=0)
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        from nips25_vgsearch.reproduce import PaperInputError, paper_settings, reproduce

        _writable_dir(args.out, "--out", parser)
        try:
            if args.profile == "paper":
                paper_settings()  # the user's paths, data and settings, checked before any model loads
            run_reproduce(reproduce, args)
        except (FileNotFoundError, PaperInputError) as err:  # missing or unusable local inputs of --profile paper
            parser.error(str(err))
        return 0
    return _sweep(args, parser)


if __name__ == "__main__":
    raise SystemExit(main())
