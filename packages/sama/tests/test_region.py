"""Region prompts: box masks, mask pooling and shape masks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis.extra.numpy import arrays
from nips25_sama import RegionEncoder, mask_pooling, mask_to_box, prepare_region_inputs, shape_mask


def test_mask_to_box_hand_value():
    m = torch.zeros(6, 6, dtype=torch.bool)
    m[1, 3] = m[4, 1] = True
    box = mask_to_box(m)
    expected = torch.zeros(6, 6, dtype=torch.bool)
    expected[1:5, 1:4] = True
    assert torch.equal(box, expected)
    assert not mask_to_box(torch.zeros(3, 4, 4)).any()


@settings(max_examples=30, deadline=None)
@given(arrays(np.bool_, (7, 9)))
def test_mask_to_box_contains_mask_and_is_idempotent(mask):
    box = mask_to_box(torch.from_numpy(mask))
    assert bool((box | ~torch.from_numpy(mask)).all())
    assert torch.equal(mask_to_box(box), box)


def test_mask_pooling_hand_value():
    """4x4 grid of tokens 0..15; a mask covering the top-left 2x2 of a 8x8 frame -> mean of tokens 0, 1, 4, 5 = 2.5,
    after bilinear down-sampling and > 0 (the official MaskPooling)."""
    x = torch.arange(16.0).reshape(16, 1)
    m = torch.zeros(1, 8, 8)
    m[0, :4, :4] = 1
    assert mask_pooling(x, m).item() == pytest.approx(2.5)
    assert mask_pooling(x, torch.zeros(1, 4, 4)).item() == 0.0
    with pytest.raises(ValueError, match="square"):
        mask_pooling(torch.randn(15, 2), m)


def test_shape_mask_and_prepare_region_inputs():
    m = torch.zeros(1, 2, 16, 16, dtype=torch.bool)
    m[0, 1, 4:8, 2:10] = True
    frames = torch.randn(2, 16, 3)
    vis, shp = prepare_region_inputs(frames, m, frame_index=1, mask_size=8)
    assert shp.shape == (1, 8, 8) and shp.sum() == 2 * 4  # box rows 4:8 -> 2:4, cols 2:10 -> 1:5
    assert torch.allclose(vis[0], frames[1].reshape(4, 4, 3)[1, 0:3].mean(0))
    with pytest.raises(ValueError, match="frame_index"):
        prepare_region_inputs(frames, m, frame_index=2)
    with pytest.raises(ValueError, match="threshold"):
        shape_mask(m[:, 0], threshold=1.5)
    with pytest.raises(ValueError, match="masks"):
        mask_to_box(torch.tensor([1.0, float("nan")]))


def test_region_encoder_shapes_and_errors():
    enc = RegionEncoder(6, 4, mask_size=8, hidden=5)
    v, s = enc(torch.randn(2, 3, 6), torch.ones(2, 3, 8, 8))
    assert v.shape == s.shape == (2, 3, 4)
    assert [layer.in_features for layer in enc.shape_mlp.layers] == [64, 5, 5]
    with pytest.raises(ValueError, match="region_visual"):
        enc(torch.randn(2, 3, 5), torch.ones(2, 3, 8, 8))
    with pytest.raises(ValueError, match="region_shape"):
        enc(torch.randn(2, 3, 6), torch.ones(2, 2, 8, 8))
    with pytest.raises(ValueError, match="out_dim"):
        RegionEncoder(6, 0)
