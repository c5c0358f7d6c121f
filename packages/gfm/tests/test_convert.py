"""Graph-file conversion (issue #11): the heterophilous-graphs layout and this package's own, round trips, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from nips25_gfm import convert_graph_file, load_graph_file, save_graph_file
from nips25_gfm.cli import main


def _heterophilous(path, n: int = 24, f: int = 4, c: int = 3, splits: int = 3) -> dict[str, np.ndarray]:
    """A tiny file in the heterophilous-graphs layout: edges [E, 2], masks [n_splits, N]."""
    rng = np.random.default_rng(0)
    arrays = {
        "node_features": rng.normal(size=(n, f)),
        "node_labels": np.arange(n) % c,
        "edges": rng.integers(0, n, size=(3 * n, 2)),
    }
    perms = [rng.permutation(n) for _ in range(splits)]
    for i, key in enumerate(("train_masks", "val_masks", "test_masks")):
        m = np.zeros((splits, n), dtype=bool)
        for s, perm in enumerate(perms):
            m[s, perm[i * n // 3 : (i + 1) * n // 3]] = True  # disjoint within a split, different across splits
        arrays[key] = m
    np.savez(path, **arrays)
    return arrays


def test_heterophilous_layout_converts_to_the_same_graph(tmp_path) -> None:
    raw = _heterophilous(tmp_path / "raw.npz")
    out = convert_graph_file(tmp_path / "raw.npz", tmp_path / "graphs" / "roman_empire.npz")
    assert out == tmp_path / "graphs" / "roman_empire.npz"
    for seed in (0, 1, 4):
        task = load_graph_file(out, seed=seed, max_features=None)
        assert task.name == "roman_empire" and (task.num_nodes, task.num_features, task.num_classes) == (24, 4, 3)
        np.testing.assert_array_equal(task.train_mask, raw["train_masks"][seed % 3])  # split seed % n_splits
        np.testing.assert_array_equal(task.test_mask, raw["test_masks"][seed % 3])
        want = np.zeros((24, 24), dtype=bool)
        want[raw["edges"][:, 0], raw["edges"][:, 1]] = True
        want = (want | want.T) & ~np.eye(24, dtype=bool)  # symmetrised, no self-loops
        np.testing.assert_array_equal(task.adjacency.toarray() > 0, want)
    # Converting the converted file again (native layout) changes nothing.
    again = convert_graph_file(out, tmp_path / "again.npz")
    with np.load(out) as a, np.load(again) as b:
        assert sorted(a.files) == sorted(b.files)
        for k in a.files:
            np.testing.assert_array_equal(a[k], b[k])


def test_save_graph_file_round_trip_and_bad_inputs(tmp_path) -> None:
    edges = np.array([[0, 1, 2], [1, 2, 3]])
    x, y = np.eye(4), np.array([0, 1, 0, 1])
    path = save_graph_file(
        tmp_path / "g", edge_index=edges, x=x, y=y, train_mask=np.array([1, 1, 0, 0]), test_mask=np.array([0, 0, 1, 1])
    )
    assert path.name == "g.npz"
    task = load_graph_file(path, max_features=None)
    np.testing.assert_array_equal(task.train_mask, [True, True, False, False])
    np.testing.assert_array_equal(task.test_mask, [False, False, True, True])
    np.testing.assert_array_equal(task.x, x / np.linalg.norm(x, axis=1, keepdims=True))
    cases = [
        ({"edge_index": edges + 1}, "edge_index"),
        ({"edge_index": edges.T}, "edge_index"),
        ({"x": x[:3]}, "x"),
        ({"x": x * np.nan}, "x"),
        ({"y": np.array([])}, "y"),
        ({"train_mask": np.ones(3)}, "train_mask"),
    ]
    for change, needle in cases:
        kwargs = {"edge_index": edges, "x": x, "y": y, **change}
        with pytest.raises(ValueError, match=needle):
            save_graph_file(tmp_path / "bad.npz", **kwargs)
    (tmp_path / "d.npz").mkdir()
    with pytest.raises(ValueError, match="path"):
        save_graph_file(tmp_path / "d.npz", edge_index=edges, x=x, y=y)


def test_convert_errors_and_cli(tmp_path, capsys) -> None:
    _heterophilous(tmp_path / "raw.npz")
    with pytest.raises(ValueError, match="layout"):
        convert_graph_file(tmp_path / "raw.npz", tmp_path / "o.npz", layout="pyg")
    with pytest.raises(FileNotFoundError, match="src"):
        convert_graph_file(tmp_path / "none.npz", tmp_path / "o.npz")
    np.savez(tmp_path / "odd.npz", a=np.ones(3))
    with pytest.raises(ValueError, match="no known layout"):
        convert_graph_file(tmp_path / "odd.npz", tmp_path / "o.npz")
    with pytest.raises(ValueError, match="heterophilous"):
        convert_graph_file(tmp_path / "odd.npz", tmp_path / "o.npz", layout="heterophilous")
    assert main(["convert", str(tmp_path / "raw.npz"), str(tmp_path / "tolokers.npz")]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["nodes"] == 24 and info["classes"] == 3 and info["features"] == 4
    for argv, needle in [
        (["convert", str(tmp_path / "odd.npz"), str(tmp_path / "o.npz")], "no known layout"),
        (["convert", str(tmp_path / "none.npz"), str(tmp_path / "o.npz")], "src"),
        (["train", "--tasks", "iris", "--save", str(tmp_path / "m.pt"), "--epochs", "0"], "--epochs"),
    ]:
        with pytest.raises(SystemExit) as exc:
            main(argv)
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert exc.value.code == 2 and needle in err and "Traceback" not in err, (argv, err)
