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
            "accuracy-flops-curves", "consecutive-prm-gap", "intermediate-g-real-models"} <= ids  # fmt: skip
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
