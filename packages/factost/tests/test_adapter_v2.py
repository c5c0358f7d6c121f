"""FactoST-v2 adapter parts: cyclic prototype refinement (CPR) and the DSPA target prompt."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nips25_factost import FactoST, FitConfig, ReplayBuffer, STAdapter


def _adapter(**kw) -> STAdapter:
    torch.manual_seed(0)
    return STAdapter(n_nodes=3, d_model=8, emb_dim=4, rank=2, topk=2, calendar={"day_of_week": 7, "month": 12}, **kw)


def test_patch_codes_hand_values():
    """L = 6, p = 4, H = 5: context patches [pad pad 0 1 | 2 3 4 5] -> first real steps 0, 2; [REG] -> -1;
    future patches [6 7 8 9 | 10 pad pad pad] -> 6, 10."""
    a = _adapter(refinement=True)
    cal = torch.stack([torch.arange(11) % 7, torch.arange(11) % 12], dim=-1)[None]
    codes = a.patch_codes(cal, context=6, horizon=5, patch_len=4)
    assert codes[0, :, 0].tolist() == [0, 2, -1, 6, 10 % 7]
    assert codes[0, :, 1].tolist() == [0, 2, -1, 6, 10]


def test_refinement_matches_hand_computed_attention():
    """One head, one calendar feature: h_s += W_o softmax((W_q Q[c_s]) (W_k h)^T / sqrt(d)) (W_v h) + b_o within
    each node's own sequence; the [REG] position (code -1) is unchanged."""
    torch.manual_seed(0)
    a = STAdapter(n_nodes=2, d_model=8, emb_dim=4, rank=1, topk=1, calendar={"day_of_week": 7}, refinement=True,
                  refinement_heads=1)  # fmt: skip
    tokens = torch.randn(2, 4, 2, 8)
    codes = torch.tensor([[[3], [-1], [0], [6]], [[1], [-1], [2], [2]]])
    out = a.refine(tokens, codes)
    att = a.cycle_attention[0]
    wq, wk, wv = att.in_proj_weight.chunk(3)
    bq, bk, bv = att.in_proj_bias.chunk(3)
    for b in range(2):
        for n in range(2):
            h = tokens[b, :, n]
            for s in range(4):
                c = int(codes[b, s, 0])
                if c < 0:
                    torch.testing.assert_close(out[b, s, n], h[s])
                    continue
                q = wq @ a.cycle_queries[0][c] + bq
                w = torch.softmax((h @ wk.T + bk) @ q / 8**0.5, 0)
                upd = att.out_proj(w @ (h @ wv.T + bv))
                torch.testing.assert_close(out[b, s, n], h[s] + upd, rtol=1e-5, atol=1e-5)


def test_refinement_is_space_agnostic_and_off_by_default():
    """Changing node 2's tokens leaves nodes 0 and 1 unchanged after CPR; without refinement tokens pass through."""
    a = _adapter(refinement=True)
    tokens = torch.randn(2, 5, 3, 8)
    codes = torch.randint(0, 7, (2, 5, 2))
    changed = tokens.clone()
    changed[:, :, 2] += 5.0
    torch.testing.assert_close(a.refine(tokens, codes)[:, :, :2], a.refine(changed, codes)[:, :, :2])
    assert torch.equal(_adapter().refine(tokens, codes), tokens)
    with pytest.raises(ValueError, match="codes"):
        a.refine(tokens, codes[..., :1])


def test_dspa_prompt_starts_at_zero_is_rank_one_and_has_no_alignment(backbone, panel):
    """DSPA: P = W(u v^T) + b with u = 0 and b = 0 at the start -> exactly 0; rank(u v^T) <= 1; n_tok + d + d^2 + d
    prompt parameters; FactoST adds no alignment penalty (frozen mode: the auxiliary loss is 0)."""
    a = STAdapter(n_nodes=4, d_model=16, emb_dim=4, rank=2, topk=2, n_source_domains=2, prompt="dspa")
    sources = torch.randn(2, 3, 16)
    assert torch.equal(a.target_prompt(sources), torch.zeros(3, 16))
    with torch.no_grad():
        a.prompt_u.normal_()
    assert torch.linalg.matrix_rank(a.prompt_u @ a.prompt_v) == 1
    n_prompt = sum(p.numel() for name, p in a.named_parameters() if name.startswith("prompt_"))
    assert n_prompt == 3 + 16 + 16 * 16 + 16
    replay = ReplayBuffer(16, seed=0)
    t = np.arange(200)
    replay.add_batch(np.stack([np.sin(t[i : i + 96] / 3) for i in range(20)]), np.zeros(20, dtype=int))
    model = FactoST(backbone, a, freeze_backbone=True, replay=replay)
    model.fit(panel, config=FitConfig(steps=2, batch_size=4, align_weight=1.0), seed=0)
    x = torch.randn(2, 12, 4)
    cal = torch.zeros(2, 24, 2, dtype=torch.long)
    model.train()
    pred = model(x, cal)
    assert float(model.auxiliary_loss(x, cal, pred)) == 0.0


def test_factost_fits_with_refinement_and_dspa(backbone, panel):
    """The v2 parts train end to end: finite losses, forecasts of the right shape, frozen backbone unchanged."""
    before = {k: v.clone() for k, v in backbone.state_dict().items()}
    a = STAdapter(n_nodes=4, d_model=16, emb_dim=4, rank=2, topk=2, n_source_domains=2, refinement=True,
                  prompt="dspa", calendar=panel.calendar()[1])  # fmt: skip
    model = FactoST(backbone, a, freeze_backbone=True).fit(panel, config=FitConfig(steps=3, batch_size=4), seed=0)
    assert np.isfinite(model.history_).all()
    assert all(torch.equal(v, before[k]) for k, v in backbone.state_dict().items())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in a.cycle_queries.parameters())


def test_v2_bad_inputs():
    with pytest.raises(ValueError, match="prompt"):
        _adapter(prompt="lora")
    with pytest.raises(ValueError, match="refinement_heads"):
        _adapter(refinement=True, refinement_heads=0)
