"""Regression tests of the review: labelled-node maps, map fitting on fed labels, safe model loading, CLI errors,
the paper's local-directory graph format."""

from __future__ import annotations

import collections
import dataclasses

import nips25_gfm.training as training
import numpy as np
import pytest
import torch
from nips25_gfm import (
    PAPER_GRAPHS,
    TSGNN,
    FitConfig,
    GraphTask,
    fit,
    load_graph_dir,
    load_graph_file,
    predict,
    prepare,
)
from nips25_gfm.cli import main
from nips25_gfm.reproduce import DATA_ENV, PAPER_POOL, PAPER_VALIDATION, reproduce


def _with_train_mask(task: GraphTask, mask: np.ndarray) -> GraphTask:
    return dataclasses.replace(task, train_mask=mask, _graph=[])


def test_predict_fits_maps_on_the_labelled_nodes_only(task) -> None:
    # A subset of the training nodes is fed: the maps must not see the other training labels.
    subset = task.train_mask.copy()
    subset[np.flatnonzero(subset)[::2]] = False
    torch.manual_seed(0)
    model = TSGNN(hidden=4).double()
    got = predict(model, task, labelled=subset)
    want = predict(model, _with_train_mask(task, subset))
    torch.testing.assert_close(got, want)
    with pytest.raises(ValueError, match="labelled"):
        predict(model, task, labelled=np.zeros(task.num_nodes, dtype=bool))


def test_maps_from_fed_refits_on_fed_labels_each_epoch(task, monkeypatch) -> None:
    seen: list[np.ndarray] = []
    real = training.xy_conversions

    def spy(graph, x, y, mask, **kw):
        seen.append(np.asarray(mask).copy())
        return real(graph, x, y, mask, **kw)

    monkeypatch.setattr(training, "xy_conversions", spy)
    model = TSGNN(hidden=4)
    fit(model, [task], config=FitConfig(epochs=3, lr=1e-2, maps_from="fed"), seed=0, use_accelerate=False)
    assert len(seen) == 1 + 3  # once in prepare (all training labels), then once per epoch on the fed labels
    assert np.array_equal(seen[0], task.train_mask)
    k = max(1, int(task.train_mask.sum() * 0.5 / task.num_classes))
    for m in seen[1:]:
        assert m.sum() == k * task.num_classes and not (m & ~task.train_mask).any()
    seen.clear()
    fit(TSGNN(hidden=4), [task], config=FitConfig(epochs=3, lr=1e-2), seed=0, use_accelerate=False)
    assert len(seen) == 1  # official: maps fitted once on every training label
    with pytest.raises(ValueError, match="maps_from"):
        FitConfig(maps_from="loss")
    with pytest.raises(ValueError, match="fit_mask"):
        prepare(task, fit_mask=np.zeros(task.num_nodes, dtype=bool))


