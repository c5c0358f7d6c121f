"""Argument checks shared by the public entry points (private; errors name the argument)."""

from __future__ import annotations

import math
import numbers
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["as_matrix", "as_vector", "check_positive", "check_simplex", "is_traced"]


def is_traced(x: Any) -> bool:
    """True when ``x`` is a JAX tracer (inside ``jit``/``vmap``/``grad``): values cannot be checked then."""
    return isinstance(x, jax.core.Tracer)


def check_positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float after checking it is a finite real number ``> 0`` (``>= 0`` with ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}, got {value!r}")
    return v


def as_vector(x: Any, name: str, n: int | None = None, *, batch: bool = True) -> jax.Array:
    """Convert ``x`` to a float64 array of shape ``(..., n)`` (``(n,)`` when ``batch`` is false), finite.

    Tracers pass through unchecked (their values are unknown at trace time); their shape is still checked.
    """
    if is_traced(x):
        arr = x
    else:
        try:
            arr_np = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be an array of real numbers, got {type(x).__name__}") from exc
        if arr_np.ndim == 0:
            raise ValueError(f"{name} must be an array with last dimension n, got a scalar")
        if arr_np.size == 0:
            raise ValueError(f"{name} must not be empty, got shape {arr_np.shape}")
        if not np.all(np.isfinite(arr_np)):
            raise ValueError(f"{name} must be finite (no NaN or inf)")
        arr = jnp.asarray(arr_np)
    if not batch and arr.ndim != 1:
        raise ValueError(f"{name} must have shape (n,), got {tuple(arr.shape)}")
    if n is not None and arr.shape[-1] != n:
        raise ValueError(f"{name} must have last dimension n={n}, got shape {tuple(arr.shape)}")
    return arr


def as_matrix(x: Any, name: str, n: int) -> jax.Array:
    """Convert ``x`` to a finite float64 array of shape ``(T, n)`` with ``T >= 1``."""
    arr = as_vector(x, name, n)
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (T, n={n}), got {tuple(arr.shape)}")
    return arr


def check_simplex(x: Any, name: str, n: int | None = None, *, atol: float = 1e-9) -> jax.Array:
    """Check that ``x`` (shape ``(n,)`` or ``(T, n)``) holds probability vectors: entries >= 0, rows summing to 1."""
    arr = as_vector(x, name, n)
    if not is_traced(arr):
        a = np.asarray(arr)
        if np.any(a < -atol) or np.any(np.abs(a.sum(axis=-1) - 1.0) > 1e-6):
            raise ValueError(f"{name} must lie on the probability simplex (entries >= 0, summing to 1)")
    return arr
