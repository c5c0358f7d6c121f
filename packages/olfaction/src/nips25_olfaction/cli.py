"""``nips25-olfaction``: ``reproduce`` (the headline experiment) and ``run`` (a condition x noise table)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from nips25_shared import add_common_arguments, configure_logging, run_reproduce

__all__ = ["main"]


def _floats(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--noise must be comma-separated numbers, got {text!r}") from exc
    if any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"--noise levels must be >= 0, got {text!r}")
    return values


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nips25-olfaction", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    add_common_arguments(
        sub.add_parser("reproduce", help="run the headline experiment, write a report"), slug="olfaction"
    )
    run = sub.add_parser("run", help="print held-out accuracy for each condition and noise level")
    run.add_argument("--noise", type=_floats, default=(10.0, 20.0, 40.0, 80.0), help="sigma list in Hz, e.g. 0,20,40")
    run.add_argument("--n-kc", type=int, default=1000)
    run.add_argument("--seeds", type=int, default=2)
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
    configure_logging(-args.quiet)
    import jax

    from nips25_olfaction.calibration import calibrate, calibrate_matched
    from nips25_olfaction.circuit import Circuit
    from nips25_olfaction.params import CircuitParams
    from nips25_olfaction.reproduce import PROFILES, _odors
    from nips25_olfaction.sweep import sweep

    if args.n_kc < 1 or args.seeds < 1:
        parser.error("--n-kc and --seeds must be >= 1")
    test_pn, cal_pn, source = _odors(PROFILES["quick"], 0)
    wiring = Circuit.random(jax.random.key(0), n_pn=test_pn.shape[1], n_kc=args.n_kc, params=CircuitParams(window=0.2))
    params = calibrate_matched(cal_pn, wiring) if args.calibration == "matched" else calibrate(cal_pn, wiring)
    res = sweep(
        test_pn,
        params,
        noise_levels=args.noise,
        seeds=tuple(range(args.seeds)),
        readouts=(args.readout,),
        n_kc=args.n_kc,
    )
    mean, se = res.mean_se(args.readout)
    print(f"odours: {source}; readout: {args.readout}; calibration: {args.calibration}")
    print("condition " + " ".join(f"{f'sigma={s:g}':>14}" for s in res.noise_levels))
    for j, cond in enumerate(res.conditions):
        print(f"{cond:9} " + " ".join(f"{m:7.3f}±{e:5.3f}" for m, e in zip(mean[j], se[j])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