def test_load_rejects_foreign_files_without_unpickling(tmp_path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a model\n")
    with pytest.raises(ValueError, match="path: .* is not a saved TS-GNN"):
        TSGNN.load(text)
    pickled = tmp_path / "evil.pt"
    torch.save({"config": "{}", "state_dict": {}, "extra": collections.Counter("ab")}, pickled)
    with pytest.raises(ValueError, match="not a saved TS-GNN"):
        TSGNN.load(pickled)


def test_cli_one_line_errors(tmp_path, capsys) -> None:
    junk = tmp_path / "junk.pt"
    junk.write_text("junk")
    cases = [
        (["predict", "--model", str(junk), "--task", "iris"], "not a saved TS-GNN"),
        (["train", "--tasks", "iris", "--save", str(tmp_path), "--epochs", "1"], "--save"),
        (["train", "--tasks", "iris", "--save", "/proc/none/m.pt", "--epochs", "1"], "--save"),
        (["train", "--tasks", "iris", "--save", str(tmp_path / "m.pt"), "--seed", "-1"], "--seed"),
        (["reproduce", "--profile", "quick", "--out", str(tmp_path), "--seed", "-1"], "--seed"),
        (["reproduce", "--profile", "paper", "--out", str(tmp_path), "--data-dir", str(junk)], "--data-dir"),
        (["reproduce", "--profile", "paper", "--out", str(tmp_path), "--data-dir", str(tmp_path)], "cora.npz"),
    ]
    for argv, needle in cases:
        with pytest.raises(SystemExit) as exc:
            main(argv)
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert exc.value.code == 2 and needle in err and "Traceback" not in err, (argv, err)


def _write_graph(path, n: int = 30, f: int = 5, c: int = 3, seed: int = 0, masks: bool = True) -> None:
    rng = np.random.default_rng(seed)
    y = np.arange(n) % c
    src = rng.integers(0, n, size=4 * n)
    dst = rng.integers(0, n, size=4 * n)
    arrays = {"edge_index": np.stack([src, dst]), "x": rng.normal(size=(n, f)), "y": y}
    if masks:
        split = np.concatenate([np.arange(c), rng.permutation(np.arange(c, n))])  # split 0 labels every class
        for i, key in enumerate(("train_mask", "val_mask", "test_mask")):
            m = np.zeros((n, 2), dtype=bool)
            m[split[i * n // 3 : (i + 1) * n // 3], 0] = True
            m[split[((i + 1) % 3) * n // 3 : ((i + 1) % 3 + 1) * n // 3], 1] = True
            arrays[key] = m
    np.savez(path, **arrays)


def test_graph_file_format_and_errors(tmp_path) -> None:
    _write_graph(tmp_path / "toy.npz")
    blob = np.load(tmp_path / "toy.npz")
    for seed in (0, 1):
        task = load_graph_file(tmp_path / "toy.npz", seed=seed)
        assert task.name == "toy" and task.num_nodes == 30 and task.num_classes == 3 and task.num_features == 5
        np.testing.assert_array_equal(task.train_mask, blob["train_mask"][:, seed % 2])  # split seed % n_splits
        np.testing.assert_array_equal(task.test_mask, blob["test_mask"][:, seed % 2])
        a = task.adjacency.toarray()
        assert np.array_equal(a, a.T) and not a.diagonal().any()
    _write_graph(tmp_path / "nosplit.npz", masks=False)
    assert load_graph_file(tmp_path / "nosplit.npz").train_mask.sum() == 3 * 5  # 20 per class capped at half
    np.savez(tmp_path / "nox.npz", edge_index=blob["edge_index"], y=blob["y"])
    with pytest.raises(ValueError, match=r"lacks the array\(s\) \['x'\]"):
        load_graph_file(tmp_path / "nox.npz")
    np.savez(tmp_path / "far.npz", edge_index=blob["edge_index"] + 100, x=blob["x"], y=blob["y"])
    with pytest.raises(ValueError, match="edge_index"):
        load_graph_file(tmp_path / "far.npz")
    np.savez(tmp_path / "nan.npz", edge_index=blob["edge_index"], x=blob["x"] * np.nan, y=blob["y"])
    with pytest.raises(ValueError, match="x"):
        load_graph_file(tmp_path / "nan.npz")
    (tmp_path / "bad.npz").write_text("no zip")
    with pytest.raises(ValueError, match="not a readable"):
        load_graph_file(tmp_path / "bad.npz")
    with pytest.raises(FileNotFoundError, match="path"):
        load_graph_file(tmp_path / "none.npz")
    with pytest.raises(FileNotFoundError, match=r"lacks 2 of 3 graph files: a.npz, b.npz"):
        load_graph_dir(tmp_path, ["toy", "a", "b"])
    with pytest.raises(FileNotFoundError, match="directory"):
        load_graph_dir(tmp_path / "toy.npz", ["toy"])
    with pytest.raises(ValueError, match="names"):
        load_graph_dir(tmp_path, [])


def test_paper_profile_reads_the_local_directory(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(DATA_ENV, raising=False)
    with pytest.raises(FileNotFoundError, match=DATA_ENV):
        reproduce(profile="paper", out_dir=tmp_path)
    data = tmp_path / "graphs"
    data.mkdir()
    monkeypatch.setenv(DATA_ENV, str(data))
    with pytest.raises(FileNotFoundError, match="lacks 29 of 29"):
        reproduce(profile="paper", out_dir=tmp_path)
    for i, name in enumerate(PAPER_GRAPHS):
        _write_graph(data / f"{name}.npz", n=24, f=3 + i % 4, c=2 + i % 3, seed=i)
    # End to end on a cut-down paper profile (same source, fewer graphs and epochs): the report comes from the files.
    import nips25_gfm.reproduce as rep

    small = dataclasses.replace(
        rep.PROFILES["paper"], sizes=(1, 2), orders=1, lrs=(1e-2,), epochs=(1,), hidden=2, gcn_epochs=1,
        pool=PAPER_POOL[:3], validation=PAPER_VALIDATION[:1], control_graphs=0, workers=1,
    )  # fmt: skip
    monkeypatch.setitem(rep.PROFILES, "paper", small)
    report = reproduce(profile="paper", out_dir=tmp_path / "out")
    assert report.profile == "paper" and report.config["source"] == "directory"
    held = set(report.config["orders"]["0"][2:])
    assert set(report.claims[1].measured) == held and held <= set(PAPER_POOL[:3])
    assert report.claims[-1].holds and str(data) in report.notes


def test_non_finite_inputs_are_rejected_not_scored(task) -> None:
    import dgl
    from nips25_gfm import MeanConv, SetGATConv, accuracy, linear_gnn_channels

    y = np.array([0, 1, 0, 1])
    mask = np.array([True, True, False, False])
    with pytest.raises(ValueError, match="logits"):
        accuracy(np.full((4, 2), np.nan), y, mask)  # argmax of NaN silently said class 0
    with pytest.raises(ValueError, match="x"):
        linear_gnn_channels(task.adjacency, np.full_like(task.x, np.nan))
    g = dgl.graph(([0, 1], [1, 0]))
    for conv in (MeanConv(1, 2), SetGATConv(1, 2)):
        with pytest.raises(ValueError, match="h"):
            conv(g, torch.full((2, 3, 1), float("nan")))
        with pytest.raises(ValueError, match="h"):
            conv(g, torch.ones(3, 3, 1))
