"""Input validation shared by every public entry point: arrays of the right shape, finite, non-empty."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "as_matrix",
    "as_vector",
    "check_bool",
    "check_nonnegative_int",
    "check_nonzero_rows",
    "check_positive_int",
    "check_real",
]


def as_matrix(
    value: Any, name: str, *, cols: int | None = None, rows: int | None = None, dtype: Any = np.float64
) -> np.ndarray:
    """``value`` as a finite, non-empty 2-D array of ``dtype``; ValueError/TypeError naming ``name`` otherwise."""
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array, got {type(value).__name__}") from exc
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must be non-empty, got shape {arr.shape}")
    if cols is not None and arr.shape[1] != cols:
        raise ValueError(f"{name} must have {cols} columns, got shape {arr.shape}")
    if rows is not None and arr.shape[0] != rows:
        raise ValueError(f"{name} must have {rows} rows, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return arr


def as_vector(value: Any, name: str, *, size: int | None = None, nonnegative: bool = False) -> np.ndarray:
    """``value`` as a finite, non-empty 1-D float64 array; ValueError/TypeError naming ``name`` otherwise."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array, got {type(value).__name__}") from exc
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if size is not None and arr.shape[0] != size:
        raise ValueError(f"{name} must have {size} entries, got {arr.shape[0]}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    if nonnegative and (arr < 0).any():
        raise ValueError(f"{name} must be >= 0")
    return arr


def check_positive_int(value: Any, name: str) -> int:
    """``value`` as an int ``>= 1``; TypeError/ValueError naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


def check_nonnegative_int(value: Any, name: str) -> int:
    """``value`` as an int ``>= 0`` (not a bool); TypeError/ValueError naming ``name`` otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return int(value)


def check_real(value: Any, name: str) -> float:
    """``value`` as a finite float from a real number (numpy scalars included, bools not); errors name ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return float(value)


def check_bool(value: Any, name: str) -> bool:
    """``value`` as a bool (``bool`` or ``numpy.bool_`` only); TypeError naming ``name`` otherwise."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def check_nonzero_rows(arr: np.ndarray, name: str) -> np.ndarray:
    """``arr`` unchanged if no row is all zero (cosine similarity is undefined for a zero vector)."""
    zero = np.flatnonzero(~arr.any(axis=1))
    if zero.size:
        raise ValueError(f"{name} has all-zero rows {zero[:5].tolist()}: cosine similarity is undefined for them")
    return arr
