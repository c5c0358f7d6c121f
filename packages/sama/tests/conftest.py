"""Tiny configurations shared by the tests (no network, CPU only)."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
torch.set_num_threads(1)


def _tiny_config(**overrides):
    from nips25_sama import SAMAConfig

    base = dict(
        vis_dim=12,
        tokens_per_frame=16,
        spatial_width=10,
        qformer_hidden=8,
        qformer_heads=2,
        qformer_intermediate=16,
        spatial_layers=2,
        temporal_layers=2,
        spatial_queries=4,
        temporal_queries=3,
        window_size=8,
        stride=8,
        region_mask_size=8,
        region_hidden=6,
        dropout=0.0,
    )
    base.update(overrides)
    return SAMAConfig(**base)


@pytest.fixture(scope="session")
def tokenizer():
    from nips25_sama.loading import build_temporal_tokenizer

    return build_temporal_tokenizer()


@pytest.fixture
def tiny_config():
    """Factory of a tiny SAMAConfig (C = 12, Q-Former width 8, windows of 8 spatial tokens)."""
    return _tiny_config


# tests/data holds fixture-generation and provenance scripts (run by hand, outside the repository's environment),
# not tests: keep them out of pytest's --doctest-modules collection.
collect_ignore_glob = ["data/*.py"]
