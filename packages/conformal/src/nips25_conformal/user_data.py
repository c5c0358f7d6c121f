"""A user's own multi-view table: read it, split it by object, fit, calibrate and predict one set per object.

The file is a CSV with **one row per view**: a label column, an object-id column (the rows of one object are its
views, e.g. the photos of one plant) and numeric feature columns. This is what ``nips25-conformal run`` reads.

* ``split`` column (optional): ``train``, ``calibration`` (or ``cal``) or ``test`` per row; all rows of one object
  must share it. Without it, the labelled objects are split at random (seeded) into thirds by object.
* Rows with an empty label are objects to predict (always ``test``); their coverage is not measured.
* Training and calibration use single views (the paper's Mondrian calibration, Sec. 2); each test object gets
  one set from its m views aggregated with the exact null law (Sec. 3-4).
"""

from __future__ import annotations

import csv
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nips25_conformal.classifier import MultiInputConformalClassifier
from nips25_conformal.exchangeability import ExchangeabilityWarning
from nips25_conformal.metrics import mean_set_size, per_class_coverage

__all__ = ["FileResult", "ViewTable", "read_views_csv", "run_on_table"]

SPLITS = {"train": "train", "calibration": "calibration", "cal": "calibration", "test": "test"}


@dataclass(frozen=True)
class ViewTable:
    """The views of a CSV file, grouped by object.

    Attributes:
        X: ``(N, D)`` float64 features, one row per view, in file order.
        labels: ``(N,)`` str labels (``""`` for an object to predict).
        objects: ``(N,)`` str object ids.
        split: ``(N,)`` str, ``"train"``, ``"calibration"``, ``"test"`` or ``""`` (not given in the file).
        features: the ``D`` feature column names.
        lines: ``(N,)`` int, the file line of each row (the header is line 1).
    """

    X: np.ndarray
    labels: np.ndarray
    objects: np.ndarray
    split: np.ndarray
    features: tuple[str, ...]
    lines: np.ndarray


