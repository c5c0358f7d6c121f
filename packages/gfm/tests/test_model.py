"""TS-GNN symmetries, size independence, persistence and input checks."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from nips25_gfm import TSGNN, GraphTask, predict, prepare


def _logits(model: TSGNN, task: GraphTask, lambdas=(1e-2,)) -> torch.Tensor:
    return predict(model, prepare(task, n_hops=model.config.n_hops, lambdas=lambdas, dtype=torch.float64))


def _model(**kw) -> TSGNN:
    torch.manual_seed(0)
    return TSGNN(hidden=8, **kw).double()


def _permuted(task: GraphTask, *, pf=None, pc=None, pn=None) -> GraphTask:
    x, y, a = task.x, task.y, task.adjacency
    masks = [task.train_mask, task.val_mask, task.test_mask]
    if pf is not None:
        x = x[:, pf]
    if pc is not None:
        y = np.argsort(pc)[y]  # class pc[j] becomes class j
    if pn is not None:
        x, y, a = x[pn], y[pn], sp.csr_matrix(a[pn][:, pn])
        masks = [m[pn] for m in masks]
    return GraphTask(task.name, a, x, y, *masks)


@pytest.mark.parametrize("n_hops", [-1, 1])
def test_feature_permutation_leaves_logits_unchanged(task, n_hops) -> None:
    model = _model(n_hops=n_hops)
    pf = np.random.default_rng(0).permutation(task.num_features)
    torch.testing.assert_close(
        _logits(model, _permuted(task, pf=pf), lambdas=(1e-15, 1e-2, 1.0)),
        _logits(model, task, lambdas=(1e-15, 1e-2, 1.0)),
        atol=1e-5,
        rtol=0,
    )


def test_class_relabelling_permutes_logit_columns(task) -> None:
    model = _model(n_hops=0)
    pc = np.array([2, 0, 1])
    torch.testing.assert_close(_logits(model, _permuted(task, pc=pc)), _logits(model, task)[:, pc], atol=1e-5, rtol=0)


def test_node_relabelling_permutes_logit_rows(task) -> None:
    model = _model(backbone="gat")
    pn = np.random.default_rng(1).permutation(task.num_nodes)
    torch.testing.assert_close(_logits(model, _permuted(task, pn=pn)), _logits(model, task)[pn], atol=1e-5, rtol=0)


def test_parameter_count_is_independent_of_features_and_classes(tmp_path, task_factory) -> None:
    model = _model()
    n = model.num_parameters()
    assert n == 2 * 6 * 2 * 8  # two layers, six backbone convs, two matrices of 1x8 / 8x1 each
    for f, c in [(4, 2), (64, 10)]:
        t = task_factory(n=60, f=f, c=c, seed=f)
        assert _logits(model, t).shape == (60, c)
    assert model.num_parameters() == n
    path = model.save(tmp_path / "m.pt")
    loaded = TSGNN.load(path).double()
    t = task_factory()
    torch.testing.assert_close(_logits(loaded, t), _logits(model, t))


def test_model_rejects_bad_input(task, tmp_path) -> None:
    model = TSGNN(hidden=4)
    g = prepare(task)
    with pytest.raises(ValueError, match="x"):
        model(g.graph, g.x[:-1], g.onehot, g.conv)
    with pytest.raises(TypeError, match="y_obs"):
        model(g.graph, g.x, g.onehot.numpy(), g.conv)
    with pytest.raises(TypeError, match="conv"):
        model(g.graph, g.x, g.onehot, None)
    with pytest.raises(ValueError, match="conv"):
        TSGNN(n_hops=1)(g.graph, g.x, g.onehot, g.conv)
    with pytest.raises(ValueError, match="hidden"):
        TSGNN(hidden=0)
    with pytest.raises(ValueError, match="backbone"):
        TSGNN(backbone="gin")
    with pytest.raises(FileNotFoundError, match="path"):
        TSGNN.load(tmp_path / "missing.pt")
    (tmp_path / "bad.pt").write_bytes(b"not a model")
    with pytest.raises((ValueError, Exception), match="path|pickle|load"):
        TSGNN.load(tmp_path / "bad.pt")
