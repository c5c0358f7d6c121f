"""The ``nips25-routing`` command (route on stdin, reproduce in its tiny profile) and the reproduce smoke test."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from nips25_routing import PORTRouter
from nips25_routing.cli import main, parse_query_line
from nips25_routing.reproduce import ROUTERS, reproduce

from .conftest import make_history


def _write_history(tmp_path):
    hist = make_history(0)
    path = tmp_path / "history.npz"
    np.savez(path, embeddings=hist.embeddings, quality=hist.quality, cost=hist.cost, models=np.array(hist.models))
    return path


def _queries(n: int, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    return "".join(json.dumps({"id": f"q{i}", "embedding": (rng.normal(size=8) * 3).tolist()}) + "\n" for i in range(n))


def test_route_command_matches_the_library_and_resumes_from_state(tmp_path, monkeypatch, capsys):
    """`route` writes one decision per line, equal to PORTRouter.route; a second call resumes from --state."""
    path = _write_history(tmp_path)
    state = tmp_path / "state.json"
    args = ["route", "--history", str(path), "--budgets", "30,30,30", "--n-total", "100", "--alpha", "1",
            "--eps", "0.2", "--backend", "faiss-flat", "--state", str(state), "--batch-size", "16"]  # fmt: skip
    text = _queries(100)
    lines = text.splitlines(True)
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(lines[:50])))
    assert main(args) == 0
    first = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(lines[50:])))
    assert main(args) == 0
    second = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(first) == 50
    decisions = [d["index"] for d in first + second]
    assert [d["id"] for d in first + second] == [f"q{i}" for i in range(100)]

    from nips25_routing import ANNEstimator, HistoryStore

    with np.load(path) as npz:
        hist = HistoryStore(npz["embeddings"], npz["quality"], npz["cost"], [str(m) for m in npz["models"]])
    router = PORTRouter(ANNEstimator(hist, backend="faiss-flat"), [30, 30, 30], n_total=100, alpha=1.0, eps=0.2)
    emb = np.array([json.loads(line)["embedding"] for line in text.splitlines()])
    expected = np.concatenate(
        [router.route(emb[i : min(i + 16, 50)]) for i in range(0, 50, 16)] + [router.route(emb[50:])]
    )
    assert decisions == expected.tolist()


def test_route_command_names_the_bad_line(tmp_path, monkeypatch, capsys):
    path = _write_history(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO(_queries(1) + '{"text": "no embedding"}\n'))
    assert main(["route", "--history", str(path), "--budgets", "1,1,1", "--backend", "faiss-flat"]) == 2
    err = capsys.readouterr().err
    assert "line 2" in err and "'embedding' is missing" in err
    assert main(["route", "--history", str(tmp_path / "none.npz"), "--budgets", "1,1,1"]) == 2


def test_route_saves_the_state_of_lines_routed_before_a_bad_line(tmp_path, monkeypatch, capsys):
    """Decisions issued before a bad line are recorded in --state; resuming continues from there."""
    path, state = _write_history(tmp_path), tmp_path / "st.json"
    good = _queries(4).splitlines(True)
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(good) + "garbage\n" + "".join(good)))
    args = ["route", "--history", str(path), "--budgets", "1,1,1", "--n-total", "40", "--batch-size", "3",
            "--backend", "faiss-flat", "--state", str(state)]  # fmt: skip
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 4 and "line 5" in err and "holds the 4 queries" in err
    assert json.loads(state.read_text())["n_seen"] == 4


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("[1, 2]", "JSON object"),
        ('{"embedding": "x"}', "list of numbers"),
        ('{"embedding": [1, 2]}', "8 entries"),
        ('{"embedding": [1, 2, 3, 4, 5, 6, 7, [8]]}', r"\[7\] must be a number"),
        ('{"embedding": [true, 2, 3, 4, 5, 6, 7, 8]}', r"\[0\] must be a number"),
        ('{"embedding": [NaN, 2, 3, 4, 5, 6, 7, 8]}', r"\[0\] must be finite"),
        ('{"embedding": [0, 0, 0, 0, 0, 0, 0, 0]}', "all zero"),
    ],
)
def test_parse_query_line_names_line_and_field(line, match):
    with pytest.raises(ValueError, match=match):
        parse_query_line(line, 3, 8)


def test_route_rejects_options_that_contradict_the_state_and_zero_batch(tmp_path, monkeypatch, capsys):
    path, state = _write_history(tmp_path), tmp_path / "st.json"
    base = ["route", "--history", str(path), "--backend", "faiss-flat", "--state", str(state)]
    monkeypatch.setattr("sys.stdin", io.StringIO(_queries(2)))
    assert main([*base, "--budgets", "1,1,1", "--n-total", "40"]) == 0
    for extra, flag in [(["--n-total", "50"], "--n-total"), (["--alpha", "1"], "--alpha"),
                        (["--budgets", "2,1,1"], "--budgets")]:  # fmt: skip
        monkeypatch.setattr("sys.stdin", io.StringIO(_queries(2)))
        capsys.readouterr()
        assert main([*base, *extra]) == 2
        assert flag in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO(_queries(2)))
    assert main([*base, "--budgets", "1,1,1", "--n-total", "40", "--alpha", "1e-4"]) == 0  # same values: fine
    assert main([*base, "--batch-size", "0"]) == 2
    assert "--batch-size" in capsys.readouterr().err


def test_reproduce_tiny_profile_builds_a_complete_report(tmp_path, monkeypatch):
    """Smoke: the tiny profile returns six claims with criteria and computed holds, and writes its figure; a
    non-main rank (``RANK=1``) computes the same numbers and writes no figure."""
    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path)
    assert report.package == "routing" and report.profile == "tiny"
    assert [c.id for c in report.claims] == [
        "port-beats-online-baselines", "port-near-approx-opt", "port-throughput", "port-latency",
        "control-gap-visible", "dual-form-default",
    ]  # fmt: skip
    assert len(report.config["per_seed_results"]["1.0"]["PORT"]) == 2  # every seed kept
    assert set(report.config["dual_forms_per_seed"]["1.0"][0]) == {"code, gamma<=1", "code, unbounded", "textbook"}
    assert all(isinstance(c.holds, bool) and c.criterion for c in report.claims)
    assert (tmp_path / report.figures[0]).is_file()
    means = report.config["mean_results"]["1.0"]
    assert set(means) == set(ROUTERS)
    # Optimum (LP on true quality/cost) is an upper bound only up to rounding; it must be positive and finite
    assert means["Optimum"]["quality"] > 0
    # each router's SE over seeds, by hand from the per-seed rows (2 seeds: |a - b| / 2)
    a, b = (r["quality"] for r in report.config["per_seed_results"]["1.0"]["PORT"])
    assert report.config["se_results"]["1.0"]["PORT"]["quality"] == pytest.approx(abs(a - b) / 2, rel=1e-12)
    # reproducibility: the same seed gives the same routing numbers
    monkeypatch.setenv("RANK", "1")
    rank1 = tmp_path / "rank1"
    rank1.mkdir()
    again = reproduce(profile="tiny", seed=0, out_dir=rank1)
    assert not any(rank1.iterdir())
    assert again.config["mean_results"]["1.0"]["PORT"]["quality"] == means["PORT"]["quality"]
    assert again.config["mean_results"]["1.0"]["BatchSplit"]["throughput"] == means["BatchSplit"]["throughput"]


def test_reproduce_rejects_unknown_profile_and_missing_routerbench(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="profile"):
        reproduce(profile="huge", out_dir=tmp_path)
    monkeypatch.delenv("NIPS25_ROUTERBENCH", raising=False)
    with pytest.raises(FileNotFoundError, match="NIPS25_ROUTERBENCH"):
        reproduce(profile="paper", out_dir=tmp_path)


def test_reproduce_paper_without_routerbench_is_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("NIPS25_ROUTERBENCH", raising=False)
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "--profile", "paper", "--out", str(tmp_path)])
    assert exc.value.code == 2 and "NIPS25_ROUTERBENCH" in capsys.readouterr().err


def test_reproduce_seeds_override_is_validated_and_a_cli_usage_error(tmp_path, capsys):
    with pytest.raises(ValueError, match="n_seeds must be an integer >= 2"):
        reproduce(profile="tiny", out_dir=tmp_path, n_seeds=1)
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "--profile", "quick", "--seeds", "1", "--out", str(tmp_path)])
    assert exc.value.code == 2 and "n_seeds" in capsys.readouterr().err
