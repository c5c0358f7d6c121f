"""Grounding head and losses: [SEG] extraction, point sampling, importance sampling, BCE/Dice hand values."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from nips25_sama.grounding import (
    GroundingHead,
    GroundingLoss,
    GroundingLossConfig,
    dice_loss,
    importance_sample_points,
    point_sample,
    seg_hidden_states,
)


def test_seg_hidden_states_reading_order():
    h = torch.arange(24.0).reshape(2, 3, 4)
    ids = torch.tensor([[7, 9, 7], [9, 1, 1]])
    out = seg_hidden_states(h, ids, seg_token_id=9)
    assert torch.equal(out, torch.stack([h[0, 1], h[1, 0]]))
    assert seg_hidden_states(h, torch.zeros(2, 3, dtype=torch.long), seg_token_id=9).shape == (0, 4)


def test_grounding_head_shapes_and_gradient():
    head = GroundingHead(8, 4)
    x = torch.randn(3, 8, requires_grad=True)
    out = head(x)
    assert out.shape == (3, 1, 4)
    out.sum().backward()
    assert x.grad is not None and bool(x.grad.abs().sum() > 0)
    assert head(torch.zeros(0, 8)).shape == (0, 1, 4)


def test_point_sample_pixel_centres_return_pixel_values():
    """Pixel (i, j) has its centre at ((j + .5)/W, (i + .5)/H): sampling there returns the pixel exactly."""
    v = torch.arange(12.0).reshape(1, 1, 3, 4)
    ii, jj = torch.meshgrid(torch.arange(3), torch.arange(4), indexing="ij")
    pts = torch.stack([(jj.flatten() + 0.5) / 4, (ii.flatten() + 0.5) / 3], dim=-1)[None]
    torch.testing.assert_close(point_sample(v, pts)[0, 0], torch.arange(12.0))


def test_importance_sampling_keeps_the_most_uncertain_candidates():
    """Logits = distance to the map's left/right edge band: points near x = 0.5 (logit 0) are the most uncertain.
    With beta = 1, every kept point is among the top P of its own kP candidates, so their |logit| is small."""
    w = 64
    x = (torch.arange(w) + 0.5) / w
    logits = (10 * (x - 0.5)).abs().expand(1, 1, w, w).contiguous()  # 0 at the centre column, up to 5 at the edges
    gen = torch.Generator().manual_seed(0)
    pts = importance_sample_points(logits, num_points=200, oversample_ratio=3.0, importance_sample_ratio=1.0,
                                   generator=gen)  # fmt: skip
    uniform = torch.rand(1, 200, 2, generator=torch.Generator().manual_seed(1))
    assert pts.shape == (1, 200, 2)
    imp = point_sample(logits, pts).abs().mean()
    uni = point_sample(logits, uniform).abs().mean()
    assert imp < 0.5 * uni  # top third of 600 uniform candidates: mean |logit| ~ 1/3 of uniform's
    mixed = importance_sample_points(logits, num_points=200, importance_sample_ratio=0.75, generator=gen)
    assert mixed.shape == (1, 200, 2) and bool((mixed >= 0).all() and (mixed <= 1).all())


def test_dice_hand_values():
    """Zero logits over 16 pixels, empty target: 1 - 1 / (8 + 1) = 8/9; a confident perfect mask -> ~0."""
    assert float(dice_loss(torch.zeros(1, 16), torch.zeros(1, 16))) == pytest.approx(8 / 9)
    g = torch.zeros(2, 4, 4)
    g[:, 1:3, 1:3] = 1
    assert float(dice_loss(40 * (2 * g - 1), g)) == pytest.approx(0.0, abs=1e-6)


def test_dense_loss_is_bce_and_dice_weighted_two_and_half():
    """num_points=None: loss = 1 * CE + 2 * BCE + 0.5 * Dice over every pixel (the released weights)."""
    torch.manual_seed(0)
    logits, gt = torch.randn(3, 8, 8), torch.rand(3, 8, 8) > 0.5
    out = GroundingLoss(GroundingLossConfig(num_points=None))(logits, gt, lm_loss=torch.tensor(0.7))
    bce = F.binary_cross_entropy_with_logits(logits, gt.float())
    p = logits.sigmoid().flatten(1)
    g = gt.float().flatten(1)
    dice = (1 - (2 * (p * g).sum(1) + 1) / (p.sum(1) + g.sum(1) + 1)).mean()
    torch.testing.assert_close(out["bce"], bce)
    torch.testing.assert_close(out["dice"], dice)
    torch.testing.assert_close(out["loss"], 0.7 + 2 * bce + 0.5 * dice)
    assert GroundingLoss(GroundingLossConfig(num_points=None)).config.bce_weight == 2.0
    assert "ce" not in GroundingLoss(GroundingLossConfig(num_points=None))(logits, gt)


def test_point_sampled_loss_with_uniform_points_matches_dense_on_constant_regions():
    """beta = 0 (uniform points): on a mask whose logits and target are constant per half, the point-sampled BCE is
    the dense BCE up to sampling noise and the one-pixel band where bilinear sampling blends the halves; a perfect
    full-frame prediction gives ~0 with border padding (not with PointRend's zero padding)."""
    g = torch.zeros(1, 128, 128)
    g[:, :, :64] = 1
    logits = torch.where(g > 0, 2.0, -1.0)
    cfg = GroundingLossConfig(importance_sample_ratio=0.0)
    out = GroundingLoss(cfg)(logits, g, generator=torch.Generator().manual_seed(0))
    dense = F.binary_cross_entropy_with_logits(logits, g)
    assert float(out["bce"]) == pytest.approx(float(dense), rel=0.05)
    full = torch.ones(1, 32, 32)  # no interior edge, so no bilinear blending of target and logits inside
    assert GroundingLoss(GroundingLossConfig(num_points=4096))(60 * full, full)["loss"] < 1e-3
    # PointRend's zero padding blends border points with 0: the same perfect mask is then penalised
    zeros = GroundingLoss(GroundingLossConfig(num_points=4096, padding_mode="zeros"))
    assert zeros(60 * full, full, generator=torch.Generator().manual_seed(0))["loss"] > 0.1


def test_gt_masks_are_resized_and_gradients_reach_the_head():
    head = GroundingHead(6, 4)
    seg = torch.randn(2, 6)
    emb = head(seg)  # stand-in decoder: a linear read-out of the prompt embedding onto an 8x8 map
    logits = torch.einsum("sd,dhw->shw", emb[:, 0], torch.randn(4, 8, 8))
    gt = torch.zeros(2, 16, 16, dtype=torch.bool)
    gt[:, :8] = True
    loss = GroundingLoss(GroundingLossConfig(num_points=64))(logits, gt)["loss"]
    loss.backward()
    assert all(p.grad is not None and math.isfinite(float(p.grad.abs().sum())) for p in head.parameters())


def test_grounding_bad_inputs():
    with pytest.raises(ValueError, match="input_ids"):
        seg_hidden_states(torch.zeros(1, 3, 2), torch.zeros(1, 4, dtype=torch.long), seg_token_id=1)
    with pytest.raises(ValueError, match="seg_token_id"):
        seg_hidden_states(torch.zeros(1, 3, 2), torch.zeros(1, 3, dtype=torch.long), seg_token_id=-1)
    with pytest.raises(ValueError, match="hidden_size"):
        GroundingHead(8, 4)(torch.zeros(2, 5))
    with pytest.raises(ValueError, match="dropout"):
        GroundingHead(8, 4, dropout=1.0)
    with pytest.raises(ValueError, match="points"):
        point_sample(torch.zeros(1, 1, 2, 2), torch.full((1, 3, 2), 1.5))
    with pytest.raises(ValueError, match="importance_sample_ratio"):
        importance_sample_points(torch.zeros(1, 1, 2, 2), num_points=4, importance_sample_ratio=2.0)
    with pytest.raises(ValueError, match="oversample_ratio"):
        GroundingLossConfig(oversample_ratio=0.5)
    with pytest.raises(ValueError, match="bce_weight"):
        GroundingLossConfig(bce_weight=float("nan"))
    with pytest.raises(ValueError, match="num_points"):
        GroundingLossConfig(num_points=0)
    with pytest.raises(ValueError, match="padding_mode"):
        GroundingLossConfig(padding_mode="reflect")
    loss = GroundingLoss(GroundingLossConfig(num_points=None))
    with pytest.raises(ValueError, match="gt_masks"):
        loss(torch.zeros(2, 4, 4), torch.zeros(3, 4, 4))
    with pytest.raises(ValueError, match="binary"):
        loss(torch.zeros(1, 4, 4), torch.full((1, 4, 4), 0.5))
    with pytest.raises(ValueError, match="mask_logits"):
        loss(torch.full((1, 4, 4), float("nan")), torch.zeros(1, 4, 4))
    with pytest.raises(ValueError, match="lm_loss"):
        loss(torch.zeros(1, 4, 4), torch.zeros(1, 4, 4), lm_loss=torch.zeros(2))
    with pytest.raises(ValueError, match="eps"):
        dice_loss(torch.zeros(1, 4), torch.zeros(1, 4), eps=0.0)
