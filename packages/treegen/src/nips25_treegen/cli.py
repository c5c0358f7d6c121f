"""Command line: ``nips25-treegen reproduce | capacity | simulate | cluster | bench``."""

from __future__ import annotations

import argparse
import functools
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from nips25_shared import (
    add_common_arguments,
    configure_logging,
    run_reproduce,
    seed_everything,
    seed_int,
    write_report,
)
from nips25_shared.logs import is_main_rank
from nips25_treegen.reproduce import reproduce

__all__ = ["main"]


def _leaf_range(text: str) -> tuple[int, int]:
    try:
        lo, _, hi = text.partition("..")
        pair = (int(lo), int(hi or lo))
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected N or LO..HI, got {text!r}") from err
    if not 1 <= pair[0] <= pair[1]:
        raise argparse.ArgumentTypeError(f"expected 1 <= LO <= HI, got {text!r}")
    return pair


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nips25-treegen", description="TreeGen: generative models of hierarchies.")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="train TreeGen on Ginkgo jets and check the paper's claims")
    add_common_arguments(rep, slug="treegen")
    rep.add_argument(
        "--decoder",
        choices=["auto", "valid", "merge", "exact", "assignment", "independent"],
        default=None,
        help="TreeGen's decoder of the sampled (A, B) rows (default: the profile's, 'auto')",
    )
    cap = sub.add_parser("capacity", help="network-size sweep of issue 40.5 (quick profile's data, 3 sizes x 2 seeds)")
    cap.add_argument("--out", type=Path, default=Path("reports/treegen-capacity"), help="folder of capacity.json")
    sim = sub.add_parser("simulate", help="simulate Ginkgo jets into an .npz (leaves, parents, t, log_lik)")
    sim.add_argument("--n-jets", type=int, default=100, help="number of jets (default 100)")
    sim.add_argument("--leaves", type=_leaf_range, default=(5, 9), help="leaf count N or LO..HI (default 5..9)")
    sim.add_argument("--jet-type", choices=["QCD", "W"], default="QCD")
    sim.add_argument("--seed", type=seed_int, default=0)
    sim.add_argument("--out", type=Path, required=True, help="output .npz")
    clu = sub.add_parser("cluster", help="exact trellis log Z, MAP and baselines for one jet of an .npz")
    clu.add_argument("jets", type=Path, help=".npz written by `simulate`")
    clu.add_argument("--index", type=int, default=0, help="jet index (default 0)")
    ben = sub.add_parser("bench", help="trellis vs brute-force enumeration time per N")
    ben.add_argument("--N", dest="n_range", type=_leaf_range, default=(4, 7), help="N or LO..HI (default 4..7)")
    return parser


def _simulate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nips25_treegen.ginkgo import simulate

    if args.n_jets < 1:
        parser.error(f"--n-jets must be >= 1, got {args.n_jets}")
    if args.out.suffix != ".npz":
        parser.error(f"--out must end in .npz, got {args.out}")
    if not args.out.parent.is_dir():
        parser.error(f"--out: directory {args.out.parent} does not exist")
    try:
        jets = simulate(args.n_jets, jet_type=args.jet_type, n_leaves=args.leaves, seed=args.seed)
    except (ValueError, RuntimeError) as err:
        parser.error(f"simulate: {err}")
    payload = {f"jet{i}_{key}": getattr(j, key) for i, j in enumerate(jets) for key in ("leaves", "parents", "t")}
    payload["log_lik"] = np.array([j.log_lik for j in jets])
    from accelerate import PartialState

    state = PartialState()
    if state.is_main_process:  # the same seeded jets on every process: one writes them
        np.savez(args.out, **payload)
        print(f"wrote {len(jets)} jets to {args.out}")
    state.wait_for_everyone()
    return 0


def _cluster(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nips25_treegen.baselines import beam, greedy, kt_cluster
    from nips25_treegen.ginkgo import tree_log_lik
    from nips25_treegen.trellis import Trellis

    if not args.jets.is_file():
        parser.error(f"jets: no such file {args.jets}")
    try:
        with np.load(args.jets, allow_pickle=False) as data:
            leaves = data[f"jet{args.index}_leaves"]
    except KeyError:
        parser.error(f"--index {args.index}: no such jet in {args.jets}")
    except (OSError, ValueError, EOFError) as err:  # EOFError: an empty file
        parser.error(f"jets: cannot read {args.jets} as an .npz from `simulate` ({type(err).__name__}: {err})")
    try:
        tr = Trellis(leaves)
        out = {
            "n_leaves": int(leaves.shape[0]),
            "log_partition": tr.log_partition(),
            "map_log_lik": tr.map_log_lik(),
            "n_valid_trees": tr.n_valid_trees(),
            "greedy_log_lik": tree_log_lik(leaves, greedy(leaves)),
            "beam_log_lik": tree_log_lik(leaves, beam(leaves)),
            "kt_log_lik": tree_log_lik(leaves, kt_cluster(leaves)),
        }
    except ValueError as err:
        parser.error(f"cluster: {err}")
    print(json.dumps(out))
    return 0


def _bench(args: argparse.Namespace) -> int:
    from nips25_treegen.ginkgo import simulate
    from nips25_treegen.trellis import Trellis, brute_force, n_trees

    print("| N | trees | trellis s | brute force s |")
    print("|---|---|---|---|")
    for n in range(args.n_range[0], args.n_range[1] + 1):
        leaves = simulate(1, n_leaves=(n, n), seed=n)[0].leaves
        t0 = time.perf_counter()
        Trellis(leaves)
        t1 = time.perf_counter()
        brute = "skipped" if n > 8 else f"{(brute_force(leaves), time.perf_counter() - t1)[1]:.4f}"
        print(f"| {n} | {n_trees(n)} | {t1 - t0:.4f} | {brute} |")
    return 0


def _capacity(args: argparse.Namespace) -> int:
    """``capacity``: the sweep on one thread; ``capacity.json`` is written by the main rank only."""
    import torch

    from nips25_treegen.experiments.capacity import capacity_sweep

    torch.set_num_threads(1)
    result = capacity_sweep(out_dir=args.out)
    if is_main_rank():
        print(json.dumps(result["summary"], indent=1, default=float))
    return 0


def _reproduce(args: argparse.Namespace) -> int:
    """``reproduce``; under ``accelerate launch`` every process trains (data-parallel), only the main one writes."""
    from accelerate import PartialState

    run = functools.partial(reproduce, decoder=args.decoder)
    state = PartialState()
    if state.num_processes == 1:
        run_reproduce(run, args)
        return 0
    configure_logging(args.verbose - args.quiet)
    seed_everything(args.seed)
    report = run(profile=args.profile, seed=args.seed, out_dir=Path(args.out))
    state.wait_for_everyone()
    if state.is_main_process:
        path = write_report(report, Path(args.out))
        held = sum(c.holds for c in report.claims)
        md = Path(args.out) / "report.md"
        print(f"{report.package}: {held}/{len(report.claims)} claims hold; wrote {path} and {md}")
    state.wait_for_everyone()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-treegen``; returns the exit status (2 for user errors)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        return _reproduce(args)
    configure_logging(0)
    if args.command == "capacity":
        return _capacity(args)
    if args.command == "simulate":
        return _simulate(args, parser)
    if args.command == "cluster":
        return _cluster(args, parser)
    if args.n_range[0] < 2 or args.n_range[1] > 12:
        parser.error(f"--N must lie within 2..12, got {args.n_range}")
    return _bench(args)


if __name__ == "__main__":
    raise SystemExit(main())
