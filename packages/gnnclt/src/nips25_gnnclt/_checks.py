"""Input checks shared by the public entry points: every failure names the argument and what was expected.

The checks work on tracers: shapes and dtypes are checked at trace time, value checks (NaN/inf, ranges) only on
concrete inputs, so every entry point built on them runs under ``jax.jit`` / ``jax.vmap``. A JAX array is checked
with JAX reductions (one scalar comes back), never with ``np.asarray``, so a sharded input stays sharded.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

__all__ = [
    "array_module",
    "as_float_matrix",
    "as_labels",
    "check_int",
    "check_positive",
    "concretely",
    "finite_array",
    "is_traced",
    "real_array",
    "scalar_out",
]


def is_traced(*values: Any) -> bool:
    """Whether any of ``values`` is a JAX tracer (inside ``jit``, ``vmap``, ``grad``, ...)."""
    return any(isinstance(v, jax.core.Tracer) for v in values)


def concretely(predicate: Callable[[], Any], *values: Any) -> bool:
    """``bool(predicate())`` when no value is traced (evaluated at once, even for a concrete array closed over by a
    jit trace); ``False`` when one is, so a value check is skipped under tracing instead of failing."""
    if is_traced(*values):
        return False
    with jax.ensure_compile_time_eval():
        return bool(predicate())


def array_module(*values: Any) -> ModuleType:
    """``jax.numpy`` if any of ``values`` is a JAX array (or tracer), else ``numpy`` (float64 on the host)."""
    return jnp if any(isinstance(v, Array) for v in values) else np


def scalar_out(value: Any) -> Any:
    """A Python float for a concrete NumPy scalar; a JAX scalar (concrete or traced) is returned as it is."""
    return value if isinstance(value, Array) else float(value)


def finite_array(value: Any, name: str, *, ndim: int | None = None) -> np.ndarray:
    """``value`` as a float64 numpy array, checked for dimension, emptiness and NaN/inf (host inputs only)."""
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be an array of numbers, got {type(value).__name__}")
    if isinstance(value, jax.core.Tracer):
        raise TypeError(f"{name} must be a concrete array here (this step runs on the host), got a JAX tracer")
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


def real_array(value: Any, name: str, *, ndim: int | None = None) -> Any:
    """A non-empty real array: a JAX array stays a JAX array (float dtype; finiteness checked when concrete),
    anything else becomes a checked float64 numpy array."""
    if not isinstance(value, Array):
        return finite_array(value, name, ndim=ndim)
    if ndim is not None and value.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {value.shape}")
    if value.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {value.shape}")
    if not jnp.issubdtype(value.dtype, jnp.number) or jnp.issubdtype(value.dtype, jnp.complexfloating):
        raise TypeError(f"{name} must hold real numbers, got dtype {value.dtype}")
    if concretely(lambda: not jnp.all(jnp.isfinite(value)), value):
        raise ValueError(f"{name} must be finite (no NaN or inf)")  # checked outside jit only
    return value if jnp.issubdtype(value.dtype, jnp.floating) else value.astype(jnp.result_type(float))


def as_float_matrix(value: Any, name: str) -> Array:
    """A finite, non-empty 2-D float array, as a JAX array (a host input gets the default float dtype)."""
    if isinstance(value, Array):
        if value.ndim != 2:
            raise ValueError(f"{name} must be 2-dimensional (n, d), got shape {value.shape}")
        return real_array(value, name, ndim=2)
    return jnp.asarray(finite_array(value, name, ndim=2), dtype=jnp.result_type(float))


def as_labels(value: Any, name: str, *, n: int | None = None, n_classes: int | None = None) -> Any:
    """Integer class labels ``0..K-1`` of shape ``(n,)``: int32 numpy for host input, int32 JAX for JAX input
    (the range is checked when the labels are concrete)."""
    if isinstance(value, jax.core.Tracer):
        arr: Any = value
    elif isinstance(value, Array):
        arr = value
    else:
        arr = np.asarray(value)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional (n,), got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must hold integer class labels, got dtype {arr.dtype}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} must have length {n} (one label per node), got {arr.shape[0]}")
    if not is_traced(arr):
        with jax.ensure_compile_time_eval():  # a concrete array closed over by a jit trace: check it now
            lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or (n_classes is not None and hi >= n_classes):
            upper = "K-1" if n_classes is None else str(n_classes - 1)
            raise ValueError(f"{name} must hold labels in [0, {upper}], got range [{lo}, {hi}]")
    return arr.astype(jnp.int32) if isinstance(arr, Array) else arr.astype(np.int32)


def check_int(value: Any, name: str, *, minimum: int) -> int:
    """A static integer (not bool) ``>= minimum``: sizes and depths fix array shapes, so they cannot be traced."""
    if isinstance(value, jax.core.Tracer):
        raise TypeError(f"{name} must be a static Python int (it fixes a shape), got a JAX tracer")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_positive(value: Any, name: str) -> Any:
    """A finite real number ``> 0``: a Python float, or a real JAX scalar (value checked when concrete)."""
    if isinstance(value, Array):
        if value.shape != ():
            raise ValueError(f"{name} must be a scalar, got shape {value.shape}")
        if not jnp.issubdtype(value.dtype, jnp.number) or jnp.issubdtype(value.dtype, jnp.complexfloating):
            raise TypeError(f"{name} must be a real number, got dtype {value.dtype}")
        if is_traced(value):
            return value.astype(jnp.result_type(float))
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if not np.isfinite(float(value)) or value <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value}")
    return float(value)
