"""Tiny random-init models shared by the tests (no network, CPU only)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
torch.set_num_threads(1)


def pytest_configure(config):
    config.addinivalue_line("markers", "distributed: runs several processes under accelerate launch (issue 42)")


SD15 = dict(
    beta_schedule="scaled_linear",
    beta_start=0.00085,
    beta_end=0.012,
    set_alpha_to_one=False,
    steps_offset=1,
    clip_sample=False,
)


def sd15_scheduler(steps: int = 20):
    from diffusers import DDIMScheduler

    s = DDIMScheduler(**SD15)
    s.set_timesteps(steps)
    return s


def tiny_tokenizer(tmp: Path):
    """A CLIPTokenizer over single characters, written to ``tmp`` (no hub access)."""
    from transformers import CLIPTokenizer

    chars = "abcdefghijklmnopqrstuvwxyz0123456789"
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for c in chars:
        vocab[c] = len(vocab)
        vocab[c + "</w>"] = len(vocab)
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "vocab.json").write_text(json.dumps(vocab))
    (tmp / "merges.txt").write_text("#version: 0.2\n")
    return CLIPTokenizer(str(tmp / "vocab.json"), str(tmp / "merges.txt"), model_max_length=16)


def _text_encoder(with_projection: bool = False):
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

    cfg = CLIPTextConfig(
        bos_token_id=0, eos_token_id=1, pad_token_id=1, hidden_size=32, intermediate_size=37,
        num_attention_heads=4, num_hidden_layers=2, vocab_size=100, max_position_embeddings=16, projection_dim=32,
    )  # fmt: skip
    return CLIPTextModelWithProjection(cfg) if with_projection else CLIPTextModel(cfg)


def _vae():
    from diffusers import AutoencoderKL

    return AutoencoderKL(
        block_out_channels=[32, 64], in_channels=3, out_channels=3, latent_channels=4, sample_size=16,
        down_block_types=["DownEncoderBlock2D"] * 2, up_block_types=["UpDecoderBlock2D"] * 2,
    )  # fmt: skip


def tiny_sd15(tmp: Path):
    from diffusers import DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel

    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        block_out_channels=(32, 64), layers_per_block=1, sample_size=8, in_channels=4, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32, norm_num_groups=8,
    )  # fmt: skip
    return StableDiffusionPipeline(
        vae=_vae(), text_encoder=_text_encoder(), tokenizer=tiny_tokenizer(tmp / "tok"), unet=unet,
        scheduler=DDIMScheduler(**SD15), safety_checker=None, feature_extractor=None, requires_safety_checker=False,
    )  # fmt: skip


def tiny_sdxl(tmp: Path):
    from diffusers import DDIMScheduler, StableDiffusionXLPipeline, UNet2DConditionModel

    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        block_out_channels=(32, 64), layers_per_block=1, sample_size=8, in_channels=4, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        attention_head_dim=(2, 4), use_linear_projection=True, addition_embed_type="text_time",
        addition_time_embed_dim=8, transformer_layers_per_block=(1, 2), projection_class_embeddings_input_dim=80,
        cross_attention_dim=64, norm_num_groups=8,
    )  # fmt: skip
    tok = tiny_tokenizer(tmp / "tok")
    return StableDiffusionXLPipeline(
        vae=_vae(), text_encoder=_text_encoder(), text_encoder_2=_text_encoder(True), tokenizer=tok,
        tokenizer_2=tok, unet=unet, scheduler=DDIMScheduler(**SD15),
    )  # fmt: skip


@pytest.fixture
def digits_trainer_factory():
    """Build a tiny digits trainer (random-init UNet and classifier) for a method."""
    from nips25_gradspo import (
        ClassDenoiser,
        DigitReward,
        NoisyDigitClassifier,
        StepwiseTrainer,
        TrainerConfig,
        add_unet_lora,
        digits_scheduler,
        digits_unet,
    )

    def make(method: str = "gradspo", seed: int = 0, **kw):
        torch.manual_seed(seed)
        unet = digits_unet()
        add_unet_lora(unet, r=2, alpha=2.0, target_modules=("to_q", "to_v", "conv1"))
        clf = NoisyDigitClassifier(width=8)
        kw = {"threshold": 0.0, **kw}
        cfg = TrainerConfig(method=method, num_inference_steps=3, num_candidates=2, divert_start_step=1,
                            lr=1e-2, **kw)  # fmt: skip
        return StepwiseTrainer(ClassDenoiser(unet), digits_scheduler(), DigitReward(clf), config=cfg,
                               latent_shape=(1, 8, 8))  # fmt: skip

    return make
