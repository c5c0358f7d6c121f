"""Reweighted LM loss: equals torch cross-entropy with unit weights, gradcheck, bad inputs."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from nips25_fedrw import weighted_lm_loss


def _batch(dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 7, generator=g, dtype=dtype)
    targets = torch.randint(0, 7, (3, 5), generator=g)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0]], dtype=torch.bool)
    return logits, targets, mask


def test_unit_weights_match_torch_cross_entropy():
    """token reduction with w = 1 is F.cross_entropy over the masked tokens; sample reduction averages sample means."""
    logits, targets, mask = _batch()
    ref = F.cross_entropy(logits[mask], targets[mask])
    assert weighted_lm_loss(logits, targets, mask, torch.ones(3), reduction="token") == pytest.approx(
        float(ref), rel=1e-6
    )
    per = [F.cross_entropy(logits[b][mask[b]], targets[b][mask[b]]) for b in range(3)]
    assert weighted_lm_loss(logits, targets, mask, torch.ones(3)) == pytest.approx(float(sum(per) / 3), rel=1e-6)
    w = torch.tensor([0.5, 1.0, 0.25])
    expected = sum(w[b] * per[b] for b in range(3)) / w.sum()
    assert weighted_lm_loss(logits, targets, mask, w) == pytest.approx(float(expected), rel=1e-6)
    # a weight of 2 on one sample equals that sample appearing twice
    dup = weighted_lm_loss(logits[[0, 0, 1, 2]], targets[[0, 0, 1, 2]], mask[[0, 0, 1, 2]], torch.ones(4))
    assert weighted_lm_loss(logits, targets, mask, torch.tensor([2.0, 1.0, 1.0])) == pytest.approx(float(dup), rel=1e-6)


def test_weighted_loss_gradcheck_float64():
    logits, targets, mask = _batch(torch.float64)
    logits.requires_grad_(True)
    w = torch.tensor([0.3, 1.0, 0.7], dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda x: weighted_lm_loss(x, targets, mask, w, reduction="sample"), (logits,))
    assert torch.autograd.gradcheck(lambda x: weighted_lm_loss(x, targets, mask, w, reduction="token"), (logits,))


def test_weighted_loss_rejects_bad_input():
    logits, targets, mask = _batch()
    with pytest.raises(ValueError, match="logits"):
        weighted_lm_loss(logits[0], targets, mask, torch.ones(3))
    with pytest.raises(ValueError, match="targets"):
        weighted_lm_loss(logits, targets[:, :2], mask, torch.ones(3))
    with pytest.raises(ValueError, match="weights"):
        weighted_lm_loss(logits, targets, mask, torch.tensor([1.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match="weights"):
        weighted_lm_loss(logits, targets, mask, torch.ones(2))
    with pytest.raises(ValueError, match="logits"):
        weighted_lm_loss(logits * float("nan"), targets, mask, torch.ones(3))
    with pytest.raises(ValueError, match="mask"):
        weighted_lm_loss(logits, targets, torch.zeros_like(mask), torch.ones(3))
    with pytest.raises(ValueError, match="reduction"):
        weighted_lm_loss(logits, targets, mask, torch.ones(3), reduction="mean")
    with pytest.raises(TypeError, match="targets"):
        weighted_lm_loss(logits, targets.float(), mask, torch.ones(3))
