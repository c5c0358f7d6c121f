"""``nips25-sama``: reproduce the headline experiment, evaluate SAMA-Bench predictions, write demo clips."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from nips25_shared import add_common_arguments, configure_logging, run_reproduce, seed_int

__all__ = ["main"]


def _eval(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nips25_sama.sama_bench import evaluate_predictions, load_predictions, load_sama_bench

    configure_logging(args.verbose - args.quiet)
    for name in ("gt", "pred"):
        if not Path(getattr(args, name)).is_file():
            parser.error(f"--{name}: {getattr(args, name)} is not a file")
    if args.frame_root is not None and not Path(args.frame_root).is_dir():
        parser.error(f"--frame-root: {args.frame_root} is not a directory")
    try:
        videos = load_sama_bench(args.gt, mask_dict=args.mask_dict, frame_root=args.frame_root)
        if not videos:
            parser.error(f"--gt: {args.gt} holds no video with a conversation (an empty list, or no 'conversation' "
                         "fields)")  # fmt: skip
        preds = load_predictions(args.pred)
        result = evaluate_predictions(videos, preds, text_sim=args.text_sim, official_compat=args.official_compat,
                                      with_meteor=args.meteor)  # fmt: skip
    except (ValueError, TypeError, KeyError, json.JSONDecodeError, FileNotFoundError) as exc:
        parser.error(f"cannot evaluate: {exc}")
    except ModuleNotFoundError as exc:
        parser.error(f"--text-sim {args.text_sim}: {exc}")
    print(json.dumps(result, indent=2))
    return 0


def _eval_res(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nips25_sama.gcg_results import evaluate_gcg_results, load_gcg_results

    configure_logging(args.verbose - args.quiet)
    if not Path(args.root).is_dir():
        parser.error(f"--root: {args.root} is not a directory")
    try:
        results = load_gcg_results(args.root, dataset_name=args.dataset_name or None)
        out = evaluate_gcg_results(results, text_sim=args.text_sim, official_compat=args.official_compat,
                                   with_meteor=args.meteor)  # fmt: skip
    except (ValueError, FileNotFoundError) as exc:
        parser.error(f"cannot evaluate: {exc}")
    except ModuleNotFoundError as exc:
        parser.error(f"--text-sim {args.text_sim}: {exc}")
    print(json.dumps(out, indent=2))
    return 0


def _demo(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import numpy as np

    from nips25_sama.sama_bench import write_predictions, write_sama_bench
    from nips25_sama.synthetic import BACKGROUNDS, MOTIONS, OBJECTS, make_scene, object_pixels, scene_conversation
    from nips25_sama.tracking import describe_motion, name_by_colour, track_backprojection

    configure_logging(args.verbose - args.quiet)
    if args.n_clips < 1:
        parser.error(f"--n-clips must be >= 1, got {args.n_clips}")
    rng = np.random.default_rng(args.seed)
    templates = {o: object_pixels(o) for o in OBJECTS}
    clips, preds = [], {}
    for k in range(args.n_clips):
        objs = [str(o) for o in rng.choice(OBJECTS, size=2, replace=False)]
        motions = [str(m) for m in rng.choice(MOTIONS, size=2, replace=False)]
        frames, masks = make_scene(objs, motions, str(rng.choice(BACKGROUNDS)), seed=int(rng.integers(1 << 31)))
        vid = f"clip{k:03d}"
        clips.append({"video_id": vid, "frames": frames, "masks": {str(i + 1): m for i, m in enumerate(masks)},
                      "phrases": {str(i + 1): f"the {o}" for i, o in enumerate(objs)},
                      "conversations": scene_conversation(objs, motions)})  # fmt: skip
        vols = np.stack([track_backprojection(frames, m[0]) for m in masks])
        names = [name_by_colour(frames[0], m[0], templates) for m in masks]
        caption = " ".join(f"the {n} {describe_motion(v)}" for n, v in zip(names, vols, strict=True))
        preds[vid] = {"masks": vols, "phrases": [f"the {n}" for n in names], "caption": caption}
    gt = write_sama_bench(args.out, clips)
    pred = write_predictions(Path(args.out) / "predictions.json", preds)
    print(json.dumps({"gt": str(gt), "pred": str(pred)}))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-sama``."""
    parser = argparse.ArgumentParser(
        prog="nips25-sama", description="SAMA (NeurIPS 2025): spatio-temporal context aggregator and SAMA-Bench tools."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the headline experiment and write a report")
    add_common_arguments(rep, slug="sama")
    ev = sub.add_parser("eval", help="evaluate SAMA-Bench predictions (mIoU, Recall, J&F, captions)")
    ev.add_argument("--gt", type=Path, required=True, help="SAMA-Bench annotation JSON (released layout)")
    ev.add_argument("--mask-dict", type=Path, default=None, help="mask dictionary (default: beside --gt)")
    ev.add_argument("--pred", type=Path, required=True, help="predictions JSON (video_id -> caption/phrases/RLE)")
    ev.add_argument("--frame-root", type=Path, default=None, help="directory of the frame folders (default: JSON's)")
    ev.add_argument("--text-sim", choices=("minilm", "tfidf", "exact"), default="minilm", help="Recall text similarity")
    ev.add_argument("--official-compat", action="store_true", help="the released script's Recall pairing")
    ev.add_argument("--meteor", action="store_true", help="also METEOR (needs Java and pycocoevalcap)")
    ev.add_argument("-v", "--verbose", action="count", default=0)
    ev.add_argument("-q", "--quiet", action="count", default=0)
    er = sub.add_parser("eval-res", help="evaluate the official per-video res.json folders (SAMA-Bench-G)")
    er.add_argument("--root", type=Path, required=True, help="the official --vis_save_path")
    er.add_argument("--dataset-name", default="video_gcg", help="sub-folder of the video folders ('' for none)")
    er.add_argument("--text-sim", choices=("minilm", "tfidf", "exact"), default="minilm", help="Recall text similarity")
    er.add_argument("--official-compat", action="store_true", help="the released script's Recall pairing")
    er.add_argument("--meteor", action="store_true", help="also METEOR (needs Java and pycocoevalcap)")
    er.add_argument("-v", "--verbose", action="count", default=0)
    er.add_argument("-q", "--quiet", action="count", default=0)
    demo = sub.add_parser("demo", help="write real-image demo clips + tracker predictions in SAMA-Bench format")
    demo.add_argument("--out", type=Path, required=True, help="output directory")
    demo.add_argument("--n-clips", type=int, default=4)
    demo.add_argument("--seed", type=seed_int, default=0)
    demo.add_argument("-v", "--verbose", action="count", default=0)
    demo.add_argument("-q", "--quiet", action="count", default=0)
    args = parser.parse_args(argv)
    out = getattr(args, "out", None)
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        parser.error(f"--out: {out} exists and is not a directory")
    if args.command == "reproduce":
        from nips25_sama.reproduce import reproduce

        run_reproduce(reproduce, args)
        return 0
    if args.command == "eval":
        return _eval(args, parser)
    if args.command == "eval-res":
        return _eval_res(args, parser)
    return _demo(args, parser)


if __name__ == "__main__":
    raise SystemExit(main())
