r"""Zero-shot inference on a user's ``DGLGraph``: class probabilities for every node, no gradient step.

A trained :class:`~nips25_gfm.model.TSGNN` classifies the nodes of a graph it has never seen, with its own number of
features F and classes C, given the labels of the graph's labelled nodes (paper, Sec. 4-5; the official zero-shot
evaluation feeds every training label of the test graph). The graph is made undirected with no self-loops and no
duplicate edges, the features are preprocessed as in training (optional PCA, L2-normalised rows), the conversion
maps are solved on the labelled nodes only, and one forward pass gives
:math:`p = \mathrm{softmax}(\mathrm{TSGNN}(G, X, Y_{obs}))`.

A batched graph (``dgl.batch``) is handled per component: each component is its own graph with its own maps.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from nips25_gfm._validation import check_int, check_mask, check_matrix
from nips25_gfm.graphs import _clean_adjacency, import_dgl, preprocess_features
from nips25_gfm.least_squares import xy_conversions
from nips25_gfm.model import TSGNN

__all__ = ["class_ids", "zero_shot"]


def _numpy(value: Any) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def class_ids(labels: Any, train_mask: np.ndarray, *, num_classes: int | None = None) -> tuple[np.ndarray, int]:
    """Integer class ids of the labelled nodes, checked: every class ``0..C-1`` has a labelled node.

    Args:
        labels: integer class ids ``[N]`` or one-hot rows ``[N, C]`` (numpy or torch). Only the rows of
            ``train_mask`` are read; the others may hold anything (e.g. ``-1``).
        train_mask: boolean ``[N]``, the labelled nodes.
        num_classes: C (default: the largest labelled class id + 1, or the width of one-hot ``labels``).

    Returns:
        ``(y [N] int64, C)``; ``y`` is ``-1`` outside ``train_mask``.

    Raises:
        ValueError: ``labels`` of another length, floats that are not one-hot rows, a labelled id outside
            ``[0, C)``, a class with no labelled node, ``C < 2``, an empty ``train_mask``.

    Example:
        >>> class_ids(np.array([0, 1, -1, 1]), np.array([True, True, False, True]))
        (array([ 0,  1, -1,  1]), 2)
    """
    mask = np.asarray(train_mask)
    n = mask.shape[0] if mask.ndim == 1 else -1
    arr = _numpy(labels)
    if arr.ndim not in (1, 2) or arr.shape[0] != n:
        raise ValueError(f"labels: expected class ids [{n}] or one-hot rows [{n}, C], got shape {arr.shape}")
    if not mask.any():
        raise ValueError("train_mask: needs at least one labelled node")
    if arr.ndim == 2:
        rows = arr[mask]
        if not np.all(np.isin(rows, (0, 1))) or not np.all(rows.sum(axis=1) == 1):
            bad = int(np.flatnonzero(mask)[np.flatnonzero(~(np.isin(rows, (0, 1)).all(1) & (rows.sum(1) == 1)))[0]])
            raise ValueError(f"labels: row {bad} of a labelled node is not one-hot")
        ids = rows.argmax(axis=1)
        width = arr.shape[1]
    else:
        if not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
            raise ValueError(f"labels: expected integer class ids (or one-hot rows [N, C]), got dtype {arr.dtype}")
        ids = arr[mask].astype(np.int64)
        width = None
    if num_classes is not None:
        c = check_int(num_classes, "num_classes", low=2)
        if width is not None and width != c:
            raise ValueError(f"num_classes: {c} differs from the {width} columns of one-hot labels")
    else:
        c = width if width is not None else int(ids.max()) + 1
    if c < 2:
        raise ValueError(f"labels: expected at least 2 classes among the labelled nodes, got {c}")
    out_of_range = (ids < 0) | (ids >= c)
    if out_of_range.any():
        node = int(np.flatnonzero(mask)[np.flatnonzero(out_of_range)[0]])
        raise ValueError(f"labels: node {node} is labelled {int(ids[out_of_range][0])}, outside [0, {c})")
    missing = np.setdiff1d(np.arange(c), ids)
    if missing.size:
        raise ValueError(
            f"labels: class(es) {missing.tolist()} of 0..{c - 1} have no labelled node (train_mask); the model "
            "needs at least one labelled node of every class"
        )
    y = np.full(n, -1, dtype=np.int64)
    y[mask] = ids
    return y, c


def _one_graph(
    model: TSGNN,
    adjacency: sp.csr_matrix,
    x: np.ndarray,
    y: np.ndarray,
    mask: np.ndarray,
    c: int,
    *,
    max_features: int | None,
) -> torch.Tensor:
    """Probabilities ``[n, c]`` of one connected-or-not graph (one set of conversion maps)."""
    dgl = import_dgl()
    n = x.shape[0]
    a = _clean_adjacency(adjacency, n)
    feats = preprocess_features(x, max_features=max_features)
    onehot = np.zeros((n, c))
    onehot[mask, y[mask]] = 1.0
    conv = xy_conversions(a, feats, onehot, mask, n_hops=model.config.n_hops)
    dtype = next(model.parameters()).dtype
    logits = model(dgl.from_scipy(a), torch.as_tensor(feats, dtype=dtype), torch.as_tensor(onehot, dtype=dtype), conv)
    return torch.softmax(logits, dim=1)


@torch.no_grad()
def zero_shot(
    graph: Any,
    features: Any,
    labels: Any,
    train_mask: Any,
    *,
    model: TSGNN,
    num_classes: int | None = None,
    max_features: int | None = None,
) -> torch.Tensor:
    r"""Class probabilities of every node of a new graph, from a trained TS-GNN and the graph's labelled nodes.

    :math:`p = \mathrm{softmax}(\mathrm{TSGNN}(G, \tilde X, Y_{obs}; W(\tilde X, Y_{obs})))` with :math:`\tilde X`
    the preprocessed features, :math:`Y_{obs}` one-hot on ``train_mask`` and zero elsewhere, and :math:`W` the
    closed-form conversion maps solved on ``train_mask`` (paper, Sec. 4; no gradient step, no label outside
    ``train_mask`` is read).

    Args:
        graph: a homogeneous ``dgl.DGLGraph`` with N nodes (edge direction, self-loops and duplicate edges are
            ignored: the graph is used undirected). A batched graph (``dgl.batch``) is split into its components,
            each classified on its own (its own maps, its own labelled nodes; every class needs a labelled node in
            every component).
        features: node features ``[N, F]`` (numpy or torch), finite.
        labels: class ids ``[N]`` (integers; only the rows of ``train_mask`` are read) or one-hot rows ``[N, C]``.
        train_mask: boolean ``[N]``, the labelled nodes whose labels are fed.
        model: a trained :class:`~nips25_gfm.model.TSGNN` (e.g. :meth:`~nips25_gfm.model.TSGNN.load`).
        num_classes: C (default: the largest labelled class id + 1).
        max_features: PCA cap applied to ``features`` before the L2 row normalisation (``None``: none); use the
            cap the model's training graphs were preprocessed with.

    Returns:
        ``float`` tensor ``[N, C]`` (the model's dtype), rows summing to one, in the graph's node order.

    Raises:
        TypeError: ``graph`` not a ``DGLGraph``, ``model`` not a :class:`TSGNN`, ``train_mask`` not of dtype
            bool, ``features`` not numeric.
        ValueError: a heterogeneous or empty graph; ``features`` of the wrong shape or with NaN/inf; ``train_mask``
            of the wrong length or empty; labels that are floats (not one-hot), out of range, or leave
            a class (of any component) without a labelled node.

    Example:
        >>> import torch
        >>> from nips25_gfm import TSGNN, import_dgl
        >>> dgl = import_dgl()
        >>> g = dgl.graph(([0, 1, 2, 3], [1, 2, 3, 0]))
        >>> mask = torch.tensor([True, True, False, False])
        >>> p = zero_shot(g, torch.eye(4), torch.tensor([0, 1, -1, -1]), mask, model=TSGNN(hidden=4))
        >>> tuple(p.shape), bool(torch.allclose(p.sum(1), torch.ones(4)))
        ((4, 2), True)
    """
    dgl = import_dgl()
    if not isinstance(graph, dgl.DGLGraph):
        raise TypeError(f"graph: expected a dgl.DGLGraph, got {type(graph).__name__}")
    if not isinstance(model, TSGNN):
        raise TypeError(f"model: expected a TSGNN, got {type(model).__name__}")
    if not graph.is_homogeneous:
        raise ValueError(f"graph: expected a homogeneous graph (one node and one edge type), got {graph.ntypes}")
    n = graph.num_nodes()
    if n == 0:
        raise ValueError("graph: has no nodes")
    x = check_matrix(features, "features", rows=n)
    mask = check_mask(_numpy(train_mask), "train_mask", n)
    y, c = class_ids(labels, mask, num_classes=num_classes)
    src, dst = (t.cpu().numpy() for t in graph.edges())
    adjacency = sp.csr_matrix((np.ones(src.shape[0]), (src, dst)), shape=(n, n))
    sizes = graph.batch_num_nodes().cpu().numpy().tolist()
    model.eval()
    parts = []
    start = 0
    for i, size in enumerate(sizes):
        stop = start + int(size)
        part = slice(start, stop)
        if len(sizes) > 1:
            missing = np.setdiff1d(np.arange(c), y[part][mask[part]])
            if missing.size:
                raise ValueError(
                    f"labels: component {i} of the batched graph (nodes {start}..{stop - 1}) has no labelled node "
                    f"of class(es) {missing.tolist()}; every component is classified on its own"
                )
        parts.append(
            _one_graph(model, adjacency[part, part], x[part], y[part], mask[part], c, max_features=max_features)
        )
        start = stop
    return torch.cat(parts)
