"""``nips25-vgsearch run --data``: the search on a user's MATH-500-layout JSONL with local model directories
(CONTRACT §4b), on tiny random models saved here (no downloads), and the loader's errors naming flag, line, field."""

from __future__ import annotations

import json
import math

import pytest
import torch
from nips25_vgsearch import (
    STOP,
    FlopsModel,
    MathDataError,
    MathProblem,
    Step,
    beam_search,
    best_of_n,
    dvts,
    exact_match,
    load_generator,
    load_prm,
    read_math_jsonl,
    search_problems,
    summarize_rows,
    vg_search,
)
from nips25_vgsearch.cli import main

# The released MATH-500 layout: problem, solution, answer, subject, level (int), unique_id.
ROWS = [
    {"problem": "1+1", "solution": "1+1=2", "answer": "2", "subject": "Prealgebra", "level": 1,
     "unique_id": "test/prealgebra/1.json"},
    {"problem": "2+3", "solution": "2+3=5", "answer": "5", "subject": "Algebra", "level": 2,
     "unique_id": "test/algebra/7.json"},
]  # fmt: skip


def _jsonl(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture
def user_files(tmp_path, tiny):
    """A tiny random Llama generator and value-head PRM saved as local model directories, and a two-problem JSONL."""
    tok, lm, prm = tiny
    for model, name in ((lm, "gen"), (prm, "prm")):
        model.save_pretrained(tmp_path / name)
        tok.save_pretrained(tmp_path / name)
    (tmp_path / "problems.jsonl").write_text(_jsonl(ROWS))
    return tmp_path


def _args(root, *extra):
    return ["run", "--data", str(root / "problems.jsonl"), "--generator", str(root / "gen"), "--prm",
            str(root / "prm"), "--out", str(root / "out"), "--dtype", "float32", "--device", "cpu", "-q",
            *extra]  # fmt: skip


def test_run_writes_the_searches_of_the_api_and_their_summary(user_files, capsys):
    """The CLI's rows are exactly what ``vg_search`` gives on the same models, seed and settings (the chosen
    completion, its ledger and its FLOPs under the models' parameter counts); ids are the file's unique_id; the
    summary's accuracy is the mean of the rows' exact-match grades and its SE the binomial one."""
    root = user_files
    assert main(_args(root, "--g", "2", "--n", "8", "--seed", "3", "--num-iterations", "3")) == 0
    printed = capsys.readouterr().out
    rows = [json.loads(line) for line in (root / "out" / "results.jsonl").read_text().splitlines()]
    summary = json.loads((root / "out" / "summary.json").read_text())
    gen = load_generator(root / "gen", dtype=torch.float32, device="cpu")
    prm = load_prm(root / "prm", dtype=torch.float32, device="cpu")
    flops = FlopsModel(p_gen=gen.n_params, p_ver=prm.n_params)
    ref = vg_search([r["problem"] for r in ROWS], gen, prm, n=8, beam_width=4, g=2, num_iterations=3, seed=3,
                    flops_model=flops)  # fmt: skip
    assert [r["id"] for r in rows] == [r["unique_id"] for r in ROWS] and [r["line"] for r in rows] == [1, 2]
    assert [(r["subject"], r["level"], r["reference"]) for r in rows] == [
        (r["subject"], r["level"], r["answer"]) for r in ROWS
    ]
    for row, res in zip(rows, ref):
        assert row["completion"] == res.answer and row["score"] == pytest.approx(res.scores[0], abs=0)
        assert row["ledger"] == vars(res.ledger) and row["flops"]["prefill-reread"] == res.flops
        cached = FlopsModel(p_gen=gen.n_params, p_ver=prm.n_params, count_prefill=False, prm_kv_cache=True)
        assert row["flops"]["prefix-cached"] == cached.flops(res.ledger) < res.flops
        assert row["correct"] == exact_match(res.answer, row["reference"]) and row["g"] == 2
    acc = sum(r["correct"] for r in rows) / 2
    assert summary["problems"] == summary["graded"] == 2 and summary["accuracy"] == acc
    assert summary["se"] == pytest.approx(math.sqrt(acc * (1 - acc) / 2))
    assert summary["flops_mean"]["prefill-reread"] == pytest.approx(sum(r.flops for r in ref) / 2)
    assert summary["config"]["method"] == "vg_search" and summary["config"]["p_gen"] == gen.n_params
    assert "vgsearch run: 2 problems, accuracy" in printed and "results.jsonl" in printed


def test_run_solves_lines_without_answer_and_uses_line_numbers_as_ids(user_files):
    """A line without ``answer`` (or ``unique_id``) is solved and not graded; its id is its line number."""
    root = user_files
    (root / "problems.jsonl").write_text('{"problem": "3+4"}\n\n' + json.dumps({"problem": "1+2", "answer": 3}))
    assert main(_args(root, "--method", "best_of_n")) == 0
    rows = [json.loads(line) for line in (root / "out" / "results.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [1, 3] and rows[0]["correct"] is None and rows[1]["reference"] == "3"
    summary = json.loads((root / "out" / "summary.json").read_text())
    assert summary["problems"] == 2 and summary["graded"] == 1
    assert summary["config"]["g"] is None and summary["config"]["beam_width"] is None  # not used by best_of_n


@pytest.mark.parametrize(("flags", "g"), [([], 1), (["--g", "inf"], "inf"), (["--g", "gap"], "gap")])
def test_run_passes_the_granularity_as_given(user_files, flags, g):
    """No ``--g`` is vg_search's default g=1; ``inf`` is the full length (``g=None``), not the default; ``gap`` is
    the GapPolicy (a row's ``g`` is its last round's, ``g_schedule`` every round's: powers of 2 up to 4)."""
    root = user_files
    assert main(_args(root, "--n", "8", *flags)) == 0
    rows = [json.loads(line) for line in (root / "out" / "results.jsonl").read_text().splitlines()]
    assert json.loads((root / "out" / "summary.json").read_text())["config"]["g"] == g
    if g == "gap":
        assert all(r["g"] in (1, 2, 4) and all(x in (1, 2, 4) for x in r["g_schedule"]) for r in rows)
    else:
        assert [r["g"] for r in rows] == [g, g]


class BoxGenerator:
    """Two plain steps, then (sampled to the end) ``\\boxed{4}``; fixed token counts."""

    n_params = 2.0

    def count_tokens(self, text):
        return 3

    def step(self, requests, *, to_eos=False):
        return [Step("\\boxed{4}" if to_eos or r.depth >= 2 else f"s{r.depth}{STOP}", 2, 1, to_eos or r.depth >= 2)
                for r in requests]  # fmt: skip


class ConstantVerifier:
    def score(self, problems, prefixes):
        return [[0.5] * max(1, p.count(STOP) + 1) for p in prefixes]


def test_grading_and_summary_on_a_hand_computed_case():
    """Every path ends in ``\\boxed{4}``: reference 4 is right, 5 wrong, no reference ungraded, so accuracy 1/2
    with SE sqrt(0.25 / 2); the chosen answer is the box's content."""
    problems = [MathProblem("p1", "4", 1), MathProblem("p2", "5", 2), MathProblem("p3", None, 3, unique_id="u3")]
    rows = search_problems(problems, BoxGenerator(), ConstantVerifier(), n=4, beam_width=2, g=2, batch_size=2)
    assert [r["correct"] for r in rows] == [True, False, None] and {r["answer"] for r in rows} == {"4"}
    assert [r["id"] for r in rows] == [1, 2, "u3"]
    summary = summarize_rows(rows)
    assert (summary["graded"], summary["correct"], summary["accuracy"]) == (2, 1, 0.5)
    assert summary["se"] == pytest.approx(math.sqrt(0.25 / 2), rel=1e-12)
    assert summary["no_completion"] == 0


@pytest.mark.parametrize("method", ["vg_search", "beam_search", "best_of_n", "dvts"])
def test_each_method_is_the_packages_function(scripted, letters, method):
    """``method`` dispatches to the function of that name with the same settings (the scripted generator counts
    requests per prefix across problems, so all three problems share one call on both sides)."""
    problems = [MathProblem(f"q{i}", None, i + 1) for i in range(3)]
    texts, ver = [p.problem for p in problems], letters()
    g = 1 if method == "beam_search" else 2
    rows = search_problems(problems, scripted(finish_at=4), ver, method=method, n=4, beam_width=2, g=g,
                           batch_size=3, seed=5)  # fmt: skip
    gen = scripted(finish_at=4)
    ref = {
        "vg_search": lambda: vg_search(texts, gen, ver, n=4, beam_width=2, g=2, seed=5),
        "beam_search": lambda: beam_search(texts, gen, ver, n=4, beam_width=2, seed=5),
        "best_of_n": lambda: best_of_n(texts, gen, ver, n=4, seed=5),
        "dvts": lambda: dvts(texts, gen, ver, n=4, beam_width=2, g=2, seed=5),
    }[method]()
    assert [r["completion"] for r in rows] == [r.answer for r in ref]
    assert [r["ledger"] for r in rows] == [vars(r.ledger) for r in ref]
    assert len({r["completion"] for r in rows}) > 1 or method == "best_of_n"  # the searches are not all alike


def test_search_problems_bad_arguments(scripted, letters):
    problems = [MathProblem("q", None, 1)]
    cases = [
        (dict(method="mcts"), ValueError, "method must be one of"),
        (dict(method="beam_search", g=2), ValueError, "beam_search fixes g=1"),
        (dict(batch_size=0), ValueError, "batch_size must be an int >= 1"),
        (dict(flops_models={}), ValueError, "flops_models must name"),
    ]
    for kwargs, error, match in cases:
        with pytest.raises(error, match=match):
            search_problems(problems, scripted(), letters(), **kwargs)
    with pytest.raises(TypeError, match=r"problems\[0\] must be a MathProblem"):
        search_problems(["q"], scripted(), letters())
    with pytest.raises(ValueError, match="non-empty sequence"):
        search_problems([], scripted(), letters())


def test_loader_reads_the_released_layout_exactly(tmp_path):
    """All six MATH-500 fields come through; an int answer becomes its digits; a U+2028 inside a JSON string is
    not a line break (``str.splitlines`` would cut the line there); a byte-order mark is ignored."""
    row = {**ROWS[0], "problem": "a\u2028b", "answer": 12}
    path = tmp_path / "p.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(row, ensure_ascii=False).encode() + b"\r\n")
    (p,) = read_math_jsonl(path)
    assert p == MathProblem("a\u2028b", "12", 1, unique_id=ROWS[0]["unique_id"], solution=ROWS[0]["solution"],
                            subject="Prealgebra", level=1)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (_jsonl([ROWS[0], {"answer": "5"}]), "line 2 needs a non-empty str 'problem' field"),
        (_jsonl(ROWS[:1]) + "{not json\n", "line 2 is not JSON"),
        ("[1, 2]\n", "line 1 is not a JSON object"),
        (_jsonl([{**ROWS[0], "answer": 2.0}]), "line 1: 'answer' must be a str or an int"),
        (_jsonl([{**ROWS[0], "level": True}]), "line 1: 'level' must be an int"),
        (_jsonl([{**ROWS[0], "subject": 3}]), "line 1: 'subject' must be a str"),
        (_jsonl([ROWS[0], {**ROWS[1], "unique_id": ROWS[0]["unique_id"]}]), "line 2 repeats the unique_id"),
        (_jsonl([ROWS[0], {**ROWS[1], "problem": "1+1"}]), "line 2 repeats the problem of line 1"),
        ("\n\n", "holds no problems"),
    ],
)
def test_run_bad_data_names_the_flag_the_line_and_the_field(user_files, capsys, text, match):
    (user_files / "problems.jsonl").write_text(text)
    with pytest.raises(SystemExit) as err:
        main(_args(user_files))
    assert err.value.code == 2
    message = capsys.readouterr().err
    assert "--data: " in message and match in message and "VGSEARCH_DATA" not in message
    assert not (user_files / "out").exists()  # checked before any model loads or output is written


def test_loader_rejects_bytes_that_are_not_utf8(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(_jsonl(ROWS[:1]).encode() + b'{"problem": "\xff"}\n')
    with pytest.raises(MathDataError, match=r"--data: .* line 2 is not UTF-8 text \(byte 14"):
        read_math_jsonl(path, name="--data")


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda r: ["--data", str(r / "missing.jsonl")], "--data: .*missing.jsonl is not a file"),
        (
            lambda r: ["--generator", str(r / "nowhere")],
            "--generator: .*nowhere is not a local Hugging Face model directory \\(does not exist\\)",
        ),
        (lambda r: ["--prm", str(r)], "--prm: .* is not a local Hugging Face model directory \\(has no config.json"),
        (lambda r: ["--prm", str(r / "gen")], "--prm: cannot load .* with --prm-mode value_head: .*no weights for"),
        (lambda r: ["--generator", str(r / "prm")], "--generator: cannot load .*no weights for"),
        (lambda r: ["--n", "6"], "--n: must be a multiple of --beam-width 4, got 6"),
        (lambda r: ["--method", "best_of_n", "--g", "4"], "--g: not used by --method best_of_n"),
        (lambda r: ["--method", "beam_search", "--g", "2"], "--g: --method beam_search fixes g=1"),
        (lambda r: ["--g", "gap", "--num-iterations", "3"], "--num-iterations: not used with --g gap"),
        (lambda r: ["--g", "two"], "--g: .*an int >= 1, 'inf' or 'gap'"),
    ],
)
def test_run_bad_arguments_exit_2_naming_the_flag(user_files, capsys, change, match):
    args = _args(user_files)
    extra = change(user_files)
    if extra[0] in args:  # replace the flag's value
        args[args.index(extra[0]) + 1] = extra[1]
        extra = extra[2:]
    with pytest.raises(SystemExit) as err:
        main([*args, *extra])
    assert err.value.code == 2
    assert pytest.importorskip("re").search(match, capsys.readouterr().err)


