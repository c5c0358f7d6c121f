"""Real graphs available offline, with different feature and class counts.

* ``karate``: Zachary's karate club (networkx), 34 nodes, 2 clubs, no features (adjacency rows).
* ``davis``: Davis' Southern women (networkx), 32 nodes, women vs events (2 classes), no features.
* ``drosophila_left`` / ``drosophila_right``: larval Drosophila mushroom-body connectome, 209 / 213 neurons,
  4 cell types (K, P, O, I); Eichler et al., Nature 548 (2017), as shipped by graspologic 3.4.4 (MIT licence,
  copied into ``data/``). Edges symmetrised, weights dropped, adjacency rows as features.
* ``iris``, ``wine``, ``breast_cancer``: scikit-learn tables as kNN graphs (k=10) over standardised rows.
* ``digits012``, ``digits345``, ``digits6789``: scikit-learn's 8x8 digits restricted to disjoint class subsets
  (disjoint nodes), kNN graphs; three tasks with 3, 3 and 4 classes.
* ``digits01a``, ``digits01b``, ..., ``digits89b``: the digits of one class pair (0/1, 2/3, 4/5, 6/7, 8/9), rows of
  even (``a``) or odd (``b``) position in scikit-learn's order: ten disjoint two-class tasks of about 180 nodes.

Every split is stratified with 20 labelled nodes per class (fewer on small graphs, see
:func:`~nips25_gfm.graphs.stratified_split`), the rest halved into validation and test.

The paper's own graphs (Cora, ..., arXiv) are not shipped; :func:`load_graph_file` and :func:`load_graph_dir` read
them from a user's local directory of ``<name>.npz`` files (format in :func:`load_graph_file`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from importlib.resources import files
from pathlib import Path

import numpy as np

from nips25_gfm.graphs import GraphTask, from_adjacency, from_networkx, from_tabular_knn

__all__ = [
    "DATASETS",
    "GRAPH_LAYOUTS",
    "PAPER_GRAPHS",
    "convert_graph_file",
    "load_dataset",
    "load_graph_dir",
    "load_graph_file",
    "save_graph_file",
]

# The 29 graphs of the paper (official helpers/datasets.py), names as the files this package expects.
PAPER_GRAPHS: tuple[str, ...] = (
    "roman_empire", "amazon_ratings", "minesweeper", "tolokers", "questions", "cora", "pubmed", "citeseer",
    "chameleon", "squirrel", "cornell", "wisconsin", "texas", "full_cora", "full_DBLP", "wiki_attr", "blogcatalog",
    "wiki_cs", "co_cs", "co_physics", "brazil", "usa", "europe", "actor", "computers", "photo", "last_fm_asia",
    "deezer", "arxiv",
)  # fmt: skip
_MASKS = ("train_mask", "val_mask", "test_mask")
# Layouts that convert_graph_file reads: this package's own, and the one of the heterophilous-graphs benchmark files
# (Platonov et al., ICLR 2023: roman_empire, amazon_ratings, minesweeper, tolokers, questions, texas_4_classes), which
# the official code reads for Texas (helpers/datasets.py): node_features [N, F], node_labels [N], edges [E, 2],
# train_masks / val_masks / test_masks [n_splits, N].
GRAPH_LAYOUTS: tuple[str, ...] = ("auto", "native", "heterophilous")
_HETEROPHILOUS = {"node_features": "x", "node_labels": "y", "edges": "edge_index"}


def _karate(seed: int, max_features: int | None) -> GraphTask:
    import networkx as nx

    return from_networkx(nx.karate_club_graph(), label="club", name="karate", seed=seed, max_features=max_features)


def _davis(seed: int, max_features: int | None) -> GraphTask:
    import networkx as nx

    return from_networkx(
        nx.davis_southern_women_graph(), label="bipartite", name="davis", seed=seed, max_features=max_features
    )


def _drosophila(side: str) -> Callable[[int, int | None], GraphTask]:
    def load(seed: int, max_features: int | None) -> GraphTask:
        root = files("nips25_gfm") / "data"
        adj = np.loadtxt(str(root / f"{side}_adjacency.csv"))
        labels = np.loadtxt(str(root / f"{side}_cell_labels.csv"), dtype=str)
        return from_adjacency(
            (adj > 0).astype(float), None, labels, name=f"drosophila_{side}", seed=seed, max_features=max_features
        )

    return load


def _sklearn(
    name: str, classes: tuple[int, ...] | None = None, half: int | None = None
) -> Callable[[int, int | None], GraphTask]:
    def load(seed: int, max_features: int | None) -> GraphTask:
        from sklearn import datasets

        x, y = getattr(datasets, f"load_{name}")(return_X_y=True)
        if classes is not None:
            keep = np.isin(y, classes)
            if half is not None:  # alternate rows of the released order: two disjoint halves
                keep &= np.arange(y.shape[0]) % 2 == half
            x, y = x[keep], y[keep]
        label = name if classes is None else name + "".join(map(str, classes))
        label += "" if half is None else "ab"[half]
        return from_tabular_knn(x, y, k=10, name=label, seed=seed, max_features=max_features)

    return load


DATASETS: dict[str, Callable[[int, int | None], GraphTask]] = {
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
    **{f"digits{a}{a + 1}{'ab'[h]}": _sklearn("digits", (a, a + 1), h) for a in (0, 2, 4, 6, 8) for h in (0, 1)},
}


def load_dataset(name: str, *, seed: int = 0, max_features: int | None = 32) -> GraphTask:
    """One offline graph of :data:`DATASETS` as a :class:`~nips25_gfm.graphs.GraphTask`.

    Args:
        name: a key of :data:`DATASETS`.
        seed: split (and PCA) seed.
        max_features: PCA cap for wide feature matrices (featureless graphs use adjacency rows); ``None``: none.

    Raises:
        ValueError: unknown ``name`` or ``max_features < 1``.
    """
    if name not in DATASETS:
        raise ValueError(f"name: unknown dataset {name!r}; expected one of {sorted(DATASETS)}")
    if max_features is not None and (
        isinstance(max_features, bool) or not isinstance(max_features, int) or max_features < 1
    ):
        raise ValueError(f"max_features: expected an int >= 1 or None, got {max_features!r}")
    return DATASETS[name](seed, max_features)


def load_graph_file(
    path: str | Path, *, name: str | None = None, seed: int = 0, max_features: int | None = 64
) -> GraphTask:
    """One graph from a ``.npz`` file, the format in which the paper's graphs are read from a local directory.

    Arrays of the file:

    * ``edge_index``: integers ``[2, E]`` (PyG's convention: source row, target row); symmetrised, self-loops and
      duplicates dropped.
    * ``x``: node features ``[N, F]``, finite.
    * ``y``: node labels ``[N]`` (any values; classes are their sorted unique values); numeric labels must be
      ``>= 0`` (a negative label, the ``-1`` that PyG and OGB use for an unlabelled node, is refused).
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
    arrays = _read_npz(path, "path")
    _check_graph_arrays(arrays, f"in {path}", path=path)
    y = arrays["y"]
    n = y.shape[0]
    edges = arrays["edge_index"]
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
    directory: str | Path,
    names: Sequence[str],
    *,
    seed: int = 0,
    max_features: int | None = 64,
    pca: Mapping[str, int] | None = None,
) -> dict[str, GraphTask]:
    """The graphs ``names`` of a local directory holding ``<name>.npz`` files (format: :func:`load_graph_file`).

    Args:
        directory: the directory.
        names: graph names (non-empty), e.g. :data:`PAPER_GRAPHS`.
        seed, max_features: see :func:`load_graph_file`.
        pca: per-graph PCA caps overriding ``max_features`` (e.g. the official code's
            ``{"full_cora": 2048, "co_cs": 2048, "co_physics": 1024}``).

    Returns:
        ``{name: GraphTask}`` in the order of ``names``.

    Raises:
        FileNotFoundError: ``directory`` is not a directory, or some ``<name>.npz`` is missing (all are named).
        ValueError: empty ``names``, a bad file, or a ``pca`` cap that is not a positive integer.
        TypeError: ``pca`` is not a mapping from graph name to int.
    """
    if pca is not None and not isinstance(pca, Mapping):
        raise TypeError(f"pca: expected a mapping from graph name to a PCA cap, got {type(pca).__name__}")
    for key, cap in (pca or {}).items():
        if isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or cap < 1:
            raise ValueError(f"pca: the cap of {key!r} must be an integer >= 1, got {cap!r}")
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
    caps = dict(pca or {})
    return {
        n: load_graph_file(root / f"{n}.npz", name=n, seed=seed, max_features=caps.get(n, max_features)) for n in names
    }


