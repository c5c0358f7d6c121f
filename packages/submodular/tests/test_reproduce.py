"""Smoke tests of reproduce (tiny profile), the CLI and the scikit-learn-style selector."""

from __future__ import annotations

import json

import numpy as np
import pytest
from nips25_submodular import FacilityLocation, FacilityLocationSelection, Uniform, greedy
from nips25_submodular.cli import main
from nips25_submodular.reproduce import reproduce

from nips25_shared import Report


def test_reproduce_tiny_profile_report_structure(tmp_path):
    """The tiny profile returns a Report with the seven claims computed and the figure written; every max-cut claim
    reports the smoothing factor beside it."""
    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path)
    assert isinstance(report, Report) and report.package == "submodular"
    assert [c.id for c in report.claims] == [
        "maxcut-meta-half-opt",
        "maxcut-meta-nonvoid-guarantee",
        "maxcut-meta-beats-naive",
        "partition-meta-mcg-near-noiseless",
        "partition-meta-completion",
        "partition-naive-mcg-degrades",
        "meta-query-overhead",
    ]
    assert all(isinstance(c.holds, bool) and c.measured for c in report.claims)
    assert "rho" in report.claims[0].scale_note and "rho" in report.claims[1].scale_note
    assert report.config["maxcut_opt"] == {"davis": 89.0}
    assert report.figures == ["noise_sweep.png"] and (tmp_path / "noise_sweep.png").stat().st_size > 0
    with pytest.raises(ValueError, match="profile"):
        reproduce(profile="huge", out_dir=tmp_path)


def test_cli_run_is_deterministic(capsys):
    """`nips25-submodular run` prints the same JSON for the same seed and rejects bad flags."""
    args = ["run", "--graph", "davis", "--sigma", "0.5", "--seeds", "2", "--method", "naive,meta", "-q"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert main(args) == 0
    assert capsys.readouterr().out == first
    summary = json.loads(first.split("\nnote:")[0])
    assert summary["opt"] == 89.0 and set(summary["mean_cut"]) == {"naive", "meta"}
    for bad in (["--sigma", "-1"], ["--method", "best"], ["--seeds", "0"]):
        with pytest.raises(SystemExit) as exc:
            main(["run", *bad])
        assert exc.value.code == 2  # usage error, argparse's convention
        assert bad[0] in capsys.readouterr().err


def test_selector_matches_greedy_on_precomputed_similarity():
    """FacilityLocationSelection(metric='precomputed') ranks like greedy; bad n_samples and metric raise."""
    sim = np.random.default_rng(0).random((25, 25))
    sel = FacilityLocationSelection(5, metric="precomputed").fit(sim)
    ref = greedy(FacilityLocation(sim), Uniform(25, 5))
    assert sel.ranking.tolist() == ref.order.tolist()
    np.testing.assert_allclose(sel.gains, ref.gains, rtol=1e-5)
    assert sel.transform(np.arange(25)).tolist() == ref.order.tolist()
    with pytest.raises(ValueError, match="25 fitted rows"):
        sel.transform(np.arange(24))
    with pytest.raises(ValueError, match="not fitted"):
        FacilityLocationSelection(5).transform(sim)
    with pytest.raises(ValueError, match="n_samples"):
        FacilityLocationSelection(30, metric="precomputed").fit(sim)
    with pytest.raises(ValueError, match="metric"):
        FacilityLocationSelection(3, metric="cosine").fit(sim)  # type: ignore[arg-type]
