"""Planetoid citation graphs (Cora, CiteSeer, PubMed) read from the raw files of DGL's and PyG's dataset caches.

Both libraries download the same raw files of Yang et al. (2016), as released in Kipf & Welling's ``gcn``
repository, and keep them in their caches:

* PyG (``torch_geometric.datasets.Planetoid(root, "Cora")``): ``<root>/Cora/raw/ind.cora.<item>``;
* DGL (``dgl.data.CoraGraphDataset()``): ``~/.dgl/cora_v2_d697a464/ind.cora_v2.<item>`` (the folder is the data
  set's name and the first 8 hex digits of the SHA-1 of its download URL; CiteSeer ``citeseer_d6836239/ind.citeseer.*``,
  PubMed ``pubmed_35464cad/ind.pubmed.*``).

The eight items are ``x``, ``tx``, ``allx`` (``scipy.sparse`` feature rows of the labelled training nodes, the
test nodes and all non-test nodes), ``y``, ``ty``, ``ally`` (their one-hot labels, numpy), ``graph`` (a
``{node: [neighbours]}`` dict) pickled by Python 2, and ``test.index`` (text, one test node id a line). Only
these raw files are read; the libraries' processed files (PyG's ``processed/data.pt``, DGL's ``*_dgl_graph.bin``)
are not. The assembly is the one both libraries do (PyG ``read_planetoid_data``, DGL ``citation_graph``): features
``vstack(allx, tx)`` and labels ``argmax(vstack(ally, ty))`` with the test rows moved to their node ids; where the
test ids have gaps (CiteSeer's 15 isolated test nodes) the missing rows are zero features and class 0, in no split;
the public split: training nodes ``0..len(y)-1``, validation the next 500 (cut at the last row of ``allx``, which
only a file smaller than the released ones reaches), test the ids of ``test.index``.

The pickles are read with a restricted unpickler that builds numpy arrays, ``scipy.sparse`` matrices, dicts and
lists only: a file holding anything else is refused, never executed.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from nips25_gfm.graphs import GraphTask, from_adjacency

__all__ = ["PLANETOID_ITEMS", "find_planetoid", "load_planetoid"]

PLANETOID_ITEMS: tuple[str, ...] = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
_VALIDATION_SIZE = 500  # the public split's validation nodes (PyG and DGL)
_ALLOWED = {
    ("collections", "defaultdict"),
    ("collections", "OrderedDict"),
    ("builtins", "list"),
    ("builtins", "dict"),
    ("builtins", "set"),
    ("builtins", "int"),
    ("builtins", "float"),
    ("builtins", "object"),
    ("__builtin__", "list"),
    ("__builtin__", "dict"),
    ("__builtin__", "set"),
    ("__builtin__", "int"),
    ("__builtin__", "float"),
    ("__builtin__", "object"),
    ("copy_reg", "_reconstructor"),
    ("copyreg", "_reconstructor"),
    ("_codecs", "encode"),  # bytes in protocol-2 pickles written by Python 3
    ("numpy", "dtype"),
    ("numpy", "ndarray"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"),
}


class _SafeUnpickler(pickle.Unpickler):
    """Builds numpy arrays, ``scipy.sparse`` matrices, dicts and lists; refuses every other global."""

    def find_class(self, module: str, name: str) -> Any:
        if module.startswith("scipy.sparse") and name.endswith("_matrix") and hasattr(sp, name):
            return getattr(sp, name)
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


def _unpickle(path: Path) -> Any:
    try:
        with path.open("rb") as fh:
            return _SafeUnpickler(fh, encoding="latin1").load()
    except Exception as exc:
        raise ValueError(f"{path}: not a readable Planetoid pickle ({type(exc).__name__}: {exc})") from exc


def find_planetoid(directory: str | Path, name: str | None = None) -> tuple[Path, str]:
    """The folder holding ``ind.<name>.*`` files under ``directory`` (itself, ``raw/`` or ``*/raw/``).

    Args:
        directory: DGL's ``~/.dgl/cora_v2_d697a464``, PyG's ``<root>/Cora`` or ``<root>/Cora/raw``, or
            ``<root>`` holding one data set.
        name: the file prefix (``cora``, ``citeseer``, ``pubmed``; ``cora`` also finds DGL's ``cora_v2``); default: the
            only one found.

    Returns:
        ``(folder, name)``.

    Raises:
        FileNotFoundError: no ``ind.*.x`` file, or none for ``name``.
        ValueError: several data sets found and no ``name``.
    """
    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"directory: {root} is not a directory")
    found: dict[str, Path] = {}
    for folder in (root, root / "raw", *sorted(root.glob("*/raw"))):
        for f in sorted(folder.glob("ind.*.x")):
            found.setdefault(f.name[len("ind.") : -len(".x")], folder)
    if name is not None:
        key = name.lower()
        if key not in found and f"{key}_v2" in found:  # DGL names its Cora files ind.cora_v2.*
            key = f"{key}_v2"
        if key not in found:
            raise FileNotFoundError(
                f"directory: no ind.{key}.x under {root} (looked in it, raw/ and */raw/); "
                f"found {sorted(found) or 'none'}"
            )
        return found[key], key
    if not found:
        raise FileNotFoundError(
            f"directory: no Planetoid files (ind.<name>.x, ...) under {root}, raw/ or */raw/ "
            "(DGL: ~/.dgl/cora_v2_d697a464; PyG: <root>/Cora/raw)"
        )
    if len(found) > 1:
        raise ValueError(f"name: {root} holds several Planetoid data sets {sorted(found)}; pass one")
    key = next(iter(found))
    return found[key], key


def _rows(obj: Any, path: Path, *, dense: bool) -> np.ndarray:
    if sp.issparse(obj):
        arr = obj.toarray()
    elif isinstance(obj, np.ndarray):
        arr = obj
    else:
        raise ValueError(
            f"{path}: expected a {'numpy array' if dense else 'scipy.sparse matrix'}, got {type(obj).__name__}"
        )
    if arr.ndim != 2 or not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"{path}: expected a numeric 2-D matrix, got {arr.dtype} of shape {arr.shape}")
    return np.asarray(arr, dtype=np.float64)


def _read_items(folder: Path, name: str) -> dict[str, Any]:
    paths = {item: folder / f"ind.{name}.{item}" for item in PLANETOID_ITEMS}
    missing = [p.name for p in paths.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"directory: {folder} lacks the Planetoid file(s) {missing}")
    items: dict[str, Any] = {}
    for item in ("x", "tx", "allx"):
        items[item] = _rows(_unpickle(paths[item]), paths[item], dense=False)
    for item in ("y", "ty", "ally"):
        items[item] = _rows(_unpickle(paths[item]), paths[item], dense=True)
    graph = _unpickle(paths["graph"])
    if not isinstance(graph, dict):
        raise ValueError(f"{paths['graph']}: expected a dict {{node: [neighbours]}}, got {type(graph).__name__}")
    items["graph"] = graph
    ids = []
    for line_no, line in enumerate(paths["test.index"].read_text().splitlines(), start=1):
        if line.strip():
            try:
                ids.append(int(line))
            except ValueError:
                raise ValueError(f"{paths['test.index']}: line {line_no} is {line!r}, expected a node id") from None
    if not ids:
        raise ValueError(f"{paths['test.index']}: holds no test node id")
    items["test.index"] = np.asarray(ids, dtype=np.int64)
    items["paths"] = paths
    return items


def load_planetoid(
    directory: str | Path, *, name: str | None = None, seed: int = 0, max_features: int | None = None
) -> GraphTask:
    """A Planetoid graph with its public split, from the raw files of DGL's or PyG's cache (module docstring).

    Args:
        directory: see :func:`find_planetoid`.
        name: ``cora``, ``citeseer``, ``pubmed`` (default: the only data set found).
        seed: PCA seed (the split is the public one, fixed).
        max_features: PCA cap (default ``None``: the features as released, L2-normalised rows).

    Returns:
        A :class:`~nips25_gfm.graphs.GraphTask` (``y`` as the class ids of the released one-hot rows).

    Raises:
        FileNotFoundError: no Planetoid files, or one of the eight missing (named).
        ValueError: a file of another content (named, with what was expected), inconsistent row counts, test or
            neighbour ids out of range.

    Example:
        >>> load_planetoid("/nonexistent")
        Traceback (most recent call last):
        ...
        FileNotFoundError: directory: /nonexistent is not a directory
    """
    folder, key = find_planetoid(directory, name)
    it = _read_items(folder, key)
    paths = it["paths"]
    x, tx, allx, y, ty, ally = (it[k] for k in ("x", "tx", "allx", "y", "ty", "ally"))
    for a, b in (("x", "y"), ("tx", "ty"), ("allx", "ally")):
        if it[a].shape[0] != it[b].shape[0]:
            raise ValueError(f"{paths[b]}: {it[b].shape[0]} label rows, but {paths[a].name} has {it[a].shape[0]} rows")
    if len({x.shape[1], tx.shape[1], allx.shape[1]}) != 1 or len({y.shape[1], ty.shape[1], ally.shape[1]}) != 1:
        raise ValueError(f"{folder}: feature or label widths differ between x/tx/allx or y/ty/ally")
    test_ids = it["test.index"]
    if test_ids.size != tx.shape[0]:
        raise ValueError(f"{paths['test.index']}: {test_ids.size} ids, but {paths['tx'].name} has {tx.shape[0]} rows")
    lo, hi = int(test_ids.min()), int(test_ids.max())
    if lo != allx.shape[0]:
        raise ValueError(
            f"{paths['test.index']}: the smallest test id is {lo}; expected {allx.shape[0]} (the test rows follow the "
            "rows of allx)"
        )
    sorted_ids = np.sort(test_ids)
    span = hi - lo + 1
    if span != tx.shape[0]:  # gaps in the test ids (CiteSeer): zero rows for the missing ids
        tx_ext, ty_ext = np.zeros((span, tx.shape[1])), np.zeros((span, ty.shape[1]))
        tx_ext[sorted_ids - lo], ty_ext[sorted_ids - lo] = tx, ty
        tx, ty = tx_ext, ty_ext
    feats = np.vstack([allx, tx])
    onehot = np.vstack([ally, ty])
    feats[test_ids], onehot[test_ids] = feats[sorted_ids], onehot[sorted_ids]
    n = feats.shape[0]
    labels = onehot.argmax(axis=1)
    src, dst = [], []
    for node, neigh in it["graph"].items():
        for v in neigh:
            src.append(int(node))
            dst.append(int(v))
    edges = np.asarray([src, dst], dtype=np.int64).reshape(2, -1)
    if edges.size and (edges.min() < 0 or edges.max() >= n):
        raise ValueError(f"{paths['graph']}: neighbour ids must lie in [0, {n}), got [{edges.min()}, {edges.max()}]")
    adj = sp.csr_matrix((np.ones(edges.shape[1]), (edges[0], edges[1])), shape=(n, n))
    train = np.zeros(n, dtype=bool)
    train[: y.shape[0]] = True
    val = np.zeros(n, dtype=bool)
    val[y.shape[0] : min(y.shape[0] + _VALIDATION_SIZE, allx.shape[0])] = True
    test = np.zeros(n, dtype=bool)
    test[test_ids] = True
    # from_adjacency renumbers classes by their sorted unique values; keep the released ids (argmax) instead
    task = from_adjacency(
        adj,
        feats,
        labels,
        name=key,
        seed=seed,
        max_features=max_features,
        train_mask=train,
        val_mask=val,
        test_mask=test,
    )
    if task.num_classes != onehot.shape[1] or not np.array_equal(task.y, labels):
        raise ValueError(f"{paths['ally']}: some of the {onehot.shape[1]} classes have no node")
    return task
