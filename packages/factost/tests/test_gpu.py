"""FactoST on a CUDA device: backbone forward, UTP pre-training and the accelerate fit/predict path.

Skipped where no CUDA GPU is present. ``train_steps`` builds ``Accelerator(cpu=not torch.cuda.is_available())``, so on
a GPU machine ``fit`` and ``utp_pretrain`` run on cuda. Tolerances: float32 attention reduces in another order on
the GPU (~1e-6 relative per op, one layer deep, TF32 off), and the forecast is de-normalised by the series' scale
(~5), so ``rtol=1e-4, atol=1e-4``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nips25_factost import FactoST, FitConfig, ReplayBuffer, TemporalBackbone
from nips25_factost.pretraining import UTPConfig, pool_windows, utp_pretrain

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.fixture(autouse=True)
def _no_tf32():
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def test_backbone_forecast_on_cuda_equals_cpu(backbone):
    """Zero-shot forecasts ``(B, H)`` of the CUDA backbone equal the CPU ones, missing values included."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 12, generator=g) * 3 + 5
    x[1, 3] = float("nan")
    dom = torch.tensor([0, 1, 0, 1, 0, 1])
    with torch.no_grad():
        want = backbone(x, dom, 9)
        got = backbone.cuda()(x.cuda(), dom.cuda(), 9)
    assert got.is_cuda and got.shape == (6, 9)
    torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-4)


def test_utp_pretraining_on_cuda_lowers_the_loss(small_config):
    """UTP pre-training (60 steps, as the CPU test) runs on cuda and lowers the loss by 15% or more."""
    torch.manual_seed(0)
    backbone = TemporalBackbone(small_config)
    cfg = UTPConfig(context=12, horizon=12, freqs=(1, 2), steps=60, batch_size=32, lr=3e-3)
    t = np.arange(2000)
    series = [np.sin(2 * np.pi * t / p) + 0.05 * np.random.default_rng(p).normal(size=t.size) for p in (7, 12)]
    windows, domains = pool_windows(series, np.array([0, 1]), length=cfg.window, per_domain=200, seed=0)
    losses = utp_pretrain(backbone, windows, domains, config=cfg, seed=0)
    assert next(backbone.parameters()).is_cuda
    assert len(losses) == 60 and np.mean(losses[-10:]) < 0.85 * np.mean(losses[:10])


def test_fit_on_cuda_then_predict_returns_finite_numpy(backbone, adapter, panel):
    """``fit`` trains on cuda (frozen backbone untouched) and ``predict`` takes CPU numpy input, returns numpy."""
    before = {k: v.clone() for k, v in backbone.state_dict().items()}
    replay = ReplayBuffer(32, seed=0)
    t = np.arange(300)
    replay.add_batch(np.stack([np.sin(t[i : i + 96] / 3) for i in range(40)]), np.zeros(40, dtype=int))
    model = FactoST(backbone, adapter, freeze_backbone=True, replay=replay)
    model.fit(panel, config=FitConfig(steps=3, batch_size=4, align_weight=0.1), seed=0)
    assert next(model.parameters()).is_cuda
    assert len(model.history_) == 3 and np.isfinite(model.history_).all()
    for k, v in backbone.state_dict().items():
        torch.testing.assert_close(v.cpu(), before[k], rtol=0, atol=0)
    x = panel.values[None, 60:72].copy()
    cal = panel.calendar()[0][None, 60:84]
    pred = model.predict(x, cal)
    assert isinstance(pred, np.ndarray) and pred.shape == (1, 12, 4) and np.isfinite(pred).all()
