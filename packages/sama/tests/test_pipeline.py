"""SamaPipeline end to end on tiny random transformers parts (InternVL + Qwen2, SAM2): no download, CPU."""

from __future__ import annotations

import pytest
import torch
from nips25_sama import SAMAConfig, SamaPipeline, SamaPipelineConfig, SpatioTemporalAggregator
from nips25_sama.pipeline import dense_frame_indices, sama_prompt

pytest.importorskip("transformers.models.sam2")
pytest.importorskip("transformers.models.internvl")

T, H, W = 4, 20, 24
QUESTION = "what is the dog doing ?"
ANSWER = "sure , it is [SEG] ."


def _aggregator(seed: int = 0) -> SpatioTemporalAggregator:
    torch.manual_seed(seed)
    cfg = SAMAConfig(vis_dim=12, tokens_per_frame=16, spatial_width=10, qformer_hidden=8, qformer_heads=2,
                     qformer_intermediate=16, spatial_layers=1, temporal_layers=1, spatial_queries=4,
                     temporal_queries=3, window_size=8, stride=8, region_mask_size=8, region_hidden=6,
                     dropout=0.0)  # fmt: skip
    return SpatioTemporalAggregator(cfg).eval()


@pytest.fixture(scope="module")
def pipe(tokenizer, pipeline_parts):
    llm_tokenizer, tiny_vlm, tiny_sam2 = pipeline_parts
    tok = llm_tokenizer()
    return SamaPipeline.from_components(
        tiny_vlm(len(tok)), aggregator=_aggregator(), sam2=tiny_sam2(), tokenizer=tok, temporal_tokenizer=tokenizer,
        config=SamaPipelineConfig(n_dense_frames=2, vision_image_size=32, max_new_tokens=4),
    )  # fmt: skip


@pytest.fixture(scope="module")
def frames():
    return torch.rand(T, 3, H, W, generator=torch.Generator().manual_seed(1))


def test_generate_seg_gives_masks_of_frame_shape(pipe, frames):
    """Real greedy generation (generate on inputs_embeds); a hook makes the random LM say [SEG], then stop."""
    seg, stop = pipe.seg_token_id, pipe.tokenizer.convert_tokens_to_ids("<|im_end|>")

    calls = []

    def steer(_module, _args, logits):  # first decoding step -> [SEG], afterwards -> <|im_end|>
        bias = torch.zeros(logits.shape[-1])
        bias[stop if calls else seg] = 100.0
        calls.append(1)
        return logits + bias

    handle = pipe.language_model.lm_head.register_forward_hook(steer)
    try:
        out = pipe.chat(frames, QUESTION)
    finally:
        handle.remove()
    assert out.answer == "[SEG]" and out.token_ids.tolist() == [seg]
    assert out.masks.shape == (1, T, H, W) and out.masks.dtype == torch.bool
    assert torch.equal(out.masks, out.mask_logits > 0)
    assert out.masks.any() and not out.masks.all()  # informative masks, not a constant
    assert out.iou_scores.shape == (1, T) and out.context_tokens.shape == (T, 12)
    free = pipe.chat(frames, QUESTION, max_new_tokens=3)  # unsteered: no [SEG], no masks, at most 3 tokens
    assert free.token_ids.numel() <= 3 and free.masks.shape[1:] == (T, H, W)
    assert free.masks.shape[0] == int((free.token_ids == seg).sum())


def test_teacher_forced_answer_one_track_per_seg(pipe, frames):
    out = pipe.chat(frames, QUESTION, answer=ANSWER)
    assert out.answer == "sure, it is [SEG]."
    assert out.masks.shape == (1, T, H, W) and out.seg_embeddings.shape == (1, 16)
    two = pipe.chat(frames, QUESTION, answer="[SEG] and [SEG]")
    assert two.masks.shape == (2, T, H, W)
    assert not torch.allclose(two.seg_embeddings[0], two.seg_embeddings[1])  # hidden states at two positions


def test_context_tokens_reach_the_llm(pipe, frames):
    tokens = pipe.encode_frames(frames)
    ctx = pipe.context_tokens(tokens, [QUESTION])[0]
    ids, embeds = pipe.build_inputs(tokens, ctx, QUESTION)
    slots = (ids == pipe.image_token_id).nonzero()[:, 0]
    n_dense = 2 * 16
    assert slots.numel() == n_dense + T
    assert torch.equal(embeds[slots[n_dense:]], ctx)  # the T context rows, after the dense frames
    assert torch.equal(embeds[slots[:n_dense]], tokens[dense_frame_indices(T, 2)].reshape(-1, 12))
    base = pipe.chat(frames, QUESTION, answer=ANSWER)
    again = pipe.chat(frames, QUESTION, answer=ANSWER)
    assert torch.equal(base.seg_embeddings, again.seg_embeddings)
    bias = pipe.aggregator.context_injector.final_proj.bias  # moves the context tokens only
    with torch.no_grad():
        bias.add_(0.5)
    try:
        moved = pipe.chat(frames, QUESTION, answer=ANSWER)
    finally:
        with torch.no_grad():
            bias.sub_(0.5)
    assert (moved.context_tokens - base.context_tokens).abs().min() > 0.4
    assert (moved.seg_embeddings - base.seg_embeddings).abs().max() > 1e-3
    assert (moved.mask_logits - base.mask_logits).abs().max() > 1e-3


