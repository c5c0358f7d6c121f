r"""Denoisers: a UNet plus its conditioning, returning the classifier-free-guided noise prediction.

:math:`\epsilon^{cfg} = \epsilon(x_t, t, \varnothing) + w\,(\epsilon(x_t, t, c) - \epsilon(x_t, t, \varnothing))`;
with :math:`w = 1` only the conditional pass runs. The conditioning of a batch is a mapping of tensors that all
have the batch as their leading dimension, so the trainer can index, repeat and concatenate it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

import torch

__all__ = ["ClassDenoiser", "Cond", "Denoiser", "TextDenoiser", "index_cond", "repeat_cond"]

Cond = Mapping[str, torch.Tensor]


@runtime_checkable
class Denoiser(Protocol):
    """``denoiser(x_t, t, cond) -> eps`` with CFG applied; ``denoiser.unet`` is the module that carries the LoRA."""

    unet: torch.nn.Module
    guidance_scale: float

    def __call__(self, x: torch.Tensor, t: torch.Tensor, cond: Cond) -> torch.Tensor: ...


def _check_scale(guidance_scale: float) -> float:
    if isinstance(guidance_scale, bool) or not isinstance(guidance_scale, (int, float)):
        raise TypeError(f"guidance_scale must be a float, got {type(guidance_scale).__name__}")
    if not (math.isfinite(guidance_scale) and guidance_scale >= 1.0):
        raise ValueError(f"guidance_scale must be finite and >= 1, got {guidance_scale}")
    return float(guidance_scale)


def index_cond(cond: Cond, idx: torch.Tensor | slice) -> dict[str, torch.Tensor]:
    """Select rows ``idx`` of every tensor in ``cond``."""
    return {k: v[idx] for k, v in cond.items()}


def repeat_cond(cond: Cond, times: int) -> dict[str, torch.Tensor]:
    """Stack ``times`` copies of the batch along the leading dimension (candidate-major order)."""
    return {k: v.repeat(times, *([1] * (v.ndim - 1))) for k, v in cond.items()}


def _guided(eps: torch.Tensor, w: float) -> torch.Tensor:
    cond, uncond = eps.chunk(2)
    return uncond + w * (cond - uncond)


class ClassDenoiser:
    """A class-conditional ``UNet2DModel``; ``cond = {"class_labels": (B,) long}``, null class for CFG.

    Args:
        unet: ``UNet2DModel`` with ``num_class_embeds``.
        guidance_scale: CFG weight ``w >= 1``.
        null_class: the label of the empty prompt.

    Raises:
        ValueError: (on call) if ``cond['class_labels']`` is missing, not ``(B,)`` integers, or outside
            ``0 .. num_class_embeds - 1``.

    Example:
        >>> from nips25_gradspo.digits import digits_unet
        >>> d = ClassDenoiser(digits_unet(), guidance_scale=2.0)
        >>> d(torch.zeros(2, 1, 8, 8), torch.tensor([10, 10]), {"class_labels": torch.tensor([1, 2])}).shape
        torch.Size([2, 1, 8, 8])
        >>> d(torch.zeros(1, 1, 8, 8), torch.tensor([10]), {"class_labels": torch.tensor([11])})
        Traceback (most recent call last):
        ...
        ValueError: cond['class_labels'] must lie in 0..10 (num_class_embeds=11), got [11]
    """

    def __init__(self, unet: torch.nn.Module, *, guidance_scale: float = 1.0, null_class: int = 10) -> None:
        self.unet = unet
        self.guidance_scale = _check_scale(guidance_scale)
        self.null_class = int(null_class)

    def __call__(self, x: torch.Tensor, t: torch.Tensor, cond: Cond) -> torch.Tensor:
        if "class_labels" not in cond:
            raise ValueError(f"cond must hold 'class_labels', got keys {sorted(cond)}")
        c = cond["class_labels"]
        n_classes = getattr(getattr(self.unet, "config", None), "num_class_embeds", None)
        if c.dtype not in (torch.int32, torch.int64) or c.shape != (x.shape[0],):
            raise ValueError(
                f"cond['class_labels'] must be ({x.shape[0]},) integer labels, got {tuple(c.shape)} {c.dtype}"
            )
        if n_classes is not None and c.numel() and bool(((c < 0) | (c >= n_classes)).any()):
            raise ValueError(
                f"cond['class_labels'] must lie in 0..{n_classes - 1} (num_class_embeds={n_classes}), got "
                f"{sorted(set(c[(c < 0) | (c >= n_classes)].tolist()))[:5]}"
            )
        if self.guidance_scale == 1.0:
            return self.unet(x, t, class_labels=c).sample
        null = torch.full_like(c, self.null_class)
        eps = self.unet(torch.cat([x, x]), torch.cat([t, t]), class_labels=torch.cat([c, null])).sample
        return _guided(eps, self.guidance_scale)


class TextDenoiser:
    """A ``UNet2DConditionModel`` of SD1.5 or SDXL with prompt embeddings from :func:`encode_prompts`.

    ``cond`` holds ``prompt_embeds``/``negative_prompt_embeds`` ``(B, L, D)`` and, for SDXL, ``text_embeds``/
    ``negative_text_embeds`` ``(B, P)`` and ``time_ids`` ``(B, 6)``.

    Args:
        unet: the pipeline's UNet.
        guidance_scale: CFG weight ``w >= 1`` (5 in GradSPO's configs).
    """

    def __init__(self, unet: torch.nn.Module, *, guidance_scale: float = 5.0) -> None:
        self.unet = unet
        self.guidance_scale = _check_scale(guidance_scale)

    def __call__(self, x: torch.Tensor, t: torch.Tensor, cond: Cond) -> torch.Tensor:
        if "prompt_embeds" not in cond:
            raise ValueError(f"cond must hold 'prompt_embeds', got keys {sorted(cond)}")
        xl = "text_embeds" in cond
        if self.guidance_scale == 1.0:
            added = {"text_embeds": cond["text_embeds"], "time_ids": cond["time_ids"]} if xl else None
            return self.unet(x, t, encoder_hidden_states=cond["prompt_embeds"], added_cond_kwargs=added).sample
        hidden = torch.cat([cond["prompt_embeds"], cond["negative_prompt_embeds"]])
        added = None
        if xl:
            added = {
                "text_embeds": torch.cat([cond["text_embeds"], cond["negative_text_embeds"]]),
                "time_ids": torch.cat([cond["time_ids"], cond["time_ids"]]),
            }
        eps = self.unet(torch.cat([x, x]), torch.cat([t, t]), encoder_hidden_states=hidden, added_cond_kwargs=added)
        return _guided(eps.sample, self.guidance_scale)
