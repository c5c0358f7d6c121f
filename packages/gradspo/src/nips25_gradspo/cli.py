"""``nips25-gradspo``: reproduce the headline experiment, train on the digits stand-in, regenerate the weights,
print the per-step weights each method implies."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

from nips25_shared import (
    add_common_arguments,
    configure_logging,
    progress,
    run_reproduce,
    seed_everything,
    seed_int,
)
from nips25_shared.logs import is_main_rank

__all__ = ["main"]


def _verbosity(p: argparse.ArgumentParser) -> None:
    p.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    p.add_argument("-q", "--quiet", action="count", default=0, help="less log output, no progress bars")


def _train(args: argparse.Namespace) -> int:
    import torch
    from peft.utils import get_peft_model_state_dict
    from safetensors.torch import save_file

    from nips25_gradspo.reproduce import PROFILES, _trainer

    configure_logging(args.verbose - args.quiet)
    seed_everything(args.seed)
    torch.set_num_threads(1)
    cfg = PROFILES["quick"]
    from dataclasses import replace

    cfg = replace(cfg, iters=args.iters, batch=args.batch, lr=args.lr, num_candidates=args.candidates)
    tr = _trainer(args.method, cfg, args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    prompts = torch.Generator().manual_seed(1_000 + args.seed)
    history = []
    start = time.perf_counter()
    for _ in progress(range(cfg.iters), desc=f"train {args.method}"):
        cond = {"class_labels": torch.randint(0, 10, (cfg.batch,), generator=prompts)}
        history.append(tr.step(cond, generator=gen))
    out = Path(args.out)
    tr.accelerator.wait_for_everyone()
    if tr.accelerator.is_main_process:  # every process holds the same weights and global stats; one writes
        out.mkdir(parents=True, exist_ok=True)
        state = get_peft_model_state_dict(tr.unet)
        save_file({k: v.detach().cpu().contiguous() for k, v in state.items()}, str(out / "lora.safetensors"))
        (out / "history.json").write_text(json.dumps(history, indent=1))
        last = history[-1]
        print(
            f"{args.method}: {cfg.iters} iterations on {tr.accelerator.num_processes} process(es) in "
            f"{time.perf_counter() - start:.1f} s, last rollout reward {last['final_reward']:.3f}; wrote "
            f"{out / 'lora.safetensors'} and {out / 'history.json'}"
        )
    tr.accelerator.wait_for_everyone()
    return 0


def _pretrain(args: argparse.Namespace) -> int:
    from diffusers.schedulers.scheduling_ddpm import DDPMScheduler
    from safetensors.torch import save_file

    from nips25_gradspo.digits import _SCHEDULE, load_digits, pretrain_digits_unet
    from nips25_gradspo.reward import train_noisy_classifier

    configure_logging(args.verbose - args.quiet)
    out = Path(args.out)
    if is_main_rank():  # pretrain_digits_unet writes on the main process after wait_for_everyone()
        out.mkdir(parents=True, exist_ok=True)
    pretrain_digits_unet(out / "digits_unet.safetensors", steps=args.unet_steps, seed=args.seed)
    data = load_digits()
    clf = train_noisy_classifier(
        data.x_train, data.y_train, DDPMScheduler(**_SCHEDULE), steps=args.classifier_steps, seed=args.seed
    )
    if is_main_rank():  # the classifier is small and trained whole on every process; only the main one writes
        save_file({k: v.contiguous() for k, v in clf.state_dict().items()}, str(out / "noisy_classifier.safetensors"))
        print(f"wrote {out / 'digits_unet.safetensors'} and {out / 'noisy_classifier.safetensors'}")
    return 0


def _weights(args: argparse.Namespace) -> int:
    from diffusers.schedulers.scheduling_ddim import DDIMScheduler

    from nips25_gradspo.digits import digits_scheduler
    from nips25_gradspo.schedule import step_weights

    if args.schedule == "sd15":
        s = DDIMScheduler(
            beta_schedule="scaled_linear", beta_start=0.00085, beta_end=0.012, set_alpha_to_one=False,
            steps_offset=1, clip_sample=False,
        )  # fmt: skip
    else:
        s = digits_scheduler()
    s.set_timesteps(args.steps)
    g = step_weights(s, method="gradspo", grad_scale=args.grad_scale)
    sp = step_weights(s, method="spo")
    print("t\tgradspo\tspo\tspo/gradspo")
    for t, a, b in zip(s.timesteps.tolist(), g.tolist(), sp.tolist()):
        print(f"{t}\t{a:.4f}\t{b:.4f}\t{b / a:.3f}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-gradspo``."""
    parser = argparse.ArgumentParser(
        prog="nips25-gradspo", description="GradSPO (NeurIPS 2025) with SPO and Diffusion-DPO under one harness."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the headline experiment and write a report")
    add_common_arguments(rep, slug="gradspo", profiles=("quick", "variance", "paper"))
    tr = sub.add_parser("train", help="align the shipped digits UNet with one method; save its LoRA")
    tr.add_argument("--method", choices=["gradspo", "spo", "dpo"], default="gradspo")
    tr.add_argument("--iters", type=int, default=20, help="training iterations (>= 1)")
    tr.add_argument("--batch", type=int, default=8, help="prompts per iteration, the global batch (>= 1)")
    tr.add_argument("--candidates", type=int, default=4, help="candidates per step K (>= 2)")
    tr.add_argument("--lr", type=float, default=2e-3, help="AdamW learning rate (> 0)")
    tr.add_argument("--seed", type=seed_int, default=0)
    tr.add_argument("--out", type=Path, default=Path("gradspo-lora"), help="output directory")
    _verbosity(tr)
    pre = sub.add_parser("pretrain", help="regenerate the shipped digits UNet and noisy-digit classifier")
    pre.add_argument("--out", type=Path, required=True, help="output directory")
    pre.add_argument("--unet-steps", type=int, default=2500)
    pre.add_argument("--classifier-steps", type=int, default=2000)
    pre.add_argument("--seed", type=seed_int, default=0)
    _verbosity(pre)
    wt = sub.add_parser("weights", help="print the per-step weights GradSPO and SPO imply")
    wt.add_argument("--schedule", choices=["sd15", "digits"], default="sd15")
    wt.add_argument("--steps", type=int, default=20, help="DDIM steps (>= 1)")
    wt.add_argument("--grad-scale", type=float, default=0.5, help="GradSPO's g (> 0)")
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        from nips25_gradspo.reproduce import reproduce

        try:
            run_reproduce(reproduce, args)
        except (FileNotFoundError, ValueError) as err:  # missing or malformed local inputs of --profile paper
            parser.error(str(err))
        return 0
    checks = {  # (flag, value, smallest allowed, strict)
        "train": [("--iters", "iters", 1, False), ("--batch", "batch", 1, False),
                  ("--candidates", "candidates", 2, False), ("--lr", "lr", 0, True)],
        "pretrain": [("--unet-steps", "unet_steps", 1, False), ("--classifier-steps", "classifier_steps", 1, False)],
        "weights": [("--steps", "steps", 1, False), ("--grad-scale", "grad_scale", 0, True)],
    }  # fmt: skip
    subparsers = {"train": tr, "pretrain": pre, "weights": wt}
    for flag, name, low, strict in checks[args.command]:
        value = getattr(args, name)
        if not (value > low if strict else value >= low):  # NaN fails both
            subparsers[args.command].error(f"{flag} must be {'>' if strict else '>='} {low}, got {value}")
    try:
        if args.command == "train":
            return _train(args)
        if args.command == "pretrain":
            return _pretrain(args)
        return _weights(args)
    except (ValueError, FileNotFoundError, OSError) as err:
        parser.error(str(err))
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
