"""``nips25-olfaction``: ``reproduce`` (the headline experiment) and ``run`` (a condition x noise table, on the
embedded odours or on your own receptor-response table with ``--data``)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import replace

from nips25_shared import add_common_arguments, configure_logging, positive_int, run_reproduce

__all__ = ["main"]


def _floats(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--noise must be comma-separated numbers, got {text!r}") from exc
    if not all(math.isfinite(v) and v >= 0 for v in values):
        raise argparse.ArgumentTypeError(f"--noise levels must be finite and >= 0 (Hz), got {text!r}")
    return values


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nips25-olfaction", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    add_common_arguments(
        sub.add_parser("reproduce", help="run the headline experiment, write a report"), slug="olfaction"
    )
    run = sub.add_parser("run", help="print held-out accuracy for each condition and noise level")
    run.add_argument(
        "--data",
        metavar="PATH",
        help="receptor-response table (.csv/.tsv) in the Hallem & Carlson (2006) layout (README 'Your own data'); "
        "default: Hallem-Carlson via the [hallem] extra, else synthetic odours",
    )
    run.add_argument(
        "--absolute",
        action="store_true",
        help="--data holds absolute rates (Hz), not changes from a 'spontaneous firing rate' line",
    )
    run.add_argument("--odors", type=positive_int, default=16, help="test odours: the K >= 2 most similar (default 16)")
    run.add_argument("--noise", type=_floats, default=(10.0, 20.0, 40.0, 80.0), help="sigma list in Hz, e.g. 0,20,40")
    run.add_argument("--n-kc", type=positive_int, default=1000)
    run.add_argument("--claws", type=positive_int, default=6, help="PN inputs per KC (<= receptors)")
    run.add_argument("--seeds", type=positive_int, default=2)
    run.add_argument("--readout", choices=("mbon", "mbon_binary", "centroid", "logistic"), default="mbon")
    run.add_argument(
        "--calibration",
        choices=("matched", "native"),
        default="matched",
        help="matched: every condition at 10%% active KCs; native: one w_pn, w_li set with LI alone (0.1.0)",
    )
    run.add_argument("-q", "--quiet", action="count", default=0)
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        from nips25_olfaction.reproduce import reproduce

        run_reproduce(reproduce, args)
        return 0
    if args.odors < 2:
        run.error(f"argument --odors: must be an integer >= 2, got {args.odors}")
    configure_logging(-args.quiet)
    import jax

    from nips25_olfaction.calibration import calibrate, calibrate_matched
    from nips25_olfaction.circuit import Circuit
    from nips25_olfaction.odors import olsen_pn, read_hallem_csv
    from nips25_olfaction.params import CircuitParams
    from nips25_olfaction.reproduce import PROFILES, _odors, split_odors
    from nips25_olfaction.sweep import sweep

    if args.data is None:
        if args.absolute:
            run.error("--absolute applies to --data only")
        test_pn, cal_pn, source = _odors(replace(PROFILES["quick"], n_odors=args.odors), 0)
    else:
        try:
            orn, _, receptors = read_hallem_csv(args.data, add_spontaneous=not args.absolute)
        except (OSError, ValueError) as exc:
            run.error(f"--data: {exc}")
        if orn.shape[0] < 2:
            run.error(f"--data: {args.data}: needs at least 2 odours, got {orn.shape[0]}")
        test_pn, cal_pn, how = split_odors(olsen_pn(orn), args.odors, PROFILES["quick"].n_calibration_odors)
        source = f"{args.data} ({orn.shape[0]} odours x {len(receptors)} receptors): {how}"
    if args.claws > test_pn.shape[1]:
        run.error(f"--claws {args.claws} exceeds the {test_pn.shape[1]} receptors (PNs) of the odours")
    wiring = Circuit.random(
        jax.random.key(0), n_pn=test_pn.shape[1], n_kc=args.n_kc, claws=args.claws, params=CircuitParams(window=0.2)
    )
    try:
        params = calibrate_matched(cal_pn, wiring) if args.calibration == "matched" else calibrate(cal_pn, wiring)
    except ValueError as exc:
        run.error(
            f"calibration on the odours of {args.data or 'the default set'} failed: {exc} (it needs enough odours "
            "and receptors that 20% and 10% of KCs can be made to respond; KCs with claws = receptors are identical)"
        )
    res = sweep(
        test_pn,
        params,
        noise_levels=args.noise,
        seeds=tuple(range(args.seeds)),
        readouts=(args.readout,),
        n_kc=args.n_kc,
        claws=args.claws,
    )
    mean, se = res.mean_se(args.readout)
    print(f"odours: {source}; readout: {args.readout}; calibration: {args.calibration}")
    print("condition " + " ".join(f"{f'sigma={s:g}':>14}" for s in res.noise_levels))
    for j, cond in enumerate(res.conditions):
        print(f"{cond:9} " + " ".join(f"{m:7.3f}±{e:5.3f}" for m, e in zip(mean[j], se[j])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
