"""A user's ``.npz`` graph file with a bad cell is refused naming the array, the file and the row (CONTRACT §4b)."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_gfm import load_graph_file

N, F = 12, 3


def _write(path, **change) -> None:
    rng = np.random.default_rng(0)
    train = np.zeros(N, dtype=bool)
    train[:6] = True
    arrays = dict(
        edge_index=rng.integers(0, N, (2, 30)),
        x=rng.random((N, F)),
        y=np.arange(N) % 3,
        train_mask=train,
        test_mask=~train,
    )
    arrays.update(change)
    np.savez(path, **arrays)


def _cell(value, r: int = 5, c: int = 1, dtype=None):
    x = np.random.default_rng(0).random((N, F)).astype(dtype or float)
    x[r, c] = value
    return x


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (dict(x=_cell(np.nan)), r"x: in .*bad\.npz row 5, column 1 is nan"),
        (dict(x=_cell("abc", dtype="<U32")), r"x: in .*bad\.npz row 5, column 1 is 'abc'; expected numbers"),
        (dict(y=np.where(np.arange(N) == 4, np.nan, np.arange(N) % 3)), r"y: in .*bad\.npz row 4 is nan"),
        (dict(y=np.where(np.arange(N) == 7, -1, np.arange(N) % 3)), r"y: in .*bad\.npz row 7 is -1; negative labels"),
        (dict(train_mask=np.where(np.arange(N) < 6, 2, 0)), r"train_mask: in .*bad\.npz row 0 is 2; expected booleans"),
        (dict(test_mask=np.where(np.arange(N) >= 6, 0.5, 0.0)), r"test_mask: in .*bad\.npz row 6 is 0\.5"),
        (dict(train_mask=np.where(np.arange(N) < 6, 1.0, np.nan)), r"train_mask: in .*bad\.npz row 6 is nan"),
    ],
)
def test_bad_cell_is_named(tmp_path, change, match) -> None:
    path = tmp_path / "bad.npz"
    _write(path, **change)
    with pytest.raises(ValueError, match=match):
        load_graph_file(path)


def test_zero_one_masks_and_numeric_strings_still_load(tmp_path) -> None:
    path = tmp_path / "ok.npz"
    train = (np.arange(N) < 6).astype(np.int8)
    _write(path, train_mask=train, test_mask=1 - train, x=np.random.default_rng(0).random((N, F)).astype(str))
    task = load_graph_file(path)
    np.testing.assert_array_equal(task.train_mask, train.astype(bool))


def test_cli_run_names_data_when_the_path_does_not_exist(tmp_path, capsys) -> None:
    from nips25_gfm import TSGNN
    from nips25_gfm.cli import main

    model = tmp_path / "m.pt"
    TSGNN(hidden=4).save(model)
    with pytest.raises(SystemExit) as exc:
        main(["run", "--model", str(model), "--data", str(tmp_path / "graph.npz")])
    assert exc.value.code == 2
    assert "--data: " in capsys.readouterr().err
