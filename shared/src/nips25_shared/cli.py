"""Command-line pieces every package's ``nips25-<slug>`` command shares: common flags and the reproduce runner."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from nips25_shared.logs import configure_logging, get_logger, is_main_rank
from nips25_shared.reports import Report, write_report
from nips25_shared.seeds import seed_everything

__all__ = ["add_common_arguments", "positive_int", "run_reproduce", "seed_int"]

PROFILES = ("quick", "paper")
_MAX_SEED = 2**32 - 1


def seed_int(text: str) -> int:
    """argparse ``type`` for a seed: an integer in [0, 2**32 - 1] (what :func:`seed_everything` accepts).

    Raises:
        argparse.ArgumentTypeError: if ``text`` is not such an integer (argparse turns it into a one-line usage
            error with exit code 2).
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, 2**32 - 1], got {text!r}") from None
    if not 0 <= value <= _MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, 2**32 - 1], got {value}")
    return value


def positive_int(text: str) -> int:
    """argparse ``type`` for a count: an integer >= 1.

    Raises:
        argparse.ArgumentTypeError: if ``text`` is not an integer >= 1 (a one-line usage error, exit code 2).
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {value}")
    return value


def add_common_arguments(
    parser: argparse.ArgumentParser, *, slug: str, profiles: Sequence[str] = PROFILES
) -> argparse.ArgumentParser:
    """Add ``-v/--verbose``, ``-q/--quiet``, ``--seed``, ``--out`` and ``--profile`` to ``parser``.

    ``--out`` defaults to ``reports/<slug>`` under the current directory; ``--profile`` to the first of ``profiles``.
    ``--seed`` must be an integer in [0, 2**32 - 1] (what :func:`seed_everything` accepts); anything else is a
    one-line usage error with exit code 2, not a traceback.

    Args:
        parser: the (sub)parser to extend.
        slug: the package's slug, used for the default output directory.
        profiles: the profile names ``--profile`` accepts, default ``("quick", "paper")``; a package with more
            profiles (e.g. ``("quick", "full", "paper")``) passes its own. The first is the default.

    Raises:
        ValueError: if ``profiles`` is empty or has duplicates.
    """
    names = tuple(profiles)
    if not names or len(set(names)) != len(names) or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"profiles must be a non-empty sequence of distinct non-empty names, got {profiles!r}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (repeatable)")
    parser.add_argument("-q", "--quiet", action="count", default=0, help="less log output, no progress bars")
    parser.add_argument("--seed", type=seed_int, default=0, help="random seed in [0, 2**32 - 1] (default 0)")
    parser.add_argument("--out", type=Path, default=Path("reports") / slug, help=f"output dir (reports/{slug})")
    parser.add_argument(
        "--profile", choices=names, default=names[0], help=f"one of {', '.join(names)} (default {names[0]})"
    )
    return parser


def run_reproduce(reproduce: Callable[..., Report], args: argparse.Namespace) -> Report:
    """Configure logging and seeds from ``args``, run ``reproduce(profile=, seed=, out_dir=)``, write the report.

    The reproduce function saves its figures into ``out_dir`` and lists them in ``Report.figures``. In a
    distributed launch only the main rank (:func:`~nips25_shared.logs.is_main_rank`) writes the report; the other
    ranks return theirs without writing.
    """
    configure_logging(args.verbose - args.quiet)
    log = get_logger("nips25_shared.cli")
    seed_everything(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    report = reproduce(profile=args.profile, seed=args.seed, out_dir=out)
    log.info("reproduce finished in %.1f s", time.perf_counter() - start)
    if not is_main_rank():
        return report
    path = write_report(report, out)
    held = sum(c.holds for c in report.claims)
    print(f"{report.package}: {held}/{len(report.claims)} claims hold; wrote {path} and {out / 'report.md'}")
    return report
