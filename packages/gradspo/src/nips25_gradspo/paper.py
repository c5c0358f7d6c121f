"""``--profile paper``: GradSPO on Stable Diffusion 1.5 with SPO's step-aware preference model, all from local paths.

Inputs (environment variables, nothing is downloaded):

* ``NIPS25_GRADSPO_SD15``: a saved SD1.5 diffusers directory (``model_index.json``);
* ``NIPS25_GRADSPO_SPM``: the PickScore_v1 CLIP directory with its tokenizer and image processor;
* ``NIPS25_GRADSPO_SPM_CKPT``: SPO's released step-aware preference model checkpoint (state dict file);
* ``NIPS25_GRADSPO_PROMPTS``: a prompt file (one prompt per line, or a JSON list of strings).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from nips25_shared import get_logger, progress

__all__ = ["PaperConfig", "check_paper_inputs", "read_prompts", "run_paper"]

_LOG = get_logger(__name__)

PAPER_INPUTS = {
    "sd15": ("NIPS25_GRADSPO_SD15", "a saved Stable Diffusion 1.5 diffusers directory (model_index.json)"),
    "spm": ("NIPS25_GRADSPO_SPM", "the PickScore_v1 CLIP directory (config.json, tokenizer, image processor)"),
    "spm_ckpt": ("NIPS25_GRADSPO_SPM_CKPT", "SPO's step-aware preference model checkpoint file"),
    "prompts": ("NIPS25_GRADSPO_PROMPTS", "a prompt file (one prompt per line or a JSON list)"),
}


@dataclass(frozen=True)
class PaperConfig:
    """The SD1.5 configuration of GradSPO (official code's values; see the README's Choices).

    Attributes:
        iters: optimiser steps (the paper: 10 epochs over 4k prompts at batch 10 on 4 GPUs, i.e. 1,000 per GPU).
        batch: prompts per iteration (10).
        num_inference_steps: DDIM steps (20), candidates from ``divert_start_step`` (4), ``num_candidates`` K (4).
        threshold: pair validity threshold (0.3), ``guidance_scale`` CFG (5.0), ``lr`` AdamW (6e-5), LoRA rank (4).
    """

    iters: int = 1000
    batch: int = 10
    num_inference_steps: int = 20
    divert_start_step: int = 4
    num_candidates: int = 4
    threshold: float = 0.3
    guidance_scale: float = 5.0
    lr: float = 6e-5
    lora_r: int = 4

    def __post_init__(self) -> None:
        for name in ("iters", "batch", "num_inference_steps", "lora_r"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"PaperConfig.{name} must be a positive int, got {v!r}")
        if self.num_candidates < 2:
            raise ValueError(f"PaperConfig.num_candidates must be >= 2, got {self.num_candidates}")
        if not 0 <= self.divert_start_step < self.num_inference_steps:
            raise ValueError(f"PaperConfig.divert_start_step must be in [0, {self.num_inference_steps})")


def check_paper_inputs(env: dict[str, str] | None = None) -> dict[str, Path]:
    """The local inputs of ``--profile paper`` from the environment.

    Returns:
        ``{"sd15", "spm", "spm_ckpt", "prompts"}`` paths.

    Raises:
        FileNotFoundError: one line naming every missing variable or path and what it should hold.
    """
    env = dict(os.environ) if env is None else env
    found: dict[str, Path] = {}
    missing = []
    for key, (var, what) in PAPER_INPUTS.items():
        raw = env.get(var)
        p = Path(raw) if raw else None
        ok = p is not None and (
            (p / "model_index.json").is_file()
            if key == "sd15"
            else (p / "config.json").is_file()
            if key == "spm"
            else p.is_file()
        )
        if ok and p is not None:
            found[key] = p
        else:
            missing.append(f"{var}={raw or '(unset)'}: {what}")
    if missing:
        raise FileNotFoundError(
            "--profile paper needs local weights and data (nothing is downloaded); missing: " + "; ".join(missing)
        )
    return found


def read_prompts(path: str | Path) -> list[str]:
    """Prompts from a text file (one per line, blank lines skipped) or a JSON list of strings.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if it is not UTF-8 text, not valid JSON (``.json``), holds no prompt or a JSON value that is
            not a list of strings; the message names the file.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: no prompt file at {p}")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"path: {p} is not UTF-8 text (byte {err.start})") from None
    if p.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(
                f"path: {p} is not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})"
            ) from None
        if not isinstance(data, list) or not all(isinstance(s, str) for s in data):
            raise ValueError(f"path: {p} must hold a JSON list of strings")
        prompts = [s for s in data if s.strip()]
    else:
        prompts = [line.strip() for line in text.splitlines() if line.strip()]
    if not prompts:
        raise ValueError(f"path: {p} holds no prompt")
    return prompts


