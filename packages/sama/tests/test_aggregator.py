"""Known answers of the aggregator: windowing, context injection and the full module against explicit loops."""

from __future__ import annotations

import math

import pytest
import torch
from nips25_sama import ContextInjector, SAMAConfig, SpatioTemporalAggregator, split_windows, token_budget


def test_window_splitting_40_and_16_frames():
    """T = 40 sparse frames -> 1,280 spatial tokens -> 3 windows (last 256 long) -> 96 temporal tokens; T = 16 -> 1."""
    cfg = SAMAConfig()
    n40 = 40 * cfg.spatial_queries
    windows = split_windows(n40, window_size=cfg.window_size, stride=cfg.stride)
    assert windows == [(0, 512), (512, 1024), (1024, 1280)]
    assert len(windows) * cfg.temporal_queries == 96
    assert split_windows(16 * cfg.spatial_queries) == [(0, 512)]
    assert len(split_windows(1000, window_size=512, stride=256)) == math.ceil(1000 / 256)


def test_temporal_query_count_follows_windows(tiny_config):
    """The temporal Q-Former output Q has n_w * M_t tokens: 10 frames x 4 queries = 40 tokens / 8 = 5 windows."""
    torch.manual_seed(0)
    agg = SpatioTemporalAggregator(tiny_config()).eval()
    spatial = agg.spatial_tokens(torch.randn(1, 10, 16, 12))
    q = agg.temporal_queries(spatial, torch.tensor([[101, 2000, 102]]), torch.ones(1, 3, dtype=torch.long), None)
    assert q.shape == (1, 5 * 3, 8)


