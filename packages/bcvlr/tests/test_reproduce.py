"""Smoke test of the headline experiment in its tiny profile: the report's structure, claims computed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from nips25_bcvlr.cli import main

from nips25_shared import load_report


def test_reproduce_tiny_profile_writes_a_complete_report(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert main(["reproduce", "--profile", "tiny", "--out", str(tmp_path), "-q"]) == 0
    report = load_report(tmp_path / "results.json")
    ids = {c.id for c in report.claims}
    assert ids == {"bcvlr-near-expert-and-beats-bco", "latent-actions-predict-true-actions",
                   "online-finetuning-ablation", "continuous-positive-control-bc-true-actions",
                   "continuous-bcvlr-near-expert-and-beats-bco"}  # fmt: skip
    for claim in report.claims:
        assert isinstance(claim.holds, bool) and claim.criterion and claim.measured is not None
    measured = report.claims[0].measured["mean_normalized_return"]
    assert set(measured) == {"bcvlr", "bcvlr_no_finetune", "lapo_lite", "bco", "ppo", "bc_true_actions"}
    assert all(isinstance(v, float) for v in measured.values())
    continuous = next(c for c in report.claims if c.id == "continuous-bcvlr-near-expert-and-beats-bco")
    assert set(continuous.measured["mean_normalized_return"]) == {"bcvlr", "bco", "bc_true_actions", "random"}
    assert (tmp_path / report.figures[0]).is_file()
    assert json.loads((tmp_path / "results.json").read_text())["profile"] == "tiny"


def test_continuous_profile_reports_only_the_continuous_claim(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The ``continuous`` profile skips the MiniGrid experiment; the quick profile does not run the continuous one."""
    import dataclasses

    from nips25_bcvlr import reproduce as rep

    assert rep.PROFILES["quick"].continuous is None and not rep.PROFILES["continuous"].discrete
    monkeypatch.setitem(rep.PROFILES, "continuous", dataclasses.replace(rep.PROFILES["tiny"], discrete=False))
    report = rep.reproduce(profile="continuous", out_dir=tmp_path)
    assert [c.id for c in report.claims] == [
        "continuous-positive-control-bc-true-actions",
        "continuous-bcvlr-near-expert-and-beats-bco",
    ]
    assert report.claims[1].measured["r2_trace"][0][0]["stage"] == "stage2"  # the collapse diagnostic was logged
    assert (tmp_path / report.figures[0]).is_file()


def test_non_main_rank_writes_no_file(tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """Under a distributed launch (``RANK=1``) the figures, ``Video.save`` and the CLI's ``record`` write nothing;
    the main rank writes them."""
    from nips25_bcvlr import reproduce as rep
    from nips25_bcvlr.environments import make_minigrid_pixels
    from nips25_bcvlr.experts import BFSExpert, record_video

    run = {"normalized": dict.fromkeys(rep.METHODS, 0.5), "r2_trace": [{"stage": "stage2", "step": 0, "r2": 0.1}]}
    cont = {"normalized": dict.fromkeys(rep.CONTINUOUS_METHODS, 0.5), "r2_trace": run["r2_trace"]}
    video = record_video(make_minigrid_pixels(), BFSExpert(), n_frames=8, seed=0)
    for rank, out in (("1", tmp_path / "rank1"), ("0", tmp_path / "rank0")):
        out.mkdir()
        monkeypatch.setenv("RANK", rank)
        names = [rep._figure([run], [cont], out), rep._r2_figure([run], [cont], out)]
        assert names == ["normalized_return.png", "latent_r2.png"]
        assert video.save(out / "video") == out / "video.npz"
        assert main(["record", "--out", str(out / "cli.npz"), "--frames", "4"]) == 0
    assert list((tmp_path / "rank1").iterdir()) == [] and capsys.readouterr().out.count("cli.npz") == 1
    assert sorted(p.name for p in (tmp_path / "rank0").iterdir()) == ["cli.npz", "latent_r2.png",
                                                                      "normalized_return.png", "video.npz"]  # fmt: skip


def test_seeds_in_worker_processes_equal_the_sequential_run(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """0.2.2: the one-thread profiles run their seeds in parallel spawned processes (one torch thread each); every
    seed seeds itself, so the per-seed results are those of the sequential run, in seed order."""
    from nips25_bcvlr import reproduce as rep

    monkeypatch.syspath_prepend(str(Path(__file__).parent / "scripts"))  # spawned workers inherit sys.path
    from seeded_draw import seeded_draw

    sequential = rep._run_seeds(seeded_draw, 3, [3, 4, 5], workers=1, threads=1)
    parallel = rep._run_seeds(seeded_draw, 3, [3, 4, 5], workers=2, threads=1)
    assert [s["weights"] for s in parallel] == [s["weights"] for s in sequential]
    assert [s["grad"] for s in parallel] == [s["grad"] for s in sequential]
    assert sequential[0]["weights"] != sequential[1]["weights"]  # the seeds differ, so the order is checked
    assert {s["threads"] for s in parallel} == {1} and not any(s["progress"] for s in parallel)
    assert rep._default_workers(rep.PROFILES["quick"]) >= 1 and rep._default_workers(rep.PROFILES["paper"]) == 1
    with pytest.raises(ValueError, match="workers"):
        rep.reproduce(profile="tiny", out_dir=Path("unused"), workers=0)