def run_paper(
    paths: dict[str, Path],
    *,
    config: PaperConfig,
    seed: int,
    out_dir: Path,
    dtype: torch.dtype = torch.float32,
    accelerator: Any = None,
) -> dict[str, Any]:
    """Train a GradSPO LoRA on SD1.5 against the step-aware preference model and save it (diffusers format).

    Args:
        paths: from :func:`check_paper_inputs`.
        config: :class:`PaperConfig`.
        seed: seeds the prompt order and every rollout.
        out_dir: the LoRA goes to ``out_dir / "lora"``.
        dtype: weight dtype of the pipeline (``torch.float16`` on GPU).
        accelerator: an ``accelerate.Accelerator`` (default ``Accelerator()``: the device and process group of
            ``accelerate launch``); the prompt batch is global and sharded over processes; only the main process
            writes the LoRA.

    Returns:
        ``{"rewards": [...], "n_pairs": [...], "lora": path}``: mean step-aware reward of each iteration's final
        samples (scored at t = 0) and the number of valid pairs.
    """
    from accelerate import Accelerator

    from nips25_gradspo.denoisers import TextDenoiser
    from nips25_gradspo.lora import add_unet_lora, save_lora
    from nips25_gradspo.pipelines import encode_prompts, latent_shape, load_sd_pipeline
    from nips25_gradspo.preference_model import PreferenceModelReward, load_step_aware_preference_model
    from nips25_gradspo.trainer import StepwiseTrainer, TrainerConfig

    accelerator = Accelerator() if accelerator is None else accelerator
    device = accelerator.device
    prompts = read_prompts(paths["prompts"])
    pipe = load_sd_pipeline(paths["sd15"], variant="sd15", dtype=dtype).to(device)
    add_unet_lora(pipe.unet, r=config.lora_r, alpha=float(config.lora_r))
    spm, tok, proc = load_step_aware_preference_model(paths["spm"], checkpoint=paths["spm_ckpt"])
    spm = spm.to(device)
    crop = proc.crop_size
    side = int(crop["height"]) if hasattr(crop, "__getitem__") and not isinstance(crop, int) else int(crop)
    reward = PreferenceModelReward(
        spm, pipe.vae, image_size=side, mean=tuple(proc.image_mean), std=tuple(proc.image_std)
    )
    tcfg = TrainerConfig(
        method="gradspo",
        num_inference_steps=config.num_inference_steps,
        divert_start_step=config.divert_start_step,
        num_candidates=config.num_candidates,
        threshold=config.threshold,
        lr=config.lr,
        reward_input="x0_hat",
    )
    trainer = StepwiseTrainer(
        TextDenoiser(pipe.unet, guidance_scale=config.guidance_scale), pipe.scheduler, reward, config=tcfg,
        latent_shape=tuple(latent_shape(pipe, 1)[1:]),  # type: ignore[arg-type]
        accelerator=accelerator,
    )  # fmt: skip
    max_len = min(int(tok.model_max_length), int(spm.clip.config.text_config.max_position_embeddings))  # 77 for CLIP
    gen = torch.Generator().manual_seed(seed)
    rewards, n_pairs = [], []
    for _ in progress(range(config.iters), desc="gradspo sd15"):
        idx = torch.randint(0, len(prompts), (config.batch,), generator=gen).tolist()
        batch = [prompts[i] for i in idx]
        cond = encode_prompts(pipe, batch)
        ids = tok(batch, padding="max_length", truncation=True, max_length=max_len, return_tensors="pt")
        cond["spm_input_ids"] = ids.input_ids.to(device)
        stats = trainer.step(cond, generator=gen)
        rewards.append(stats["final_reward"])
        n_pairs.append(stats["n_pairs"])
    accelerator.wait_for_everyone()
    lora = save_lora(pipe, Path(out_dir) / "lora", is_main_process=accelerator.is_main_process)
    accelerator.wait_for_everyone()
    _LOG.info("saved the LoRA to %s", lora)
    return {"rewards": rewards, "n_pairs": n_pairs, "lora": str(lora)}
