"""Tiny configurations shared by the tests (no network, CPU only)."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
torch.set_num_threads(1)


def _tiny_config(**overrides):
    from nips25_sama import SAMAConfig

    base = dict(
        vis_dim=12,
        tokens_per_frame=16,
        spatial_width=10,
        qformer_hidden=8,
        qformer_heads=2,
        qformer_intermediate=16,
        spatial_layers=2,
        temporal_layers=2,
        spatial_queries=4,
        temporal_queries=3,
        window_size=8,
        stride=8,
        region_mask_size=8,
        region_hidden=6,
        dropout=0.0,
    )
    base.update(overrides)
    return SAMAConfig(**base)


@pytest.fixture(scope="session")
def tokenizer():
    from nips25_sama.loading import build_temporal_tokenizer

    return build_temporal_tokenizer()


@pytest.fixture
def tiny_config():
    """Factory of a tiny SAMAConfig (C = 12, Q-Former width 8, windows of 8 spatial tokens)."""
    return _tiny_config


# tests/data holds fixture-generation and provenance scripts (run by hand, outside the repository's environment),
# not tests: keep them out of pytest's --doctest-modules collection.
# --- tiny random components of SamaPipeline (no download, CPU, < 1 s to build) ---------------------------------
WORDS = [
    "the",
    "dog",
    "cat",
    "is",
    "running",
    "red",
    "it",
    "sure",
    ".",
    "what",
    "does",
    "do",
    "?",
    "where",
    "left",
    ",",
]
SPECIAL = ["<IMG_CONTEXT>", "<img>", "</img>", "<vp>", "</vp>", "[SEG]", "<|im_start|>", "<|im_end|>"]


def llm_tokenizer():
    """A word-level LLM tokenizer holding SAMA's placeholder tokens (built in memory with `tokenizers`)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["[UNK]", "user", "assistant", *WORDS])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace()])
    tok.decoder = decoders.WordPiece(prefix="##")
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")
    fast.add_special_tokens({"additional_special_tokens": SPECIAL})
    return fast


def tiny_vlm(vocab_size: int, *, hidden: int = 12, seed: int = 0):
    """InternVL (InternViT 32x32, patch 4 -> 64 patches -> pixel shuffle 0.5 -> 16 tokens) + a 1-layer Qwen2."""
    from transformers import InternVLConfig, InternVLForConditionalGeneration, InternVLVisionConfig, Qwen2Config

    torch.manual_seed(seed)
    vision = InternVLVisionConfig(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, image_size=32, patch_size=4
    )
    text = Qwen2Config(
        hidden_size=hidden,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=24,
        vocab_size=vocab_size,
        tie_word_embeddings=False,
    )
    cfg = InternVLConfig(vision_config=vision, text_config=text, downsample_ratio=0.5, image_token_id=0)
    return InternVLForConditionalGeneration(cfg).eval()


def tiny_sam2(seed: int = 0):
    """SAM2 on 64x64 inputs: a 2-stage Hiera (dims 8/16), FPN width 16, prompt/decoder width 16."""
    from transformers import (
        Sam2Config,
        Sam2HieraDetConfig,
        Sam2MaskDecoderConfig,
        Sam2Model,
        Sam2PromptEncoderConfig,
        Sam2VisionConfig,
    )

    torch.manual_seed(seed)
    hiera = Sam2HieraDetConfig(
        hidden_size=8,
        num_attention_heads=1,
        image_size=[64, 64],
        num_query_pool_stages=2,
        blocks_per_stage=[1, 1, 2],
        embed_dim_per_stage=[8, 16, 32],
        num_attention_heads_per_stage=[1, 1, 2],
        window_size_per_stage=[4, 4, 4],
        global_attention_blocks=[3],
        window_positional_embedding_background_size=[2, 2],
    )
    vision = Sam2VisionConfig(
        backbone_config=hiera,
        backbone_channel_list=[32, 16, 8],
        backbone_feature_sizes=[[16, 16], [8, 8], [4, 4]],
        fpn_hidden_size=16,
        fpn_top_down_levels=[1, 2],
        num_feature_levels=3,
    )
    prompt = Sam2PromptEncoderConfig(hidden_size=16, image_size=64, patch_size=16, mask_input_channels=4)
    decoder = Sam2MaskDecoderConfig(hidden_size=16, mlp_dim=32, num_attention_heads=2, iou_head_hidden_dim=16)
    model = Sam2Model(Sam2Config(vision_config=vision, prompt_encoder_config=prompt, mask_decoder_config=decoder))
    # SAM2's initialisation leaves the mask head near zero (logits ~1e-6); spread the weights so masks vary.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 1.0 / p.shape[1] ** 0.5)
    return model.eval()


@pytest.fixture(scope="session")
def pipeline_parts():
    """``(llm_tokenizer, tiny_vlm, tiny_sam2)`` builders for the SamaPipeline tests."""
    return llm_tokenizer, tiny_vlm, tiny_sam2


collect_ignore_glob = ["data/*.py"]
