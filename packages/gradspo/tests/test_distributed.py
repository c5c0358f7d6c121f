"""Issue 42: two data-parallel processes equal one process at the same global batch; only rank 0 writes."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).with_name("ddp_train.py")


def _script_module():
    spec = importlib.util.spec_from_file_location("gradspo_ddp_train", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.distributed
def test_two_processes_equal_one_process_and_only_rank0_writes(tmp_path):
    """GradSPO and Diffusion-DPO, 3 steps at global batch 4 on 2 CPU processes (gloo) vs 1 process in-process.

    Rank 1's shard has no valid pair (constant reward for its classes), so it must run the zero-loss backward or
    rank 0 hangs in the all-reduce; rank 0 back-propagates several micro-batches under ``no_sync``. Tolerance
    on the LoRA weights: max 1e-4 and mean 1e-6. The runs differ only in float summation order (the gradient is
    all-reduced from two halves, convolutions run at batch 2 instead of 4); Adam's normalised update m / sqrt(v)
    amplifies that noise in the few coordinates whose gradient is near zero (observed max ~1.4e-5), but a
    sharding or loss-scaling error moves every coordinate by up to one Adam step, lr = 1e-2 (100x the bound).
    """
    from nips25_shared.testing import run_accelerate

    proc = run_accelerate(SCRIPT, str(tmp_path), num_processes=2, timeout=240)
    got = json.loads((tmp_path / "ddp.json").read_text())
    assert got["valid_per_rank"][0] > 0 and got["valid_per_rank"][1] == 0  # the zero-loss path ran on rank 1
    want = {m: _script_module().run_case(m) for m in ("gradspo", "dpo")}
    for m in ("gradspo", "dpo"):
        for key in ("n_pairs", "valid_fraction"):
            assert [s[key] for s in got[m]["stats"]] == [s[key] for s in want[m]["stats"]], (m, key)
        for key in ("loss", "final_reward", "grad_norm"):  # float32 values of scale up to ~10: relative 1e-5
            want_k = [s[key] for s in want[m]["stats"]]
            assert [s[key] for s in got[m]["stats"]] == pytest.approx(want_k, rel=1e-5, abs=1e-6), (m, key)
        assert got[m]["params"].keys() == want[m]["params"].keys()
        gap = torch.tensor([a - b for k, v in want[m]["params"].items() for a, b in zip(got[m]["params"][k], v)])
        moved = torch.tensor([b for v in want[m]["params"].values() for b in v]) - torch.tensor(
            [b for v in got[m]["init"].values() for b in v]
        )
        assert float(moved.abs().max()) > 1e-2  # training moved the weights by several Adam steps
        assert float(gap.abs().max()) < 1e-4 and float(gap.abs().mean()) < 1e-6, (m, gap.abs().max(), gap.abs().mean())
    # the CLI `train` (which crashed at save under DDP) saved once, from rank 0 only
    writes = re.findall(r"WRITE rank=(\d) (\S+)", proc.stdout + proc.stderr)
    assert sorted(Path(p).name for _, p in writes) == ["history.json", "lora.safetensors", "unet.safetensors"]
    assert {r for r, _ in writes} == {"0"}
    assert (tmp_path / "cli" / "lora.safetensors").is_file()
    # the digits UNet pretraining: 2 processes x 4 rows equal 1 process x 8 rows (3 AdamW steps, lr 2e-3); same
    # float-summation argument and tolerance as above, with the step scale 2e-3
    from nips25_gradspo.digits import pretrain_digits_unet
    from safetensors.torch import load_file

    two = load_file(str(tmp_path / "pretrain" / "unet.safetensors"))
    one = load_file(str(pretrain_digits_unet(tmp_path / "one.safetensors", **_script_module().PRETRAIN)))
    assert two.keys() == one.keys()
    gap = torch.cat([(two[k].float() - one[k].float()).abs().ravel() for k in one])
    assert float(gap.max()) < 1e-4 and float(gap.mean()) < 1e-6, (gap.max(), gap.mean())


def test_pretrain_on_one_process_equals_the_plain_loop(tmp_path):
    """One process under accelerate draws and trains exactly as the plain loop did (the shipped weights reproduce)."""
    from diffusers.schedulers.scheduling_ddpm import DDPMScheduler
    from nips25_gradspo.digits import _SCHEDULE, NULL_CLASS, digits_unet, load_digits, pretrain_digits_unet
    from safetensors.torch import load_file

    from nips25_shared import seed_everything

    steps, batch, lr, seed = 2, 8, 2e-3, 0
    got = load_file(str(pretrain_digits_unet(tmp_path / "u.safetensors", steps=steps, batch_size=batch, seed=seed)))
    seed_everything(seed)  # the 0.1.0 loop, written out
    data, unet, ddpm = load_digits(), digits_unet(), DDPMScheduler(**_SCHEDULE)
    opt = torch.optim.AdamW(unet.parameters(), lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    gen = torch.Generator().manual_seed(seed)
    unet.train()
    for _ in range(steps):
        idx = torch.randint(0, len(data.x_train), (batch,), generator=gen)
        x0, c = data.x_train[idx], data.y_train[idx].clone()
        c[torch.rand(batch, generator=gen) < 0.1] = NULL_CLASS
        t = torch.randint(0, ddpm.config.num_train_timesteps, (batch,), generator=gen)
        eps = torch.randn(x0.shape, generator=gen)
        loss = torch.nn.functional.mse_loss(unet(ddpm.add_noise(x0, eps, t), t, c).sample, eps)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(unet.parameters(), 1.0)
        opt.step()
        sched.step()
    for k, v in unet.state_dict().items():
        torch.testing.assert_close(got[k], v.detach(), rtol=0, atol=0)


def test_pretrain_refuses_a_batch_that_does_not_split():
    from unittest import mock

    from nips25_gradspo.digits import pretrain_digits_unet

    acc = mock.Mock(num_processes=3, process_index=0)
    with pytest.raises(ValueError, match="batch_size"):
        pretrain_digits_unet("unused.safetensors", steps=1, batch_size=8, accelerator=acc)
