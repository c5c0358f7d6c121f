"""Stable Diffusion 1.5 / SDXL pipelines from a local path, and their prompts as trainer conditioning."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import torch
from diffusers.schedulers.scheduling_ddim import DDIMScheduler

__all__ = ["encode_prompts", "latent_shape", "load_sd_pipeline"]


def load_sd_pipeline(
    path: str | Path, *, variant: Literal["sd15", "sdxl"] = "sd15", dtype: torch.dtype = torch.float32
) -> Any:
    """Load a Stable Diffusion 1.5 or SDXL pipeline from a local diffusers directory, with a DDIM scheduler.

    Nothing is downloaded (``local_files_only=True``); the safety checker is off.

    Args:
        path: directory holding ``model_index.json`` (e.g. a saved ``runwayml/stable-diffusion-v1-5``).
        variant: ``"sd15"`` or ``"sdxl"``.
        dtype: weight dtype (``torch.float16`` on GPU as in the paper).

    Returns:
        ``StableDiffusionPipeline`` or ``StableDiffusionXLPipeline`` with ``pipe.scheduler`` a ``DDIMScheduler``.

    Raises:
        FileNotFoundError: if ``path`` has no ``model_index.json``.
        ValueError: for an unknown ``variant``.
    """
    from diffusers import StableDiffusionPipeline, StableDiffusionXLPipeline

    if variant not in ("sd15", "sdxl"):
        raise ValueError(f"variant must be 'sd15' or 'sdxl', got {variant!r}")
    p = Path(path)
    if not (p / "model_index.json").is_file():
        raise FileNotFoundError(
            f"path: no diffusers pipeline at {p} (model_index.json missing); save one with "
            "pipe.save_pretrained(dir) on a machine with the weights and pass that directory"
        )
    if variant == "sd15":
        pipe = StableDiffusionPipeline.from_pretrained(
            str(p), torch_dtype=dtype, safety_checker=None, requires_safety_checker=False, local_files_only=True
        )
    else:
        pipe = StableDiffusionXLPipeline.from_pretrained(str(p), torch_dtype=dtype, local_files_only=True)
    pipe.scheduler = DDIMScheduler.from_config(pipe.scheduler.config)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def latent_shape(pipe: Any, batch: int, *, height: int | None = None, width: int | None = None) -> tuple[int, ...]:
    """``(batch, C, H/f, W/f)`` latent shape of ``pipe`` for images ``height x width`` (default: the UNet's size)."""
    f = pipe.vae_scale_factor
    h = height or pipe.unet.config.sample_size * f
    w = width or pipe.unet.config.sample_size * f
    return (batch, pipe.unet.config.in_channels, h // f, w // f)


@torch.no_grad()
def encode_prompts(
    pipe: Any, prompts: Sequence[str], *, height: int | None = None, width: int | None = None
) -> dict[str, torch.Tensor]:
    """Encode prompts (and the empty negative prompt) into the conditioning of :class:`TextDenoiser`.

    Args:
        pipe: an SD1.5 or SDXL pipeline.
        prompts: non-empty list of strings.
        height, width: image size (SDXL's ``time_ids``); default the UNet's native size.

    Returns:
        ``{"prompt_embeds", "negative_prompt_embeds"}`` and, for SDXL, ``{"text_embeds", "negative_text_embeds",
        "time_ids"}``, each with leading dimension ``len(prompts)``.

    Raises:
        ValueError: if ``prompts`` is empty or holds a non-string.
    """
    if isinstance(prompts, str) or not prompts or not all(isinstance(s, str) for s in prompts):
        raise ValueError("prompts must be a non-empty list of strings")
    device = pipe.unet.device
    if hasattr(pipe, "text_encoder_2"):
        pe, npe, pooled, npooled = pipe.encode_prompt(
            list(prompts), device=device, num_images_per_prompt=1, do_classifier_free_guidance=True
        )
        _, _, h, w = latent_shape(pipe, 1, height=height, width=width)
        f = pipe.vae_scale_factor
        size = (h * f, w * f)
        proj = pipe.text_encoder_2.config.projection_dim
        ids = pipe._get_add_time_ids(size, (0, 0), size, dtype=pe.dtype, text_encoder_projection_dim=proj)
        ids = ids.to(device).repeat(len(prompts), 1)
        return {
            "prompt_embeds": pe,
            "negative_prompt_embeds": npe,
            "text_embeds": pooled,
            "negative_text_embeds": npooled,
            "time_ids": ids,
        }
    pe, npe = pipe.encode_prompt(list(prompts), device, 1, True)
    return {"prompt_embeds": pe, "negative_prompt_embeds": npe}