def read_views_csv(
    path: str | Path, *, label: str, object_id: str, split: str | None = None, features: Sequence[str] | None = None
) -> ViewTable:
    """Read a one-row-per-view CSV (format in the module docstring).

    Args:
        path: the CSV file (header row first).
        label: name of the label column (text; empty = to predict).
        object_id: name of the object-id column.
        split: name of an optional split column (``train`` / ``calibration`` / ``cal`` / ``test``).
        features: feature column names (default: every other column).

    Returns:
        A :class:`ViewTable`.

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: an empty file, a missing column, a non-numeric or non-finite feature cell, an empty object id,
            a bad split value, or one object with two labels or two splits; each names the file, the column and
            the line.

    Example:
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "v.csv")
        >>> _ = open(p, "w").write("plant,species,a,b\\n1,x,0.1,2\\n1,x,0.2,3\\n2,y,5,1\\n")
        >>> t = read_views_csv(p, label="species", object_id="plant")
        >>> t.X.shape, t.features, t.objects.tolist()
        ((3, 2), ('a', 'b'), ['1', '1', '2'])
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"--data: no such file: {path}")
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if len(rows) < 2:
        raise ValueError(f"--data: {path} holds no data rows (expected a header and one row per view)")
    header = [h.strip() for h in rows[0]]
    named = {"--label": label, "--object": object_id} | ({"--split": split} if split else {})
    for flag, col in named.items():
        if col not in header:
            raise ValueError(f"{flag}: {path} has no column {col!r} (columns: {', '.join(header)})")
    if features is None:
        features = [h for h in header if h not in named.values()]
    else:
        for col in features:
            if col not in header:
                raise ValueError(f"--features: {path} has no column {col!r} (columns: {', '.join(header)})")
    if not features:
        raise ValueError(f"--features: {path} has no feature column besides {', '.join(named.values())}")
    index = {h: i for i, h in enumerate(header)}
    X = np.empty((len(rows) - 1, len(features)))
    labels, objects, splits, lines = [], [], [], []
    for r, row in enumerate(rows[1:]):
        line = r + 2
        if len(row) != len(header):
            raise ValueError(f"--data: {path} line {line} has {len(row)} cells, the header has {len(header)}")
        for j, col in enumerate(features):
            cell = row[index[col]].strip()
            try:
                value = float(cell)
            except ValueError:
                raise ValueError(f"--data: {path} line {line}, column {col!r} is {cell!r}; expected a number") from None
            if not math.isfinite(value):
                raise ValueError(f"--data: {path} line {line}, column {col!r} is {cell!r}; expected a finite number")
            X[r, j] = value
        obj = row[index[object_id]].strip()
        if not obj:
            raise ValueError(
                f"--object: {path} line {line}, column {object_id!r} is empty; every view needs its object"
            )
        given = row[index[split]].strip().lower() if split else ""
        if split and given not in SPLITS:
            raise ValueError(
                f"--split: {path} line {line}, column {split!r} is {row[index[split]]!r}; expected train, calibration "
                "(or cal) or test"
            )
        labels.append(row[index[label]].strip())
        objects.append(obj)
        splits.append(SPLITS.get(given, ""))
        lines.append(line)
    table = ViewTable(
        X=X,
        labels=np.asarray(labels, dtype=str),
        objects=np.asarray(objects, dtype=str),
        split=np.asarray(splits, dtype=str),
        features=tuple(features),
        lines=np.asarray(lines),
    )
    _check_objects(table, path, label, split)
    return table


def _check_objects(table: ViewTable, path: Path, label: str, split: str | None) -> None:
    first: dict[str, int] = {}
    for i, obj in enumerate(table.objects.tolist()):
        j = first.setdefault(obj, i)
        if table.labels[i] != table.labels[j]:
            raise ValueError(
                f"--label: {path} object {obj!r} has label {str(table.labels[j])!r} on line {table.lines[j]} and "
                f"{str(table.labels[i])!r} on line {table.lines[i]} (column {label!r}); its views share one label"
            )
        if table.split[i] != table.split[j]:
            raise ValueError(
                f"--split: {path} object {obj!r} is {str(table.split[j])!r} on line {table.lines[j]} and "
                f"{str(table.split[i])!r} on line {table.lines[i]} (column {split!r}); its views share one split"
            )
        if table.split[i] in ("train", "calibration") and not table.labels[i]:
            raise ValueError(f"--label: {path} line {table.lines[i]} is in the {table.split[i]} split but has no label")


@dataclass(frozen=True)
class FileResult:
    """One set per test object.

    Attributes:
        objects: ``(B,)`` ids of the test objects, in order of first appearance.
        n_views: ``(B,)`` views per object (m may vary).
        labels: ``(B,)`` their labels (``""`` = unlabelled).
        classes: ``(C,)`` the labels of the set columns.
        p_values: ``(B, C)`` aggregated p-values.
        sets: ``(B, C)`` bool prediction sets at ``alpha``.
        summary: JSON-ready dict: sizes of the splits, mean set size, per-class coverage on labelled test objects,
            and the p-value of the exchangeability diagnostic on the labelled multi-view test objects (``None``
            with fewer than two; at most 0.01 means the views of one object are more alike than the guarantee
            assumes, and the sets may under-cover).
    """

    objects: np.ndarray
    n_views: np.ndarray
    labels: np.ndarray
    classes: np.ndarray
    p_values: np.ndarray
    sets: np.ndarray
    summary: dict[str, Any]


def run_on_table(
    table: ViewTable,
    *,
    estimator: Any = None,
    aggregation: str = "sum",
    alpha: float = 0.1,
    seed: int = 0,
) -> FileResult:
    """Fit on the training views, calibrate per class on the calibration views, predict a set per test object.

    Args:
        table: from :func:`read_views_csv`.
        estimator: a scikit-learn classifier with ``predict_proba`` (default: a standardised logistic regression).
        aggregation: any of :data:`~nips25_conformal.classifier.AGGREGATIONS`.
        alpha: miscoverage level in (0, 1).
        seed: seed of the split by object (when the file has none) and of Monte Carlo laws.

    Returns:
        A :class:`FileResult`.

    Raises:
        ValueError: no test object, fewer than two classes in training, a class missing from calibration, or a
            bad ``alpha`` / ``aggregation`` (from :class:`MultiInputConformalClassifier`).
    """
    split = _assign_split(table, seed)
    train, cal, test = (split == s for s in ("train", "calibration", "test"))
    if not test.any():
        raise ValueError("--split: no test object (give some rows `test`, or leave labels empty to predict them)")
    if estimator is None:
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        estimator = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    clf = MultiInputConformalClassifier(estimator, aggregation=aggregation, alpha=alpha, random_state=seed)
    clf.fit(table.X[train], table.labels[train])
    order = list(dict.fromkeys(table.objects[test]))
    views = [table.X[test & (table.objects == o)] for o in order]
    labels = np.asarray([table.labels[test & (table.objects == o)][0] for o in order], dtype=str)
    check = [i for i, (v, y) in enumerate(zip(views, labels, strict=True)) if v.shape[0] >= 2 and y in clf.classes_]
    with warnings.catch_warnings():  # the diagnostic's verdict goes into the summary instead
        warnings.simplefilter("ignore", ExchangeabilityWarning)
        clf.calibrate(
            table.X[cal],
            table.labels[cal],
            check_views=[views[i] for i in check] if len(check) >= 2 else None,
            check_labels=labels[check] if len(check) >= 2 else None,
        )
    p = clf.p_values(views)
    sets = p > alpha
    known = np.isin(labels, clf.classes_)
    summary: dict[str, Any] = {
        "alpha": alpha,
        "aggregation": aggregation,
        "views": {"train": int(train.sum()), "calibration": int(cal.sum()), "test": int(test.sum())},
        "test_objects": len(order),
        "labelled_test_objects": int(known.sum()),
        "classes": [str(c) for c in clf.classes_],
        "mean_set_size": mean_set_size(sets),
    }
    if known.any():
        cov = per_class_coverage(sets[known], labels[known], clf.classes_)
        summary["per_class_coverage"] = {str(k): v for k, v in cov.items()}
    diag = getattr(clf, "exchangeability_", None)
    summary["exchangeability_p_value"] = None if diag is None else diag.p_value  # small: views too alike (Sec. 5)
    return FileResult(
        objects=np.asarray(order, dtype=str),
        n_views=np.asarray([v.shape[0] for v in views]),
        labels=labels,
        classes=np.asarray(clf.classes_),
        p_values=p,
        sets=sets,
        summary=summary,
    )


def _assign_split(table: ViewTable, seed: int) -> np.ndarray:
    """The file's split; without one, unlabelled objects are test and labelled ones are split in thirds by object."""
    split = table.split.astype("<U11")  # room for "calibration" when the file gave no split (dtype <U1)
    unlabelled = table.labels == ""
    split[unlabelled & (split == "")] = "test"
    todo = split == ""
    if todo.any():
        objs = np.asarray(list(dict.fromkeys(table.objects[todo])))
        perm = np.random.default_rng(seed).permutation(objs.size)
        part = np.empty(objs.size, dtype=object)
        part[perm] = np.asarray(["train", "calibration", "test"])[np.arange(objs.size) * 3 // max(objs.size, 1)]
        which = dict(zip(objs.tolist(), part.tolist(), strict=True))
        split[todo] = [which[o] for o in table.objects[todo]]
    return split
