"""Smoke test of reproduce (tiny profile), the CLI, and the embedded real graph."""

import json

import jax
import numpy as np
import pytest
from nips25_gnnclt import class_mean_check, load_drosophila_left
from nips25_gnnclt.cli import main
from nips25_gnnclt.reproduce import PROFILES, REPLICATES, reproduce


@pytest.mark.slow  # about 8 s: compiles every metric and three heads per cell
def test_reproduce_tiny_profile_structure(tmp_path):
    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path)
    ids = {c.id for c in report.claims}
    assert ids == {
        "w1-falls-with-degree",
        "covariance-error-falls-with-degree",
        "theory-beats-naive-gaussian",
        "collapse-rate",
        "ce-gap-falls-with-degree",
        "control-w1-floor",
        "control-ce-naive-mixture",
        "real-graph-class-means",
    }
    for claim in report.claims:
        assert isinstance(claim.holds, bool) and claim.criterion and claim.measured
    by_id = {c.id: c for c in report.claims}
    # every paired comparison carries its mean, SE and verdict, and the verdict follows the 2-SE rule
    for claim_id, path in [
        ("w1-falls-with-degree", ("fall_5_to_20",)),
        ("ce-gap-falls-with-degree", ("fall_5_to_20",)),
        ("theory-beats-naive-gaussian", ("naive_minus_theory",)),
        ("control-w1-floor", ("floor_sample_naive_minus_theory", "naive_minus_theory")),
        ("control-w1-floor", ("embeddings_minus_floor_nu=5",)),
        ("control-ce-naive-mixture", ("naive_minus_theory",)),
    ]:
        tests = by_id[claim_id].measured
        for key in path:
            tests = tests[key]
        assert set(tests) == {"k=1", "k=2"}
        for t in tests.values():
            assert t["se"] >= 0 and t["holds"] == (t["mean"] > 2 * t["se"])
    assert report.config["replicates"] == REPLICATES["tiny"] == 2
    assert "old_design_max_gap_over_bound" in by_id["ce-gap-falls-with-degree"].measured
    assert all((tmp_path / f).is_file() for f in report.figures)
    cells = report.config["cells"]
    assert len(cells) == len(PROFILES["tiny"].nus) * len(PROFILES["tiny"].ks)
    assert all(np.isfinite(c["w1_sliced"]) and c["w1_sliced"] > 0 for c in cells)
    assert all(0 < c["w1_floor"] < c["w1_floor_naive"] for c in cells if c["k"] == 1)
    json.dumps(report.to_dict())


def test_reproduce_rejects_unknown_profile(tmp_path):
    with pytest.raises(ValueError, match="profile"):
        reproduce(profile="huge", seed=0, out_dir=tmp_path)


def test_cli_help_and_simulate(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    capsys.readouterr()
    assert (
        main(
            [
                "simulate",
                "--n",
                "1500",
                "--nu",
                "5",
                "--k",
                "1",
                "--n-proj",
                "2",
                "--head-per-class",
                "50",
                "--head-steps",
                "20",
                "-q",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out.strip().splitlines()
    assert "W1 theory" in out[0] and len(out) == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--n", "10"], "--n"), (["--nu", "0"], "--nu"), (["--k", "0"], "--k"), (["--n", "16", "--nu", "400"], "--nu")],
)
def test_cli_simulate_rejects_bad_arguments(capsys, argv, message):
    """Out-of-range simulate arguments end in argparse's usage error (exit status 2), not a traceback."""
    with pytest.raises(SystemExit) as exc:
        main(["simulate", *argv])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_drosophila_is_embedded_and_k1_means_match():
    A, types = load_drosophila_left()
    assert A.shape == (209, 209)
    assert dict(zip(*np.unique(types, return_counts=True))) == {"I": 21, "K": 101, "O": 29, "P": 58}
    y = np.unique(types, return_inverse=True)[1]
    res = class_mean_check(A, y, jax.random.key(0), ks=(1,))
    assert res["per_k"][1]["rel_error"] < 0.15  # exact up to self-exclusion O(1/n_c) and feature noise
    with pytest.raises(ValueError, match="noise"):
        class_mean_check(A, y, jax.random.key(0), noise=0.0)
