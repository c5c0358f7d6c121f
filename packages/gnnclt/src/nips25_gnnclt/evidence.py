"""Replicate statistics behind the claims of ``reproduce``: means with standard errors and paired 2-SE tests.

Experiment-only code (not in the top-level ``__all__``). A claim "a exceeds b by > z SE" is decided on the paired
differences ``a_r - b_r`` over replicates ``r``: it holds when their mean is above ``z`` times its standard error
``sd / sqrt(R)`` (sample sd, ``ddof = 1``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import numpy as np

__all__ = ["LogLogSlope", "PairedExcess", "log_log_slope", "mean_se", "paired_excess"]

Z_SE = 2.0  # "by more than 2 standard errors", fixed with the 0.2.2 design before it ran


def _replicates(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size < 2:
        raise ValueError(f"{name} must be a 1-D sequence of at least 2 replicates, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {arr}")
    return arr


def mean_se(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Mean and standard error ``sd / sqrt(R)`` (sample sd) of ``R >= 2`` replicate values.

    Raises:
        ValueError: fewer than 2 values, not 1-D, or not finite.

    Example:
        >>> mean_se([1.0, 2.0, 3.0])
        (2.0, 0.5773502691896258)
    """
    arr = _replicates(values, "values")
    return float(arr.mean()), float(arr.std(ddof=1) / np.sqrt(arr.size))


class PairedExcess(TypedDict):
    """A paired excess: mean and SE of the differences, and whether the mean is above ``z`` SE."""

    mean: float
    se: float
    holds: bool


def paired_excess(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, z: float = Z_SE) -> PairedExcess:
    """Does ``a`` exceed ``b`` by more than ``z`` standard errors, paired by replicate?

    Args:
        a, b: ``(R,)`` replicate values, ``R >= 2``, ``a[r]`` and ``b[r]`` from the same replicate.
        z: the number of standard errors (keyword-only, ``> 0``).

    Returns:
        ``{"mean": mean(a - b), "se": SE(a - b), "holds": mean > z * se}``. Identical differences (SE 0)
        hold exactly when their mean is positive.

    Raises:
        ValueError: unequal lengths, fewer than 2 replicates, non-finite values, or ``z <= 0``.

    Example:
        >>> paired_excess([0.30, 0.31, 0.29], [0.10, 0.12, 0.09])["holds"]
        True
    """
    if not np.isfinite(z) or z <= 0:
        raise ValueError(f"z must be finite and > 0, got {z}")
    a_arr, b_arr = _replicates(a, "a"), _replicates(b, "b")
    if a_arr.shape != b_arr.shape:
        raise ValueError(f"a and b must pair up replicate by replicate, got {a_arr.size} and {b_arr.size} values")
    mean, se = mean_se(a_arr - b_arr)
    return PairedExcess(mean=mean, se=se, holds=bool(mean > z * se))


class LogLogSlope(TypedDict):
    """Mean and SE of the per-replicate log-log slopes."""

    mean: float
    se: float


def log_log_slope(x: Sequence[float] | np.ndarray, values: np.ndarray) -> LogLogSlope:
    r"""Least-squares slope of :math:`\log v` on :math:`\log x`, fitted per replicate, as mean +- SE.

    Args:
        x: ``(m,)`` positive abscissae (e.g. the degree scales :math:`\nu`), ``m >= 2``.
        values: ``(R, m)`` positive values, one row per replicate, ``R >= 2``. Values below ``1e-300`` are
            clipped there so that an exact zero gives a finite (very negative) log.

    Raises:
        ValueError: on shapes that do not match, non-positive ``x`` or negative/non-finite values.

    Example:
        >>> round(log_log_slope([1.0, 10.0], np.array([[1.0, 0.1], [2.0, 0.2]]))["mean"], 12)
        -1.0
    """
    xs = np.asarray(x, dtype=np.float64)
    vs = np.asarray(values, dtype=np.float64)
    if xs.ndim != 1 or xs.size < 2 or np.any(~np.isfinite(xs)) or np.any(xs <= 0):
        raise ValueError(f"x must be a 1-D sequence of at least 2 positive finite values, got {xs}")
    if vs.ndim != 2 or vs.shape[1] != xs.size or np.any(~np.isfinite(vs)) or np.any(vs < 0):
        raise ValueError(f"values must be (R, {xs.size}) finite and >= 0, got shape {vs.shape}")
    slopes = np.polyfit(np.log(xs), np.log(np.maximum(vs, 1e-300)).T, 1)[0]
    mean, se = mean_se(slopes)
    return LogLogSlope(mean=mean, se=se)
