"""The Q-Former against transformers' InstructBLIP Q-Former, and region injection at the placeholder tokens."""

from __future__ import annotations

import pytest
import torch
from nips25_sama import QFormer, QFormerConfig, SpatioTemporalAggregator, inject_region_features
from nips25_sama.loading import init_spatial_qformer_from_instructblip


def _hf_qformer(vocab: int, width: int, freq: int):
    from transformers import InstructBlipQFormerConfig, InstructBlipQFormerModel

    torch.manual_seed(0)
    cfg = InstructBlipQFormerConfig(
        vocab_size=vocab,
        hidden_size=8,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=16,
        encoder_hidden_size=width,
        max_position_embeddings=32,
        cross_attention_frequency=freq,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return InstructBlipQFormerModel(cfg).eval()


def test_spatial_qformer_matches_transformers_instructblip(tiny_config):
    """Queries-only Q-Former loaded from an InstructBlipQFormerModel state dict gives the same query outputs."""
    hf = _hf_qformer(vocab=40, width=10, freq=2)
    agg = SpatioTemporalAggregator(tiny_config()).eval()
    state = dict(hf.state_dict())
    state["query_tokens"] = torch.randn(1, 4, 8)
    result = init_spatial_qformer_from_instructblip(agg, state)
    assert "spatial_qformer.query_tokens" in result.loaded
    assert any("word_embeddings" in k for k in result.ignored)  # dropped, as in SAMA
    enc = torch.randn(3, 16, 10)
    ours = agg.spatial_qformer(encoder_hidden_states=enc)
    ref = hf(input_ids=None, query_embeds=state["query_tokens"].expand(3, -1, -1), encoder_hidden_states=enc)
    torch.testing.assert_close(ours, ref.last_hidden_state[:, :4], atol=1e-5, rtol=1e-5)


def test_temporal_qformer_with_text_matches_transformers():
    """With text, self-attention spans [queries; text], cross-attention the queries only (LAVIS/transformers)."""
    from nips25_sama.loading import _instructblip_to_lavis

    hf = _hf_qformer(vocab=50, width=8, freq=1)
    cfg = QFormerConfig(
        hidden_size=8,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=16,
        cross_attention_freq=1,
        encoder_width=8,
        num_query_tokens=3,
        vocab_size=50,
        max_position_embeddings=32,
        dropout=0.0,
    )
    ours = QFormer(cfg).eval()
    state = {_instructblip_to_lavis(k): v for k, v in hf.state_dict().items() if "position_ids" not in k}
    state["query_tokens"] = ours.query_tokens.detach().clone()
    ours.load_state_dict(state)
    ids = torch.tensor([[1, 5, 7, 9, 0], [2, 3, 4, 0, 0]])
    mask = (ids != 0).long()
    enc = torch.randn(2, 6, 8)
    q = state["query_tokens"].expand(2, -1, -1)
    full_mask = torch.cat([torch.ones(2, 3, dtype=torch.long), mask], dim=1)  # transformers masks queries too
    ref = hf(input_ids=ids, attention_mask=full_mask, query_embeds=q, encoder_hidden_states=enc).last_hidden_state[
        :, :3
    ]
    torch.testing.assert_close(
        ours(encoder_hidden_states=enc, input_ids=ids, attention_mask=mask), ref, atol=1e-5, rtol=1e-5
    )


def test_region_features_land_exactly_at_region_tokens(tiny_config):
    """All other embeddings zeroed: the temporal input (pre-LayerNorm) is the region's visual feature at id 30523,
    its shape feature at id 30524, and zero elsewhere."""
    torch.manual_seed(4)
    agg = SpatioTemporalAggregator(tiny_config()).eval()
    emb = agg.temporal_qformer.embeddings
    assert emb.word_embeddings is not None and emb.position_embeddings is not None
    with torch.no_grad():
        emb.word_embeddings.weight.zero_()
        emb.position_embeddings.weight.zero_()
    ids = torch.tensor([[101, 30528, 30523, 30524, 30529, 1998, 30528, 30523, 30524, 30529, 102]])
    vis, shp = torch.randn(1, 2, 8), torch.randn(1, 2, 8)
    queries = torch.zeros(1, 3, 8)
    x = emb.pre_norm(queries, ids, {30523: vis, 30524: shp})
    text = x[0, 3:]
    torch.testing.assert_close(text[2], vis[0, 0], atol=0, rtol=0)
    torch.testing.assert_close(text[3], shp[0, 0], atol=0, rtol=0)
    torch.testing.assert_close(text[7], vis[0, 1], atol=0, rtol=0)
    torch.testing.assert_close(text[8], shp[0, 1], atol=0, rtol=0)
    others = [i for i in range(ids.shape[1]) if i not in (2, 3, 7, 8)]
    assert torch.count_nonzero(text[others]) == 0


def test_region_injection_changes_only_prompts_with_regions(tiny_config):
    """A prompt without <mask> gives the same context with or without region inputs (in a batch where another prompt
    carries the region; region inputs with no <mask> anywhere are rejected, see test_aggregator)."""
    torch.manual_seed(5)
    agg = SpatioTemporalAggregator(tiny_config()).eval()
    x = torch.randn(2, 16, 12)
    referring = torch.tensor([[101, 30523, 30524]])
    batch = torch.tensor([[101, 2054, 102], [101, 30523, 30524]])
    rv, rs = torch.randn(2, 1, 12), torch.ones(2, 1, 8, 8)
    with_regions = agg(x, batch, region_visual=rv, region_shape=rs)
    without = agg(x, batch)
    torch.testing.assert_close(with_regions[0], without[0])
    assert not torch.allclose(with_regions[1], without[1])
    assert not torch.allclose(agg(x, referring, region_visual=rv[1:], region_shape=rs[1:]), agg(x, referring))


def test_inject_region_features_bad_inputs():
    e, ids = torch.zeros(1, 3, 2), torch.tensor([[7, 7, 1]])
    with pytest.raises(ValueError, match="features holds 1 regions"):
        inject_region_features(e, ids, torch.ones(1, 1, 2), token_id=7)
    with pytest.raises(ValueError, match="input_ids"):
        inject_region_features(e, ids[:, :2], torch.ones(1, 2, 2), token_id=7)
    with pytest.raises(TypeError, match="input_ids"):
        inject_region_features(e, ids.float(), torch.ones(1, 2, 2), token_id=7)
    with pytest.raises(ValueError, match="encoder_width"):
        QFormer(QFormerConfig(hidden_size=8, num_attention_heads=2, encoder_width=4, vocab_size=0))(
            encoder_hidden_states=torch.randn(1, 2, 5)
        )
    with pytest.raises(ValueError, match="num_attention_heads"):
        QFormerConfig(hidden_size=10, num_attention_heads=3)