def _inject_loop(inj: ContextInjector, frames: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """ctx_t = W_f mean_n(W_p softmax(W_q v_n . W_k q_m / sqrt(C)) W_v q + v_n), one frame and prompt at a time."""
    p = q.shape[0]
    t = frames.shape[0] // p
    out = []
    for i in range(p):
        k, v = inj.attn_k(q[i]), inj.attn_v(q[i])
        for j in range(t):
            x = frames[i * t + j]
            rows = []
            for n in range(x.shape[0]):
                qn = inj.attn_q(x[n])
                w = torch.softmax(k @ qn / math.sqrt(k.shape[-1]), dim=0)
                rows.append(inj.proj(w @ v) + x[n])
            out.append(inj.final_proj(torch.stack(rows).mean(0)))
    return torch.stack(out).unsqueeze(1)


@pytest.mark.parametrize("n_prompts", [3, 20])
def test_context_inject_equals_per_frame_loop(n_prompts):
    """Batched (and, for 20 > 16 prompts, chunked) injection equals the explicit loop in float64 to 1e-10."""
    torch.manual_seed(1)
    inj = ContextInjector(6, 5).double()
    frames = torch.randn(n_prompts * 3, 4, 6, dtype=torch.float64)
    q = torch.randn(n_prompts, 7, 5, dtype=torch.float64)
    ours = inj(frames, q, chunk=16)
    assert ours.shape == (n_prompts * 3, 1, 6)
    torch.testing.assert_close(ours, _inject_loop(inj, frames, q), atol=1e-10, rtol=0)
    torch.testing.assert_close(inj(frames, q, chunk=1), ours, atol=1e-12, rtol=0)


@pytest.mark.parametrize("n_prompts", [3, 20])
def test_shared_frame_injection_equals_the_repeated_official_layout(n_prompts):
    """inject_shared (frame tokens once for all prompts) equals forward on the per-prompt copies (float64, 1e-12)
    and the explicit loop (1e-10), chunked past 16 prompts."""
    torch.manual_seed(3)
    inj = ContextInjector(6, 5).double()
    frames = torch.randn(2, 3, 4, 6, dtype=torch.float64)  # (B, T, N, C)
    q = torch.randn(2, n_prompts, 7, 5, dtype=torch.float64)
    ours = inj.inject_shared(frames, q, chunk=16)
    assert ours.shape == (2, n_prompts, 3, 6)
    for b in range(2):
        repeated = frames[b].repeat(n_prompts, 1, 1)  # (P*T, N, C), prompt-major
        torch.testing.assert_close(ours[b].reshape(-1, 1, 6), inj(repeated, q[b]), atol=1e-12, rtol=0)
        torch.testing.assert_close(ours[b].reshape(-1, 1, 6), _inject_loop(inj, repeated, q[b]), atol=1e-10, rtol=0)
    with pytest.raises(ValueError, match="share B"):
        inj.inject_shared(frames[:1], q)


def test_aggregator_equals_per_frame_loop_implementation(tiny_config):
    """The batched aggregator equals a loop: spatial Q-Former per frame, temporal per window, injection per frame."""
    torch.manual_seed(2)
    cfg = tiny_config(prompt_chunk=2)
    agg = SpatioTemporalAggregator(cfg).double().eval()
    t, p = 5, 3
    frames = torch.randn(t, 16, 12, dtype=torch.float64)
    ids = torch.tensor(
        [
            [101, 30528, 30523, 30524, 30529, 2693, 102],
            [101, 2054, 2003, 102, 0, 0, 0],
            [101, 30528, 30523, 30524, 30529, 1029, 102],
        ]
    )
    mask = (ids != 0).long()
    rv = torch.randn(p, 1, 12, dtype=torch.float64)
    rs = (torch.rand(p, 1, 8, 8) > 0.5).double()
    ours = agg(frames, ids, mask, region_visual=rv, region_shape=rs)
    assert ours.shape == (p, t, 12)
    spatial = torch.cat([agg.spatial_tokens(frames[j : j + 1]) for j in range(t)])  # (T, M_s, H)
    flat = spatial.reshape(-1, 8)
    vis, shp = agg.region_encoder(rv, rs)
    expected = torch.zeros(p, t, 12, dtype=torch.float64)
    for i in range(p):
        region = {cfg.visual_token_id: vis[i : i + 1], cfg.shape_token_id: shp[i : i + 1]}
        qs = []
        for start in range(0, flat.shape[0], cfg.stride):
            win = flat[start : start + cfg.window_size].unsqueeze(0)
            qs.append(
                agg.temporal_qformer(
                    encoder_hidden_states=win,
                    input_ids=ids[i : i + 1],
                    attention_mask=mask[i : i + 1],
                    region_features=region,
                )
            )
        q = torch.cat(qs, dim=1)
        expected[i] = _inject_loop(agg.context_injector, frames, q)[:, 0]
    torch.testing.assert_close(ours, expected, atol=1e-10, rtol=0)
    batched = agg(
        frames[None].expand(2, -1, -1, -1),
        ids[None].expand(2, -1, -1),
        mask[None].expand(2, -1, -1),
        region_visual=rv[None].expand(2, -1, -1, -1),
        region_shape=rs[None].expand(2, -1, -1, -1, -1),
    )
    torch.testing.assert_close(batched[1], ours, atol=1e-10, rtol=0)


def test_token_budget_is_computed_from_config():
    """1B defaults: 5 x (256 + 2) + 32 = 1,322 vs 32 x 256 = 8,192; another config changes both."""
    b = token_budget(SAMAConfig())
    assert (b.sama, b.all_frames) == (5 * 258 + 32, 8192)
    other = token_budget(SAMAConfig(n_dense_frames=2, tokens_per_frame=64), n_sparse_frames=10)
    assert (other.sama, other.all_frames) == (2 * 66 + 10, 640)
    assert b.ratio == pytest.approx(1322 / 8192)


def test_save_load_round_trip(tmp_path, tiny_config):
    """save_pretrained -> from_pretrained reproduces the outputs exactly."""
    torch.manual_seed(3)
    agg = SpatioTemporalAggregator(tiny_config()).eval()
    x, ids = torch.randn(3, 16, 12), torch.tensor([[101, 2000, 102]])
    agg.save_pretrained(tmp_path)
    again = SpatioTemporalAggregator.from_pretrained(tmp_path).eval()
    torch.testing.assert_close(again(x, ids), agg(x, ids), atol=0, rtol=0)
    with pytest.raises(FileNotFoundError, match="config.json"):
        SpatioTemporalAggregator.from_pretrained(tmp_path / "nothing")


def test_released_sizes():
    assert SAMAConfig.for_model("4b").vis_dim == 2048
    assert SAMAConfig.for_model("8B").vis_dim == 4096
    with pytest.raises(ValueError, match="size"):
        SAMAConfig.for_model("2b")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("vis_dim", 0),
        ("window_size", -1),
        ("stride", 1000),
        ("qformer_heads", 7),
        ("dropout", 1.0),
        ("visual_token_id", 10**6),
        ("prompt_chunk", 0),
    ],
)
def test_config_rejects_out_of_range(field, value):
    with pytest.raises(ValueError, match=field):
        SAMAConfig(**{field: value})


