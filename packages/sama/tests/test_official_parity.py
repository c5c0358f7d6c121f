"""The whole aggregator (spatial + temporal Q-Former, region injection, windows, context injection) against the
official architecture: the released modules with random weights, run through the official
``spatial_temporal_token_generation`` (data/official_aggregator_reference.py, sunye23/SAMA@7c75e44, transformers 4.46),
loaded here through the public key map."""

from __future__ import annotations

from pathlib import Path

import torch
from nips25_sama import SAMAConfig, SpatioTemporalAggregator
from nips25_sama.loading import encode_prompts, load_sama_aggregator_state
from nips25_sama.region import mask_pooling

DATA = Path(__file__).parent / "data"


def test_whole_aggregator_equals_the_official_code_on_random_weights(tokenizer):
    """144/144 parameters map (none missing); the (P=3, T=5, C=12) context tokens agree to 1e-6 (float64: seen
    4e-16). Three prompts with 1, 2 and 1 regions, two windows of 8 spatial tokens, pooling frames 2, 4, 0."""
    d = torch.load(DATA / "official_aggregator.pt", weights_only=True)
    c = d["config"]
    cfg = SAMAConfig(vis_dim=c["C"], tokens_per_frame=c["TPF"], spatial_width=c["SW"], qformer_hidden=c["H"],
                     qformer_heads=c["HEADS"], qformer_intermediate=c["INTER"], spatial_layers=2, temporal_layers=2,
                     spatial_queries=c["NQS"], temporal_queries=c["NQT"], window_size=8, stride=8,
                     region_mask_size=c["S"], region_hidden=c["RH"], dropout=0.0,
                     max_position_embeddings=64)  # fmt: skip
    agg = SpatioTemporalAggregator(cfg)
    res = load_sama_aggregator_state(agg, d["state"], strict=True)
    assert len(res.loaded) == sum(1 for _ in agg.state_dict()) and not res.missing
    assert all(k.endswith("position_ids") for k in res.ignored)
    agg = agg.double().eval()
    frames = d["frames"]
    ids, mask = encode_prompts(tokenizer, d["prompts"])
    counts, dense, ridx = d["mask_count"], d["dense"], d["random_idx"]
    rv = torch.zeros(len(counts), max(counts), c["C"], dtype=torch.float64)
    rs = torch.zeros(len(counts), max(counts), c["S"], c["S"], dtype=torch.float64)
    k = 0
    for p, n in enumerate(counts):  # the official pools the region on dense frame dense[random_idx[p]]
        for r in range(n):
            rv[p, r] = mask_pooling(frames[dense[ridx[p]]], d["masks"][k][ridx[p]][None].double())[0]
            rs[p, r] = d["masks112"][k][ridx[p]]
            k += 1
    with torch.no_grad():
        out = agg(frames, ids, mask, region_visual=rv, region_shape=rs)
    assert out.shape == d["out"].shape == (3, 5, 12)
    torch.testing.assert_close(out, d["out"], atol=1e-6, rtol=0)
