"""Review of the quantile head: monotone public quantiles, pinball-loss and predict_quantiles bad inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nips25_factost import BackboneConfig, FactoST, FitConfig, STAdapter, TemporalBackbone, make_windows, pinball_loss


def _crossing_backbone() -> TemporalBackbone:
    """An untrained 11-level head: its raw quantile outputs cross (checked below, so the test is not vacuous)."""
    torch.manual_seed(0)
    return TemporalBackbone(BackboneConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32, dropout=0.0)).eval()


def test_forecast_quantiles_are_monotone_by_default_and_raw_on_request():
    """Crossing quantiles are rearranged (sorted per step); rearrange=False gives the raw head, whose median is
    forward()."""
    bb = _crossing_backbone()
    x, dom = torch.randn(8, 12), torch.zeros(8, dtype=torch.long)
    raw = bb.forecast_quantiles(x, dom, 6, rearrange=False)
    assert (raw.diff(dim=-1) < 0).any(), "the fixture must cross for this test to mean anything"
    q = bb.forecast_quantiles(x, dom, 6)
    assert (q.diff(dim=-1) >= 0).all()
    torch.testing.assert_close(q, raw.sort(dim=-1).values)
    torch.testing.assert_close(bb(x, dom, 6), raw[..., bb.config.median_index])


def test_factost_predict_quantiles_is_monotone(panel):
    """FactoST.predict_quantiles never returns a lower level above a higher one (a usable interval)."""
    bb = _crossing_backbone()
    torch.manual_seed(1)
    adapter = STAdapter(n_nodes=4, d_model=16, emb_dim=4, rank=2, topk=2, n_source_domains=1)
    model = FactoST(bb, adapter).fit(panel, config=FitConfig(steps=1, batch_size=4))
    w = make_windows(panel, context=12, horizon=12)
    raw = model.predict_quantiles(w.x[:4], w.calendar[:4], rearrange=False)
    assert (np.diff(raw, axis=-1) < 0).any()
    np.testing.assert_allclose(raw[..., bb.config.median_index], model.predict(w.x[:4], w.calendar[:4]), rtol=1e-6)
    q = model.predict_quantiles(w.x[:4], w.calendar[:4])
    assert (np.diff(q, axis=-1) >= 0).all()
    np.testing.assert_allclose(q, np.sort(raw, axis=-1))
    with pytest.raises(ValueError, match="batch_size"):
        model.predict_quantiles(w.x[:4], w.calendar[:4], batch_size=2.5)


def test_pinball_loss_rejects_empty_levels_inf_targets_and_non_boolean_masks():
    """No silent NaN for Q = 0, no 1e37-sized loss for an inf target, a clear error for a float mask."""
    with pytest.raises(ValueError, match="quantiles"):
        pinball_loss(torch.zeros(3, 0), torch.zeros(3), ())
    with pytest.raises(ValueError, match="target"):
        pinball_loss(torch.zeros(3, 1), torch.tensor([1.0, float("inf"), 0.0]), (0.5,))
    with pytest.raises(TypeError, match="mask"):
        pinball_loss(torch.zeros(3, 1), torch.zeros(3), (0.5,), mask=torch.ones(3))


def test_adapter_refinement_flag_must_be_boolean():
    """STAdapter(refinement='yes') is a typo, not a request for CPR."""
    with pytest.raises(TypeError, match="refinement"):
        STAdapter(n_nodes=4, d_model=16, refinement="yes")
