"""Input checks shared by the public entry points: each error names the argument and what was expected."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["check_array", "check_choice", "check_int", "check_real"]


def check_array(
    name: str,
    value: Any,
    *,
    ndim: int | tuple[int, ...],
    last: int | None = None,
    finite: bool = True,
    dtype: str = "numeric",
) -> np.ndarray:
    """Return ``value`` as a numpy array after checking type, ndim, emptiness, trailing size and finiteness.

    Args:
        name: argument name used in the error messages.
        value: the candidate array.
        ndim: accepted number(s) of dimensions.
        last: required size of the last axis, if any.
        finite: reject NaN/inf when True.
        dtype: ``"numeric"`` (bool and object rejected) or ``"uint8"`` (exactly uint8).

    Raises:
        TypeError: if ``value`` is not an ndarray or has a wrong dtype.
        ValueError: if the dimensions are wrong, it is empty, or it holds NaN/inf.
    """
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(value).__name__}")
    if dtype == "uint8" and value.dtype != np.uint8:
        raise TypeError(f"{name} must have dtype uint8, got {value.dtype}")
    if value.dtype == np.bool_ or not (
        np.issubdtype(value.dtype, np.integer) or np.issubdtype(value.dtype, np.floating)
    ):
        raise TypeError(f"{name} must have a real numeric dtype, got {value.dtype}")
    dims = (ndim,) if isinstance(ndim, int) else ndim
    if value.ndim not in dims:
        raise ValueError(f"{name} must have ndim in {dims}, got shape {value.shape}")
    if value.size == 0:
        raise ValueError(f"{name} must be non-empty, got shape {value.shape}")
    if last is not None and value.shape[-1] != last:
        raise ValueError(f"{name} must have last axis of size {last}, got shape {value.shape}")
    if finite and np.issubdtype(value.dtype, np.floating) and not np.isfinite(value).all():
        raise ValueError(f"{name} holds NaN or inf values")
    return value


def check_real(name: str, value: Any, *, low: float | None = None, high: float | None = None, open_low: bool = False,
               open_high: bool = False) -> float:  # fmt: skip
    """Return ``value`` as a float if it is a finite real within the given bounds, else raise naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if low is not None and (v < low or (open_low and v == low)):
        raise ValueError(f"{name} must be {'>' if open_low else '>='} {low}, got {v}")
    if high is not None and (v > high or (open_high and v == high)):
        raise ValueError(f"{name} must be {'<' if open_high else '<='} {high}, got {v}")
    return v


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an int if it is an integer within ``[low, high]``, else raise naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    v = int(value)
    if low is not None and v < low:
        raise ValueError(f"{name} must be >= {low}, got {v}")
    if high is not None and v > high:
        raise ValueError(f"{name} must be <= {high}, got {v}")
    return v


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise ValueError naming ``name``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return str(value)