def test_several_questions_equal_one_at_a_time(pipe, frames):
    qs, ans = [QUESTION, "where is the red cat ?"], [ANSWER, "it is left [SEG] ."]
    both = pipe.chat(frames, qs, answer=ans)
    for q, a, got in zip(qs, ans, both, strict=True):
        one = pipe.chat(frames, q, answer=a)
        assert got.answer == one.answer
        torch.testing.assert_close(got.context_tokens, one.context_tokens, atol=1e-6, rtol=0)
        torch.testing.assert_close(got.mask_logits, one.mask_logits, atol=1e-5, rtol=0)
    swapped = pipe.chat(frames, qs[::-1], answer=ans[::-1])  # permuting questions permutes the outputs
    torch.testing.assert_close(swapped[0].seg_embeddings, both[1].seg_embeddings, atol=1e-6, rtol=0)


def test_segment_is_frame_equivariant_and_uint8_equals_float(pipe, frames):
    emb = torch.randn(2, 16, generator=torch.Generator().manual_seed(3))
    logits, iou = pipe.segment(frames, emb)
    perm = torch.tensor([2, 0, 3, 1])
    logits_p, iou_p = pipe.segment(frames[perm], emb)
    torch.testing.assert_close(logits_p, logits[:, perm], atol=1e-5, rtol=0)
    torch.testing.assert_close(iou_p, iou[:, perm], atol=1e-6, rtol=0)
    u8 = (frames * 255).round().to(torch.uint8)
    torch.testing.assert_close(pipe.segment(u8, emb)[0], pipe.segment(u8.float() / 255, emb)[0])


def test_region_prompt_changes_context(pipe, frames):
    q = "what does <mask> do ?"
    left = torch.zeros(1, H, W, dtype=torch.bool)
    left[0, 2:12, 1:8] = True
    right = torch.zeros(1, H, W, dtype=torch.bool)
    right[0, 8:18, 14:23] = True
    a = pipe.chat(frames, q, region_masks=left, answer=ANSWER)
    b = pipe.chat(frames, q, region_masks=right, answer=ANSWER)
    assert a.masks.shape == (1, T, H, W)
    assert (a.context_tokens - b.context_tokens).abs().max() > 1e-4
    assert (a.seg_embeddings - b.seg_embeddings).abs().max() > 1e-4
    ids, _ = pipe.build_inputs(pipe.encode_frames(frames), a.context_tokens, q,
                               torch.zeros(1, 2, 12))  # fmt: skip
    assert int((ids == pipe.image_token_id).sum()) == 2 * 16 + T + 2


def test_bad_inputs_name_the_argument(pipe, frames):
    with pytest.raises(ValueError, match="frames"):
        pipe.chat(frames[:, :2], QUESTION)
    with pytest.raises(ValueError, match="frames must be float in"):
        pipe.chat(frames * 3, QUESTION)
    with pytest.raises(ValueError, match="question"):
        pipe.chat(frames, "  ")
    with pytest.raises(ValueError, match="region_masks is None"):
        pipe.chat(frames, "what does <mask> do ?")
    with pytest.raises(ValueError, match="region_masks has 2 masks"):
        pipe.chat(frames, "what does <mask> do ?", region_masks=torch.ones(2, H, W, dtype=torch.bool))
    with pytest.raises(ValueError, match="region_frame"):
        pipe.chat(frames, "what does <mask> do ?", region_masks=torch.ones(1, H, W), region_frame=T)
    with pytest.raises(ValueError, match="answer must have one entry"):
        pipe.chat(frames, [QUESTION, QUESTION], answer=[ANSWER])
    with pytest.raises(ValueError, match="<IMG_CONTEXT>"):
        pipe.chat(frames, "what is <IMG_CONTEXT> ?", answer=ANSWER)
    with pytest.raises(ValueError, match="seg_embeddings"):
        pipe.segment(frames, torch.zeros(1, 5))


def test_components_are_checked(pipe, tokenizer):
    parts = dict(vision_encoder=pipe.vision_encoder, language_model=pipe.language_model, sam2=pipe.sam2,
                 tokenizer=pipe.tokenizer, temporal_tokenizer=tokenizer)  # fmt: skip
    with pytest.raises(ValueError, match="vis_dim"):
        SamaPipeline(aggregator=SpatioTemporalAggregator(_aggregator().config.__class__(
            **{**_aggregator().config.to_dict(), "vis_dim": 8})), **parts)  # fmt: skip
    with pytest.raises(ValueError, match="'\\[SEG2\\]'"):
        SamaPipeline(aggregator=pipe.aggregator, config=SamaPipelineConfig(seg_token="[SEG2]"), **parts)
    with pytest.raises(TypeError, match="sam2"):
        SamaPipeline(aggregator=pipe.aggregator, **{**parts, "sam2": torch.nn.Linear(1, 1)})
    with pytest.raises(ValueError, match="prompt_template"):
        SamaPipelineConfig(prompt_template="no slot")


def test_dense_frame_indices_and_prompt():
    assert dense_frame_indices(32, 5) == [2, 8, 14, 20, 27]  # official get_dense_indices(32, 5)
    for n in range(1, 40):
        for d in (1, 3, 5):
            idx = dense_frame_indices(n, d)
            assert idx == sorted(set(idx)) and len(idx) == min(n, d) and idx[0] >= 0 and idx[-1] < n
    cfg = SamaPipelineConfig(n_dense_frames=2)
    text = sama_prompt("is <mask> red ?", n_frames=6, tokens_per_frame=3, config=cfg)
    assert text.count("<IMG_CONTEXT>") == 2 * 3 + 6 + 2 and text.count("<img>") == 2
    assert text.startswith("<|im_start|>user\n<img>") and text.endswith("<|im_start|>assistant\n")
