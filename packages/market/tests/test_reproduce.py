"""Smoke test of reproduce (tiny profile), the CLI, and determinism of the report's numbers."""

from __future__ import annotations

import json

import numpy as np
from nips25_market.cli import main
from nips25_market.reproduce import _random_sequences, reproduce

from nips25_shared import seed_everything


def test_reproduce_tiny_report_structure(tmp_path):
    """The tiny profile computes all three claims, writes its figures, and the report serialises."""
    rep = reproduce(profile="tiny", seed=1, out_dir=tmp_path)
    assert [c.id for c in rep.claims] == ["sqpm-loss-le-dcfmm", "axioms-hold", "prices-converge"]
    assert all(isinstance(c.holds, bool) and c.measured and c.criterion for c in rep.claims)
    assert rep.figures and all((tmp_path / f).is_file() for f in rep.figures)
    assert json.loads(json.dumps(rep.to_dict()))["package"] == "market"


def test_random_sequences_deterministic_per_seed():
    """The experiment's trade sequences depend only on the seed (same key, same numbers; other key, others)."""
    a = _random_sequences(seed_everything(1), 3, 10.0, 4, 5)
    b = _random_sequences(seed_everything(1), 3, 10.0, 4, 5)
    c = _random_sequences(seed_everything(2), 3, 10.0, 4, 5)
    assert np.array_equal(np.asarray(a), np.asarray(b)) and not np.array_equal(np.asarray(a), np.asarray(c))


def test_cli_run_synthetic(capsys):
    """`nips25-market run --data synthetic` prints one line per mechanism."""
    assert main(["run", "--data", "synthetic", "--b", "100", "-q"]) == 0
    out = capsys.readouterr().out
    for m in ("lmsr", "sqpm", "quadratic", "sq-quadratic"):
        assert f"\n{m} " in out


def test_cli_run_prints_the_own_traders_scores(capsys):
    """Log score, Brier and states called come from the own-traders run (as README/report), with labelled columns."""
    from nips25_market.cli import _log_score
    from nips25_market.polls import synthetic_polls
    from nips25_market.reproduce import _poll_experiment

    assert main(["run", "--data", "synthetic", "--b", "100", "--seed", "0", "-q"]) == 0
    out = capsys.readouterr().out
    assert "loss (LMSR trades)" in out and "log score (own)" in out and "called (own)" in out
    res = _poll_experiment(synthetic_polls(seed_everything(0)), 100.0)
    rows = {line.split()[0]: line for line in out.splitlines()[3:]}
    for m, r in res["responsive"].items():
        cells = rows[m].split()
        assert float(cells[1]) == round(res["replayed"][m]["loss"], 3) and float(cells[2]) == round(r["loss"], 3)
        assert f" {_log_score(r['log_score'])} " in rows[m] and cells[-2] == f"{r['brier']:.4f}"
        assert cells[-1] == f"{r['called']}/5"
    assert _log_score(float("-inf")) == "-inf (a price of 0)" and _log_score(-0.35221) == "-0.3522"
