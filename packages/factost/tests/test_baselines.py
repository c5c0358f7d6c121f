"""Baselines: naive forecasts by hand, STID and the joint model in the same harness."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from nips25_factost import STID, FitConfig, JointSTTransformer, STPanel, historical_average, last_value, seasonal_naive


def test_naive_forecasts_hand_values():
    x = np.array([[[1.0], [np.nan], [3.0], [np.nan]]])  # last value forward-fills missing steps
    assert last_value(x, 2)[0, :, 0].tolist() == [3.0, 3.0]
    x = np.arange(10.0).reshape(1, 10, 1)
    assert seasonal_naive(x, 9, period=7)[0, :, 0].tolist() == [3, 4, 5, 6, 7, 8, 9, 3, 4]
    panel = STPanel(np.array([[1.0, 10.0], [3.0, np.nan]]), pd.date_range("2024-01-01", periods=2))
    np.testing.assert_array_equal(historical_average(panel, 2, 3), np.broadcast_to([2.0, 10.0], (2, 3, 2)))


def test_seasonal_naive_is_exact_on_periodic_series():
    """A series with period 7 is forecast without error by seasonal naive (7) at any horizon."""
    t = np.arange(40)
    x = np.sin(2 * np.pi * t / 7)[None, :, None]
    pred = seasonal_naive(x[:, :21], 19, period=7)
    np.testing.assert_allclose(pred[0, :, 0], x[0, 21:, 0], atol=1e-12)


def test_stid_learns_a_weekly_pattern(panel):
    """STID fitted a few dozen steps beats the historical average on the weekly synthetic panel."""
    torch.manual_seed(0)
    model = STID(n_nodes=4, context=12, horizon=6, d_model=16, emb_dim=8, n_layers=1)
    model.fit(panel.slice(0, 90), config=FitConfig(context=12, horizon=6, steps=60, batch_size=16, lr=1e-2))
    test = panel.slice(90, 120)
    from nips25_factost import make_windows, masked_mae

    w = make_windows(test, context=12, horizon=6)
    mae = float(masked_mae(model.predict(w.x, w.calendar), w.y))
    ha = float(masked_mae(historical_average(panel.slice(0, 90), len(w), 6), w.y))
    assert mae < ha


def test_joint_model_shapes_and_equivariance():
    """The joint model is affine-equivariant per node like FactoST (instance normalisation)."""
    torch.manual_seed(0)
    model = JointSTTransformer(n_nodes=3, context=8, horizon=5, d_model=16, n_layers=1, n_heads=2, d_ff=16).double()
    x = torch.randn(2, 8, 3, dtype=torch.float64)
    cal = torch.zeros(2, 13, 2, dtype=torch.long)
    with torch.no_grad():
        out = model(x, cal)
        torch.testing.assert_close(model(3 * x + 1, cal), 3 * out + 1, rtol=1e-4, atol=1e-4)
    assert out.shape == (2, 5, 3)


def test_bad_inputs():
    with pytest.raises(ValueError, match="period"):
        seasonal_naive(np.zeros((1, 3, 1)), 2, period=7)
    with pytest.raises(ValueError, match="horizon"):
        last_value(np.zeros((1, 3, 1)), 0)
    with pytest.raises(ValueError, match=r"\(B, L, N\)"):
        last_value(np.zeros((3, 1)), 1)
    with pytest.raises(ValueError, match="inf"):
        seasonal_naive(np.full((1, 8, 1), np.inf), 1)
    with pytest.raises(TypeError, match="STPanel"):
        historical_average(np.zeros((3, 2)), 1, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_windows"):
        historical_average(STPanel(np.zeros((2, 1)), pd.date_range("2024-01-01", periods=2)), 0, 1)
    with pytest.raises(ValueError, match="d_model"):
        STID(n_nodes=2, context=4, horizon=2, d_model=0)
    with pytest.raises(ValueError, match="n_heads"):
        JointSTTransformer(n_nodes=2, context=4, horizon=2, n_heads=0)
    model = STID(n_nodes=2, context=4, horizon=2)
    with pytest.raises(ValueError, match="x must"):
        model(torch.zeros(1, 5, 2), torch.zeros(1, 6, 2, dtype=torch.long))
