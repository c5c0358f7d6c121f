r"""Classical per-view combination rules the paper compares with (each maps m p-values to one p-value).

With :math:`p_{(1)} \le \dots \le p_{(m)}` the sorted per-view p-values of a class and "keep iff combined > alpha":

* ``single``: the first view only, :math:`p_1` (the single-observation baseline).
* ``union``: union of the per-view sets, :math:`p_{(m)}` (valid, conservative).
* ``intersection``: intersection of the per-view sets at level alpha, :math:`p_{(1)}` (not valid: coverage can
  drop to :math:`1 - m\alpha`).
* ``bonferroni``: intersection at level alpha/m, :math:`\min(1, m\,p_{(1)})` (valid for any dependence).
* ``majority_naive``: keep iff more than m/2 views keep it, :math:`p_{(\lceil m/2 \rceil)}` (valid at level
  :math:`1 - 2\alpha` in general, over-conservative under exchangeability).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__ = ["VIEW_RULES", "combine_view_pvalues"]


def _single(p: np.ndarray) -> np.ndarray:
    return p[..., 0]


def _union(p: np.ndarray) -> np.ndarray:
    return p.max(axis=-1)


def _intersection(p: np.ndarray) -> np.ndarray:
    return p.min(axis=-1)


def _bonferroni(p: np.ndarray) -> np.ndarray:
    return np.minimum(1.0, p.shape[-1] * p.min(axis=-1))


def _majority_naive(p: np.ndarray) -> np.ndarray:
    k = math.ceil(p.shape[-1] / 2)
    return np.sort(p, axis=-1)[..., k - 1]


VIEW_RULES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "single": _single,
    "union": _union,
    "intersection": _intersection,
    "bonferroni": _bonferroni,
    "majority_naive": _majority_naive,
}


def combine_view_pvalues(pvalues: np.ndarray, *, rule: str) -> np.ndarray:
    """Combine per-view p-values ``(..., m)`` with a classical rule (see the module docstring).

    Args:
        pvalues: ``(..., m)`` per-view p-values in ``[0, 1]``, ``m >= 1``.
        rule: one of ``single``, ``union``, ``intersection``, ``bonferroni``, ``majority_naive``.

    Returns:
        ``(...)`` combined p-values; the set keeps a class iff the value exceeds alpha.

    Raises:
        ValueError: unknown rule, empty input, NaN or values outside ``[0, 1]``.

    Example:
        >>> float(combine_view_pvalues(np.array([0.04, 0.5, 0.3]), rule="bonferroni"))
        0.12
    """
    if rule not in VIEW_RULES:
        raise ValueError(f"rule must be one of {sorted(VIEW_RULES)}, got {rule!r}")
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim < 1 or p.shape[-1] < 1 or p.size == 0:
        raise ValueError(f"pvalues must have shape (..., m) with m >= 1, got {p.shape}")
    if not np.all(np.isfinite(p)) or p.min() < 0 or p.max() > 1:
        raise ValueError("pvalues must be finite and in [0, 1]")
    return VIEW_RULES[rule](p)