def test_reproduce_loader_still_names_its_variable(tmp_path):
    """One implementation: the paper profile's reader is :func:`read_math_jsonl` under the name VGSEARCH_DATA."""
    from nips25_vgsearch.reproduce import PaperInputError, load_math_jsonl

    path = tmp_path / "p.jsonl"
    path.write_text(_jsonl(ROWS) + '{"problem": "x"}\n')
    with pytest.raises(PaperInputError, match="VGSEARCH_DATA: .* line 3 needs an 'answer' field"):
        load_math_jsonl(path)
    path.write_text(_jsonl(ROWS))
    assert load_math_jsonl(path) == {"1+1": "2", "2+3": "5"}


def test_readme_run_example_runs(tmp_path, monkeypatch, capsys):
    """The README's ``run --data`` example (its model-building script, then its command) runs offline as written."""
    import re
    import shlex
    from pathlib import Path

    text = (Path(__file__).parents[1] / "README.md").read_text()
    script = re.search(r"# make_tiny\.py\n(.*?)```", text, re.S)
    command = re.search(r"\$ (nips25-vgsearch run .*?)\n(?!    )", text, re.S)
    assert script is not None and command is not None
    monkeypatch.chdir(tmp_path)
    exec(compile(script.group(1), "make_tiny.py", "exec"), {})
    argv = shlex.split(command.group(1).replace("\\\n", " "))[1:]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("vgsearch run: 2 problems, accuracy ")
    assert len((tmp_path / "out" / "results.jsonl").read_text().splitlines()) == 2


