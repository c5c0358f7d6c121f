"""Argument checks shared by the public entry points: each error names the argument and what was expected."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_int", "check_labels", "check_mask", "check_matrix", "check_positive"]


def check_int(value: Any, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """An integer (not bool) within ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name}: expected an int in [{low}, {high}], got {value}")
    return int(value)


def check_positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """A finite positive (or non-negative) real number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__}")
    v = float(value)
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name}: expected a finite {'non-negative' if allow_zero else 'positive'} number, got {v}")
    return v


def check_matrix(value: Any, name: str, *, rows: int | None = None, cols: int | None = None) -> np.ndarray:
    """A finite, non-empty 2-D float64 array with the expected number of rows/columns."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name}: expected a numeric 2-D array, got {type(value).__name__}") from exc
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name}: expected a non-empty 2-D array, got shape {arr.shape}")
    if rows is not None and arr.shape[0] != rows:
        raise ValueError(f"{name}: expected {rows} rows, got {arr.shape[0]}")
    if cols is not None and arr.shape[1] != cols:
        raise ValueError(f"{name}: expected {cols} columns, got {arr.shape[1]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or inf")
    return arr


def check_labels(value: Any, name: str, *, rows: int | None = None) -> np.ndarray:
    """Integer class labels ``[N]`` in ``0..C-1`` with at least two classes and every class present."""
    arr = np.asarray(value)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D array of labels, got shape {arr.shape}")
    if rows is not None and arr.shape[0] != rows:
        raise ValueError(f"{name}: expected {rows} labels, got {arr.shape[0]}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name}: expected integer class labels, got dtype {arr.dtype}")
    if arr.min() < 0:
        raise ValueError(f"{name}: labels must be >= 0")
    present = np.unique(arr)
    if present.size < 2 or present.size != int(arr.max()) + 1:
        raise ValueError(f"{name}: expected every class 0..C-1 present with C >= 2, got classes {present.tolist()}")
    return arr.astype(np.int64)


def check_mask(value: Any, name: str, n: int) -> np.ndarray:
    """A boolean mask ``[n]``."""
    arr = np.asarray(value)
    if arr.shape != (n,):
        raise ValueError(f"{name}: expected a boolean mask of shape ({n},), got {arr.shape}")
    if arr.dtype != np.bool_:
        raise TypeError(f"{name}: expected dtype bool, got {arr.dtype}")
    return arr.copy()
