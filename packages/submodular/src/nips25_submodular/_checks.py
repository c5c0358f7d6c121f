"""Input checks shared by the public entry points: every failure names the argument and what was expected."""

from __future__ import annotations

import operator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "as_key",
    "as_mask",
    "as_matrix",
    "as_vector",
    "check_int",
    "check_real",
    "check_real_or_traced",
    "concrete",
    "count",
    "mask_arg",
    "point_arg",
]


def concrete(*values: Any) -> bool:
    """Whether none of the arrays in ``values`` (pytrees allowed) is a tracer, i.e. value checks may run.

    Under ``jax.jit``/``jax.vmap`` the inputs are tracers: shapes and dtypes are checked, values are not (that would
    need a host sync, or ``checkify``).
    """
    return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(values))


def count(value: Any) -> Any:
    """A query count: a Python ``int`` when concrete, the traced integer array under ``jit``/``vmap``."""
    return int(value) if concrete(value) else jnp.asarray(value, jnp.int32)


def mask_arg(value: Any, name: str, *, n: int) -> jax.Array:
    """A boolean ``(n,)`` JAX mask (bool, or 0/1 integers when concrete); traceable, keeps a sharded input's sharding.

    Raises:
        ValueError: if the shape is not ``(n,)``.
        TypeError: if the dtype is not bool/integer, or a concrete integer mask holds values other than 0 and 1.
    """
    arr = value if isinstance(value, jax.Array) else jnp.asarray(np.asarray(value))
    if arr.shape != (n,):
        raise ValueError(f"{name} must be a boolean mask of shape ({n},), got shape {arr.shape}")
    if arr.dtype == jnp.bool_:
        return arr
    if not jnp.issubdtype(arr.dtype, jnp.integer):
        raise TypeError(f"{name} must be a boolean mask (bool or 0/1 integers), got dtype {arr.dtype}")
    if concrete(arr) and not bool(jnp.all((arr == 0) | (arr == 1))):
        raise TypeError(f"{name} must be a boolean mask (bool or 0/1 integers), got values other than 0/1")
    return arr.astype(bool)


def point_arg(value: Any, name: str, *, n: int) -> jax.Array:
    """A float ``(n,)`` JAX point of :math:`[0, 1]^n`; the range and finiteness are checked only when concrete.

    Raises:
        ValueError: if the shape is not ``(n,)``, or a concrete point is not finite or leaves :math:`[0, 1]`.
        TypeError: if the dtype is not real.
    """
    arr = value if isinstance(value, jax.Array) else jnp.asarray(np.asarray(value, dtype=np.float64))
    if not (jnp.issubdtype(arr.dtype, jnp.floating) or jnp.issubdtype(arr.dtype, jnp.integer)):
        raise TypeError(f"{name} must be a real array, got dtype {arr.dtype}")
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    arr = arr.astype(jnp.result_type(float))
    if concrete(arr):
        if not bool(jnp.all(jnp.isfinite(arr))):
            raise ValueError(f"{name} must be finite (no NaN/inf)")
        if not bool(jnp.all((arr >= 0) & (arr <= 1))):
            raise ValueError(f"{name} must lie in [0, 1]^n")
    return arr


def _real_array(value: Any, name: str, what: str) -> jax.Array:
    """``value`` as a float JAX array (a JAX input keeps its device placement and sharding)."""
    if isinstance(value, jax.Array):
        if not (jnp.issubdtype(value.dtype, jnp.floating) or jnp.issubdtype(value.dtype, jnp.integer)):
            raise TypeError(f"{name} must be a real {what} array, got dtype {value.dtype}")
        return value.astype(jnp.result_type(float))
    try:
        return jnp.asarray(np.asarray(value, dtype=np.float64), dtype=jnp.result_type(float))
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a real {what} array, got {type(value).__name__}") from err


def _check_values(arr: jax.Array, name: str, *, nonnegative: bool) -> None:
    """Finite (and non-negative) entries, checked on the device when ``arr`` is concrete; skipped under tracing."""
    if not concrete(arr):
        return
    if not bool(jnp.all(jnp.isfinite(arr))):
        raise ValueError(f"{name} must be finite (no NaN/inf)")
    if nonnegative and bool(jnp.any(arr < 0)):
        raise ValueError(f"{name} must be non-negative, got min {float(arr.min()):.4g}")


def as_matrix(value: Any, name: str, *, nonnegative: bool = False, square: bool = False) -> jax.Array:
    """A non-empty float ``(rows, cols)`` JAX array, or a ``ValueError``/``TypeError`` naming ``name``.

    Shapes are always checked; values (finite, non-negative) only when concrete, on the device, so a sharded input
    stays sharded and a traced one (inside ``jit``/``vmap``) passes through.
    """
    arr = _real_array(value, name, "2-D")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must be non-empty, got shape {arr.shape}")
    if square and arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be square (n, n), got shape {arr.shape}")
    _check_values(arr, name, nonnegative=nonnegative)
    return arr


def as_vector(value: Any, name: str, *, n: int | None = None, nonnegative: bool = False) -> jax.Array:
    """A non-empty float ``(n,)`` JAX array, or a ``ValueError``/``TypeError`` naming ``name`` (values checked
    only when concrete, as in :func:`as_matrix`)."""
    arr = _real_array(value, name, "1-D")
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    _check_values(arr, name, nonnegative=nonnegative)
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
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
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


def check_real_or_traced(value: Any, name: str, *, low: float) -> Any:
    """:func:`check_real` for a concrete number; a traced scalar (a ``jit``/``vmap`` argument) passes unchecked."""
    if isinstance(value, jax.core.Tracer):
        if value.shape != ():
            raise ValueError(f"{name} must be a scalar, got shape {value.shape}")
        return value
    return check_real(value, name, low=low)


def as_key(value: Any, name: str = "key") -> jax.Array:
    """A JAX PRNG key (new-style ``jax.random.key`` or legacy ``uint32[2]``), or a ``TypeError`` naming ``name``."""
    if isinstance(value, jax.Array) and jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key):
        if value.shape != ():
            raise ValueError(f"{name} must be a single PRNG key, got a batch of shape {value.shape}")
        return value
    if isinstance(value, (jax.Array, np.ndarray)) and value.shape == (2,) and value.dtype == np.uint32:
        return jax.random.wrap_key_data(jax.numpy.asarray(value))
    raise TypeError(f"{name} must be a JAX PRNG key from jax.random.key(seed), got {type(value).__name__}")
