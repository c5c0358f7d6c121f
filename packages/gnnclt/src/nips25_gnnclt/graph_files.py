r"""Read a user's own labelled graph from two delimited text files, for the real-graph check
(:func:`~nips25_gnnclt.class_mean_check`, ``nips25-gnnclt run``).

The layout is the one of the embedded *Drosophila* files (``data/``), so a copy of those files reads back unchanged:

* an **edges** file with a header and one edge per row: a ``source`` and a ``target`` node id, and optionally a
  non-negative weight column (``synapses`` in the embedded file); a weight of 0 means no edge;
* a **labels** file with a header and one node per row: a ``node`` id and its class (``cell_type`` in the embedded
  file). Its rows fix the node order; every node of the edges file must appear in it.

Node ids and classes are read as text (``"07"`` and ``"7"`` are different nodes). ``.csv`` is comma-separated,
``.tsv`` tab-separated. Every failure names the file, the row (1-based line number, the header is line 1) and
the field.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

__all__ = ["MAX_NODES", "read_labelled_graph"]

MAX_NODES = 20_000
"""The largest graph :func:`read_labelled_graph` builds: it returns a dense ``(n, n)`` float64 matrix (3.2 GB)."""

_DELIMITERS = {".csv": ",", ".tsv": "\t"}


def _rows(path: Path, what: str, columns: tuple[str, ...]) -> Iterator[tuple[int, list[str]]]:
    """``(line number, [value of each of columns])`` for every data row of ``path``; checks the header."""
    delimiter = _DELIMITERS.get(path.suffix.lower())
    if delimiter is None:
        raise ValueError(f"{what} file {path}: expected a .csv or .tsv file, got extension {path.suffix!r}")
    try:
        fh = path.open(newline="", encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"{what} file {path} does not exist") from exc
    except IsADirectoryError as exc:
        raise ValueError(f"{what} file {path} is a directory, not a file") from exc
    with fh:
        reader = csv.reader(fh, delimiter=delimiter)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise ValueError(f"{what} file {path} is empty (expected a header: {delimiter.join(columns)})") from None
        except (UnicodeDecodeError, csv.Error) as exc:
            raise ValueError(f"{what} file {path}, row 1: not a readable UTF-8 text table ({exc})") from exc
        missing = [c for c in columns if c not in header]
        if missing:
            raise ValueError(
                f"{what} file {path}: missing column(s) {', '.join(map(repr, missing))}; "
                f"the header has {', '.join(map(repr, header))}"
            )
        where = [header.index(c) for c in columns]
        try:
            for fields in reader:
                if not fields or all(not f.strip() for f in fields):
                    continue  # a blank line
                if len(fields) != len(header):
                    raise ValueError(
                        f"{what} file {path}, row {reader.line_num}: {len(fields)} fields, the header has {len(header)}"
                    )
                yield reader.line_num, [fields[i].strip() for i in where]
        except (UnicodeDecodeError, csv.Error) as exc:
            raise ValueError(f"{what} file {path}, row {reader.line_num + 1}: unreadable ({exc})") from exc


def read_labelled_graph(
    edges: str | os.PathLike[str],
    labels: str | os.PathLike[str],
    *,
    source: str = "source",
    target: str = "target",
    weight: str | None = None,
    node: str = "node",
    label: str = "cell_type",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read an edge list and a node-label table into a dense adjacency, integer classes and class names.

    Args:
        edges: path of the edges file (``.csv`` or ``.tsv``), columns ``source``, ``target`` (and ``weight``).
        labels: path of the labels file, columns ``node`` and ``label``; its row order is the node order.
        source, target: the edges file's node-id columns.
        weight: the edges file's weight column (finite numbers ``>= 0``), or ``None``: every row has weight 1.
        node, label: the labels file's node-id and class columns.

    Returns:
        ``(A, y, classes)``: ``A`` the ``(n, n)`` float64 adjacency as read (directed; a repeated row adds its
        weight; pass it through :func:`~nips25_gnnclt.symmetrize_binarize` for the undirected simple graph),
        ``y`` the ``(n,)`` int64 classes in ``[0, K)`` and ``classes`` the ``(K,)`` class names, sorted, with
        ``classes[y[i]]`` the label of node ``i``.

    Raises:
        FileNotFoundError: a path that does not exist.
        ValueError: an extension other than ``.csv``/``.tsv``, an empty file, a missing column, a ragged row, an
            empty cell, a node listed twice in the labels, an edge endpoint not in the labels, a weight that is
            not a finite number ``>= 0``, no edges, or more than :data:`MAX_NODES` nodes. The message names the
            file, the row and the field.
    """
    labels_path, edges_path = Path(labels), Path(edges)
    order: dict[str, int] = {}
    first_row: dict[str, int] = {}
    names: list[str] = []
    for line, (node_id, cls) in _rows(labels_path, "labels", (node, label)):
        for field, value in ((node, node_id), (label, cls)):
            if not value:
                raise ValueError(f"labels file {labels_path}, row {line}, field {field!r}: empty cell")
        if node_id in order:
            raise ValueError(
                f"labels file {labels_path}, row {line}, field {node!r}: node {node_id!r} is listed twice "
                f"(first on row {first_row[node_id]})"
            )
        order[node_id], first_row[node_id] = len(order), line
        names.append(cls)
    n = len(order)
    if n == 0:
        raise ValueError(f"labels file {labels_path} has a header but no node rows")
    if n > MAX_NODES:
        raise ValueError(f"labels file {labels_path} lists {n} nodes; at most {MAX_NODES} fit the dense adjacency")
    classes, y = np.unique(np.asarray(names), return_inverse=True)
    a = np.zeros((n, n), np.float64)
    columns = (source, target) if weight is None else (source, target, weight)
    rows = 0
    for line, values in _rows(edges_path, "edges", columns):
        ends = []
        for field, value in zip((source, target), values[:2], strict=True):
            if value not in order:
                raise ValueError(
                    f"edges file {edges_path}, row {line}, field {field!r}: node {value!r} is not in the labels "
                    f"file {labels_path}"
                )
            ends.append(order[value])
        w = 1.0
        if weight is not None:
            try:
                w = float(values[2])
            except ValueError:
                w = math.nan
            if not (math.isfinite(w) and w >= 0):
                raise ValueError(
                    f"edges file {edges_path}, row {line}, field {weight!r}: expected a finite number >= 0, "
                    f"got {values[2]!r}"
                )
        a[ends[0], ends[1]] += w
        rows += 1
    if rows == 0:
        raise ValueError(f"edges file {edges_path} has a header but no edge rows")
    return a, y.astype(np.int64), classes
