"""``nips25-st2360d``: reproduce the headline experiment, or estimate a panorama's depth with a local model."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nips25_shared import add_common_arguments, configure_logging, run_reproduce
from nips25_st2360d.geometry import check_erp_size

__all__ = ["main"]


def _read_panorama(parser: argparse.ArgumentParser, path: Path) -> np.ndarray:
    from skimage.io import imread

    if not path.is_file():
        parser.error(f"IMAGE: no such file: {path}")
    try:
        img = np.asarray(imread(str(path)))
    except Exception as err:
        parser.error(f"IMAGE: cannot read {path} as an image ({err})")
    if img.ndim == 3 and img.shape[2] == 4:
        img = img[..., :3]
    if img.ndim != 3 or img.shape[2] != 3:
        parser.error(f"IMAGE: expected an RGB panorama (H, W, 3), got shape {img.shape}")
    if img.shape[1] != 2 * img.shape[0]:
        parser.error(f"IMAGE: an equirectangular panorama has width = 2 x height, got {img.shape[1]}x{img.shape[0]}")
    try:
        check_erp_size(img.shape[0], img.shape[1], name="IMAGE")
    except ValueError as err:
        parser.error(str(err))
    if np.issubdtype(img.dtype, np.integer) and img.dtype != np.uint8:  # e.g. 16-bit: its full range, not its max
        img = np.round(img.astype(np.float64) * (255.0 / np.iinfo(img.dtype).max))
        img = np.clip(img, 0, 255).astype(np.uint8)
    elif img.dtype != np.uint8:
        if not np.isfinite(img).all():
            parser.error(f"IMAGE: {path} holds NaN or inf values")
        lo, hi = float(img.min()), float(img.max())
        if lo < 0.0 or hi > 255.0:
            parser.error(f"IMAGE: {path} holds float values in [{lo:g}, {hi:g}]; expected [0, 1] or [0, 255]")
        scale = 255.0 if hi <= 1.0 else 1.0  # [0, 1] floats, else already on the 8-bit scale (never its own max)
        img = np.clip(np.round(img.astype(np.float64) * scale), 0, 255).astype(np.uint8)
    return img


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from nips25_st2360d.merge import ST2360D, ST2360DConfig

    configure_logging(args.verbose - args.quiet)
    if args.out.suffix not in (".npy", ".png"):
        parser.error(f"--out must end in .npy (float32 ray distance) or .png (preview), got {args.out}")
    try:  # before the model runs, not after it (review 0.2.1)
        args.out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        parser.error(f"--out: cannot create the folder {args.out.parent} ({err.strerror or err})")
    vda = args.model_path.suffix in (".pth", ".pt")
    if vda and not args.model_path.is_file():
        parser.error(f"--model-path: no such Video Depth Anything checkpoint: {args.model_path}")
    if not vda and not args.model_path.is_dir():
        parser.error(f"--model-path: not a directory: {args.model_path} (weights are never downloaded)")
    if not vda and not (args.model_path / "config.json").is_file():
        parser.error(f"--model-path: {args.model_path} has no config.json (expected a Depth Anything V2 directory)")
    erp = _read_panorama(parser, args.image)
    # A video model's frames share one scale (the method); an image model's frames need aligning (issue 31.3).
    frame_alignment = args.frame_alignment or ("none" if vda else "overlap")
    try:
        config = ST2360DConfig(sampler=args.sampler, order=args.order, frame_size=args.frame_size, fov=args.fov,
                               frame_alignment=frame_alignment)  # fmt: skip
    except (TypeError, ValueError) as err:
        parser.error(str(err))
    model: Any = None
    try:
        from nips25_st2360d.adapters import DepthAnythingV2, load_video_depth_anything

        if vda:
            model = load_video_depth_anything(args.model_path, encoder=args.encoder, metric=args.metric,
                                              device=args.device)  # fmt: skip
        else:
            model = DepthAnythingV2(args.model_path, device=args.device)
    except ImportError as err:
        parser.error(str(err))
    except (OSError, ValueError, TypeError, RuntimeError) as err:
        kind = "Video Depth Anything" if vda else "Depth Anything V2"
        parser.error(f"--model-path: cannot load a {kind} model from {args.model_path} ({str(err)[:300]})")
    depth = ST2360D(model, config).predict(erp).depth
    if args.out.suffix == ".npy":
        np.save(args.out, depth)
    else:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        plt.imsave(args.out, depth, cmap="magma_r")
    print(f"wrote {args.out} ({depth.shape[0]}x{depth.shape[1]}, relative ray distance, {model.output} model, "
          f"frame alignment {frame_alignment})")  # fmt: skip
    return 0


def _evaluate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    import json

    from nips25_st2360d.alignment import ALIGN_MODES
    from nips25_st2360d.groundtruth import load_gt_depth
    from nips25_st2360d.metrics import depth_metrics

    if args.align not in ALIGN_MODES:
        parser.error(f"--align must be one of {ALIGN_MODES}, got {args.align!r}")
    if not args.pred.is_file():
        parser.error(f"PRED: no such file: {args.pred}")
    try:
        pred = np.load(args.pred, allow_pickle=False)
    except Exception as err:
        parser.error(f"PRED: cannot read {args.pred} as a .npy array ({err})")
    if pred.ndim != 2 or not np.issubdtype(pred.dtype, np.floating):
        parser.error(f"PRED: expected a 2-D float depth map (the .npy of `run`), got {pred.dtype} {pred.shape}")
    try:
        gt, valid = load_gt_depth(args.gt)
    except ValueError as err:
        parser.error(f"--gt: {err}")
    if pred.shape != gt.shape:
        parser.error(f"PRED {args.pred} is {pred.shape[0]}x{pred.shape[1]} but --gt {args.gt} is "
                     f"{gt.shape[0]}x{gt.shape[1]} (H x W): run on the panorama of the same size")  # fmt: skip
    try:
        metrics = depth_metrics(pred, gt, mask=valid, align_mode=args.align, max_depth=args.max_depth,
                                min_depth=args.min_depth)  # fmt: skip
    except (TypeError, ValueError) as err:
        parser.error(str(err))
    print(json.dumps({"pred": str(args.pred), "gt": str(args.gt), "align": args.align, "max_depth": args.max_depth,
                      "min_depth": args.min_depth, **metrics}))  # fmt: skip
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-st2360d``."""
    parser = argparse.ArgumentParser(prog="nips25-st2360d", description="ST²360D (NeurIPS 2025): 360° depth from a "
                                     "video depth model over a spherical frame sweep.")  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the headline experiment and write a report")
    add_common_arguments(rep, slug="st2360d")
    run = sub.add_parser("run", help="estimate the depth of an equirectangular panorama with a local model")
    run.add_argument("image", type=Path, help="equirectangular RGB panorama (width = 2 x height)")
    run.add_argument("--model-path", type=Path, required=True,
                     help="local Depth Anything V2 directory, or a Video Depth Anything checkpoint (.pth)")  # fmt: skip
    run.add_argument("--encoder", default="vits", choices=("vits", "vitb", "vitl"),
                     help="Video Depth Anything size of a .pth checkpoint (vits)")  # fmt: skip
    run.add_argument("--metric", action="store_true", help="the .pth is a metric Video Depth Anything checkpoint")
    run.add_argument("--out", type=Path, required=True, help="output .npy (ray distance) or .png (preview)")
    run.add_argument("--sampler", default="sus", help="sus | latlong | cubemap | fibonacci")
    run.add_argument("--order", default="lgs", help="lgs | random | given")
    run.add_argument("--frame-size", type=int, default=518, help="frame side in pixels (518)")
    run.add_argument("--fov", type=float, default=90.0, help="frame field of view in degrees (90)")
    run.add_argument(
        "--frame-alignment",
        choices=("none", "overlap", "global"),
        default=None,
        help="per-frame scale alignment before the merge: none (ST2360D, one scale for the sequence; "
        "default for a Video Depth Anything .pth), overlap (each frame to the panorama merged so far; "
        "default for a Depth Anything V2 image model) or global (all frame scales fitted jointly)",
    )
    run.add_argument("--device", default="cpu", help="torch device (cpu, cuda)")
    run.add_argument("-v", "--verbose", action="count", default=0)
    run.add_argument("-q", "--quiet", action="count", default=0)
    ev = sub.add_parser("evaluate", help="score a predicted depth map against released ground truth (2D-3D-S PNG)")
    ev.add_argument("pred", type=Path, help="predicted ray distance, the .npy written by `run`")
    ev.add_argument("--gt", type=Path, required=True,
                    help="ground-truth depth: a 2D-3D-S 16-bit PNG (1/512 m, 65535 missing) or a float .npy "
                    "in metres (NaN/inf/<=0 missing)")  # fmt: skip
    ev.add_argument("--align", default="median", help="global alignment before scoring (median)")
    ev.add_argument("--max-depth", type=float, default=10.0, help="depth cap in metres (10, UniFuse)")
    ev.add_argument("--min-depth", type=float, default=1e-3, help="lower depth bound in metres (1e-3)")
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        from nips25_st2360d.reproduce import reproduce

        try:
            args.out.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            rep.error(f"--out: cannot create {args.out} ({err.strerror or err})")
        run_reproduce(reproduce, args)
        return 0
    if args.command == "evaluate":
        return _evaluate(ev, args)
    return _run(run, args)


if __name__ == "__main__":
    raise SystemExit(main())