# 0.2.6: a fresh user's findings on ``run --data``; every test below of an error failed on 0.2.5.


@pytest.mark.parametrize("level", [1, 5, "Level 3", "level 5", "4", None])
def test_loader_accepts_the_levels_of_math500_and_math_as_written(tmp_path, level):
    """MATH-500 writes ``level`` as an int 1-5, the MATH data set as ``"Level 3"``; both are kept as written."""
    row = {**ROWS[0], "level": level}
    path = tmp_path / "p.jsonl"
    path.write_text(_jsonl([row]))
    assert read_math_jsonl(path)[0].level == level


@pytest.mark.parametrize("level", [0, 6, -1, 12, "Level 9", "Level 0", "hard", "Level ?", "", "3.5"])
def test_run_level_outside_1_to_5_names_data_the_line_and_level(user_files, capsys, level):
    (user_files / "problems.jsonl").write_text(_jsonl([ROWS[0], {**ROWS[1], "level": level}]))
    with pytest.raises(SystemExit) as err:
        main(_args(user_files))
    assert err.value.code == 2
    message = capsys.readouterr().err
    assert f"--data: {user_files / 'problems.jsonl'} line 2: 'level' must be an int 1-5" in message
    assert f"got {level!r}" in message and "Traceback" not in message
    assert not (user_files / "out").exists()


