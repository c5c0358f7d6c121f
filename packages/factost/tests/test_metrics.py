"""Masked metrics: hand-computed values, NaNs ignored exactly, zeros excluded from MAPE, bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_factost import masked_mae, masked_mape, masked_rmse


def test_hand_values():
    """MAE, RMSE, MAPE on a 4-element example with one NaN and one zero target, computed by hand."""
    pred = torch.tensor([1.0, 2.0, 3.0, 4.0])
    true = torch.tensor([2.0, float("nan"), 0.0, 2.0])
    assert float(masked_mae(pred, true)) == pytest.approx((1 + 3 + 2) / 3)
    assert float(masked_rmse(pred, true)) == pytest.approx(math.sqrt((1 + 9 + 4) / 3))
    assert float(masked_mape(pred, true)) == pytest.approx(100 * (0.5 + 1.0) / 2)  # zero target excluded


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-100, 100), min_size=2, max_size=30), st.integers(0, 2**31 - 1))
def test_nans_are_ignored_exactly(values, seed):
    """Inserting NaN targets anywhere gives the metric of the observed subset (bit-for-bit in float64)."""
    rng = np.random.default_rng(seed)
    true = np.array(values)
    pred = true + rng.normal(size=true.shape)
    keep = rng.random(true.shape) < 0.6
    keep[0] = True
    masked = np.where(keep, true, np.nan)
    expected = np.abs(pred[keep] - true[keep]).mean()
    assert float(masked_mae(pred, masked)) == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert float(masked_mae(pred[keep], true[keep])) == pytest.approx(float(masked_mae(pred, masked)), rel=1e-12)


def test_null_value_and_all_missing():
    """A null value marks missing entries; no observed target gives NaN."""
    assert float(masked_mae(torch.tensor([1.0, 5.0]), torch.tensor([0.0, 4.0]), null_value=0.0)) == 1.0
    assert math.isnan(float(masked_mae(torch.tensor([1.0]), torch.tensor([float("nan")]))))


def test_metric_gradient_matches_sign():
    """d MAE / d pred = sign(pred - true) / n over observed entries, 0 elsewhere (checked against autograd)."""
    pred = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    true = torch.tensor([2.0, float("nan"), 1.0], dtype=torch.float64)
    masked_mae(pred, true).backward()
    assert pred.grad.tolist() == [-0.5, 0.0, 0.5]


@pytest.mark.parametrize("fn", [masked_mae, masked_rmse, masked_mape])
def test_bad_inputs(fn):
    with pytest.raises(ValueError, match="shape"):
        fn(torch.zeros(3), torch.zeros(4))
    with pytest.raises(ValueError, match="empty"):
        fn(torch.zeros(0), torch.zeros(0))
    with pytest.raises(ValueError, match="pred must be finite"):
        fn(torch.tensor([float("nan")]), torch.zeros(1))
    with pytest.raises(ValueError, match="inf"):
        fn(torch.zeros(1), torch.tensor([float("inf")]))
    with pytest.raises(TypeError, match="floating"):
        fn(torch.zeros(2, dtype=torch.long), torch.zeros(2))
