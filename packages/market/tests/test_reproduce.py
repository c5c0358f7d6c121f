"""Smoke test of reproduce (tiny profile), the CLI, and determinism of the report's numbers."""

from __future__ import annotations

import json

import numpy as np
import pytest
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


def test_contraction_bounds_known_values():
    """Uniform belief: lambda_2 = 1/n, so the l2 rate is 1 - 2/n; l-inf on n = 2 converges in one step (rate 0)."""
    from nips25_market.reproduce import contraction_bounds, tail_rate

    b5 = contraction_bounds(np.full(5, 0.2))
    assert b5["l2 exact"] == b5["l2"] == pytest.approx(0.6, abs=1e-12)
    assert b5["buy-only"] == pytest.approx(1 - 0.4 / 16, abs=1e-12)
    assert b5["linf"] == pytest.approx(1 - 4 / 10, abs=1e-12)  # Sigma^+ = n (I - 11^T/n): a^T Sigma^+ a = 2n
    assert contraction_bounds(np.array([0.5, 0.5]))["linf"] == pytest.approx(0.0, abs=1e-12)
    skew = contraction_bounds(np.array([0.01, 0.49, 0.5]))
    assert 0.97 < skew["l2"] < 0.99  # lambda_2 close to the small entry: slow
    assert tail_rate(0.5 ** np.arange(40), 1e-300) == pytest.approx(0.5, rel=1e-12)
    assert tail_rate(np.array([1.0, 1e-20, 0.0]), 1e-12) == 0.0


def test_l2_price_error_follows_linearised_rate():
    """The measured tail rate of the l2 price error equals 1 - 2 lambda_2 (the claim's exact-rate check)."""
    from nips25_market import LMSR, SmoothQuadratic, simulate
    from nips25_market.reproduce import contraction_bounds, tail_rate

    mu = np.array([0.05, 0.15, 0.3, 0.5])
    err = np.max(np.abs(np.asarray(simulate(SmoothQuadratic(LMSR(4, b=3.0)), np.tile(mu, (300, 1))).prices) - mu), 1)
    assert tail_rate(err, 1e-12) == pytest.approx(contraction_bounds(mu)["l2 exact"], rel=1e-3)


def test_cli_run_without_the_polls_extra_exits_with_the_message(monkeypatch):
    """Review finding: without the [polls] extra, `run --data polls2016` printed a traceback; now a clean exit."""
    import nips25_market.polls as polls

    def missing(*args, **kwargs):
        raise ImportError("load_polls_2016 needs the optional extra 'polls'")

    monkeypatch.setattr(polls, "load_polls_2016", missing)
    with pytest.raises(SystemExit, match=r"--data polls2016: .*extra 'polls'"):
        main(["run", "--data", "polls2016", "-q"])
