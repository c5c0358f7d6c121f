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


def test_balanced_gains_give_every_odour_the_same_gains():
    """The stratified concentrations of the gain controls: per odour the same multiset (so equal means), shuffled."""
    import numpy as np
    from nips25_olfaction.experiments.controls import balanced_gains

    g = balanced_gains(np.random.default_rng(0), 8, 10, 10, log_sd=0.5)
    assert g.shape == (8, 20) and np.all(g > 0)
    for part in (g[:, :10], g[:, 10:]):
        np.testing.assert_allclose(np.sort(part, axis=1), np.sort(part[:1], axis=1).repeat(8, 0))
    assert not np.all(g[:, :10] == g[:1, :10])  # each odour in its own order
    np.testing.assert_allclose(np.median(np.log(g[0, :10])), 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="log_sd"):
        balanced_gains(np.random.default_rng(0), 2, 2, 2, log_sd=-1.0)
