"""Review (rev4) of ``reproduce --profile paper`` as a new user sets it up: findings in ``reproduce.py`` and
``cli.py``, written as strict xfails by the reviewer and fixed by the lead (the markers are gone)."""

from __future__ import annotations

import json

import pytest
from nips25_vgsearch.cli import main
from nips25_vgsearch.reproduce import paper_settings


@pytest.fixture
def env(tmp_path, monkeypatch, tiny):
    """Generator and PRM directories and a JSONL named by the profile's variables, beside a PRM directory that is a
    causal LM (what a Math-Shepherd-style PRM is), an empty directory and a generator whose chat template has no
    system role."""
    tok, lm, prm = tiny
    for model, name in ((lm, "gen"), (lm, "causal_prm"), (prm, "prm")):
        model.save_pretrained(tmp_path / name)
        tok.save_pretrained(tmp_path / name)
    lm.save_pretrained(tmp_path / "no_system_role")  # a chat template without a system role (Mistral/Gemma style)
    chat = type(tok)(tokenizer_object=tok.backend_tokenizer, pad_token="<pad>", eos_token="<eos>")
    chat.chat_template = ("{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('no system role') }}"
                          "{% endif %}{{ m['content'] }};{% endfor %}")  # fmt: skip
    chat.save_pretrained(tmp_path / "no_system_role")
    (tmp_path / "empty").mkdir()
    data = tmp_path / "math.jsonl"
    data.write_text('{"problem": "1+1", "answer": "2"}\n{"problem": "2+3", "answer": "5"}\n')
    for name, path in (("VGSEARCH_GENERATOR", "gen"), ("VGSEARCH_PRM", "prm"), ("VGSEARCH_DATA", "math.jsonl")):
        monkeypatch.setenv(name, str(tmp_path / path))
    monkeypatch.setenv("VGSEARCH_NS", "4")
    return tmp_path


@pytest.mark.parametrize(("name", "value", "match"), [("VGSEARCH_GENERATOR", "empty", "config.json"),
                                                      ("VGSEARCH_PRM", "causal_prm", "score"),
                                                      ("VGSEARCH_GENERATOR", "no_system_role", "system")])  # fmt: skip
def test_paper_profile_model_errors_exit_2(env, monkeypatch, capsys, name, value, match):
    monkeypatch.setenv(name, str(env / value))
    with pytest.raises(SystemExit) as err:
        main(["reproduce", "--profile", "paper", "--out", str(env / "r")])
    assert err.value.code == 2 and match in capsys.readouterr().err


_SECOND = '{"problem": "2+3", "answer": "5"}\n'


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('{"problem": "1+1", "answer": "2"}\n' + _SECOND + '{"problem": "1+1", "answer": "3"}\n', 3),
        *[(json.dumps({"problem": "1+1", "answer": answer}) + "\n" + _SECOND, 1) for answer in (None, True, 2.0)],
        (json.dumps({"problem": "", "answer": "2"}) + "\n" + _SECOND, 1),
    ],
)
def test_paper_data_refuses_rows_that_cannot_be_scored(env, text, line):
    (env / "math.jsonl").write_text(text)
    with pytest.raises(ValueError, match=f"line {line}"):
        paper_settings()


def test_paper_settings_read_the_prm_mode(env, monkeypatch):
    monkeypatch.setenv("VGSEARCH_PRM_MODE", "token_prob")
    assert paper_settings()["prm_mode"] == "token_prob"


def test_an_empty_system_prompt_means_none(env, monkeypatch):
    monkeypatch.setenv("VGSEARCH_SYSTEM_PROMPT", "")
    assert paper_settings()["system_prompt"] is None
