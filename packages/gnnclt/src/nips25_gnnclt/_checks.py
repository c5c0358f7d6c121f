"""Input checks shared by the public entry points: every failure names the argument and what was expected."""

from __future__ import annotations

import numbers
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

__all__ = ["as_float_matrix", "as_labels", "check_int", "check_positive", "finite_array"]


def finite_array(value: Any, name: str, *, ndim: int | None = None) -> np.ndarray:
    """``value`` as a float64 numpy array, checked for dimension, emptiness and NaN/inf."""
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be an array of numbers, got {type(value).__name__}")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of numbers: {exc}") from exc
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return arr


def as_float_matrix(value: Any, name: str) -> Array:
    """A finite, non-empty 2-D float array (as a JAX array of the default float dtype)."""
    if isinstance(value, Array):
        if value.ndim != 2:
            raise ValueError(f"{name} must be 2-dimensional (n, d), got shape {value.shape}")
        if value.size == 0:
            raise ValueError(f"{name} must not be empty, got shape {value.shape}")
        if not jnp.issubdtype(value.dtype, jnp.number):
            raise TypeError(f"{name} must hold numbers, got dtype {value.dtype}")
        if not isinstance(value, jax.core.Tracer) and not bool(jnp.all(jnp.isfinite(value))):
            raise ValueError(f"{name} must be finite (no NaN or inf)")  # checked outside jit only
        return value.astype(jnp.result_type(float)) if not jnp.issubdtype(value.dtype, jnp.floating) else value
    return jnp.asarray(finite_array(value, name, ndim=2), dtype=jnp.result_type(float))


def as_labels(value: Any, name: str, *, n: int | None = None, n_classes: int | None = None) -> np.ndarray:
    """Integer class labels ``0..K-1`` of shape ``(n,)`` as a numpy int array."""
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional (n,), got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must hold integer class labels, got dtype {arr.dtype}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} must have length {n} (one label per node), got {arr.shape[0]}")
    if arr.min() < 0 or (n_classes is not None and arr.max() >= n_classes):
        upper = "K-1" if n_classes is None else str(n_classes - 1)
        raise ValueError(f"{name} must hold labels in [0, {upper}], got range [{arr.min()}, {arr.max()}]")
    return arr.astype(np.int32)


def check_int(value: Any, name: str, *, minimum: int) -> int:
    """An integer (not bool) ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_positive(value: Any, name: str) -> float:
    """A finite real number ``> 0``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if not np.isfinite(float(value)) or value <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value}")
    return float(value)
