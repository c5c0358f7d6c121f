"""`nips25-routing run` and `load_routerbench` on a 200-row fixture in RouterBench's released layout (§4b)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from nips25_routing import ROUTERS, load_routerbench, run_routerbench
from nips25_routing.cli import main

# the 11 models of routerbench_0shot.pkl, in its column order
MODELS = [
    "WizardLM/WizardLM-13B-V1.2", "claude-instant-v1", "claude-v1", "claude-v2", "gpt-3.5-turbo-1106",
    "gpt-4-1106-preview", "meta/code-llama-instruct-34b-chat", "meta/llama-2-70b-chat", "mistralai/mistral-7b-chat",
    "mistralai/mixtral-8x7b-chat", "zero-one-ai/Yi-34B-Chat",
]  # fmt: skip
COST = [7.3e-05, 2.3e-04, 2.1e-03, 2.4e-03, 2.4e-04, 3.3e-03, 1.7e-04, 2.0e-04, 4.6e-05, 1.3e-04, 1.8e-04]


def routerbench_frame(n: int = 200, seed: int = 0) -> pd.DataFrame:
    """sample_id, prompt (repr of a list of turns), eval_name, then per model: score, response, total_cost."""
    rng = np.random.default_rng(seed)
    evals = rng.choice(["mmlu-astronomy", "gsm8k", "hellaswag", "mtbench", "arc-challenge"], size=n)
    cols: dict[str, object] = {
        "sample_id": [f"{e}.{i}" for i, e in enumerate(evals)],
        "prompt": [repr([f"Question {i} about {e}?"]) for i, e in enumerate(evals)],
        "eval_name": evals,
    }
    for m, c in zip(MODELS, COST, strict=True):
        cols[m] = rng.integers(0, 2, size=n).astype(float)
        cols[f"{m}|model_response"] = [f"answer {i}" for i in range(n)]
        cols[f"{m}|total_cost"] = c * rng.uniform(0.5, 1.5, size=n)
    cols["oracle_model_to_route_to"] = rng.choice(MODELS, size=n)
    return pd.DataFrame(cols)


@pytest.fixture
def rb_files(tmp_path):
    frame = routerbench_frame()
    pkl, csv = tmp_path / "routerbench_0shot.pkl", tmp_path / "routerbench_0shot.csv"
    frame.to_pickle(pkl)
    frame.to_csv(csv, index=False)
    emb = tmp_path / "emb.npy"
    np.save(emb, np.random.default_rng(1).normal(size=(len(frame), 16)).astype(np.float32))
    return frame, pkl, csv, emb


def test_loader_reads_the_released_layout_exactly(rb_files):
    frame, pkl, csv, _ = rb_files
    for path in (pkl, csv):
        table = load_routerbench(path)
        assert table.models == MODELS
        np.testing.assert_array_equal(table.quality, frame[MODELS].to_numpy())
        expected = frame[[f"{m}|total_cost" for m in MODELS]].to_numpy()
        if path.suffix == ".pkl":
            np.testing.assert_array_equal(table.cost, expected)
        else:  # pandas' CSV writer keeps 16 significant digits
            np.testing.assert_allclose(table.cost, expected, rtol=1e-12)
        assert table.prompts[3] == "Question 3 about " + frame["eval_name"][3] + "?"
        assert table.sample_ids == list(frame["sample_id"]) and table.eval_names == list(frame["eval_name"])


@pytest.mark.parametrize(
    ("row", "column", "value", "message"),
    [
        (17, "claude-v2", np.nan, "column 'claude-v2' is missing"),
        (42, "gpt-4-1106-preview|total_cost", np.inf, "column 'gpt-4-1106-preview|total_cost'"),
        (5, "claude-v1", 7.0, "column 'claude-v1': quality must be in [0, 1]"),
        (9, "mistralai/mistral-7b-chat|total_cost", -1e-4, "column 'mistralai/mistral-7b-chat|total_cost'"),
        (3, "claude-v1", "abc", "column 'claude-v1': expected a number, got 'abc'"),  # 'n/a' reads as missing in a CSV
    ],
)
@pytest.mark.parametrize("suffix", [".pkl", ".csv"])
def test_a_bad_cell_names_its_file_row_and_column(tmp_path, row, column, value, message, suffix):
    frame = routerbench_frame()
    frame[column] = frame[column].astype(object)
    frame.loc[row, column] = value
    path = tmp_path / f"bad{suffix}"
    frame.to_pickle(path) if suffix == ".pkl" else frame.to_csv(path, index=False)
    with pytest.raises(ValueError, match=f"bad\\{suffix}") as info:
        load_routerbench(path)
    # the message says how rows are counted, and that count finds the bad cell
    assert f"data row {row} (0-based, header not counted), {message}" in str(info.value)
    back = pd.read_pickle(path) if suffix == ".pkl" else pd.read_csv(path)
    cell = back[column].iloc[row]
    assert (pd.isna(cell) and pd.isna(value)) or str(cell) == str(value) or float(cell) == float(value)
    if suffix == ".csv":  # data row r is line r + 2 of a file whose prompts hold no line break (line 1: header)
        line = path.read_text().splitlines()[row + 1]
        assert line.startswith(f"{frame['sample_id'][row]},")


def test_a_pickle_with_its_own_index_names_the_label_too(tmp_path):
    frame = routerbench_frame().set_index(pd.Index([f"q{i}" for i in range(200)]))
    frame.iloc[7, frame.columns.get_loc("claude-v2")] = np.nan
    path = tmp_path / "labelled.pkl"
    frame.to_pickle(path)
    with pytest.raises(ValueError, match=r"data row 7 \(0-based, header not counted, index label 'q7'\), column"):
        load_routerbench(path)


@pytest.mark.parametrize(
    ("dropped", "message"),
    [
        ("claude-v2|total_cost", "column 'claude-v2|model_response' has no cost column 'claude-v2|total_cost'"),
        ("claude-v2", "has no score column 'claude-v2'"),
    ],
)
def test_a_model_missing_one_of_its_columns_is_refused_not_dropped(tmp_path, dropped, message):
    path = tmp_path / "cut.csv"
    routerbench_frame().drop(columns=[dropped]).to_csv(path, index=False)
    with pytest.raises(ValueError, match="cut.csv") as info:
        load_routerbench(path)
    assert message in str(info.value)


def test_an_empty_csv_names_the_file(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("")
    with pytest.raises(ValueError, match="empty.csv: the file is empty"):
        load_routerbench(path)


def test_missing_cells_can_be_dropped_as_the_5shot_file_needs(tmp_path, monkeypatch):
    frame = routerbench_frame()
    frame.loc[[4, 50], "claude-v2"] = np.nan
    path = tmp_path / "rb5.pkl"
    frame.to_pickle(path)
    table = load_routerbench(path, missing="drop")
    assert len(table) == 198 and 4 not in table.rows and 50 not in table.rows and table.file_rows == 200
    monkeypatch.setenv("RANK", "1")  # a non-main rank returns the results and writes nothing
    out = tmp_path / "rank1"
    emb = np.ones((200, 4)) + np.eye(200, 4)
    res = run_routerbench(table, embeddings=emb, routers=("PORT",), n_stream=60, out_dir=out)
    assert res["PORT"]["throughput"] > 0
    assert not out.exists()


def test_run_command_writes_every_router_and_the_plot(rb_files, tmp_path, capsys):
    _, pkl, _, emb = rb_files
    out = tmp_path / "out"
    args = ["run", "--data", str(pkl), "--embeddings", str(emb), "--budget-multiple", "1", "--split", "uniform",
            "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    for name in ROUTERS:
        metrics = json.loads((out / f"{name}.json").read_text())
        assert set(metrics) >= {"quality", "cost", "ratio", "throughput"}
    summary = json.loads((out / "results.json").read_text())
    assert summary["n_stream"] == round(200 * 10_000 / 36_497) and summary["split"] == "uniform"
    assert (out / "routers.png").stat().st_size > 0
    # the same numbers as the library call
    lib = run_routerbench(pkl, embeddings=emb, split="uniform")
    assert lib["PORT"]["quality"] == pytest.approx(summary["routers"]["PORT"]["quality"])
    # every served cost is within the budgets
    assert all(summary["routers"][n]["cost"] <= sum(summary["budgets"]) * (1 + 1e-12) for n in ROUTERS)


def test_run_command_errors_are_usage_errors(rb_files, tmp_path, capsys):
    frame, pkl, _, _ = rb_files
    small = tmp_path / "small.pkl"
    frame.iloc[:99].to_pickle(small)
    np.save(tmp_path / "e99.npy", np.ones((99, 4)))
    assert main(["run", "--data", str(small), "--embeddings", str(tmp_path / "e99.npy"), "--out", str(tmp_path)]) == 2
    assert "at least 100" in capsys.readouterr().err
    np.save(tmp_path / "e7.npy", np.ones((7, 4)))
    assert main(["run", "--data", str(pkl), "--embeddings", str(tmp_path / "e7.npy"), "--out", str(tmp_path)]) == 2
    assert "one row per table row (200)" in capsys.readouterr().err
    assert main(["run", "--data", str(pkl), "--out", str(tmp_path)]) == 2
    assert "exactly one of --embeddings" in capsys.readouterr().err


def test_run_output_holds_no_highs_debug_line(tmp_path, capfd):
    """Review finding: scipy's HiGHS MIP printed ``HighsMipSolverData::transformNewIntegerFeasibleSolution
    tmpSolver.run();`` (a bare printf, whatever its options) into ``run``'s table on this instance (150 rows, three
    models, one missing cell dropped). capfd captures file descriptor 1 itself, where that printf writes."""
    rng = np.random.default_rng(1)
    n, models = 150, ["gpt-4-1106-preview", "mistralai/mistral-7b-chat", "meta/llama-2-70b-chat"]
    cols: dict[str, object] = {
        "sample_id": [f"mmlu.{i}" for i in range(n)],
        "prompt": [repr([f"question {i}?"]) for i in range(n)],
        "eval_name": ["mmlu"] * n,
    }
    for j, m in enumerate(models):
        cols[m] = rng.uniform(size=n).round(3)
        cols[f"{m}|model_response"] = ["ans"] * n
        cols[f"{m}|total_cost"] = rng.uniform(1e-5, 3e-3, n) * (j + 1)
    cols["oracle_model_to_route_to"] = models[0]
    frame = pd.DataFrame(cols)
    emb = tmp_path / "E.npy"
    np.save(emb, rng.normal(size=(n, 32)))
    frame.loc[7, models[1]] = np.nan
    path = tmp_path / "nan.csv"
    frame.to_csv(path, index=False)
    args = ["run", "--data", str(path), "--embeddings", str(emb), "--drop-missing", "--out", str(tmp_path / "o")]
    assert main(args) == 0
    out = capfd.readouterr().out
    assert "Highs" not in out and "tmpSolver" not in out
    assert [line.split()[0] for line in out.splitlines()] == list(ROUTERS)  # the table and nothing else


def test_the_native_stdout_silencer_swallows_a_c_printf_and_restores_the_descriptor(capfd):
    import ctypes

    from nips25_routing.baselines import _quiet_native_stdout

    libc = ctypes.CDLL(None)
    with _quiet_native_stdout():
        libc.printf(b"native noise\n")
    print("python after", flush=True)
    libc.printf(b"native after\n")
    libc.fflush(None)
    out = capfd.readouterr().out
    assert "native noise" not in out and "python after" in out and "native after" in out
