"""Input checks shared by the public entry points: every failure names the argument and what was expected."""

from __future__ import annotations

import operator
from typing import Any

import jax
import numpy as np

__all__ = ["as_key", "as_mask", "as_matrix", "as_vector", "check_int", "check_real"]


def as_matrix(value: Any, name: str, *, nonnegative: bool = False, square: bool = False) -> np.ndarray:
    """A finite, non-empty float64 ``(rows, cols)`` array, or a ``ValueError``/``TypeError`` naming ``name``."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a real 2-D array, got {type(value).__name__}") from err
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must be non-empty, got shape {arr.shape}")
    if square and arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be square (n, n), got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite (no NaN/inf)")
    if nonnegative and (arr < 0).any():
        raise ValueError(f"{name} must be non-negative, got min {arr.min():.4g}")
    return arr


def as_vector(value: Any, name: str, *, n: int | None = None, nonnegative: bool = False) -> np.ndarray:
    """A finite, non-empty float64 ``(n,)`` array, or a ``ValueError``/``TypeError`` naming ``name``."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a real 1-D array, got {type(value).__name__}") from err
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite (no NaN/inf)")
    if nonnegative and (arr < 0).any():
        raise ValueError(f"{name} must be non-negative, got min {arr.min():.4g}")
    return arr


def as_mask(value: Any, name: str, *, n: int) -> np.ndarray:
    """A boolean ``(n,)`` mask (booleans or 0/1 integers), or a ``ValueError``/``TypeError`` naming ``name``."""
    arr = np.asarray(value)
    if arr.shape != (n,):
        raise ValueError(f"{name} must be a boolean mask of shape ({n},), got shape {arr.shape}")
    if arr.dtype == np.bool_:
        return arr
    if not np.issubdtype(arr.dtype, np.integer) or not np.isin(arr, (0, 1)).all():
        raise TypeError(f"{name} must be a boolean mask (bool or 0/1 integers), got dtype {arr.dtype}")
    return arr.astype(bool)


def check_int(value: Any, name: str, *, low: int, high: int | None = None) -> int:
    """An ``int`` in ``[low, high]``, or a ``ValueError``/``TypeError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    value = operator.index(value)
    if value < low or (high is not None and value > high):
        bound = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def check_real(value: Any, name: str, *, low: float, high: float | None = None, open_low: bool = False) -> float:
    """A finite ``float`` in ``[low, high]`` (``(low, high]`` when ``open_low``), or an error naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    bad = not np.isfinite(value) or value < low or (open_low and value == low) or (high is not None and value > high)
    if bad:
        left = "(" if open_low else "["
        right = f"{high}]" if high is not None else "inf)"
        raise ValueError(f"{name} must be finite and in {left}{low}, {right}, got {value}")
    return value


def as_key(value: Any, name: str = "key") -> jax.Array:
    """A JAX PRNG key (new-style ``jax.random.key`` or legacy ``uint32[2]``), or a ``TypeError`` naming ``name``."""
    if isinstance(value, jax.Array) and jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key):
        if value.shape != ():
            raise ValueError(f"{name} must be a single PRNG key, got a batch of shape {value.shape}")
        return value
    if isinstance(value, (jax.Array, np.ndarray)) and value.shape == (2,) and value.dtype == np.uint32:
        return jax.random.wrap_key_data(jax.numpy.asarray(value))
    raise TypeError(f"{name} must be a JAX PRNG key from jax.random.key(seed), got {type(value).__name__}")
