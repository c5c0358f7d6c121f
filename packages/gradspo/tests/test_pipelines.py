"""Real pipeline code on tiny random SD1.5 / SDXL pipelines: load, sample with candidates, train, save a plain LoRA."""

from __future__ import annotations

import json

import pytest
import torch
from nips25_gradspo import (
    StepwiseTrainer,
    TextDenoiser,
    TrainerConfig,
    add_unet_lora,
    encode_prompts,
    latent_shape,
    load_sd_pipeline,
    save_lora,
)
from safetensors import safe_open

from .conftest import tiny_sd15, tiny_sdxl


def _latent_reward(x: torch.Tensor, t: torch.Tensor, cond) -> torch.Tensor:
    """A stand-in step-aware reward on latents: negative mean of channel 0."""
    return -x[:, 0].flatten(1).mean(1)


@pytest.mark.parametrize("variant", ["sd15", "sdxl"])
def test_pipeline_load_train_save_and_vanilla_load(tmp_path, variant):
    """Save a tiny pipeline, reload it via load_sd_pipeline, one GradSPO step (3 steps, K=2), save the LoRA and
    load it into a fresh pipeline with vanilla diffusers: same UNet output to 1e-6, base weights unchanged.

    Review finding (issue 30): alpha != r must survive the round trip. Without the adapter metadata diffusers
    reloads alpha = r and the outputs differ by ~0.1, so the LoRA here has r = 4, alpha = 8."""
    build = tiny_sd15 if variant == "sd15" else tiny_sdxl
    build(tmp_path).save_pretrained(tmp_path / "pipe")
    pipe = load_sd_pipeline(tmp_path / "pipe", variant=variant)
    base = {k: v.clone() for k, v in pipe.unet.state_dict().items()}
    add_unet_lora(pipe.unet, r=4, alpha=8.0)
    cond = encode_prompts(pipe, ["a cat", "a dog"])
    cfg = TrainerConfig(num_inference_steps=3, num_candidates=2, divert_start_step=1, threshold=0.0, lr=1e-2)
    tr = StepwiseTrainer(
        TextDenoiser(pipe.unet, guidance_scale=5.0), pipe.scheduler, _latent_reward, config=cfg,
        latent_shape=latent_shape(pipe, 1)[1:],
    )  # fmt: skip
    stats = tr.step(cond, generator=torch.Generator().manual_seed(0))
    assert stats["n_pairs"] > 0
    save_lora(pipe, tmp_path / "lora")
    weights = tmp_path / "lora" / "pytorch_lora_weights.safetensors"
    with safe_open(str(weights), framework="pt") as f:
        header = json.loads(f.metadata()["lora_adapter_metadata"])
    assert header["unet.lora_alpha"] == 8.0 and header["unet.r"] == 4

    assert not (save_lora(pipe, tmp_path / "other", is_main_process=False)).exists()  # non-main ranks write nothing

    fresh = load_sd_pipeline(tmp_path / "pipe", variant=variant)
    fresh.load_lora_weights(str(tmp_path / "lora"))
    x = torch.randn(latent_shape(pipe, 2), generator=torch.Generator().manual_seed(1))
    t = torch.tensor([901, 501])
    with torch.no_grad():
        want = TextDenoiser(pipe.unet, guidance_scale=5.0)(x, t, cond)
        got = TextDenoiser(fresh.unet, guidance_scale=5.0)(x, t, cond)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    for k, v in pipe.unet.state_dict().items():
        if "lora_" in k:
            continue
        key = k.replace(".base_layer", "")
        torch.testing.assert_close(v, base[key], rtol=0, atol=0)


def test_load_sd_pipeline_names_the_missing_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="model_index.json"):
        load_sd_pipeline(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="variant"):
        load_sd_pipeline(tmp_path, variant="sd3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="guidance_scale"):
        TextDenoiser(torch.nn.Linear(1, 1), guidance_scale=0.5)
