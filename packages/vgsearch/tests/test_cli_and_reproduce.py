"""CLI (user errors exit 2), the reproduce smoke test in its tiny profile, and the README quickstart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from nips25_vgsearch.cli import main
from nips25_vgsearch.reproduce import reproduce

README = Path(__file__).resolve().parents[1] / "README.md"


def test_reproduce_tiny_profile_structure(tmp_path, monkeypatch):
    monkeypatch.setenv("NIPS25_CACHE_DIR", str(tmp_path / "cache"))
    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path)
    ids = {c.id for c in report.claims}
    assert {"intermediate-g-beats-beam-and-bon", "adaptive-g-matches-best-fixed-with-fewer-flops",
            "accuracy-flops-curves", "consecutive-prm-gap", "intermediate-g-real-models", "repair-task-intermediate-g",
            "repair-task-intermediate-g-prefix-cached", "control-repair-task-oracle-prm"} <= ids  # fmt: skip
    control = next(c for c in report.claims if c.id == "control-repair-task-oracle-prm").measured
    assert set(control["prefill-reread"]) >= {"computable", "never_loses", "best_margin"}
    assert report.config["repair_points"]["oracle"]["prefix-cached"]
    assert all(isinstance(c.holds, bool) and c.criterion for c in report.claims)
    assert (tmp_path / report.figures[0]).is_file()
    assert report.package == "vgsearch" and report.config["sim_points"]


def test_reproduce_unknown_profile(tmp_path):
    with pytest.raises(ValueError, match="profile"):
        reproduce(profile="huge", out_dir=tmp_path)


def test_cli_sweep_prints_table(capsys, tmp_path):
    assert (
        main(["sweep", "--n", "4", "--g", "1", "inf", "--problems", "5", "--json", str(tmp_path / "t.json"), "-q"]) == 0
    )
    out = capsys.readouterr().out
    assert "| g=1 | 4 |" in out and "| g=inf | 4 |" in out and "| bon | 4 |" in out
    assert (tmp_path / "t.json").is_file()


@pytest.mark.parametrize(
    "argv",
    [
        ["sweep", "--g", "0"],
        ["sweep", "--g", "x"],
        ["sweep", "--n", "6"],
        ["sweep", "--n", "-4"],
        ["sweep", "--task", "math"],
        ["reproduce", "--profile", "huge"],
    ],
)
def test_cli_user_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as err:
        main(argv)
    assert err.value.code == 2
    assert "error" in capsys.readouterr().err


def test_cli_paper_profile_names_missing_paths(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VGSEARCH_GENERATOR", str(tmp_path / "nope"))
    with pytest.raises(SystemExit) as err:
        main(["reproduce", "--profile", "paper", "--out", str(tmp_path / "r")])
    assert err.value.code == 2
    assert "VGSEARCH_GENERATOR" in capsys.readouterr().err


def test_readme_quickstart_runs():
    text = README.read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S)
    assert block is not None
    exec(compile(block.group(1), str(README), "exec"), {})


def test_paper_data_checks_and_exact_match(tmp_path):
    """The paper profile's JSONL reader names the bad line; exact match reads a box with nested braces."""
    from nips25_vgsearch.reproduce import PaperInputError, exact_match, load_math_jsonl

    good = tmp_path / "ok.jsonl"
    good.write_text('{"problem": "p1", "answer": "\\\\frac{1}{2}"}\n\n{"problem": "p2", "answer": 3}\n')
    answers = load_math_jsonl(good)
    assert answers == {"p1": "\\frac{1}{2}", "p2": "3"}
    assert exact_match("x\n\nso \\boxed{\\frac{1}{2}}", answers["p1"])
    assert not exact_match("x\n\nso \\boxed{\\frac{1}{3}}", answers["p1"])
    assert not exact_match("x\n\n3", answers["p2"])  # no box, no match
    cases = [
        ("not json\n", "line 1 is not JSON"),
        ('{"question": "q", "answer": 1}\n', "line 1 needs"),
        ('{"problem": "q"}\n', "'answer'"),
        ("\n", "no problems"),
        ('{"problem": "q", "answer": 1}\n{"problem": "q", "answer": 2}\n', "line 2 repeats"),
    ]
    for text, match in cases:
        bad = tmp_path / "bad.jsonl"
        bad.write_text(text)
        with pytest.raises(PaperInputError, match=match):
            load_math_jsonl(bad)
    with pytest.raises(FileNotFoundError, match="VGSEARCH_DATA"):
        load_math_jsonl(tmp_path)


def _paper_env(monkeypatch, tmp_path, data_text: str) -> None:
    for name in ("gen", "prm"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")  # a directory that is not a loadable model
    (tmp_path / "data.jsonl").write_text(data_text)
    monkeypatch.setenv("VGSEARCH_GENERATOR", str(tmp_path / "gen"))
    monkeypatch.setenv("VGSEARCH_PRM", str(tmp_path / "prm"))
    monkeypatch.setenv("VGSEARCH_DATA", str(tmp_path / "data.jsonl"))


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ("not json\n", "VGSEARCH_DATA"),
        ('{"problem": "p", "answer": 1}\n{"problem": "q", "answer": 2}\n', "VGSEARCH_GENERATOR"),
    ],
)
def test_cli_paper_profile_bad_inputs_exit_2(tmp_path, monkeypatch, capsys, data, named):
    """A malformed JSONL (checked before any model loads) or a model directory that does not load: one line, exit 2."""
    _paper_env(monkeypatch, tmp_path, data)
    with pytest.raises(SystemExit) as err:
        main(["reproduce", "--profile", "paper", "--out", str(tmp_path / "r")])
    assert err.value.code == 2
    assert named in capsys.readouterr().err


def test_cli_unusable_output_paths_exit_2(tmp_path, capsys):
    """--out on a file, --json on a directory or under a file: one line, exit 2, before any run."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    for argv, flag in [
        (["reproduce", "--out", str(afile)], "--out"),
        (["sweep", "--problems", "2", "--n", "4", "--g", "1", "--json", str(tmp_path)], "--json"),
        (["sweep", "--problems", "2", "--n", "4", "--g", "1", "--json", str(afile / "t.json")], "--json"),
        (["sweep", "--task", "arith", "--max-steps", "4"], "--max-steps"),
    ]:
        with pytest.raises(SystemExit) as err:
            main(argv)
        assert err.value.code == 2
        assert flag in capsys.readouterr().err


def test_paper_profile_claim_is_computed_over_several_budgets(tmp_path, monkeypatch):
    """The paper profile's sweep must give each method a curve: with one n (before) the FLOPs ranges of the
    methods never overlapped and the claim could not hold whatever the models did. Local models are stood in for
    by the simulator (loading is patched; the JSONL holds simulator problems with answers in a box)."""
    import nips25_vgsearch.hf as hf
    from nips25_vgsearch import StepChainTask

    task = StepChainTask(n_problems=4, seed=3)
    _paper_env(monkeypatch, tmp_path, "".join(f'{{"problem": "{p}", "answer": "x"}}\n' for p in task.problems))
    monkeypatch.setattr(hf, "load_generator", lambda path: task.generator())
    monkeypatch.setattr(hf, "load_prm", lambda path, mode: task.verifier())
    report = reproduce(profile="paper", seed=0, out_dir=tmp_path / "r")
    claim = next(c for c in report.claims if c.id == "intermediate-g-beats-beam-and-bon")
    lo, hi = claim.measured["range"]
    assert lo <= hi and claim.measured["method"] in ("g=2", "g=3", "g=4")
    assert {p["n"] for p in report.config["points"]} == {4, 16, 64}
