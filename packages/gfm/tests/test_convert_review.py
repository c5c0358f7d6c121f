"""Review of graph-file conversion: a wrong --layout, a directory as destination, atomic writes."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_gfm import convert_graph_file, save_graph_file
from nips25_gfm.cli import main

EDGES, X, Y = np.array([[0, 1, 2], [1, 2, 0]]), np.eye(3), np.array([0, 1, 1])


def _het(path) -> None:
    np.savez(path, node_features=X, node_labels=Y, edges=EDGES.T)


def test_wrong_layout_is_a_one_line_error(tmp_path, capsys) -> None:
    """--layout native on a heterophilous file: ValueError naming the arrays (was a KeyError traceback, exit 1)."""
    _het(tmp_path / "het.npz")
    with pytest.raises(ValueError, match="edge_index"):
        convert_graph_file(tmp_path / "het.npz", tmp_path / "out.npz", layout="native")
    with pytest.raises(SystemExit) as exc:
        main(["convert", str(tmp_path / "het.npz"), str(tmp_path / "out.npz"), "--layout", "native"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "edge_index" in err[-1] and "Traceback" not in "".join(err)
    assert not (tmp_path / "out.npz").exists()


def test_directory_destination_is_rejected(tmp_path) -> None:
    """An existing directory as path was silently written beside it as '<dir>.npz'."""
    (tmp_path / "graphs").mkdir()
    with pytest.raises(ValueError, match="directory"):
        save_graph_file(tmp_path / "graphs", edge_index=EDGES, x=X, y=Y)
    assert not (tmp_path / "graphs.npz").exists()


def test_save_is_atomic(tmp_path, monkeypatch) -> None:
    """A write that fails half-way leaves the previous file intact and no temporary file behind."""
    dst = save_graph_file(tmp_path / "g.npz", edge_index=EDGES, x=X, y=Y)
    before = dst.read_bytes()

    def broken(file, **arrays):
        with open(file, "wb") as fh:
            fh.write(b"PK\x03\x04 truncated")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez_compressed", broken)
    with pytest.raises(OSError, match="disk full"):
        save_graph_file(dst, edge_index=EDGES, x=2 * X, y=Y)
    assert dst.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.npz"]


def test_cli_keeps_the_destination_when_the_converted_graph_does_not_load(tmp_path, capsys) -> None:
    """convert checks the written graph loads; when it does not (exit 2), the old destination is untouched."""
    ones, zeros = np.ones((1, 3), dtype=bool), np.zeros((1, 3), dtype=bool)  # no test node: loading fails
    np.savez(tmp_path / "het.npz", node_features=X, node_labels=Y, edges=EDGES.T, train_masks=ones,
             val_masks=zeros, test_masks=zeros)  # fmt: skip
    dst = save_graph_file(tmp_path / "keep.npz", edge_index=EDGES, x=X, y=Y)
    before = dst.read_bytes()
    with pytest.raises(SystemExit) as exc:
        main(["convert", str(tmp_path / "het.npz"), str(dst)])
    assert exc.value.code == 2
    assert dst.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["het.npz", "keep.npz"]


def test_cli_destination_under_a_file_is_a_one_line_error(tmp_path, capsys) -> None:
    """DST whose parent is a file: exit 2 with one line (the clean-up of the temporary file raised a traceback)."""
    save_graph_file(tmp_path / "g.npz", edge_index=EDGES, x=X, y=Y)
    (tmp_path / "afile").write_text("")
    with pytest.raises(SystemExit) as exc:
        main(["convert", str(tmp_path / "g.npz"), str(tmp_path / "afile" / "out.npz")])
    assert exc.value.code == 2
    assert "afile" in capsys.readouterr().err.strip().splitlines()[-1]
