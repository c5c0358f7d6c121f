"""``nips25-bcvlr``: reproduce the headline experiment, record an expert video, or train BCV-LR on a video."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from nips25_shared import add_common_arguments, configure_logging, run_reproduce, seed_everything, seed_int
from nips25_shared.logs import is_main_rank

__all__ = ["main"]


def _record(args: argparse.Namespace) -> int:
    from nips25_bcvlr.environments import make_minigrid_pixels
    from nips25_bcvlr.experts import BFSExpert, record_video

    env = make_minigrid_pixels(args.env_id, tile_size=args.tile_size)
    video = record_video(env, BFSExpert(), n_frames=args.frames, seed=args.seed)
    path = video.save(args.out)  # the main rank only, under a distributed launch
    mean_return = float(video.returns.mean()) if video.returns is not None else float("nan")
    if is_main_rank():
        print(json.dumps({"video": str(path), "frames": len(video), "mean_return": mean_return}))
    return 0


def _train(args: argparse.Namespace) -> int:
    from nips25_bcvlr.agent import BCVLR
    from nips25_bcvlr.config import BCVLRConfig
    from nips25_bcvlr.environments import make_minigrid_pixels
    from nips25_bcvlr.evaluation import evaluate_returns
    from nips25_bcvlr.video import load_video

    configure_logging(args.verbose - args.quiet)
    seed_everything(args.seed)
    video = load_video(args.video)
    env = make_minigrid_pixels(args.env_id, tile_size=args.tile_size)
    env_shape = tuple(env.observation_space.shape or ())
    if tuple(video.frames.shape[1:]) != (3, *env_shape[:2]):
        raise ValueError(f"--video: frames are {video.frames.shape[1:]}, the env gives {env_shape} (H, W, 3)")
    config = BCVLRConfig.preset(args.preset)
    agent = BCVLR(config, obs_shape=video.frames.shape[1:], action_space=env.action_space, seed=args.seed)
    agent.pretrain(video)
    if args.steps > 0:
        agent.online([make_minigrid_pixels(args.env_id, tile_size=args.tile_size) for _ in range(config.n_envs)],
                     args.steps)  # fmt: skip
    returns = evaluate_returns(agent.predict, [env], n_episodes=args.eval_episodes, seed=10_000 + args.seed)
    agent.save(args.out)  # every process calls it; the main process writes
    if is_main_rank():
        print(json.dumps({"checkpoint": str(args.out), "mean_return": float(returns.mean())}))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-bcvlr``; user errors print one line and exit with code 2."""
    parser = argparse.ArgumentParser(
        prog="nips25-bcvlr", description="BCV-LR (NeurIPS 2025): behaviour cloning from videos via latent actions."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the headline experiment and write a report")
    add_common_arguments(rep, slug="bcvlr", profiles=("quick", "continuous", "tiny", "paper"))
    rec = sub.add_parser("record", help="record a MiniGrid expert video (BFS planner) as .npz")
    rec.add_argument("--out", type=Path, required=True, help="output .npz path")
    rec.add_argument("--frames", type=int, default=1200, help="minimum number of frames (whole episodes)")
    tr = sub.add_parser("train", help="pre-train BCV-LR on a video, run the online loop, save a checkpoint")
    tr.add_argument("--video", type=Path, required=True, help=".npz video (see nips25_bcvlr.load_video)")
    tr.add_argument("--out", type=Path, required=True, help="checkpoint path (torch.save)")
    tr.add_argument("--steps", type=int, default=768, help="online interaction budget (0: pre-training only)")
    tr.add_argument(
        "--preset", default="cpu", choices=("cpu", "procgen", "dmc", "cpu-continuous"), help="config preset"
    )
    tr.add_argument("--eval-episodes", type=int, default=16)
    tr.add_argument("-v", "--verbose", action="count", default=0)
    tr.add_argument("-q", "--quiet", action="count", default=0)
    for p in (rec, tr):
        p.add_argument("--env-id", default="MiniGrid-Empty-Random-6x6-v0", help="MiniGrid env id")
        p.add_argument("--tile-size", type=int, default=5, help="pixels per grid cell")
        p.add_argument("--seed", type=seed_int, default=0)
    args = parser.parse_args(argv)
    out_parent = getattr(args, "out", None)
    if args.command != "reproduce" and out_parent is not None and not out_parent.parent.is_dir():
        parser.error(f"--out: folder {out_parent.parent} does not exist")
    try:
        if args.command == "reproduce":
            from nips25_bcvlr.reproduce import reproduce

            run_reproduce(reproduce, args)
            return 0
        if args.command == "record":
            if args.frames < 2:
                parser.error(f"--frames must be >= 2, got {args.frames}")
            return _record(args)
        if args.steps < 0 or args.eval_episodes < 1:
            parser.error("--steps must be >= 0 and --eval-episodes >= 1")
        return _train(args)
    except (ValueError, TypeError, FileNotFoundError, OSError) as err:
        parser.error(str(err).splitlines()[0] if str(err) else type(err).__name__)
    return 2  # pragma: no cover - parser.error exits


if __name__ == "__main__":
    sys.exit(main())