@pytest.mark.parametrize("answer", ["", " ", "\t\n"])
def test_a_blank_answer_is_an_error_not_an_unlabeled_problem(user_files, capsys, answer):
    """A present but blank ``answer`` names the line and field (it would grade every completion wrong, or be read
    as a problem without a reference); the paper profile's reader, which needs answers, refuses it too."""
    from nips25_vgsearch.reproduce import PaperInputError, load_math_jsonl

    path = user_files / "problems.jsonl"
    path.write_text(_jsonl([ROWS[0], {**ROWS[1], "answer": answer}]))
    with pytest.raises(SystemExit) as err:
        main(_args(user_files))
    assert err.value.code == 2
    message = capsys.readouterr().err
    assert f"--data: {path} line 2: 'answer' is blank ({answer!r})" in message
    assert "leave the field out (or null)" in message and not (user_files / "out").exists()
    path.write_text(_jsonl([ROWS[0], {**ROWS[1], "answer": " "}]))
    with pytest.raises(PaperInputError, match=r"VGSEARCH_DATA: .* line 2: 'answer' is blank \(' '\); give the "
                                              r"reference answer$"):  # fmt: skip
        load_math_jsonl(path)


@pytest.mark.parametrize(
    ("device", "cuda", "count", "mps", "match"),
    [
        ("gpu", True, 1, True, "expected cpu, cuda .*, cuda:N .* or mps .*, got 'gpu'"),
        ("cuda:x", True, 1, True, "expected cpu, cuda .*got 'cuda:x'"),
        ("cpu:0", True, 1, True, "expected cpu, .*got 'cpu:0'"),
        ("CUDA", True, 1, True, "expected cpu, .*got 'CUDA'"),
        ("cuda", False, 0, True, "'cuda': CUDA is not available on this machine .*use --device cpu"),
        ("cuda:0", False, 0, True, "'cuda:0': CUDA is not available"),
        ("cuda:2", True, 2, True, r"'cuda:2': this machine has 2 CUDA device\(s\), cuda:0 to cuda:1"),
        ("mps", True, 1, False, "'mps': the MPS backend is not available on this machine"),
    ],
)
def test_run_bad_device_exits_2_naming_the_flag_before_any_model_loads(
    user_files, capsys, monkeypatch, device, cuda, count, mps, match
):
    """``--device`` is checked at parse time against this machine (CUDA and MPS availability patched here, so the
    test means the same on a GPU machine): exit 2, the flag and its forms named, no traceback, no model loaded."""
    import re

    import nips25_vgsearch.hf as hf

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)

    def no_load(*args, **kwargs):
        raise AssertionError("a model was loaded before --device was checked")

    monkeypatch.setattr(hf, "load_generator", no_load)
    monkeypatch.setattr(hf, "load_prm", no_load)
    args = _args(user_files)
    args[args.index("--device") + 1] = device
    with pytest.raises(SystemExit) as err:
        main(args)
    assert err.value.code == 2
    message = capsys.readouterr().err
    assert re.search(f"argument --device: {match}", message) and "Traceback" not in message
    assert not (user_files / "out").exists()


