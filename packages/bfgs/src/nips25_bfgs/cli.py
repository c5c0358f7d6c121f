"""``nips25-bfgs``: ``reproduce`` (the paper's claims) and ``run`` (one problem, several B0, a JSON summary)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from nips25_shared import add_common_arguments, configure_logging, run_reproduce, seed_int
from nips25_shared.logs import is_main_rank

__all__ = ["main"]


def _parse_b0(text: str) -> list[str | float]:
    out: list[str | float] = []
    for item in text.split(","):
        item = item.strip()
        if item in ("identity", "hessian"):
            out.append(item)
            continue
        try:
            out.append(float(item))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--B0 items must be identity, hessian or a positive number, got {item!r}"
            ) from None
    return out


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be finite and > 0, got {text!r}")
    return value


def _run(args: argparse.Namespace) -> int:
    import jax

    from nips25_bfgs.newton import newton_solve
    from nips25_bfgs.problems import load_problem
    from nips25_bfgs.reproduce import phase_summary
    from nips25_bfgs.solver import STATUS_MESSAGES, bfgs

    configure_logging(args.verbose - args.quiet)
    rows = {}
    with jax.enable_x64(True):
        prob = load_problem(args.problem, seed=args.seed)
        f_star = float(newton_solve(prob.fun, prob.x0).f)
        for b0 in args.B0:
            res = bfgs(prob.fun, prob.x0, B0=b0, f_star=f_star, tol=args.gap, max_iter=args.max_iter, history=True)
            row = phase_summary(res)
            row.update(n_fev=int(res.n_fev), status=STATUS_MESSAGES[int(res.status)])
            rows[str(b0)] = row
            print(
                f"{args.problem} B0={b0}: {row['n_iter']} iterations, {row['n_fev']} f/g evaluations, "
                f"t0={row['t0']}, final gap {row['final_gap']:.3g}, last ratios "
                + ", ".join(f"{r:.3g}" for r in row["last_ratios"])
            )
    if args.out is not None and is_main_rank():
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"problem": args.problem, "f_star": f_star, "runs": rows}, indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-bfgs``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="nips25-bfgs", description="BFGS under self-concordance (NeurIPS 2025).")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the paper's claims and write reports/bfgs/")
    add_common_arguments(rep, slug="bfgs")
    run = sub.add_parser("run", help="solve one problem from several B0 and print the phases")
    run.add_argument("--problem", choices=("breast_cancer", "digits", "hard_cubic", "logsumexp"), required=True)
    run.add_argument("--B0", type=_parse_b0, default=["identity", "hessian"], help="e.g. identity,hessian,1e-3")
    run.add_argument("--gap", type=_positive_float, default=1e-10, help="stop at f - f* <= gap (default 1e-10)")
    run.add_argument("--max-iter", type=int, default=3000)
    run.add_argument("--seed", type=seed_int, default=0)
    run.add_argument("--out", type=Path, default=None, help="write a JSON summary here (main rank only)")
    run.add_argument("-v", "--verbose", action="count", default=0)
    run.add_argument("-q", "--quiet", action="count", default=0)
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        from nips25_bfgs.reproduce import reproduce

        run_reproduce(reproduce, args)
        return 0
    try:
        return _run(args)
    except ValueError as exc:
        print(f"nips25-bfgs run: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
