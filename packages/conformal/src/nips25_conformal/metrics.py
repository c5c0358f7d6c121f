"""Class-conditional coverage and size of prediction sets (what the paper reports per class)."""

from __future__ import annotations

import numpy as np

__all__ = ["mean_set_size", "per_class_coverage"]


def _check_sets(sets: np.ndarray) -> np.ndarray:
    arr = np.asarray(sets)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"sets must be a non-empty (B, C) boolean array, got shape {arr.shape}")
    if arr.dtype != np.bool_:
        raise TypeError(f"sets must be boolean, got dtype {arr.dtype}")
    return arr


def per_class_coverage(sets: np.ndarray, y_true: np.ndarray, classes: np.ndarray) -> dict[object, float]:
    r"""Per-class coverage :math:`\hat P(y \in C \mid Y = y) = \frac{1}{B_y}\sum_{b: y_b = y} 1[y_b \in C_b]`.

    Args:
        sets: ``(B, C)`` bool prediction sets, columns in the order of ``classes``.
        y_true: ``(B,)`` true labels (each in ``classes``).
        classes: ``(C,)`` labels of the columns.

    Returns:
        ``{label: coverage}`` for every label present in ``y_true`` (NaN-free).

    Raises:
        ValueError: shape mismatch or labels not in ``classes``. TypeError: non-boolean sets.

    Example:
        >>> per_class_coverage(np.array([[True, False], [True, True]]), np.array([1, 1]), np.array([0, 1]))
        {1: 0.5}
    """
    arr = _check_sets(sets)
    labels = np.asarray(y_true)
    cls = np.asarray(classes)
    if labels.shape != (arr.shape[0],):
        raise ValueError(f"y_true must have shape ({arr.shape[0]},), got {labels.shape}")
    if cls.shape != (arr.shape[1],):
        raise ValueError(f"classes must have shape ({arr.shape[1]},), got {cls.shape}")
    order = np.argsort(cls)
    pos = np.searchsorted(cls, labels, sorter=order)
    pos = order[np.clip(pos, 0, cls.size - 1)]
    if not np.all(cls[pos] == labels):
        raise ValueError("y_true holds labels that are not in classes")
    hit = arr[np.arange(labels.size), pos]
    return {c.item() if hasattr(c, "item") else c: float(hit[labels == c].mean()) for c in np.unique(labels)}


def mean_set_size(sets: np.ndarray) -> float:
    """Average number of labels per prediction set, ``sets (B, C)`` bool.

    Example:
        >>> mean_set_size(np.array([[True, False], [True, True]]))
        1.5
    """
    return float(_check_sets(sets).sum(axis=1).mean())
