"""The command line: generate -> score round trip, demo, and one-line errors with exit status 2."""

from __future__ import annotations

import json

import pytest
from nips25_commono import Oracle, load_common_o, save_predictions
from nips25_commono.cli import main


def test_generate_then_score_with_oracle_replies(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "main-0.parquet"
    assert main(["generate", "--n", "6", "--library", "procedural", "--out", str(data)]) == 0
    examples = load_common_o(data)
    replies = [Oracle().answer(ex) for ex in examples]
    replies[0] = "Answer: " + ", ".join(examples[0].letters)  # everything: wrong (None mixed with objects)
    save_predictions(tmp_path / "p.jsonl", examples, replies)
    capsys.readouterr()
    assert main(["score", "--pred", str(tmp_path / "p.jsonl"), "--data", str(data)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 6 and out["accuracy"] == pytest.approx(5 / 6) and out["missing_predictions"] == 0


def test_demo_prints_a_table(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["demo", "--n", "6", "--library", "procedural", "-q"]) == 0
    out = capsys.readouterr().out
    assert "| TemplateMatcher |" in out and "| NoneOption |" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["score", "--pred", "/nonexistent.jsonl", "--data", "/nonexistent"],
        ["generate", "--n", "0", "--out", "x.parquet"],
        ["generate", "--n", "2", "--library", "procedural", "--out", "x.csv"],
        ["demo", "--n", "-3"],
    ],
)
def test_user_errors_exit_2_with_one_line(argv, capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err