def test_run_device_accepts_the_forms_this_machine_has(monkeypatch):
    from nips25_vgsearch.cli import _run_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    for text in ("cpu", "cuda", "cuda:0", "cuda:1", "mps"):
        assert _run_device(text) == text and torch.device(text).type == text.split(":")[0]


@pytest.mark.parametrize(
    ("flag", "remove", "match"),
    [
        ("--generator", ["tokenizer.json"], "tokenizer_config.json without a vocabulary file"),
        ("--prm", ["tokenizer.json", "tokenizer_config.json"], "no tokenizer.json and no tokenizer_config.json"),
    ],
)
def test_run_model_dir_without_tokenizer_files_names_the_flag_and_the_file(user_files, capsys, flag, remove, match):
    """Checked before loading (and before ``--out`` is created): the flag, the directory and the missing file."""
    model_dir = user_files / ("gen" if flag == "--generator" else "prm")
    for name in remove:
        (model_dir / name).unlink()
    with pytest.raises(SystemExit) as err:
        main(_args(user_files))
    assert err.value.code == 2
    message = capsys.readouterr().err
    assert f"{flag}: {model_dir} has no tokenizer files (no tokenizer.json" in message and match in message
    assert "Traceback" not in message and not (user_files / "out").exists()


@pytest.mark.parametrize(
    ("files", "gap"),
    [
        (["tokenizer.json"], None),
        (["tokenizer_config.json", "vocab.json", "merges.txt"], None),  # slow BPE (GPT-2, Qwen2)
        (["tokenizer_config.json", "tokenizer.model"], None),  # SentencePiece (Llama, Mistral)
        (["tokenizer_config.json", "vocab.txt"], None),  # WordPiece
        (["tokenizer_config.json", "vocab.json"], "vocab.json without merges.txt"),
        (["tokenizer_config.json"], "tokenizer_config.json without a vocabulary file"),
        (["special_tokens_map.json"], "no tokenizer.json and no tokenizer_config.json"),
    ],
)
def test_tokenizer_files_a_local_directory_needs(tmp_path, files, gap):
    from nips25_vgsearch.cli import _tokenizer_gap

    for name in files:
        (tmp_path / name).write_text("{}")
    result = _tokenizer_gap(tmp_path)
    assert result is None if gap is None else gap in result


