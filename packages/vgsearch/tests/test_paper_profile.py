"""``reproduce --profile paper`` end to end on tiny local model directories (the paper's pair is not available here)."""

from __future__ import annotations

import json

import pytest
from nips25_vgsearch.cli import main

PROBLEMS = [("1+1", "2"), ("2+3", "5"), ("4+4", "8")]


@pytest.fixture
def paper_env(tmp_path, monkeypatch, tiny, fresh_tokenizer):
    """Tiny generator and PRM saved as local model directories (the generator's tokenizer has a chat template)
    and a MATH-500-style JSONL, named by the profile's environment variables."""
    _, lm, prm = tiny
    tok = fresh_tokenizer
    tok.chat_template = "{% for m in messages %}{{ m['role'][0] }}={{ m['content'] }};{% endfor %}a="
    for model, name in ((lm, "gen"), (prm, "prm")):
        model.save_pretrained(tmp_path / name)
        tok.save_pretrained(tmp_path / name)
    data = tmp_path / "math.jsonl"
    data.write_text("\n".join(json.dumps({"problem": p, "answer": a}) for p, a in PROBLEMS) + "\n")
    env = {"VGSEARCH_GENERATOR": tmp_path / "gen", "VGSEARCH_PRM": tmp_path / "prm", "VGSEARCH_DATA": data}
    for name, path in env.items():
        monkeypatch.setenv(name, str(path))
    monkeypatch.setenv("VGSEARCH_NS", "4,8")
    return tmp_path


def test_paper_profile_computes_every_claim_on_local_models(paper_env):
    """The paper profile sweeps g and n on real (tiny) HF models, fits adaptive g on a dev split and reports the
    same claims as the quick profile, the gap claim on the given PRM; chat models get the chat template."""
    out = paper_env / "report"
    assert main(["reproduce", "--profile", "paper", "--out", str(out)]) == 0
    report = json.loads((out / "results.json").read_text())
    config = report["config"]
    assert report["profile"] == "paper" and config["ns"] == [4, 8]
    assert config["n_dev"] == 1 and config["n_test"] == 2  # 20% of 3 problems, rounded, at least one
    assert config["prompt"] == "chat template" and "boxed" in config["system_prompt"]
    methods = {(p["method"], p["n"]) for p in config["points"]}
    assert {(m, n) for m in ("bon", "g=1", "g=2", "g=3", "g=4", "g=inf", "adaptive") for n in (4, 8)} <= methods
    claims = {c["id"]: c for c in report["claims"]}
    decided = {"intermediate-g-beats-beam-and-bon", "adaptive-g-matches-best-fixed-with-fewer-flops"}
    assert set(claims) == {*decided, *(f"{c}-prefix-cached" for c in decided), "accuracy-flops-curves",
                           "consecutive-prm-gap"}  # fmt: skip
    assert config["rounds_per_g"] == {"1": 12, "2": 6, "3": 4, "4": 3, "inf": 2}  # the paper's run
    assert set(claims["consecutive-prm-gap"]["measured"]) == {"prm"}
    assert (out / "accuracy_vs_flops.png").is_file()


@pytest.mark.parametrize(
    ("name", "value", "match"),
    [
        ("VGSEARCH_NS", "4,6", "VGSEARCH_NS must list multiples of 4"),
        ("VGSEARCH_NS", "four", "VGSEARCH_NS must list multiples of 4"),
        ("VGSEARCH_BATCH", "0", "VGSEARCH_BATCH must be a positive int"),
    ],
)
def test_paper_profile_bad_settings_exit_2(paper_env, monkeypatch, capsys, name, value, match):
    monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as err:
        main(["reproduce", "--profile", "paper", "--out", str(paper_env / "r")])
    assert err.value.code == 2
    assert match in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"problem": "1+1", "answer": "2"}\nnot json\n', "line 2 is not JSON"),
        ('{"problem": "1+1"}\n{"problem": "2+2", "answer": 4}\n', "line 1 needs an 'answer' field"),
        ('{"problem": "1+1", "answer": "2"}\n', "holds 1 problem; need >= 2"),
    ],
)
def test_paper_profile_bad_data_exit_2(paper_env, capsys, text, match):
    (paper_env / "math.jsonl").write_text(text)
    with pytest.raises(SystemExit) as err:
        main(["reproduce", "--profile", "paper", "--out", str(paper_env / "r")])
    assert err.value.code == 2
    assert pytest.importorskip("re").search(match, capsys.readouterr().err)


@pytest.mark.parametrize("answer", [True, 2.0, [2]])
def test_paper_profile_rejects_answers_that_are_not_text(paper_env, capsys, answer):
    """``str(True)``, ``str(2.0)`` would never equal a boxed answer: such a line is an error, not a silent miss."""
    (paper_env / "math.jsonl").write_text(json.dumps({"problem": "1+1", "answer": answer}) + "\n"
                                          + json.dumps({"problem": "2+2", "answer": 4}) + "\n")  # fmt: skip
    with pytest.raises(SystemExit) as err:
        main(["reproduce", "--profile", "paper", "--out", str(paper_env / "r")])
    assert err.value.code == 2
    assert "line 1: 'answer' must be a str or an int" in capsys.readouterr().err


def test_paper_settings_prm_mode_system_prompt_and_model_dirs(paper_env, monkeypatch, capsys):
    from nips25_vgsearch.reproduce import PAPER_SYSTEM_PROMPT, PaperInputError, paper_settings

    settings = paper_settings()
    assert settings["prm_mode"] == "value_head" and settings["system_prompt"] == PAPER_SYSTEM_PROMPT
    monkeypatch.setenv("VGSEARCH_PRM_MODE", "token_prob")
    monkeypatch.setenv("VGSEARCH_SYSTEM_PROMPT", "")
    settings = paper_settings()
    assert settings["prm_mode"] == "token_prob" and settings["system_prompt"] is None  # "": no system message
    monkeypatch.setenv("VGSEARCH_PRM_MODE", "logits")
    with pytest.raises(PaperInputError, match="VGSEARCH_PRM_MODE must be"):
        paper_settings()
    monkeypatch.delenv("VGSEARCH_PRM_MODE")
    (paper_env / "empty").mkdir()
    monkeypatch.setenv("VGSEARCH_PRM", str(paper_env / "empty"))
    with pytest.raises(SystemExit) as err:
        main(["reproduce", "--profile", "paper", "--out", str(paper_env / "r")])
    assert err.value.code == 2
    assert "VGSEARCH_PRM" in (text := capsys.readouterr().err) and "no config.json" in text
