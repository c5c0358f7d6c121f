"""Argument checks shared by the public entry points (private; errors name the argument).

The checks are written for JAX's transformations: under ``jit``/``vmap``/``grad`` (tracers) only shapes are
checked, values cannot be; concrete JAX arrays are checked with ``jnp`` reductions on the device and returned as
they are, so a sharded input stays sharded (no ``np.asarray`` round trip through one host array); other inputs
(lists, numpy arrays, Python numbers) are checked with numpy and converted once.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["as_matrix", "as_vector", "check_positive", "check_simplex", "float_dtype", "is_traced"]


def is_traced(x: Any) -> bool:
    """True when ``x`` is a JAX tracer (inside ``jit``/``vmap``/``grad``): values cannot be checked then."""
    return isinstance(x, jax.core.Tracer)


def float_dtype() -> Any:
    """The float dtype JAX creates here: float64 with ``jax_enable_x64`` on, float32 otherwise."""
    return jax.dtypes.canonicalize_dtype(np.float64)


def check_positive(value: Any, name: str, *, allow_zero: bool = False) -> Any:
    """Check that ``value`` is a finite real scalar ``> 0`` (``>= 0`` with ``allow_zero``) and return it.

    Python and numpy reals come back as ``float``. A 0-d JAX array is checked on the device and returned as it is;
    a tracer (``LMSR(n, b=b)`` inside ``jax.vmap`` over ``b``) is returned unchecked (its value is unknown).
    """
    bound = ">= 0" if allow_zero else "> 0"
    if isinstance(value, jax.Array):
        if value.ndim != 0 or not jnp.issubdtype(value.dtype, jnp.number) or jnp.iscomplexobj(value):
            raise TypeError(f"{name} must be a real scalar, got an array of shape {value.shape} ({value.dtype})")
        if is_traced(value):
            return value
        ok = jnp.isfinite(value) & ((value >= 0) if allow_zero else (value > 0))
        if not bool(ok):
            raise ValueError(f"{name} must be finite and {bound}, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name} must be finite and {bound}, got {value!r}")
    return v


def as_vector(x: Any, name: str, n: int | None = None, *, batch: bool = True) -> jax.Array:
    """Convert ``x`` to a float array of shape ``(..., n)`` (``(n,)`` when ``batch`` is false), finite.

    Tracers pass through with only their shape checked. Concrete JAX arrays are checked on their devices and kept
    (cast to the float dtype if needed, which keeps their sharding). Anything else goes through numpy.
    """
    if isinstance(x, jax.Array):
        arr = x
        if not jnp.issubdtype(arr.dtype, jnp.number) or jnp.iscomplexobj(arr):
            raise TypeError(f"{name} must be an array of real numbers, got dtype {arr.dtype}")
        if arr.dtype != float_dtype():
            arr = arr.astype(float_dtype())
        if arr.ndim == 0:
            raise ValueError(f"{name} must be an array with last dimension n, got a scalar")
        if arr.size == 0:
            raise ValueError(f"{name} must not be empty, got shape {tuple(arr.shape)}")
        if not is_traced(arr) and not bool(jnp.all(jnp.isfinite(arr))):
            raise ValueError(f"{name} must be finite (no NaN or inf)")
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
        arr = jnp.asarray(arr_np, dtype=float_dtype())
    if not batch and arr.ndim != 1:
        raise ValueError(f"{name} must have shape (n,), got {tuple(arr.shape)}")
    if n is not None and arr.shape[-1] != n:
        raise ValueError(f"{name} must have last dimension n={n}, got shape {tuple(arr.shape)}")
    return arr


def as_matrix(x: Any, name: str, n: int) -> jax.Array:
    """Convert ``x`` to a finite float array of shape ``(T, n)`` with ``T >= 1``."""
    arr = as_vector(x, name, n)
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (T, n={n}), got {tuple(arr.shape)}")
    return arr


def check_simplex(x: Any, name: str, n: int | None = None, *, atol: float = 1e-9) -> jax.Array:
    """Check that ``x`` (shape ``(n,)`` or ``(T, n)``) holds probability vectors: entries >= 0, rows summing to 1.

    The value check runs on the device (``jnp``) and is skipped for tracers.
    """
    arr = as_vector(x, name, n)
    if not is_traced(arr):
        bad = jnp.any(arr < -atol) | jnp.any(jnp.abs(jnp.sum(arr, axis=-1) - 1.0) > 1e-6)
        if bool(bad):
            raise ValueError(f"{name} must lie on the probability simplex (entries >= 0, summing to 1)")
    return arr
