"""Input checks shared by every public entry point: arrays are 2-D, finite, non-empty and agree on ``n``."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["as_matrix", "as_yxz", "check_probability", "check_same_rows"]


def as_matrix(value: Any, name: str, *, min_rows: int = 2) -> NDArray[np.float64]:
    """Return ``value`` as a finite float64 matrix ``(n, d)``; a 1-D array becomes one column.

    Raises:
        TypeError: if ``value`` is not numeric array-like (or is complex).
        ValueError: if it has more than two dimensions, fewer than ``min_rows`` rows, no columns, or NaN/inf
            (the message gives the first row and column).
    """
    if value is None:
        raise TypeError(f"{name} must be an array of shape (n, d), got None")
    if np.iscomplexobj(value):
        raise TypeError(f"{name} must be a real numeric array of shape (n, d), got complex values")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array of shape (n, d), got {type(value).__name__}") from exc
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 1-D (n,) or 2-D (n, d), got shape {arr.shape}")
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} must have at least {min_rows} rows (samples), got {arr.shape[0]}")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} must have at least one column, got shape {arr.shape}")
    finite = np.isfinite(arr)
    if not np.all(finite):
        row, col = np.argwhere(~finite)[0]
        raise ValueError(f"{name} contains NaN or inf values (first at row {row}, column {col})")
    return arr


def check_same_rows(**arrays: NDArray[np.float64]) -> int:
    """Return the common number of rows of ``arrays``; raise naming the first array that disagrees."""
    names = list(arrays)
    n = arrays[names[0]].shape[0]
    for name in names[1:]:
        if arrays[name].shape[0] != n:
            raise ValueError(
                f"{name} has {arrays[name].shape[0]} rows but {names[0]} has {n}: every input needs the same n"
            )
    return n


def check_probability(value: Any, name: str) -> float:
    """Return ``value`` as a float in the open interval ``(0, 1)``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a float in (0, 1), got {type(value).__name__}")
    v = float(value)
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {v}")
    return v


def as_yxz(
    Y: Any, X: Any, Z: Any, *, min_rows: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64] | None]:
    """Validate the ``(Y, X, Z)`` of a conditional-independence test (``Z`` may be ``None``: a marginal test)."""
    y = as_matrix(Y, "Y", min_rows=min_rows)
    x = as_matrix(X, "X", min_rows=min_rows)
    if Z is None:
        check_same_rows(Y=y, X=x)
        return y, x, None
    z = as_matrix(Z, "Z", min_rows=min_rows)
    check_same_rows(Y=y, X=x, Z=z)
    return y, x, z
