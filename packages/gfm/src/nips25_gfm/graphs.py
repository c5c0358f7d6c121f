"""Graph tasks: a ``DGLGraph`` with node features, labels and splits, and the preprocessing of the paper.

A task is what a graph foundation model sees of a graph: its structure (undirected, no self-loops, no duplicate
edges), features ``x[N, F]`` with any ``F`` and labels ``y[N]`` with any number of classes ``C``, and a split into
training (labelled), validation and test nodes (paper, Sec. 5; official ``helpers/split_data.py``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from nips25_gfm._validation import check_int, check_labels, check_mask, check_matrix

if TYPE_CHECKING:
    import dgl
    import torch

__all__ = [
    "DGL_VERSION",
    "TORCH_RANGE",
    "GraphTask",
    "from_adjacency",
    "from_networkx",
    "from_tabular_knn",
    "import_dgl",
    "normalized_adjacency",
    "preprocess_features",
    "select_split",
    "stratified_split",
]

DGL_VERSION = "2.1.0"
TORCH_RANGE = ">=2.0,<2.2.2"


def import_dgl() -> Any:
    """Import DGL with the PyTorch backend, or explain which versions were found and which are expected.

    Returns:
        The ``dgl`` module.

    Raises:
        ImportError: DGL is missing or fails to import (typically a torch outside ``>=2.0,<2.2.2``).
    """
    os.environ.setdefault("DGLBACKEND", "pytorch")
    try:
        import dgl
    except Exception as exc:  # pragma: no cover - depends on the installed stack
        try:
            import torch

            found = f"torch {torch.__version__}"
        except Exception:
            found = "no importable torch"
        raise ImportError(
            f"nips25-gfm needs dgl=={DGL_VERSION} with torch{TORCH_RANGE} and numpy<2; found {found} "
            f"and DGL failed to import: {exc}"
        ) from exc
    return dgl


def _clean_adjacency(adj: sp.spmatrix | np.ndarray, n: int) -> sp.csr_matrix:
    """Symmetric, unweighted, no self-loops, no duplicates: the graph the official code builds (undirected)."""
    a = sp.csr_matrix(adj, dtype=np.float64)
    if a.shape != (n, n):
        raise ValueError(f"adjacency: expected shape ({n}, {n}), got {a.shape}")
    if a.nnz and not np.all(np.isfinite(a.data)):
        raise ValueError("adjacency: must be finite")
    a = (abs(a) + abs(a.T)).tocsr()
    a.setdiag(0)
    a.eliminate_zeros()
    a.data[:] = 1.0
    return a


def normalized_adjacency(adj: sp.spmatrix | np.ndarray) -> sp.csr_matrix:
    r"""Row-normalised adjacency :math:`\hat A = D^{-1} A` (an isolated node gets a zero row).

    Args:
        adj: square adjacency ``[N, N]`` (dense or scipy sparse), non-negative.

    Returns:
        ``scipy.sparse.csr_matrix`` ``[N, N]`` whose non-empty rows sum to one.

    Raises:
        ValueError: non-square, non-finite or negative ``adj``.

    Example:
        >>> normalized_adjacency(np.array([[0, 1], [1, 0]])).toarray()
        array([[0., 1.],
               [1., 0.]])
    """
    a = sp.csr_matrix(adj, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"adj: expected a square matrix, got shape {a.shape}")
    if a.nnz and (not np.all(np.isfinite(a.data)) or np.any(a.data < 0)):
        raise ValueError("adj: entries must be finite and non-negative")
    deg = np.asarray(a.sum(axis=1)).ravel()
    inv = np.divide(1.0, deg, out=np.zeros_like(deg), where=deg > 0)
    return sp.csr_matrix(sp.diags(inv) @ a)


def preprocess_features(x: np.ndarray, *, max_features: int | None = 64, seed: int = 0) -> np.ndarray:
    r"""The official preprocessing of node features: optional PCA for wide graphs, then L2-normalised rows.

    When ``F > max_features`` the rows are standardised per node and projected on the first ``max_features``
    principal components (scikit-learn PCA). Every row is then divided by its Euclidean norm (zero rows stay zero).

    Args:
        x: features ``[N, F]``, finite.
        max_features: PCA cap (``None``: never reduce).
        seed: PCA random state.

    Returns:
        ``float64`` array ``[N, min(F, max_features)]``.

    Raises:
        ValueError: wrong shape, non-finite values, ``max_features < 1``.
    """
    x = check_matrix(x, "x")
    if max_features is not None:
        check_int(max_features, "max_features", low=1)
    if max_features is not None and x.shape[1] > max_features:
        from sklearn.decomposition import PCA

        std = x.std(axis=1, keepdims=True)
        z = (x - x.mean(axis=1, keepdims=True)) / np.where(std > 0, std, 1.0)
        k = min(max_features, x.shape[0])
        x = PCA(n_components=k, random_state=seed).fit_transform(z)
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)


def stratified_split(
    y: np.ndarray, *, per_class: int = 20, max_fraction: float = 0.5, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stratified split: ``per_class`` training nodes per class, the rest halved into validation and test.

    On small graphs a class gets ``min(per_class, floor(max_fraction * n_c))`` (at least one) training nodes so
    that every class keeps nodes to evaluate on (the paper's 20 per class exceeds Karate's 34 nodes).

    Args:
        y: labels ``[N]`` in ``0..C-1``.
        per_class: training nodes per class (paper: 20).
        max_fraction: cap on the labelled fraction of each class, in ``(0, 1)``.
        seed: permutation seed.

    Returns:
        Boolean masks ``(train, val, test)``, each ``[N]``, disjoint and covering every node.

    Raises:
        ValueError: bad labels or out-of-range arguments.
    """
    y = check_labels(y, "y")
    check_int(per_class, "per_class", low=1)
    if not 0.0 < float(max_fraction) < 1.0:
        raise ValueError(f"max_fraction: expected a value in (0, 1), got {max_fraction}")
    rng = np.random.default_rng(seed)
    n = y.shape[0]
    train = np.zeros(n, dtype=bool)
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        k = max(1, min(per_class, int(max_fraction * idx.size)))
        train[idx[:k]] = True
    rest = rng.permutation(np.flatnonzero(~train))
    val = np.zeros(n, dtype=bool)
    test = np.zeros(n, dtype=bool)
    val[rest[: rest.size // 2]] = True
    test[rest[rest.size // 2 :]] = True
    return train, val, test


def select_split(mask: np.ndarray, seed: int) -> np.ndarray:
    """One split of a multi-split mask: column ``seed % n_splits`` (not ``seed % mask.ndim``, the official bug).

    Args:
        mask: boolean ``[N]`` (one split, returned as is) or ``[N, n_splits]``.
        seed: run seed (non-negative).

    Returns:
        Boolean mask ``[N]``.

    Raises:
        ValueError: ``mask`` not 1-D/2-D or empty, negative ``seed``.
    """
    m = np.asarray(mask)
    check_int(seed, "seed", low=0)
    if m.ndim == 1:
        return check_mask(m, "mask", m.shape[0])
    if m.ndim != 2 or m.shape[1] == 0:
        raise ValueError(f"mask: expected [N] or [N, n_splits] with n_splits >= 1, got shape {m.shape}")
    return check_mask(m[:, seed % m.shape[1]], "mask", m.shape[0])


@dataclass(frozen=True, eq=False)
class GraphTask:
    """A node-classification task on one graph.

    Attributes:
        name: a label for reports.
        adjacency: symmetric 0/1 ``scipy.sparse.csr_matrix`` ``[N, N]``, no self-loops.
        x: preprocessed features ``float64 [N, F]``.
        y: labels ``int64 [N]`` in ``0..C-1`` (every class present).
        train_mask, val_mask, test_mask: disjoint boolean ``[N]``.
    """

    name: str
    adjacency: sp.csr_matrix
    x: np.ndarray
    y: np.ndarray
    train_mask: np.ndarray
    val_mask: np.ndarray
    test_mask: np.ndarray
    _graph: list[Any] = field(default_factory=list, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("name: expected a non-empty string")
        y = check_labels(self.y, "y")
        n = y.shape[0]
        x = check_matrix(self.x, "x", rows=n)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "adjacency", _clean_adjacency(self.adjacency, n))
        masks = [check_mask(getattr(self, m), m, n) for m in ("train_mask", "val_mask", "test_mask")]
        for name, m in zip(("train_mask", "val_mask", "test_mask"), masks, strict=True):
            object.__setattr__(self, name, m)
        if not masks[0].any():
            raise ValueError("train_mask: needs at least one labelled node")
        if not masks[2].any():
            raise ValueError("test_mask: needs at least one test node")
        if (masks[0] & masks[2]).any() or (masks[0] & masks[1]).any():
            raise ValueError("train_mask: must be disjoint from val_mask and test_mask")
        unlabelled = np.setdiff1d(np.arange(int(y.max()) + 1), y[masks[0]])
        if unlabelled.size:
            raise ValueError(
                f"train_mask: class(es) {unlabelled.tolist()} have no labelled node; the model needs at least one "
                "labelled node of every class"
            )

    @property
    def num_nodes(self) -> int:
        """N."""
        return int(self.y.shape[0])

    @property
    def num_features(self) -> int:
        """F."""
        return int(self.x.shape[1])

    @property
    def num_classes(self) -> int:
        """C."""
        return int(self.y.max()) + 1

    @property
    def graph(self) -> dgl.DGLGraph:
        """The task's ``DGLGraph`` (built once): both directions of every edge, no self-loops."""
        if not self._graph:
            dgl = import_dgl()
            self._graph.append(dgl.from_scipy(self.adjacency))
        return self._graph[0]

    def features(self, dtype: torch.dtype | None = None) -> torch.Tensor:
        """``x`` as a torch tensor (float32 unless ``dtype`` is given)."""
        import torch

        return torch.as_tensor(self.x, dtype=dtype or torch.float32)

    def labels_onehot(self, mask: np.ndarray | None = None) -> np.ndarray:
        """One-hot ``[N, C]``; rows outside ``mask`` (when given) are zero."""
        out = np.eye(self.num_classes)[self.y]
        if mask is not None:
            out[~check_mask(mask, "mask", self.num_nodes)] = 0.0
        return out


def from_adjacency(
    adjacency: sp.spmatrix | np.ndarray,
    x: np.ndarray | None,
    y: Sequence[Any] | np.ndarray,
    *,
    name: str = "graph",
    max_features: int | None = 64,
    per_class: int = 20,
    seed: int = 0,
    train_mask: np.ndarray | None = None,
    val_mask: np.ndarray | None = None,
    test_mask: np.ndarray | None = None,
) -> GraphTask:
    """Build a :class:`GraphTask` from an adjacency, raw features and raw labels (any hashable values).

    Featureless graphs (``x=None``) use the rows of the adjacency as features (then PCA to ``max_features``).
    Without masks the split is :func:`stratified_split` with ``per_class`` training nodes per class; multi-split
    masks ``[N, n_splits]`` are reduced with :func:`select_split` (column ``seed % n_splits``).

    Raises:
        ValueError: inconsistent shapes, fewer than two classes, non-finite values, bad masks.
    """
    y_raw = np.asarray(y)
    if y_raw.ndim != 1 or y_raw.size == 0:
        raise ValueError(f"y: expected a non-empty 1-D array of labels, got shape {y_raw.shape}")
    _, y_int = np.unique(y_raw, return_inverse=True)
    n = y_int.shape[0]
    a = _clean_adjacency(adjacency, n)
    feats = a.toarray() if x is None else check_matrix(x, "x", rows=n)
    feats = preprocess_features(feats, max_features=max_features, seed=seed)
    if train_mask is None:
        tr, va, te = stratified_split(y_int, per_class=per_class, seed=seed)
    else:
        if test_mask is None:
            raise ValueError("test_mask: required when train_mask is given")
        tr = select_split(train_mask, seed)
        te = select_split(test_mask, seed)
        va = select_split(val_mask, seed) if val_mask is not None else np.zeros(n, dtype=bool)
    return GraphTask(name=name, adjacency=a, x=feats, y=y_int, train_mask=tr, val_mask=va, test_mask=te)


def from_networkx(
    graph: Any, *, label: str, features: str | None = None, name: str = "graph", **kwargs: Any
) -> GraphTask:
    """Build a :class:`GraphTask` from a ``networkx`` graph whose nodes carry the attribute ``label``.

    Args:
        graph: ``networkx.Graph`` (directed graphs are symmetrised).
        label: node attribute holding the class.
        features: node attribute holding a feature vector (``None``: adjacency rows).
        name: task name.
        **kwargs: passed to :func:`from_adjacency` (``max_features``, ``per_class``, ``seed``).

    Raises:
        ValueError: empty graph, a node without ``label``.
    """
    import networkx as nx

    nodes = list(graph.nodes)
    if not nodes:
        raise ValueError("graph: has no nodes")
    missing = [v for v in nodes if label not in graph.nodes[v]]
    if missing:
        raise ValueError(f"label: node {missing[0]!r} has no attribute {label!r}")
    y = [graph.nodes[v][label] for v in nodes]
    x = None if features is None else np.asarray([graph.nodes[v][features] for v in nodes], dtype=np.float64)
    adj = nx.to_scipy_sparse_array(graph, nodelist=nodes, weight=None, format="csr")
    return from_adjacency(adj, x, y, name=name, **kwargs)


def from_tabular_knn(
    x: np.ndarray, y: Sequence[Any] | np.ndarray, *, k: int = 10, name: str = "tabular", **kwargs: Any
) -> GraphTask:
    """A kNN graph over standardised tabular rows (scikit-learn ``kneighbors_graph``), symmetrised.

    The standardised table is also the node feature matrix (then :func:`preprocess_features`).

    Args:
        x: table ``[N, F]``, finite.
        y: labels ``[N]``.
        k: neighbours per row, ``1 <= k < N``.
        name: task name.
        **kwargs: passed to :func:`from_adjacency`.

    Raises:
        ValueError: bad shapes, non-finite ``x``, ``k`` out of range.
    """
    from sklearn.neighbors import kneighbors_graph
    from sklearn.preprocessing import StandardScaler

    x = check_matrix(x, "x")
    check_int(k, "k", low=1, high=x.shape[0] - 1)
    z = StandardScaler().fit_transform(x)
    adj = kneighbors_graph(z, n_neighbors=k, include_self=False)
    return from_adjacency(adj, z, y, name=name, **kwargs)
