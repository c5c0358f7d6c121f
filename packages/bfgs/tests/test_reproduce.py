"""Smoke test of reproduce in its tiny profile, and the command line."""

from __future__ import annotations

import json

import pytest
from nips25_bfgs.cli import main
from nips25_bfgs.reproduce import reproduce

CLAIM_IDS = {
    "affine-invariance",
    "identity-start-grows",
    "any-B0-reaches-gap",
    "unit-steps-superlinear",
    "fewer-iterations-than-scipy",
}


def test_reproduce_tiny_profile_writes_a_complete_report(tmp_path):
    """The report has every claim, computed criteria and the figures; counts are positive integers."""
    rep = reproduce(profile="tiny", seed=0, out_dir=tmp_path)
    assert rep.package == "bfgs" and rep.profile == "tiny"
    assert {c.id for c in rep.claims} == CLAIM_IDS
    for c in rep.claims:
        assert isinstance(c.holds, bool) and c.criterion and c.measured is not None
    for fig in rep.figures:
        assert (tmp_path / fig).stat().st_size > 0
    counts = rep.claims[0].measured["iterations_by_cond"]
    assert set(counts) == {"1e+00", "1e+02"} and all(isinstance(v[0], int) and v[0] > 0 for v in counts.values())
    by_id = {c.id: c.measured for c in rep.claims}
    inv, sl = by_id["affine-invariance"], by_id["unit-steps-superlinear"]
    assert set(inv["float64_floor_by_cond"]) == set(counts) and "holds" in inv["old_design"]
    assert set(inv["control_sees_invariance_and_its_break"]) == set(counts)
    assert set(sl["newton_control_visible"]) == {"breast_cancer"} and "holds" in sl["old_design"]
    assert sl["small_psi_runs"]["breast_cancer"]["1*H*"]["psi0"] == pytest.approx(0.0, abs=1e-8)
    with pytest.raises(ValueError, match="profile"):
        reproduce(profile="huge", seed=0, out_dir=tmp_path)


def test_cli_run_writes_json(tmp_path, capsys, monkeypatch):
    """--out's missing folders are made; --gap <= 0 is refused naming --gap; a non-main rank writes nothing."""
    out = tmp_path / "new" / "run.json"
    assert (
        main(["run", "--problem", "breast_cancer", "--B0", "hessian,1e-3", "--max-iter", "1000", "--out", str(out)])
        == 0
    )
    data = json.loads(out.read_text())
    assert set(data["runs"]) == {"hessian", "0.001"}
    assert data["runs"]["hessian"]["n_iter"] > 0
    assert "breast_cancer B0=hessian" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["run", "--problem", "breast_cancer", "--B0", "sr1"])
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["run", "--problem", "breast_cancer", "--gap", "-1"])
    assert "--gap" in capsys.readouterr().err
    monkeypatch.setenv("RANK", "1")
    other = tmp_path / "rank1.json"
    assert main(["run", "--problem", "breast_cancer", "--B0", "hessian", "--out", str(other)]) == 0
    assert not other.exists()
