"""Command line: ``nips25-market reproduce`` and ``nips25-market run --data polls2016``."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence

from nips25_shared import add_common_arguments, configure_logging, run_reproduce, seed_everything, seed_int

__all__ = ["main"]


def _log_score(value: float) -> str:
    """A log score for the table: 4 decimals, or ``-inf (a price of 0)`` where a winner was priced at exactly 0."""
    return f"{value:.4f}" if math.isfinite(value) else "-inf (a price of 0)"


def _run(args: argparse.Namespace) -> int:
    from nips25_market.polls import load_polls_2016, synthetic_polls
    from nips25_market.reproduce import _poll_experiment

    configure_logging(args.verbose - args.quiet)
    if args.b <= 0 or args.b != args.b or args.b == float("inf"):
        raise SystemExit(f"--b must be finite and > 0, got {args.b}")
    if args.data == "polls2016":
        try:
            polls = load_polls_2016()
        except ImportError as exc:  # the optional [polls] extra is missing: say so, without a traceback
            raise SystemExit(f"--data polls2016: {exc}") from None
    else:
        polls = synthetic_polls(seed_everything(args.seed))
    res = _poll_experiment(polls, args.b)
    print(f"{polls.source}: {len(polls.states)} markets, {polls.n_polls} poll traders, b = {args.b}")
    print("loss: negative = market-maker profit; log score, Brier and states called: final prices with own traders")
    header = ("mechanism", "loss (LMSR trades)", "loss (own traders)", "log score (own)", "Brier (own)", "called (own)")
    print(f"{header[0]:<14}{header[1]:>20}{header[2]:>20}{header[3]:>22}{header[4]:>13}{header[5]:>14}")
    for m, a in res["replayed"].items():  # per base: the DCFMM and its SQPM
        r = res["responsive"][m]
        called = f"{r['called']}/{len(polls.states)}"
        print(
            f"{m:<14}{a['loss']:>20.3f}{r['loss']:>20.3f}{_log_score(r['log_score']):>22}{r['brier']:>13.4f}"
            f"{called:>14}"
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-market``.

    Args:
        argv: arguments (``sys.argv[1:]`` when ``None``).

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(
        prog="nips25-market", description="Smooth Quadratic Prediction Markets (Nueve & Waggoner, NeurIPS 2025)."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the paper's headline claims and write reports/market/")
    add_common_arguments(rep, slug="market")
    rep.set_defaults(profile="quick")
    run = sub.add_parser("run", help="poll-driven markets: loss, log score and states called per mechanism")
    run.add_argument("--data", choices=["polls2016", "synthetic"], default="polls2016")
    run.add_argument("--b", type=float, default=100.0, help="liquidity b of every market (default 100)")
    run.add_argument("--seed", type=seed_int, default=0)
    run.add_argument("-v", "--verbose", action="count", default=0)
    run.add_argument("-q", "--quiet", action="count", default=0)
    args = parser.parse_args(argv)
    import jax  # an application entry point may set the process-wide flag a library must not (precision.py)

    jax.config.update("jax_enable_x64", True)
    if args.command == "reproduce":
        from nips25_market.reproduce import reproduce

        run_reproduce(reproduce, args)
        return 0
    return _run(args)
