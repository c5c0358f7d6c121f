"""The CPU stand-in for Stable Diffusion: a class-conditional ``UNet2DModel`` on scikit-learn's 8x8 digits.

The "prompt" is the digit class; class ``NULL_CLASS`` (10) is the empty prompt that classifier-free guidance needs.
The shipped weights (``data/digits_unet.safetensors``) come from :func:`pretrain_digits_unet` with its defaults
(``nips25-gradspo pretrain`` regenerates them).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import torch
from diffusers.models.unets.unet_2d import UNet2DModel
from diffusers.schedulers.scheduling_ddim import DDIMScheduler
from diffusers.schedulers.scheduling_ddpm import DDPMScheduler

from nips25_shared import get_logger, progress, seed_everything

__all__ = [
    "NULL_CLASS",
    "DigitsSplit",
    "digits_scheduler",
    "digits_unet",
    "load_digits",
    "load_digits_unet",
    "pretrain_digits_unet",
]

NULL_CLASS = 10
_LOG = get_logger(__name__)
_SCHEDULE = {"num_train_timesteps": 1000, "beta_start": 1e-4, "beta_end": 0.02, "beta_schedule": "linear"}


@dataclass(frozen=True)
class DigitsSplit:
    """scikit-learn's digits scaled to ``[-1, 1]``, split 80/20 with a fixed seed.

    Attributes:
        x_train: ``(N_train, 1, 8, 8)`` float32 images.
        y_train: ``(N_train,)`` int64 labels in ``0..9``.
        x_test: ``(N_test, 1, 8, 8)`` float32 held-out images.
        y_test: ``(N_test,)`` int64 held-out labels.
    """

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor


def load_digits(*, test_fraction: float = 0.2, split_seed: int = 0) -> DigitsSplit:
    """Load ``sklearn.datasets.load_digits`` (1797 images, levels 0-16) as ``[-1, 1]`` tensors with a held-out part.

    Args:
        test_fraction: share held out, in ``(0, 1)``.
        split_seed: seed of the stratified split.

    Returns:
        A :class:`DigitsSplit`.

    Raises:
        ValueError: if ``test_fraction`` is not in ``(0, 1)``.
    """
    from sklearn.datasets import load_digits as _sk_digits
    from sklearn.model_selection import train_test_split

    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    data = _sk_digits()
    x = (data.images.astype(np.float32) / 8.0 - 1.0)[:, None]
    y = data.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_fraction, random_state=split_seed, stratify=y)
    return DigitsSplit(torch.from_numpy(x_tr), torch.from_numpy(y_tr), torch.from_numpy(x_te), torch.from_numpy(y_te))


def digits_unet() -> UNet2DModel:
    """A fresh (random-init) class-conditional ``UNet2DModel`` for 8x8 digits, about 0.18M parameters."""
    return UNet2DModel(
        sample_size=8,
        in_channels=1,
        out_channels=1,
        block_out_channels=(16, 32),
        layers_per_block=1,
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        num_class_embeds=NULL_CLASS + 1,
        norm_num_groups=8,
        attention_head_dim=8,
    )


def digits_scheduler() -> DDIMScheduler:
    """The DDIM sampler of the digits model: linear DDPM betas 1e-4..0.02 over 1000 steps, SD-style offset 1."""
    return DDIMScheduler(**_SCHEDULE, clip_sample=False, set_alpha_to_one=False, steps_offset=1)


def _weights_path() -> Path:
    return Path(str(files("nips25_gradspo") / "data" / "digits_unet.safetensors"))


def load_digits_unet(path: str | Path | None = None) -> UNet2DModel:
    """Load the pretrained digits UNet (the shipped weights unless ``path`` names another safetensors file).

    Raises:
        FileNotFoundError: if ``path`` (or the shipped file) does not exist.
    """
    from safetensors.torch import load_file

    p = _weights_path() if path is None else Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: no digits UNet weights at {p}; run `nips25-gradspo pretrain --out {p}`")
    unet = digits_unet()
    unet.load_state_dict(load_file(str(p)))
    unet.eval()
    return unet


def pretrain_digits_unet(
    out: str | Path,
    *,
    steps: int = 2500,
    batch_size: int = 128,
    lr: float = 2e-3,
    p_uncond: float = 0.1,
    seed: int = 0,
    accelerator: Any = None,
) -> Path:
    r"""Train the digits UNet by DDPM's simplified loss :math:`\|\epsilon - \epsilon_\theta(x_t, t, c)\|^2`.

    The class is replaced by ``NULL_CLASS`` with probability ``p_uncond`` so the model also learns the
    unconditional score (classifier-free guidance). Only the 80% training split is used.

    Args:
        out: safetensors file to write.
        steps: optimiser steps (>= 1).
        batch_size: images per step (>= 1).
        lr: AdamW learning rate (> 0), cosine-decayed to 0.
        p_uncond: probability of the null class, in ``[0, 1)``.
        seed: random seed.
        accelerator: an ``accelerate.Accelerator`` (default: a new one). Data-parallel: every process draws the
            same global batch of ``batch_size`` from the seeded generator and trains on its contiguous share
            (``batch_size / num_processes`` rows; DDP averages the gradients, so the update is the global batch's),
            and the cosine schedule steps once per optimiser step; one process gives the same draws and weights as
            before this argument existed (the shipped weights reproduce). The main process writes ``out`` after
            ``wait_for_everyone()``.

    Returns:
        The path written.

    Raises:
        ValueError: if a hyper-parameter is out of range, or ``batch_size`` is not a multiple of the number of
            processes.
    """
    from accelerate import Accelerator
    from safetensors.torch import save_file

    if steps < 1 or batch_size < 1 or not lr > 0 or not 0.0 <= p_uncond < 1.0:
        raise ValueError(
            f"need steps >= 1, batch_size >= 1, lr > 0, p_uncond in [0, 1); got {steps}, {batch_size}, {lr}, {p_uncond}"
        )
    acc = accelerator if accelerator is not None else Accelerator()
    world, rank = acc.num_processes, acc.process_index
    if batch_size % world:
        raise ValueError(f"batch_size ({batch_size}) must be a multiple of the number of processes ({world})")
    share = slice(rank * (batch_size // world), (rank + 1) * (batch_size // world))
    seed_everything(seed)
    data = load_digits()
    unet = digits_unet()
    ddpm = DDPMScheduler(**_SCHEDULE)
    opt = torch.optim.AdamW(unet.parameters(), lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)  # not prepared: one step per real step
    unet, opt = acc.prepare(unet, opt)
    gen = torch.Generator().manual_seed(seed)  # the same global draws on every process
    n = len(data.x_train)
    unet.train()
    for step in progress(range(steps), desc="pretrain digits UNet"):
        idx = torch.randint(0, n, (batch_size,), generator=gen)
        x0, c = data.x_train[idx], data.y_train[idx].clone()
        c[torch.rand(batch_size, generator=gen) < p_uncond] = NULL_CLASS
        t = torch.randint(0, ddpm.config.num_train_timesteps, (batch_size,), generator=gen)
        eps = torch.randn(x0.shape, generator=gen)
        x0, c, t, eps = (v[share].to(acc.device) for v in (x0, c, t, eps))
        loss = torch.nn.functional.mse_loss(unet(ddpm.add_noise(x0, eps, t), t, c).sample, eps)
        opt.zero_grad()
        acc.backward(loss)
        acc.clip_grad_norm_(unet.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 500 == 0:
            _LOG.info("pretrain step %d loss %.4f", step, loss.item())
    p = Path(out)
    acc.wait_for_everyone()
    if acc.is_main_process:
        p.parent.mkdir(parents=True, exist_ok=True)
        state = acc.unwrap_model(unet).state_dict()
        save_file({k: v.detach().cpu().contiguous() for k, v in state.items()}, str(p))
    acc.wait_for_everyone()
    return p