def _read_npz(path: Path, arg: str) -> dict[str, np.ndarray]:
    """Every array of a ``.npz`` file (no pickles); errors name ``arg``."""
    if not path.is_file():
        raise FileNotFoundError(f"{arg}: no graph file at {path}")
    try:
        with np.load(path, allow_pickle=False) as blob:
            return {k: np.asarray(blob[k]) for k in blob.files}
    except Exception as exc:  # not a zip / npz, or an object array
        raise ValueError(f"{arg}: {path} is not a readable .npz graph file ({type(exc).__name__})") from exc


def _check_graph_arrays(arrays: dict[str, np.ndarray], where: str, *, path: object = "the input") -> None:
    """Check the arrays of the native layout (see :func:`load_graph_file`); errors name the array and ``where``."""
    missing = [k for k in ("edge_index", "x", "y") if k not in arrays]
    if missing:
        raise ValueError(f"path: {path} lacks the array(s) {missing}; expected edge_index [2, E], x [N, F], y [N]")
    y = arrays["y"]
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"y: {where} expected a non-empty [N] array, got shape {y.shape}")
    n = y.shape[0]
    edges = arrays["edge_index"]
    if edges.ndim != 2 or edges.shape[0] != 2 or not np.issubdtype(edges.dtype, np.integer):
        raise ValueError(f"edge_index: {where} expected integers of shape [2, E], got {edges.dtype} {edges.shape}")
    if edges.size and (edges.min() < 0 or edges.max() >= n):
        raise ValueError(f"edge_index: {where} node ids must lie in [0, {n}), got [{edges.min()}, {edges.max()}]")
    if np.issubdtype(y.dtype, np.inexact) and not np.all(np.isfinite(y)):
        row = int(np.flatnonzero(~np.isfinite(y))[0])
        raise ValueError(f"y: {where} row {row} is {y[row]}; expected a label for every node")
    if np.issubdtype(y.dtype, np.number) and y.dtype != np.bool_ and (y < 0).any():
        row = int(np.flatnonzero(y < 0)[0])
        raise ValueError(
            f"y: {where} row {row} is {y[row]}; negative labels (PyG's and OGB's mark of an unlabelled node) are not "
            "supported: every node needs a class (drop those nodes and their edges, or give them a class)"
        )
    x = arrays["x"]
    if x.ndim != 2 or x.shape[0] != n:
        raise ValueError(f"x: {where} expected shape [{n}, F], got {x.shape}")
    try:
        xf = x.astype(np.float64)
    except (TypeError, ValueError):  # find the first cell that is not a number, to name it
        for (r, c), value in np.ndenumerate(x):
            try:
                float(value)
            except (TypeError, ValueError):
                raise ValueError(f"x: {where} row {r}, column {c} is {value!r}; expected numbers") from None
        raise ValueError(f"x: {where} expected numbers, got dtype {x.dtype}") from None
    if not np.all(np.isfinite(xf)):
        r, c = (int(i) for i in np.argwhere(~np.isfinite(xf))[0])
        raise ValueError(f"x: {where} row {r}, column {c} is {xf[r, c]}; expected finite features")
    for key in _MASKS:
        if key not in arrays:
            continue
        mask = arrays[key]
        if mask.ndim not in (1, 2) or mask.shape[0] != n:
            raise ValueError(f"{key}: {where} expected shape [{n}] or [{n}, n_splits], got {mask.shape}")
        if mask.dtype != np.bool_:
            ok = np.issubdtype(mask.dtype, np.number) and np.isin(mask, (0, 1))
            if not np.all(ok):
                bad = tuple(int(i) for i in np.argwhere(~np.broadcast_to(ok, mask.shape))[0])
                raise ValueError(
                    f"{key}: {where} row {bad[0]} is {mask[bad]!r}; expected booleans (or 0/1), dtype {mask.dtype}"
                )


