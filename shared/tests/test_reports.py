import json

import numpy as np
import pytest

from nips25_shared import Claim, Report, load_report, summarize, write_report


def _claim(**kw):
    base = dict(
        id="a-beats-b",
        statement="A beats B.",
        paper=0.9,
        measured={"a": np.float64(0.8), "b": np.float32(0.7), "runs": np.arange(2)},
        criterion="a > b",
        holds=np.bool_(True),
        scale_note="tiny",
    )
    base.update(kw)
    return Claim(**base)


def _report(**kw):
    base = dict(
        package="demo",
        title="Demo",
        profile="quick",
        seed=0,
        config={"n": np.int64(3)},
        claims=[_claim(), _claim(id="c2", holds=False, paper=None)],
        wall_time_s=1.5,
    )
    base.update(kw)
    return Report(**base)


def test_claim_converts_numpy_to_json_types():
    c = _claim()
    assert c.holds is True and c.measured == {"a": 0.8, "b": pytest.approx(0.7), "runs": [0, 1]}


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"id": ""}, "id"),
        ({"holds": "yes"}, "holds"),
        ({"criterion": " "}, "criterion"),
        ({"measured": object()}, "measured"),
    ],
)
def test_claim_rejects_bad_fields(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        _claim(**kw)


def test_report_round_trips_through_json(tmp_path):
    (tmp_path / "fig.png").write_bytes(b"png")
    rep = _report(figures=["fig.png"], notes="note")
    path = write_report(rep, tmp_path)
    data = json.loads(path.read_text())
    assert data["all_hold"] is False and data["schema_version"] == 1
    for key in ("environment", "wall_time_s", "claims", "config"):
        assert key in data
    assert set(data["claims"][0]) == {"id", "statement", "paper", "measured", "criterion", "holds", "scale_note"}
    back = load_report(tmp_path)
    assert back == rep
    md = (tmp_path / "report.md").read_text()
    assert "| `a-beats-b` |" in md and "**no**" in md and "![fig.png](fig.png)" in md


def test_report_rejects_duplicates_and_missing_figure(tmp_path):
    with pytest.raises(ValueError, match="duplicate"):
        _report(claims=[_claim(), _claim()])
    with pytest.raises(FileNotFoundError, match="nope.png"):
        write_report(_report(figures=["nope.png"]), tmp_path)


def test_nonfinite_values_are_kept_as_text():
    assert _claim(measured=float("nan")).measured == "nan"


def test_summarize(tmp_path):
    write_report(_report(), tmp_path / "demo")
    path = summarize(tmp_path, packages=["demo", "missing"])
    text = path.read_text()
    assert "1 reports, 2 of 4 claims hold" not in text  # counts are per claim
    assert "1 reports, 1 of 2 claims hold" in text
    assert "| missing | | no report |" in text and "[demo](demo/report.md)" in text


def test_summary_names_the_commit_and_each_wall_time(tmp_path, monkeypatch):
    monkeypatch.setenv("NIPS25_GIT_COMMIT", "abc123")
    write_report(_report(), tmp_path / "demo")
    write_report(_report(package="other", wall_time_s=7.25), tmp_path / "other")
    text = summarize(tmp_path).read_text()
    assert "Every report was made from commit `abc123`." in text
    assert "| other | quick | 7.2 | `abc123` |" in text
    monkeypatch.setenv("NIPS25_GIT_COMMIT", "def456")
    write_report(_report(package="third"), tmp_path / "third")
    assert "**The reports come from 2 different commits** (`abc123`, `def456`)" in summarize(tmp_path).read_text()


def test_environment_records_the_git_commit_and_the_load(tmp_path, monkeypatch):
    import subprocess

    from nips25_shared.reports import environment, git_commit

    monkeypatch.delenv("NIPS25_GIT_COMMIT", raising=False)
    assert git_commit(tmp_path) is None  # not a checkout
    run = dict(cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(["git", "init", "-q"], **run)
    (tmp_path / "f.txt").write_text("a")
    subprocess.run(["git", "add", "f.txt"], **run)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"], **run)
    head = subprocess.run(["git", "rev-parse", "HEAD"], text=True, **run).stdout.strip()
    assert git_commit(tmp_path) == head
    (tmp_path / "untracked.txt").write_text("u")
    assert git_commit(tmp_path) == head  # untracked files do not make it dirty
    (tmp_path / "f.txt").write_text("b")
    assert git_commit(tmp_path) == f"{head}-dirty"
    env = environment()
    assert "git_commit" in env and len(env["load_average"]) == 3


def test_written_report_files_are_0644_under_umask_022(tmp_path):
    import os

    old = os.umask(0o022)
    try:
        write_report(_report(), tmp_path / "modes")
    finally:
        os.umask(old)
    for name in ("results.json", "report.md"):
        assert os.stat(tmp_path / "modes" / name).st_mode & 0o777 == 0o644, name