def test_aggregator_bad_inputs(tiny_config):
    """Each bad input names the argument."""
    agg = SpatioTemporalAggregator(tiny_config()).eval()
    x, ids = torch.randn(3, 16, 12), torch.tensor([[101, 2000, 102]])
    with pytest.raises(ValueError, match="vis_dim"):
        agg(torch.randn(3, 16, 5), ids)
    bad = x.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="frame_tokens"):
        agg(bad, ids)
    with pytest.raises(TypeError, match="text_ids"):
        agg(x, ids.float())
    with pytest.raises(ValueError, match="text_ids"):
        agg(x, ids[0])
    with pytest.raises(ValueError, match="together"):
        agg(x, ids, region_visual=torch.randn(1, 1, 12))
    with pytest.raises(ValueError, match="region_shape"):
        agg(x, ids, region_visual=torch.randn(1, 1, 12), region_shape=torch.ones(1, 1, 5, 5))
    with pytest.raises(ValueError, match="input_ids must lie"):
        agg(x, torch.tensor([[101, 10**6]]))
    with pytest.raises(ValueError, match="text_mask"):
        agg(x, ids, torch.ones(1, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="stride"):
        split_windows(10, window_size=4, stride=5)
    with pytest.raises(ValueError, match="n_tokens"):
        split_windows(0)
    with pytest.raises(ValueError, match="chunk"):
        ContextInjector(4, 4)(torch.randn(2, 3, 4), torch.randn(1, 2, 4), chunk=0)
    with pytest.raises(ValueError, match="multiple"):
        ContextInjector(4, 4)(torch.randn(3, 3, 4), torch.randn(2, 2, 4))
    with pytest.raises(TypeError, match="config"):
        SpatioTemporalAggregator("1b")  # type: ignore[arg-type]


def test_aggregator_dtype_mismatch_is_named(tiny_config):
    """float64 inputs to a float32 aggregator: a TypeError naming the argument, not torch's matmul error."""
    agg = SpatioTemporalAggregator(tiny_config()).eval()
    x, ids = torch.randn(3, 16, 12, dtype=torch.float64), torch.tensor([[101, 2000, 102]])
    with pytest.raises(TypeError, match=r"frame_tokens has dtype torch.float64 .* parameters are torch.float32"):
        agg(x, ids)
    with pytest.raises(TypeError, match=r"region_visual has dtype torch.float32, frame_tokens torch.float64"):
        agg.double()(x, ids, region_visual=torch.randn(1, 1, 12), region_shape=torch.ones(1, 1, 5, 5))
    assert agg(x, ids).dtype == torch.float64  # after .double(), float64 runs


def test_aggregator_rejects_unused_region_inputs_and_soft_text_mask(tiny_config):
    """Review finding: region features given for prompts without ``<mask>``/``<pos>`` were silently dropped, and a
    non-0/1 text_mask was used as is. Both now raise; ``<mask>`` without region inputs (the ablation) still runs."""
    cfg = tiny_config()
    agg = SpatioTemporalAggregator(cfg).eval()
    x = torch.randn(3, 16, 12)
    plain = torch.tensor([[101, 2000, 102]])
    rv, rs = torch.randn(1, 1, 12), torch.ones(1, 1, 8, 8)
    with pytest.raises(ValueError, match="no <mask>"):
        agg(x, plain, region_visual=rv, region_shape=rs)
    with pytest.raises(ValueError, match="text_mask"):
        agg(x, plain, torch.full_like(plain, 5))
    ids = torch.tensor([[101, cfg.visual_token_id, cfg.shape_token_id, 102]])
    assert agg(x, ids, region_visual=rv, region_shape=rs).shape == (1, 3, 12)
    assert agg(x, ids).shape == (1, 3, 12)
