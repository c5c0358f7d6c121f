"""``nips25-fedrw``: reproduce the headline experiment, or run PPMPR with one process per client."""

from __future__ import annotations

import argparse
import functools
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


def _simulate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import numpy as np

    from nips25_fedrw.corpus import load_corpus, overlapping_clients
    from nips25_fedrw.count_encoding import MAX_COUNT_CAP
    from nips25_fedrw.ppmpr import plaintext_frequencies, ppmpr_in_process
    from nips25_fedrw.samples import Client
    from nips25_fedrw.simulate import simulate

    configure_logging(args.verbose - args.quiet)
    if not 0 < args.timeout < float("inf"):
        parser.error(f"--timeout must be a finite number of seconds > 0, got {args.timeout}")
    if args.count_cap is not None and args.count_cap > MAX_COUNT_CAP:
        parser.error(f"--count-cap must be <= {MAX_COUNT_CAP}, got {args.count_cap}")
    if args.seed < 0:
        parser.error(f"--seed must be >= 0, got {args.seed}")
    if args.data:
        clients = []
        for k, path in enumerate(args.data):
            if not path.is_file():
                parser.error(f"--data: {path} is not a file")
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                parser.error(f"--data: cannot read {path} as UTF-8 text ({type(exc).__name__})")
            lines = [ln for ln in text.splitlines() if ln.strip()]
            if not lines:
                parser.error(f"--data: {path} holds no non-empty line")
            clients.append(Client(k, tuple(lines)))
        if len(clients) < 2:
            parser.error("--data needs at least 2 files (one per client)")
    else:
        if args.clients < 2:
            parser.error(f"--clients must be >= 2, got {args.clients}")
        if args.items < 1:
            parser.error(f"--items must be >= 1, got {args.items}")
        if not 0.0 <= args.dup_rate <= 10.0:
            parser.error(f"--dup-rate must be in [0, 10], got {args.dup_rate}")
        pool = list(dict.fromkeys(load_corpus(args.corpus)))
        if args.items > len(pool):
            parser.error(f"--items must be <= {len(pool)} for corpus {args.corpus}, got {args.items}")
        clients = overlapping_clients(pool, args.clients, args.items, np.random.default_rng(args.seed),
                                      dup_rate=args.dup_rate)  # fmt: skip
    try:
        result = simulate(clients, seed=args.seed, timeout=args.timeout, count_cap=args.count_cap)
    except RuntimeError as exc:  # a client process failed or ran past --timeout: one line, exit 2
        parser.error(f"simulate: {str(exc).splitlines()[0]} (raise --timeout if the run is just slow)")
    expected = plaintext_frequencies(clients, count_cap=args.count_cap)
    exact = all(np.array_equal(result.freq[c.id], expected[c.id]) for c in clients)
    summary = {
        "clients": len(clients),
        "count_cap": args.count_cap,
        "samples": [len(c.samples) for c in clients],
        "wall_seconds": round(result.wall_seconds, 3),
        "phase_seconds": result.phase_seconds,
        "frequencies_equal_plaintext_counts": exact,
        "in_process_agrees": all(
            np.array_equal(result.freq[i], f)
            for i, f in ppmpr_in_process(clients, seed=args.seed, count_cap=args.count_cap).freq.items()
        ),
        "max_frequency": int(max(int(f.max()) for f in result.freq.values())),
    }
    print(json.dumps(summary, indent=2))
    return 0 if exact else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-fedrw``."""
    parser = argparse.ArgumentParser(prog="nips25-fedrw", description="FedRW (NeurIPS 2025): soft deduplication "
                                     "by reweighting in federated LM training.")  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the headline experiment and write a report")
    add_common_arguments(rep, slug="fedrw", profiles=("quick", "paper", "tiny"))
    rep.add_argument("--gpt2", type=Path, metavar="DIR",
                     help="local GPT-2 directory for --profile paper (default $NIPS25_FEDRW_GPT2)")  # fmt: skip
    rep.add_argument("--workers", type=positive_int, default=None, metavar="N",
                     help="processes for the perplexity runs (default: the profile's, quick 2, capped at the "
                     "CPUs; results do not depend on it)")  # fmt: skip
    sim = sub.add_parser("simulate", help="run PPMPR with one process per client over loopback")
    sim.add_argument("--data", type=Path, nargs="+", help="one text file per client, one sample per line")
    sim.add_argument("--corpus", choices=("sonnets", "jokes"), default="sonnets", help="built-in corpus")
    sim.add_argument("--clients", type=int, default=4, help="clients when no --data (default 4)")
    sim.add_argument("--items", type=int, default=128, help="distinct samples per client when no --data")
    sim.add_argument("--dup-rate", type=float, default=0.3, help="planted local duplicates (default 0.3)")
    sim.add_argument("--count-cap", type=positive_int, default=None, metavar="T",
                     help="count-encoded PSI with cap T instead of the secure sum (default: exact sum)")  # fmt: skip
    sim.add_argument("--timeout", type=float, default=300.0, help="seconds before the processes are killed")
    sim.add_argument("--seed", type=seed_int, default=0)
    sim.add_argument("-v", "--verbose", action="count", default=0)
    sim.add_argument("-q", "--quiet", action="count", default=0)
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        import os

        from nips25_fedrw.gpt2 import GPT2_ENV, gpt2_path
        from nips25_fedrw.reproduce import PROFILES, reproduce

        if args.gpt2 is not None and PROFILES[args.profile].model != "gpt2":
            rep.error(
                f"--gpt2: local GPT-2 is used by --profile paper only; --profile {args.profile} trains the tiny model"
            )
        if PROFILES[args.profile].model == "gpt2":
            try:
                os.environ[GPT2_ENV] = str(gpt2_path(args.gpt2))
            except FileNotFoundError as exc:
                rep.error(f"--profile {args.profile}: {exc}")
        from accelerate import PartialState

        state = PartialState()  # under `accelerate launch`, every process trains its share; only the main one writes
        run = functools.partial(reproduce, workers=args.workers)
        if state.is_main_process:
            run_reproduce(run, args)
        else:
            configure_logging(args.verbose - args.quiet - 1)
            seed_everything(args.seed)
            run(profile=args.profile, seed=args.seed, out_dir=args.out)
        state.wait_for_everyone()
        return 0
    return _simulate(args, sim)


if __name__ == "__main__":
    raise SystemExit(main())
