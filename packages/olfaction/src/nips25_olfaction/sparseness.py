"""Coding metrics: active fraction, Treves-Rolls population and lifetime sparseness, pattern overlap."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["active_fraction", "overlap", "sparseness"]


def _counts(x: ArrayLike) -> NDArray[np.float64]:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim < 2 or arr.size == 0:
        raise ValueError(f"counts must be an array (..., n_kc) of at least 2 dimensions, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError("counts must be finite and >= 0")
    return arr


def active_fraction(counts: ArrayLike) -> float:
    """Mean fraction of KCs that fire at least one spike, over all leading axes (odours, trials).

    Args:
        counts: spike counts, shape ``(..., n_kc)`` (at least 2-D), finite and ``>= 0``.

    Returns:
        Fraction in ``[0, 1]``.

    Raises:
        ValueError: on malformed counts.
    """
    return float(np.mean(_counts(counts) > 0))


def sparseness(counts: ArrayLike, *, kind: Literal["population", "lifetime"] = "population") -> float:
    r"""Treves-Rolls sparseness, mean over responses: :math:`S = \frac{1 - (\sum_i r_i / n)^2 / (\sum_i r_i^2 / n)}
    {1 - 1/n}`, in ``[0, 1]`` (1 = sparsest).

    ``"population"``: over the ``n`` KCs of each response (last axis); ``"lifetime"``: over the odours (first axis)
    for each KC. Silent responses (all zero) are left out of the mean.

    Args:
        counts: spike counts, shape ``(K, ..., n_kc)``.
        kind: which sparseness.

    Returns:
        Mean sparseness.

    Raises:
        ValueError: on malformed counts, an unknown ``kind``, or no non-silent response.

    References:
        Treves & Rolls, Network 1991; Willmore & Tolhurst, Network 2001.

    Example:
        >>> round(sparseness([[1.0, 1.0, 0.0, 0.0]]), 4)  # k=2 of n=4: (1 - 1/2) / (1 - 1/4)
        0.6667
    """
    x = _counts(counts)
    if kind == "population":
        r = x.reshape(-1, x.shape[-1])
    elif kind == "lifetime":
        r = np.moveaxis(x, 0, -1).reshape(-1, x.shape[0])
    else:
        raise ValueError(f"kind must be 'population' or 'lifetime', got {kind!r}")
    n = r.shape[1]
    if n < 2:
        raise ValueError("sparseness needs at least two units")
    sq = (r**2).mean(axis=1)
    keep = sq > 0
    if not np.any(keep):
        raise ValueError("every response is silent: sparseness is undefined")
    a = r[keep].mean(axis=1) ** 2 / sq[keep]
    return float(np.mean((1.0 - a) / (1.0 - 1.0 / n)))


def overlap(counts: ArrayLike) -> float:
    """Mean Jaccard overlap of the active KC sets of every pair of odours (trial-averaged counts; 0 = disjoint).

    Args:
        counts: spike counts, shape ``(K, n_trials, n_kc)`` or ``(K, n_kc)``, ``K >= 2``.

    Returns:
        Mean Jaccard index over the ``K (K - 1) / 2`` pairs, in ``[0, 1]`` (a pair with no active KC counts 0).

    Raises:
        ValueError: on malformed counts or ``K < 2``.
    """
    x = _counts(counts)
    if x.ndim == 3:
        x = x.mean(axis=1)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"overlap needs counts of shape (K >= 2, [n_trials,] n_kc), got {np.shape(counts)}")
    active = x > 0
    inter = (active[:, None, :] & active[None, :, :]).sum(-1)
    union = (active[:, None, :] | active[None, :, :]).sum(-1)
    iu = np.triu_indices(x.shape[0], 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        jac = np.where(union[iu] > 0, inter[iu] / np.maximum(union[iu], 1), 0.0)
    return float(jac.mean())