def save_graph_file(
    path: str | Path,
    *,
    edge_index: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    train_mask: np.ndarray | None = None,
    val_mask: np.ndarray | None = None,
    test_mask: np.ndarray | None = None,
) -> Path:
    """Write one graph as a ``.npz`` file that :func:`load_graph_file` reads (compressed; the inverse of it).

    Args:
        path: output file (``.npz`` is appended when missing; parent directories are created). The write is
            atomic (a temporary file in the same directory, renamed over ``path``).
        edge_index: integers ``[2, E]``, node ids in ``[0, N)``.
        x: features ``[N, F]``, finite.
        y: labels ``[N]``.
        train_mask, val_mask, test_mask: optional boolean ``[N]`` or ``[N, n_splits]``.

    Returns:
        The path written.

    Raises:
        ValueError: a missing or wrongly shaped array, non-finite ``x``, edge ids out of range, ``path`` a
            directory.
        OSError: the destination cannot be written.

    Example:
        >>> import numpy as np, tempfile, pathlib
        >>> p = save_graph_file(pathlib.Path(tempfile.mkdtemp()) / "g.npz", edge_index=np.array([[0], [1]]),
        ...                     x=np.eye(2), y=np.array([0, 1]))
        >>> p.name
        'g.npz'
    """
    arrays = {"edge_index": np.asarray(edge_index), "x": np.asarray(x), "y": np.asarray(y)}
    for key, mask in zip(_MASKS, (train_mask, val_mask, test_mask), strict=True):
        if mask is not None:
            arrays[key] = np.asarray(mask).astype(bool)
    _check_graph_arrays(arrays, "for save_graph_file")
    if not np.issubdtype(arrays["x"].dtype, np.number) or not np.isfinite(arrays["x"]).all():
        raise ValueError("x: expected finite numbers")
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"path: {path} is a directory; expected a file path")
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    if path.is_dir():
        raise ValueError(f"path: {path} is a directory; expected a file path")
    path.parent.mkdir(parents=True, exist_ok=True)
    # Atomic: write a temporary file in the same directory, then rename it over the destination.
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp.npz", dir=path.parent)
    os.close(fd)
    try:
        np.savez_compressed(tmp_name, **arrays)
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return path