class _FailingJson:
    """``json`` whose ``dumps`` raises at its ``fail_at``-th call (a row that cannot be serialised mid-file)."""

    def __init__(self, fail_at):
        self.calls, self.fail_at = 0, fail_at

    def dumps(self, *args, **kwargs):
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("planted failure while serialising")
        return json.dumps(*args, **kwargs)


@pytest.mark.parametrize("failure", ["serialise row 2", "write results", "write summary"])
def test_run_outputs_are_replaced_whole_or_not_at_all(user_files, capsys, monkeypatch, failure):
    """A failure while writing OUT leaves each file as it was or whole, never a part of one, and no temporary file:
    a row that cannot be serialised changes nothing; a full disk at results.jsonl (an OSError at its fsync) keeps
    both old files and exits 2 naming ``--out``; one at summary.json keeps the old summary beside the whole new
    results, and says so."""
    import errno
    import os

    import nips25_vgsearch.cli as cli

    out = user_files / "out"
    out.mkdir()
    old_results, old_summary = '{"old": 1}\n{"old": 2}\n{"old": 3}\n', '{"old": true}\n'
    (out / "results.jsonl").write_text(old_results)
    (out / "summary.json").write_text(old_summary)
    if failure == "serialise row 2":
        monkeypatch.setattr(cli, "json", _FailingJson(fail_at=2))
        with pytest.raises(RuntimeError, match="planted failure"):
            main(_args(user_files, "--method", "best_of_n"))
    else:
        real_fsync, calls = os.fsync, []

        def fsync(fd):
            calls.append(fd)
            if len(calls) == (1 if failure == "write results" else 2):
                raise OSError(errno.ENOSPC, "No space left on device")
            real_fsync(fd)

        monkeypatch.setattr(os, "fsync", fsync)
        with pytest.raises(SystemExit) as err:
            main(_args(user_files, "--method", "best_of_n"))
        assert err.value.code == 2
        message = capsys.readouterr().err
        assert "--out: " in message and "No space left on device" in message
    assert sorted(p.name for p in out.iterdir()) == ["results.jsonl", "summary.json"]  # no temporary file left
    assert (out / "summary.json").read_text() == old_summary
    if failure == "write summary":
        assert f"wrote {out / 'results.jsonl'} but cannot write {out / 'summary.json'}" in message
        rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        assert [r["id"] for r in rows] == [r["unique_id"] for r in ROWS]  # the whole new file
    else:
        assert (out / "results.jsonl").read_text() == old_results
