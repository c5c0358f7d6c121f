"""Run under ``accelerate launch`` by ``test_distributed.py`` (and imported by it for the one-process reference).

``run_case`` trains a tiny random digits trainer for a few steps at one global batch; rows of classes >= 5 get a
constant reward, so on two processes rank 1's shard has no valid pair at all (the zero-loss step) while rank 0 has
several micro-batches (``no_sync``). The script then runs the CLI ``train`` command (the DDP save path) with every
file write reported per rank.
"""

from __future__ import annotations

import json
import pathlib
import sys
import time

import torch

GLOBAL_LABELS = [1, 2, 7, 8]  # two processes: rank 0 gets [1, 2], rank 1 gets [7, 8]


def _reward(x: torch.Tensor, t: torch.Tensor, cond) -> torch.Tensor:
    """A step-aware reward that is constant (so every pair is a tie, hence invalid) for classes >= 5."""
    live = (cond["class_labels"] < 5).to(x.dtype)
    return -x.flatten(1).mean(1) * live


def run_case(method: str, accelerator=None) -> dict:
    """Three steps of ``method`` at global batch 4; the final LoRA parameters and the per-step stats."""
    from nips25_gradspo import (
        ClassDenoiser,
        StepwiseTrainer,
        TrainerConfig,
        add_unet_lora,
        digits_scheduler,
        digits_unet,
    )

    torch.manual_seed(0)
    unet = digits_unet()
    add_unet_lora(unet, r=2, alpha=4.0, target_modules=("to_q", "to_v", "conv1"))
    cfg = TrainerConfig(
        method=method, num_inference_steps=3, num_candidates=3, divert_start_step=1, threshold=0.0, lr=1e-2,
        last_step_all_valid="no", micro_batch=1,
    )  # fmt: skip
    tr = StepwiseTrainer(
        ClassDenoiser(unet), digits_scheduler(), _reward, config=cfg, latent_shape=(1, 8, 8), accelerator=accelerator
    )
    init = {k: v.detach().cpu().double().flatten().tolist() for k, v in tr.params.items()}
    gen = torch.Generator().manual_seed(3)
    cond = {"class_labels": torch.tensor(GLOBAL_LABELS)}
    stats = [tr.step(cond, generator=gen) for _ in range(3)]
    local_valid = float(tr.pairs(cond, generator=torch.Generator().manual_seed(4))[0].valid.sum())
    params = {k: v.detach().cpu().double().flatten().tolist() for k, v in tr.params.items()}
    return {
        "stats": stats,
        "params": params,
        "init": init,
        "local_valid": local_valid,
        "rank": tr.accelerator.process_index,
    }


PRETRAIN = {"steps": 3, "batch_size": 8, "lr": 2e-3, "seed": 0}  # the digits UNet pretraining case (global batch 8)


def _spy_writes(rank: int) -> None:
    """Print one line per file written (safetensors and text), naming the rank."""
    import safetensors.torch

    save_file, write_text = safetensors.torch.save_file, pathlib.Path.write_text

    def spy_save(tensors, filename, *a, **k):
        print(f"WRITE rank={rank} {filename}", flush=True)
        return save_file(tensors, filename, *a, **k)

    def spy_text(self, *a, **k):
        print(f"WRITE rank={rank} {self}", flush=True)
        return write_text(self, *a, **k)

    safetensors.torch.save_file = spy_save
    pathlib.Path.write_text = spy_text  # type: ignore[method-assign]


def main(out: str) -> None:
    from accelerate import Accelerator
    from nips25_gradspo.cli import main as cli

    start = time.perf_counter()
    acc = Accelerator()
    results = {m: run_case(m, acc) for m in ("gradspo", "dpo")}
    valid = acc.gather(torch.tensor([results["gradspo"]["local_valid"]])).tolist()
    acc.wait_for_everyone()
    if acc.is_main_process:
        pathlib.Path(out, "ddp.json").write_text(json.dumps({**results, "valid_per_rank": valid}))
    acc.wait_for_everyone()
    print(f"TIME rank={acc.process_index} cases {time.perf_counter() - start:.1f} s", flush=True)
    _spy_writes(acc.process_index)
    cli(["train", "--iters", "1", "--batch", "2", "--candidates", "2", "--out", str(pathlib.Path(out, "cli")), "-q"])
    from nips25_gradspo.digits import pretrain_digits_unet

    pretrain_digits_unet(pathlib.Path(out, "pretrain", "unet.safetensors"), **PRETRAIN, accelerator=acc)
    print(f"TIME rank={acc.process_index} total {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
