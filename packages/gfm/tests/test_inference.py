"""zero_shot on a user's DGLGraph: equal to the task path, batched graphs per component, bad input refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from nips25_gfm import TSGNN, GraphTask, class_ids, import_dgl, predict, zero_shot

dgl = import_dgl()


@pytest.fixture
def model() -> TSGNN:
    torch.manual_seed(0)
    return TSGNN(hidden=4).double()


def test_equals_softmax_of_predict_on_the_same_graph(task, model) -> None:
    """Known answer: the DGL entry point gives softmax(predict(task)) on a task whose rows are L2-normalised."""
    task = dataclasses.replace(task, x=task.x / np.linalg.norm(task.x, axis=1, keepdims=True), _graph=[])
    p = zero_shot(task.graph, task.x, task.y, task.train_mask, model=model)
    want = torch.softmax(predict(model, task), dim=1)
    torch.testing.assert_close(p, want, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(p.sum(1), torch.ones(task.num_nodes, dtype=p.dtype))
    # one-hot labels, torch inputs and labels outside train_mask set to -1 give the same answer
    y = np.where(task.train_mask, task.y, -1)
    onehot = torch.as_tensor(task.labels_onehot(task.train_mask))
    for labels in (y, torch.as_tensor(y), onehot):
        got = zero_shot(task.graph, torch.as_tensor(task.x), labels, torch.as_tensor(task.train_mask), model=model)
        torch.testing.assert_close(got, p)


def test_batched_graph_is_classified_per_component(task_factory, model) -> None:
    a, b = task_factory(n=30, f=4, c=3, seed=1), task_factory(n=24, f=4, c=3, seed=2)
    batch = dgl.batch([a.graph, b.graph])
    cat = {k: np.concatenate([getattr(a, k), getattr(b, k)]) for k in ("x", "y", "train_mask")}
    got = zero_shot(batch, cat["x"], cat["y"], cat["train_mask"], model=model)
    want = torch.cat([zero_shot(t.graph, t.x, t.y, t.train_mask, model=model) for t in (a, b)])
    torch.testing.assert_close(got, want)
    with pytest.raises(ValueError, match="batched"):
        model(batch, torch.as_tensor(cat["x"]), torch.zeros(54, 3, dtype=torch.float64), None)
    no_class2 = cat["train_mask"] & ~((np.arange(54) >= 30) & (cat["y"] == 2))
    with pytest.raises(ValueError, match=r"component 1 .* class\(es\) \[2\]"):
        zero_shot(batch, cat["x"], cat["y"], no_class2, model=model)


def test_bad_input_is_refused_naming_the_argument(task, model) -> None:
    g, x, y, m = task.graph, task.x, task.y, task.train_mask
    no_class1 = m & (y != 1)
    cases = [
        (dict(train_mask=no_class1), ValueError, r"labels: class\(es\) \[1\]"),
        (dict(labels=y.astype(float)), ValueError, "labels: expected integer class ids"),
        (dict(labels=y + 5 * (np.arange(y.size) == np.flatnonzero(m)[0]), num_classes=3), ValueError, "outside"),
        (dict(labels=np.where(m, y, -1) - 2 * m, num_classes=3), ValueError, "labels: node"),
        (dict(labels=np.full((y.size, 3), 0.5)), ValueError, "not one-hot"),
        (dict(labels=y[:-1]), ValueError, "labels: expected class ids"),
        (dict(features=np.where(np.arange(x.size).reshape(x.shape) == 7, np.nan, x)), ValueError, "features"),
        (dict(features=x[:-1]), ValueError, "features"),
        (dict(train_mask=m[:-1]), ValueError, "train_mask"),
        (dict(train_mask=m.astype(int)), TypeError, "train_mask"),
        (dict(train_mask=np.zeros_like(m)), ValueError, "train_mask"),
        (dict(num_classes=1), ValueError, "num_classes"),
        (dict(graph="cora"), TypeError, "graph"),
        (dict(model="gfm"), TypeError, "model"),
    ]
    base = dict(graph=g, features=x, labels=y, train_mask=m, model=model)
    for change, exc, match in cases:
        args = {**base, **change}
        with pytest.raises(exc, match=match):
            zero_shot(args.pop("graph"), args.pop("features"), args.pop("labels"), args.pop("train_mask"), **args)
    hetero = dgl.heterograph({("a", "r", "b"): ([0], [0])})
    with pytest.raises(ValueError, match="homogeneous"):
        zero_shot(hetero, x[:1], y[:1], m[:1], model=model)
    assert class_ids(y, m, num_classes=task.num_classes)[1] == task.num_classes


def test_a_task_with_an_unlabelled_class_and_non_one_hot_y_obs_are_refused(task, model) -> None:
    with pytest.raises(ValueError, match=r"train_mask: class\(es\) \[2\]"):
        dataclasses.replace(task, train_mask=task.train_mask & (task.y != 2), _graph=[])
    with pytest.raises(ValueError, match="y"):
        GraphTask(name="t", adjacency=task.adjacency, x=task.x, y=task.y.astype(float), train_mask=task.train_mask,
                  val_mask=task.val_mask, test_mask=task.test_mask)  # fmt: skip
    from nips25_gfm import prepare

    g = prepare(task, dtype=torch.float64)
    with pytest.raises(ValueError, match="y_obs: expected one-hot"):
        model(g.graph, g.x, 0.5 * g.onehot, g.conv)
