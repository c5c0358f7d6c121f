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


def test_written_report_files_are_0644_under_umask_022(tmp_path):
    import os

    old = os.umask(0o022)
    try:
        write_report(_report(), tmp_path / "modes")
    finally:
        os.umask(old)
    for name in ("results.json", "report.md"):
        assert os.stat(tmp_path / "modes" / name).st_mode & 0o777 == 0o644, name
