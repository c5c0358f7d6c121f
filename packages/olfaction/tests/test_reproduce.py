"""reproduce in its tiny profile: report structure, computed claims, determinism; the CLI."""

import json

import pytest
from nips25_olfaction.cli import main
from nips25_olfaction.reproduce import reproduce

from nips25_shared import write_report


def test_reproduce_tiny(tmp_path):
    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path)
    ids = {c.id for c in report.claims}
    assert {
        "sparse-with-li",
        "li-helps-then-fades",
        "sfa-helps-everywhere",
        "li-sfa-best",
        "control-li",
        "control-sfa",
        "control-combined",
        "li-helps-then-fades@native-mbon_binary",
        "sfa-helps-everywhere@native-mbon_binary",
    } <= ids
    for claim in report.claims:
        assert isinstance(claim.holds, bool)
        assert claim.criterion
        assert claim.measured is not None
    write_report(report, tmp_path)
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["package"] == "olfaction"
    assert set(data["config"]["matched"]) == {"none", "LI", "SFA", "LI+SFA"}
    assert "matched" in report.notes and "native" in report.notes  # both calibration arms reported
    assert (tmp_path / "accuracy_vs_noise.png").stat().st_size > 0
    again = reproduce(profile="tiny", seed=0, out_dir=tmp_path / "again")
    assert [c.measured for c in again.claims] == [c.measured for c in report.claims]


def test_unknown_profile(tmp_path):
    with pytest.raises(ValueError, match="profile"):
        reproduce(profile="huge", out_dir=tmp_path)


def test_cli_help_and_bad_noise(capsys):
    with pytest.raises(SystemExit) as err:
        main(["run", "--noise", "1,x"])
    assert err.value.code == 2
    assert "--noise" in capsys.readouterr().err