def convert_graph_file(src: str | Path, dst: str | Path, *, layout: str = "auto") -> Path:
    """Convert a graph file of a known layout into this package's ``.npz`` layout (:func:`load_graph_file`).

    Layouts (:data:`GRAPH_LAYOUTS`): ``"native"`` (``edge_index``, ``x``, ``y``, optional masks; checked and
    rewritten), ``"heterophilous"`` (the heterophilous-graphs benchmark files of Platonov et al. 2023, e.g.
    ``roman_empire.npz``, ``tolokers.npz``, ``texas_4_classes.npz``: ``node_features [N, F]``, ``node_labels [N]``,
    ``edges [E, 2]``, ``train_masks``/``val_masks``/``test_masks [n_splits, N]``; edges and masks are transposed),
    ``"auto"`` (chosen by the arrays present). Nothing is downloaded: ``src`` is the user's file.

    Args:
        src: input ``.npz`` file.
        dst: output file.
        layout: one of :data:`GRAPH_LAYOUTS`.

    Returns:
        The path written.

    Raises:
        FileNotFoundError: no file at ``src``.
        ValueError: unknown ``layout``, an unreadable file, arrays of no known layout, bad shapes.
    """
    if layout not in GRAPH_LAYOUTS:
        raise ValueError(f"layout: expected one of {GRAPH_LAYOUTS}, got {layout!r}")
    src = Path(src)
    arrays = _read_npz(src, "src")
    if layout == "auto":
        if "edge_index" in arrays:
            layout = "native"
        elif set(_HETEROPHILOUS) <= set(arrays):
            layout = "heterophilous"
        else:
            raise ValueError(
                f"src: {src} has arrays {sorted(arrays)}, of no known layout (native: edge_index, x, y; "
                f"heterophilous: {', '.join(_HETEROPHILOUS)})"
            )
    if layout == "heterophilous":
        missing = [k for k in _HETEROPHILOUS if k not in arrays]
        if missing:
            raise ValueError(f"src: {src} lacks the heterophilous-layout array(s) {missing}")
        edges = arrays["edges"]
        if edges.ndim != 2 or edges.shape[1] != 2:
            raise ValueError(f"edges: in {src} expected shape [E, 2], got {edges.shape}")
        out = {new: arrays[old] for old, new in _HETEROPHILOUS.items()}
        out["edge_index"] = edges.T
        for key in _MASKS:
            if f"{key}s" in arrays:
                out[key] = arrays[f"{key}s"].T
        arrays = out
    else:
        missing = [k for k in ("edge_index", "x", "y") if k not in arrays]
        if missing:
            raise ValueError(f"src: {src} lacks the native-layout array(s) {missing} (arrays: {sorted(arrays)})")
    masks = {k: arrays.get(k) for k in _MASKS}
    return save_graph_file(dst, edge_index=arrays["edge_index"], x=arrays["x"], y=arrays["y"], **masks)
