"""Shared fixtures: tiny models and a small synthetic panel (random tensors are for unit tests only)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from nips25_factost import BackboneConfig, STAdapter, STPanel, TemporalBackbone

torch.set_num_threads(1)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "distributed: runs several processes under accelerate launch (CPU, gloo)")


@pytest.fixture
def small_config() -> BackboneConfig:
    return BackboneConfig(patch_len=4, d_model=16, n_layers=1, n_heads=2, d_ff=32, dropout=0.0, n_domains=2)


@pytest.fixture
def backbone(small_config: BackboneConfig) -> TemporalBackbone:
    torch.manual_seed(0)
    return TemporalBackbone(small_config).eval()


@pytest.fixture
def panel() -> STPanel:
    rng = np.random.default_rng(0)
    t = np.arange(120)
    values = 5 + np.sin(2 * np.pi * t / 7)[:, None] * rng.uniform(1, 2, 4) + rng.normal(0, 0.1, (120, 4))
    return STPanel(values, pd.date_range("2021-01-01", periods=120, freq="D"), coords=rng.uniform(0, 1, (4, 2)))


@pytest.fixture
def adapter(small_config: BackboneConfig) -> STAdapter:
    torch.manual_seed(1)
    return STAdapter(n_nodes=4, d_model=16, emb_dim=4, rank=2, topk=2, n_source_domains=2)
