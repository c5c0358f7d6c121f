"""Planetoid raw files as DGL's and PyG's caches hold them, on a small fixture that copies their layout."""

from __future__ import annotations

import collections
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from nips25_gfm import TSGNN, load_planetoid, zero_shot
from nips25_gfm.cli import main
from nips25_gfm.planetoid import find_planetoid

N, F, C, N_ALL, N_TRAIN = 14, 5, 3, 9, 3


def _truth(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.random((N, F)).round(3) + 0.1  # no zero row
    y = np.concatenate([[0, 1, 2], rng.integers(0, C, N - 3)])  # training nodes 0..2 cover every class
    edges = rng.integers(0, N, (2, 30))
    return x, y, edges


def write_planetoid(folder: Path, prefix: str, *, gap: bool = False, seed: int = 0) -> dict[str, np.ndarray]:
    """The eight ind.<prefix>.* files of the released layout (Python-2-era pickles: protocol 2, latin-1)."""
    x, y, edges = _truth(seed)
    onehot = np.eye(C)[y]
    test_ids = np.arange(N_ALL, N)
    if gap:  # CiteSeer: a test id missing (an isolated node without features or label)
        test_ids = np.delete(test_ids, 2)
    order = np.random.default_rng(seed + 1).permutation(test_ids)  # test.index is not sorted in the release
    graph = collections.defaultdict(list)
    for u, v in edges.T:
        graph[int(u)].append(int(v))
    objects = {
        "x": sp.csr_matrix(x[:N_TRAIN]),
        "tx": sp.csr_matrix(x[order]),
        "allx": sp.csr_matrix(x[:N_ALL]),
        "y": onehot[:N_TRAIN],
        "ty": onehot[order],
        "ally": onehot[:N_ALL],
        "graph": graph,
    }
    folder.mkdir(parents=True, exist_ok=True)
    for item, obj in objects.items():
        with (folder / f"ind.{prefix}.{item}").open("wb") as fh:
            pickle.dump(obj, fh, protocol=2)
    (folder / f"ind.{prefix}.test.index").write_text("".join(f"{i}\n" for i in order))
    return {"x": x, "y": y, "edges": edges, "test_ids": test_ids}


def test_pyg_layout_is_read_as_released(tmp_path) -> None:
    """PyG's <root>/Cora/raw/ind.cora.*: features, labels and the public split land on the right node ids."""
    truth = write_planetoid(tmp_path / "Cora" / "raw", "cora")
    for where in (tmp_path, tmp_path / "Cora", tmp_path / "Cora" / "raw"):
        task = load_planetoid(where)
        assert task.name == "cora" and task.num_nodes == N and task.num_classes == C
        want = truth["x"] / np.linalg.norm(truth["x"], axis=1, keepdims=True)
        np.testing.assert_allclose(task.x, want, atol=1e-12)
        np.testing.assert_array_equal(task.y, truth["y"])
        np.testing.assert_array_equal(np.flatnonzero(task.train_mask), np.arange(N_TRAIN))
        np.testing.assert_array_equal(np.flatnonzero(task.val_mask), np.arange(N_TRAIN, N_ALL))
        np.testing.assert_array_equal(np.flatnonzero(task.test_mask), truth["test_ids"])
        a = sp.csr_matrix((np.ones(30), tuple(truth["edges"])), shape=(N, N))
        a = ((a + a.T) > 0).astype(float).tolil()
        a.setdiag(0)
        np.testing.assert_array_equal(task.adjacency.toarray(), a.toarray())


def test_dgl_layout_and_citeseer_gap(tmp_path) -> None:
    """DGL's ~/.dgl/cora_v2_<hash>/ind.cora_v2.*; a gap in the test ids gives a zero row in no split."""
    cache = tmp_path / ".dgl"
    write_planetoid(cache / "cora_v2_d697a464", "cora_v2")
    truth = write_planetoid(cache / "citeseer_d6836239", "citeseer", gap=True, seed=3)
    assert load_planetoid(cache / "cora_v2_d697a464", name="cora").name == "cora_v2"
    task = load_planetoid(cache / "citeseer_d6836239")
    missing = N_ALL + 2
    assert not task.x[missing].any() and task.y[missing] == 0
    assert not (task.train_mask | task.val_mask | task.test_mask)[missing]
    keep = np.arange(N) != missing
    np.testing.assert_array_equal(task.y[keep & task.test_mask], truth["y"][keep & task.test_mask])
    with pytest.raises(FileNotFoundError, match="no Planetoid files"):
        load_planetoid(cache)  # the data sets sit one level down, not under raw/


def test_bad_files_are_named(tmp_path) -> None:
    folder = tmp_path / "raw"
    write_planetoid(folder, "cora")
    write_planetoid(tmp_path / "Other" / "raw", "pubmed")
    with pytest.raises(ValueError, match="several Planetoid data sets"):
        find_planetoid(tmp_path)
    (folder / "ind.cora.ty").unlink()
    with pytest.raises(FileNotFoundError, match=r"ind\.cora\.ty"):
        load_planetoid(folder)
    write_planetoid(folder, "cora")
    with (folder / "ind.cora.graph").open("wb") as fh:  # a pickle that would run code when loaded
        pickle.dump(print, fh)
    with pytest.raises(ValueError, match=r"ind\.cora\.graph: not a readable Planetoid pickle"):
        load_planetoid(folder)
    write_planetoid(folder, "cora")
    (folder / "ind.cora.test.index").write_text("9\nten\n")
    with pytest.raises(ValueError, match=r"test\.index: line 2"):
        load_planetoid(folder)
    write_planetoid(folder, "cora")
    with (folder / "ind.cora.ally").open("wb") as fh:
        pickle.dump(np.eye(C)[[0, 1, 2, 0]], fh, protocol=2)
    with pytest.raises(ValueError, match=r"ind\.cora\.ally: 4 label rows"):
        load_planetoid(folder)
    with pytest.raises(FileNotFoundError, match="directory"):
        load_planetoid(tmp_path / "none")


def test_cli_run_on_the_fixture(tmp_path, capsys) -> None:
    write_planetoid(tmp_path / "Cora" / "raw", "cora")
    model = tmp_path / "m.pt"
    TSGNN(hidden=4).save(model)
    out = tmp_path / "pred.csv"
    assert main(["run", "--model", str(model), "--data", str(tmp_path / "Cora"), "--out", str(out), "-q"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["nodes"] == N and result["classes"] == C and result["labelled"] == N_TRAIN
    table = np.loadtxt(out, delimiter=",", skiprows=1)
    assert table.shape == (N, 2 + C)
    task = load_planetoid(tmp_path)
    want = zero_shot(task.graph, task.x, task.y, task.train_mask, model=TSGNN.load(model)).numpy()
    np.testing.assert_allclose(table[:, 2:], want, atol=1e-5)
    assert result["test_accuracy"] == pytest.approx(np.mean(want[task.test_mask].argmax(1) == task.y[task.test_mask]))
    with pytest.raises(SystemExit) as exc:
        main(["run", "--model", str(model), "--data", str(tmp_path / "none")])
    assert exc.value.code == 2
