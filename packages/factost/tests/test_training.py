"""The shared training loop: the loss does not depend on the data's units (regression for a review finding)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nips25_factost import FactoST, FitConfig, ReplayBuffer, STAdapter, STPanel, TemporalBackbone, loss_scale


def _fit_predict(panel: STPanel, small_config, replay: ReplayBuffer) -> np.ndarray:
    torch.manual_seed(0)
    bb = TemporalBackbone(small_config).eval()
    torch.manual_seed(1)
    ad = STAdapter(n_nodes=4, d_model=16, emb_dim=4, rank=2, topk=2, n_source_domains=2)
    model = FactoST(bb, ad, freeze_backbone=True, replay=replay)
    model.fit(panel, config=FitConfig(steps=8, batch_size=8, align_weight=1.0), seed=0)
    x = panel.values[None, -12:]
    cal = panel.calendar()[0][None, -24:]
    return model.predict(x, np.concatenate([cal[:, :12], cal[:, -12:]], axis=1))


def test_fit_is_affine_equivariant_in_the_data_units(panel, small_config):
    """Fitting a X + b (ridership in entries instead of thousands) forecasts a f(X) + b.

    Before the fix the forecast loss was an MAE in data units next to the unit-free alignment penalty, so the
    balance of the two (and gradient clipping) changed with the units and so did the fitted model.
    """
    rng = np.random.default_rng(0)
    windows = rng.normal(size=(32, 96))

    def replay() -> ReplayBuffer:
        buf = ReplayBuffer(32, seed=0)
        buf.add_batch(windows, np.zeros(32, dtype=np.int64))
        return buf

    a, b = 1000.0, 5.0
    scaled = STPanel(a * panel.values + b, panel.timestamps, panel.coords)
    base = _fit_predict(panel, small_config, replay())
    big = _fit_predict(scaled, small_config, replay())
    np.testing.assert_allclose(big, a * base + b, rtol=1e-3, atol=1e-2 * a)


def test_loss_scale_is_the_per_node_std_and_one_for_constant_nodes(panel):
    """Known answer: each node's (population) standard deviation over the panel; a constant node gets 1."""
    values = panel.values.copy()
    values[:, 2] = 3.0
    values[5, 0] = np.nan
    p = STPanel(values, panel.timestamps)
    expected = np.nanstd(values, axis=0)
    expected[2] = 1.0
    torch.testing.assert_close(loss_scale(p), torch.as_tensor(expected, dtype=torch.float32))
    with pytest.raises(TypeError, match="panel"):
        loss_scale(values)


@pytest.mark.parametrize("field", ["align_weight", "weight_decay"])
def test_fit_config_rejects_nan_weights(field):
    """NaN slipped through the `< 0` checks (review finding); now the error names the field."""
    with pytest.raises(ValueError, match=field):
        FitConfig(**{field: float("nan")})


def test_utp_config_rejects_nan_weight_decay():
    from nips25_factost import UTPConfig

    with pytest.raises(ValueError, match="weight_decay"):
        UTPConfig(weight_decay=float("nan"))


def test_alignment_penalty_rejects_non_finite_tokens():
    """A NaN token used to give a silent NaN penalty (and a NaN training loss)."""
    from nips25_factost import alignment_penalty

    target = torch.zeros(3, 2)
    target[0, 0] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        alignment_penalty(target, torch.zeros(3, 2))
