"""Message passing through DGL: known answers on tiny graphs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nips25_gfm import MeanConv, SetGATConv, TSLayer, import_dgl, normalized_adjacency, xy_conversions

dgl = import_dgl()


def _star() -> object:
    src = torch.tensor([0, 0, 0, 0, 1, 2, 3, 4])
    dst = torch.tensor([1, 2, 3, 4, 0, 0, 0, 0])
    return dgl.graph((src, dst))


def test_mean_aggregation_on_a_star() -> None:
    h = torch.tensor([7.0, 1.0, 2.0, 3.0, 4.0]).reshape(5, 1, 1).expand(5, 3, 1).clone()
    agg = MeanConv(1, 1).aggregate(_star(), h)
    assert agg[0, :, 0].tolist() == [2.5, 2.5, 2.5]
    assert torch.all(agg[1:, :, 0] == 7.0)


def test_update_all_equals_dense_row_normalised_adjacency(task) -> None:
    h = torch.randn(task.num_nodes, 4, 2, dtype=torch.float64)
    agg = MeanConv(2, 2).aggregate(task.graph, h).numpy()
    a_hat = normalized_adjacency(task.adjacency).toarray()
    np.testing.assert_allclose(agg, np.einsum("nm,msk->nsk", a_hat, h.numpy()), atol=1e-12)
    connected = np.asarray(task.adjacency.sum(axis=1)).ravel() > 0
    np.testing.assert_allclose(((np.eye(task.num_nodes) - a_hat) @ np.ones(task.num_nodes))[connected], 0, atol=1e-12)


def test_isolated_node_aggregates_zero() -> None:
    g = dgl.graph((torch.tensor([0]), torch.tensor([1])), num_nodes=3)
    agg = MeanConv(1, 1).aggregate(g, torch.ones(3, 2, 1))
    assert agg[2].abs().sum() == 0 and agg[0].abs().sum() == 0


@pytest.mark.parametrize("backbone", ["mean", "gat"])
def test_layer_is_equivariant_to_feature_and_class_permutations(task, backbone) -> None:
    torch.manual_seed(0)
    layer = TSLayer(2, 3, n_hops=1, backbone=backbone).double()
    y1h = task.labels_onehot(task.train_mask)
    x = torch.randn(task.num_nodes, task.num_features, 2, dtype=torch.float64)
    y = torch.randn(task.num_nodes, task.num_classes, 2, dtype=torch.float64)
    conv = xy_conversions(task.adjacency, task.x, task.labels_onehot(), task.train_mask, n_hops=1)
    pf, pc = np.random.default_rng(0).permutation(task.num_features), np.array([2, 0, 1])
    conv_p = xy_conversions(task.adjacency, task.x[:, pf], task.labels_onehot()[:, pc], task.train_mask, n_hops=1)
    x1, y1 = layer(task.graph, x, y, conv)
    x2, y2 = layer(task.graph, x[:, pf], y[:, pc], conv_p)
    torch.testing.assert_close(x2, x1[:, pf], atol=1e-8, rtol=1e-6)
    torch.testing.assert_close(y2, y1[:, pc], atol=1e-8, rtol=1e-6)
    assert y1h.shape == (task.num_nodes, task.num_classes)


def test_gat_attention_sums_to_one_over_equal_inputs() -> None:
    conv = SetGATConv(1, 1)
    torch.nn.init.ones_(conv.lin.weight)
    out = conv(_star(), torch.ones(5, 2, 1))
    torch.testing.assert_close(out, torch.ones(5, 2, 1))


def test_layer_rejects_bad_input(task) -> None:
    layer = TSLayer(1, 2)
    conv = xy_conversions(task.adjacency, task.x, task.labels_onehot(), task.train_mask)
    x = torch.zeros(task.num_nodes, task.num_features, 1)
    y = torch.zeros(task.num_nodes, task.num_classes, 1)
    with pytest.raises(ValueError, match="x"):
        layer(task.graph, x[:, :, :0], y, conv)
    with pytest.raises(ValueError, match="y"):
        layer(task.graph, x, torch.full_like(y, float("nan")), conv)
    with pytest.raises(ValueError, match="conv"):
        layer(task.graph, x[:, :2], y, conv)
    with pytest.raises(TypeError, match="x"):
        layer(task.graph, x.numpy(), y, conv)
    with pytest.raises(ValueError, match="backbone"):
        TSLayer(1, 2, backbone="sage")
