"""Real graphs available offline, with different feature and class counts.

* ``karate``: Zachary's karate club (networkx), 34 nodes, 2 clubs, no features (adjacency rows).
* ``davis``: Davis' Southern women (networkx), 32 nodes, women vs events (2 classes), no features.
* ``drosophila_left`` / ``drosophila_right``: larval Drosophila mushroom-body connectome, 209 / 213 neurons,
  4 cell types (K, P, O, I); Eichler et al., Nature 548 (2017), as shipped by graspologic 3.4.4 (MIT licence,
  copied into ``data/``). Edges symmetrised, weights dropped, adjacency rows as features.
* ``iris``, ``wine``, ``breast_cancer``: scikit-learn tables as kNN graphs (k=10) over standardised rows.
* ``digits012``, ``digits345``, ``digits6789``: scikit-learn's 8x8 digits restricted to disjoint class subsets
  (disjoint nodes), kNN graphs; three tasks with 3, 3 and 4 classes.

Every split is stratified with 20 labelled nodes per class (fewer on small graphs, see
:func:`~nips25_gfm.graphs.stratified_split`), the rest halved into validation and test.

The paper's own graphs (Cora, ..., arXiv) are not shipped; :func:`load_graph_file` and :func:`load_graph_dir` read
them from a user's local directory of ``<name>.npz`` files (format in :func:`load_graph_file`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib.resources import files
from pathlib import Path

import numpy as np

from nips25_gfm.graphs import GraphTask, from_adjacency, from_networkx, from_tabular_knn

__all__ = ["DATASETS", "PAPER_GRAPHS", "load_dataset", "load_graph_dir", "load_graph_file"]

# The 29 graphs of the paper (official helpers/datasets.py), names as the files this package expects.
PAPER_GRAPHS: tuple[str, ...] = (
    "roman_empire", "amazon_ratings", "minesweeper", "tolokers", "questions", "cora", "pubmed", "citeseer",
    "chameleon", "squirrel", "cornell", "wisconsin", "texas", "full_cora", "full_DBLP", "wiki_attr", "blogcatalog",
    "wiki_cs", "co_cs", "co_physics", "brazil", "usa", "europe", "actor", "computers", "photo", "last_fm_asia",
    "deezer", "arxiv",
)  # fmt: skip
_MASKS = ("train_mask", "val_mask", "test_mask")


def _karate(seed: int, max_features: int) -> GraphTask:
    import networkx as nx

    return from_networkx(nx.karate_club_graph(), label="club", name="karate", seed=seed, max_features=max_features)


def _davis(seed: int, max_features: int) -> GraphTask:
    import networkx as nx

    return from_networkx(
        nx.davis_southern_women_graph(), label="bipartite", name="davis", seed=seed, max_features=max_features
    )


def _drosophila(side: str) -> Callable[[int, int], GraphTask]:
    def load(seed: int, max_features: int) -> GraphTask:
        root = files("nips25_gfm") / "data"
        adj = np.loadtxt(str(root / f"{side}_adjacency.csv"))
        labels = np.loadtxt(str(root / f"{side}_cell_labels.csv"), dtype=str)
        return from_adjacency(
            (adj > 0).astype(float), None, labels, name=f"drosophila_{side}", seed=seed, max_features=max_features
        )

    return load


def _sklearn(name: str, classes: tuple[int, ...] | None = None) -> Callable[[int, int], GraphTask]:
    def load(seed: int, max_features: int) -> GraphTask:
        from sklearn import datasets

        x, y = getattr(datasets, f"load_{name}")(return_X_y=True)
        if classes is not None:
            keep = np.isin(y, classes)
            x, y = x[keep], y[keep]
        label = name if classes is None else name + "".join(map(str, classes))
        return from_tabular_knn(x, y, k=10, name=label, seed=seed, max_features=max_features)

    return load


DATASETS: dict[str, Callable[[int, int], GraphTask]] = {
    "karate": _karate,
    "davis": _davis,
    "drosophila_left": _drosophila("left"),
    "drosophila_right": _drosophila("right"),
    "iris": _sklearn("iris"),
    "wine": _sklearn("wine"),
    "breast_cancer": _sklearn("breast_cancer"),
    "digits012": _sklearn("digits", (0, 1, 2)),
    "digits345": _sklearn("digits", (3, 4, 5)),
    "digits6789": _sklearn("digits", (6, 7, 8, 9)),
}


def load_dataset(name: str, *, seed: int = 0, max_features: int = 32) -> GraphTask:
    """One offline graph of :data:`DATASETS` as a :class:`~nips25_gfm.graphs.GraphTask`.

    Args:
        name: a key of :data:`DATASETS`.
        seed: split (and PCA) seed.
        max_features: PCA cap for wide feature matrices (featureless graphs use adjacency rows).

    Raises:
        ValueError: unknown ``name`` or ``max_features < 1``.
    """
    if name not in DATASETS:
        raise ValueError(f"name: unknown dataset {name!r}; expected one of {sorted(DATASETS)}")
    if isinstance(max_features, bool) or not isinstance(max_features, int) or max_features < 1:
        raise ValueError(f"max_features: expected an int >= 1, got {max_features!r}")
    return DATASETS[name](seed, max_features)


def load_graph_file(
    path: str | Path, *, name: str | None = None, seed: int = 0, max_features: int | None = 64
) -> GraphTask:
    """One graph from a ``.npz`` file, the format in which the paper's graphs are read from a local directory.

    Arrays of the file:

    * ``edge_index``: integers ``[2, E]`` (PyG's convention: source row, target row); symmetrised, self-loops and
      duplicates dropped.
    * ``x``: node features ``[N, F]``, finite.
    * ``y``: node labels ``[N]`` (any values; classes are their sorted unique values).
    * ``train_mask``, ``val_mask``, ``test_mask`` (optional): boolean ``[N]`` or ``[N, n_splits]`` (column
      ``seed % n_splits``); without ``train_mask`` the split is 20 labelled nodes per class, the rest halved.

    Export from PyG: ``np.savez("cora.npz", edge_index=d.edge_index.numpy(), x=d.x.numpy(), y=d.y.numpy(),
    train_mask=d.train_mask.numpy(), val_mask=d.val_mask.numpy(), test_mask=d.test_mask.numpy())``.

    Args:
        path: the ``.npz`` file.
        name: task name (default: the file's stem).
        seed: split and PCA seed.
        max_features: PCA cap (see :func:`~nips25_gfm.graphs.preprocess_features`).

    Returns:
        A :class:`~nips25_gfm.graphs.GraphTask`.

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: unreadable file, a missing array, bad shapes or edge ids out of range.
    """
    import scipy.sparse as sp

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no graph file at {path}")
    try:
        with np.load(path, allow_pickle=False) as blob:
            arrays = {k: np.asarray(blob[k]) for k in blob.files}
    except Exception as exc:  # not a zip / npz, or an object array
        raise ValueError(f"path: {path} is not a readable .npz graph file ({type(exc).__name__})") from exc
    missing = [k for k in ("edge_index", "x", "y") if k not in arrays]
    if missing:
        raise ValueError(f"path: {path} lacks the array(s) {missing}; expected edge_index [2, E], x [N, F], y [N]")
    y = arrays["y"]
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"y: in {path} expected a non-empty [N] array, got shape {y.shape}")
    n = y.shape[0]
    edges = arrays["edge_index"]
    if edges.ndim != 2 or edges.shape[0] != 2 or not np.issubdtype(edges.dtype, np.integer):
        raise ValueError(f"edge_index: in {path} expected integers of shape [2, E], got {edges.dtype} {edges.shape}")
    if edges.size and (edges.min() < 0 or edges.max() >= n):
        raise ValueError(f"edge_index: in {path} node ids must lie in [0, {n}), got [{edges.min()}, {edges.max()}]")
    adj = sp.csr_matrix((np.ones(edges.shape[1]), (edges[0], edges[1])), shape=(n, n))
    masks = {k: arrays[k].astype(bool) if k in arrays else None for k in _MASKS}
    return from_adjacency(
        adj,
        arrays["x"].astype(np.float64),
        y,
        name=name or path.stem,
        seed=seed,
        max_features=max_features,
        train_mask=masks["train_mask"],
        val_mask=masks["val_mask"],
        test_mask=masks["test_mask"],
    )


def load_graph_dir(
    directory: str | Path, names: Sequence[str], *, seed: int = 0, max_features: int | None = 64
) -> dict[str, GraphTask]:
    """The graphs ``names`` of a local directory holding ``<name>.npz`` files (format: :func:`load_graph_file`).

    Args:
        directory: the directory.
        names: graph names (non-empty), e.g. :data:`PAPER_GRAPHS`.
        seed, max_features: see :func:`load_graph_file`.

    Returns:
        ``{name: GraphTask}`` in the order of ``names``.

    Raises:
        FileNotFoundError: ``directory`` is not a directory, or some ``<name>.npz`` is missing (all are named).
        ValueError: empty ``names`` or a bad file.
    """
    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"directory: {root} is not a directory of <name>.npz graph files")
    names = list(names)
    if not names:
        raise ValueError("names: expected at least one graph name")
    missing = [n for n in names if not (root / f"{n}.npz").is_file()]
    if missing:
        raise FileNotFoundError(
            f"directory: {root} lacks {len(missing)} of {len(names)} graph files: "
            + ", ".join(f"{n}.npz" for n in missing)
        )
    return {n: load_graph_file(root / f"{n}.npz", name=n, seed=seed, max_features=max_features) for n in names}
