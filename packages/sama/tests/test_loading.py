"""Checkpoint key mapping on synthetic state dicts with the released key layout, and the temporal tokenizer."""

from __future__ import annotations

import pytest
import torch
from nips25_sama import SpatioTemporalAggregator
from nips25_sama.loading import (
    encode_prompts,
    init_spatial_qformer_from_instructblip,
    load_sama_aggregator_state,
    sama_key_to_ours,
)

# Our name -> the released name (SAMA's InternVL_Slowfast attributes), written out by hand.
_OFFICIAL = [
    ("spatial_qformer.query_tokens", "spatial_Qformer_query_tokens"),
    ("spatial_qformer.", "spatial_Qformer.bert."),
    ("temporal_qformer.query_tokens", "temporal_Qformer_query_tokens"),
    ("temporal_qformer.", "temporal_Qformer.bert."),
    ("spatial_ln.", "spatial_Qformer_ln."),
    ("vlm2spatial_proj.", "vlm2spatial_Qformer_proj."),
    ("region_encoder.visual_proj.", "Qformer_mask_pooling_proj_st."),
    ("region_encoder.shape_mlp.", "Qformer_mask_proj_st."),
    ("llm_region_encoder.visual_proj.", "Qformer_mask_pooling_proj."),
    ("llm_region_encoder.shape_mlp.", "Qformer_mask_proj."),
    ("context_injector.attn_q.", "Qformer_temp_attn_q."),
    ("context_injector.attn_k.", "Qformer_temp_attn_k."),
    ("context_injector.attn_v.", "Qformer_temp_attn_v."),
    ("context_injector.proj.", "Qformer_temp_proj."),
    ("context_injector.final_proj.", "Qformer_final_proj."),
]


def _official_name(ours: str) -> str:
    for a, b in _OFFICIAL:
        if ours.startswith(a):
            return "mllm." + b + ours[len(a) :]
    raise AssertionError(ours)


def test_load_released_key_layout_from_safetensors(tmp_path, tiny_config):
    """A state dict under the released names (with a prefix, LLM/SAM2 keys and Q-Former heads) loads key by key."""
    from safetensors.torch import save_file

    torch.manual_seed(6)
    source = SpatioTemporalAggregator(tiny_config()).eval()
    released = {_official_name(k): v.clone() for k, v in source.state_dict().items()}
    released["mllm.model.language_model.lm_head.weight"] = torch.randn(3, 3)
    released["grounding_encoder.sam2_model.image_encoder.weight"] = torch.randn(2)
    released["mllm.temporal_Qformer.cls.predictions.bias"] = torch.randn(4)
    released["mllm.temporal_Qformer.bert.embeddings.position_ids"] = torch.arange(4)[None]
    save_file(released, str(tmp_path / "model.safetensors"))
    target = SpatioTemporalAggregator(tiny_config()).eval()
    result = load_sama_aggregator_state(target, tmp_path)
    assert not result.missing
    assert len(result.ignored) == 4
    x, ids = torch.randn(3, 16, 12), torch.tensor([[101, 30523, 30524, 102]])
    rv, rs = torch.randn(1, 1, 12), torch.ones(1, 1, 8, 8)
    torch.testing.assert_close(
        target(x, ids, region_visual=rv, region_shape=rs),
        source(x, ids, region_visual=rv, region_shape=rs),
        atol=0,
        rtol=0,
    )
    assert sama_key_to_ours("Qformer_mask_pooling_proj_st.weight") == "region_encoder.visual_proj.weight"
    assert sama_key_to_ours("a.b.Qformer_mask_pooling_proj.bias") == "llm_region_encoder.visual_proj.bias"


def test_load_rejects_missing_and_mismatched(tmp_path, tiny_config):
    target = SpatioTemporalAggregator(tiny_config())
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_sama_aggregator_state(target, tmp_path / "absent.safetensors")
    with pytest.raises(ValueError, match="lacks"):
        load_sama_aggregator_state(target, {"Qformer_final_proj.weight": torch.zeros(12, 12)})
    partial = load_sama_aggregator_state(target, {"Qformer_final_proj.weight": torch.zeros(12, 12)}, strict=False)
    assert partial.loaded == ["context_injector.final_proj.weight"]
    with pytest.raises(ValueError, match="SAMAConfig"):
        load_sama_aggregator_state(target, {"Qformer_final_proj.weight": torch.zeros(5, 5)})
    with pytest.raises(TypeError, match="model"):
        load_sama_aggregator_state(torch.nn.Linear(2, 2), {})  # type: ignore[arg-type]


def test_lavis_pth_initialisation(tmp_path, tiny_config):
    """A LAVIS .pth ({'model': {Qformer.bert.*, query_tokens, ln_vision.*}}) initialises the spatial side."""
    torch.manual_seed(7)
    donor = SpatioTemporalAggregator(tiny_config())
    sd = {
        "Qformer.bert." + k[len("spatial_qformer.") :]: v
        for k, v in donor.state_dict().items()
        if k.startswith("spatial_qformer.") and not k.endswith("query_tokens")
    }
    sd["query_tokens"] = donor.spatial_qformer.query_tokens.detach().clone()
    sd["ln_vision.weight"] = torch.randn(10)
    sd["ln_vision.bias"] = torch.randn(10)
    sd["Qformer.cls.predictions.bias"] = torch.randn(3)
    torch.save({"model": sd}, tmp_path / "instruct_blip.pth")
    target = SpatioTemporalAggregator(tiny_config()).eval()
    result = init_spatial_qformer_from_instructblip(target, tmp_path / "instruct_blip.pth")
    assert not result.missing
    torch.testing.assert_close(target.spatial_ln.weight, sd["ln_vision.weight"])
    enc = torch.randn(2, 16, 10)
    torch.testing.assert_close(
        target.spatial_qformer(encoder_hidden_states=enc), donor.eval().spatial_qformer(encoder_hidden_states=enc)
    )
    with pytest.raises(ValueError, match="no InstructBLIP"):
        init_spatial_qformer_from_instructblip(target, {"foo": torch.zeros(1)})


def test_temporal_tokenizer_ids(tokenizer):
    """bert-base-uncased + [DEC] + 7 specials: <mask> = 30523, <pos> = 30524; <mask> expands to <vp><mask><pos></vp>."""
    assert len(tokenizer) == 30530
    assert tokenizer.convert_tokens_to_ids(["[DEC]", "<mask>", "<pos>", "<vp>", "</vp>"]) == [
        30522,
        30523,
        30524,
        30528,
        30529,
    ]
    ids, mask = encode_prompts(tokenizer, ["which way does <mask> move?", "what is it?"])
    assert ids[0, :9].tolist() == [101, 2029, 2126, 2515, 30528, 30523, 30524, 30529, 2693]
    assert mask[1].sum() < mask[0].sum()
    with pytest.raises(ValueError, match="prompts"):
        encode_prompts(tokenizer, [])
    with pytest.raises(ValueError, match="prompts"):
        encode_prompts(tokenizer, "a string")  # type: ignore[arg-type]
