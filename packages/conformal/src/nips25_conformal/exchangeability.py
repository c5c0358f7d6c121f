r"""A permutation diagnostic of the exchangeability of the views of one object (the paper's key assumption).

The guarantee needs the m views of an object and the calibration points of its class to be exchangeable. Views
of one object that are more alike than two random observations of the same class (several photos of the same
leaf, transformations of one image) break it. On labelled multi-view data, the diagnostic compares the mean
within-object variance of the true-class scores,

.. math:: T = \mathrm{mean}_{b: m_b \ge 2}\, \widehat{\mathrm{Var}}\left(S(x_b^1, y_b), \dots, S(x_b^{m_b}, y_b)\right),

with its law when the views of each class are shuffled across objects (same sizes). A small permutation p-value
means the views of one object are more alike than exchangeable views would be.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ExchangeabilityDiagnostic", "ExchangeabilityWarning", "exchangeability_diagnostic"]


class ExchangeabilityWarning(UserWarning):
    """Views of one object look more alike than exchangeable views: the coverage guarantee may not hold."""


@dataclass(frozen=True)
class ExchangeabilityDiagnostic:
    """Result of :func:`exchangeability_diagnostic`.

    Attributes:
        statistic: observed mean within-object variance T.
        null_mean: mean of T over the permutations.
        p_value: ``(1 + #{T_perm <= T}) / (R + 1)``; small means views of one object are too alike.
    """

    statistic: float
    null_mean: float
    p_value: float


def _within_variance(scores: list[np.ndarray]) -> float:
    return float(np.mean([s.var() for s in scores if s.size >= 2]))


def exchangeability_diagnostic(
    true_class_scores: Sequence[np.ndarray],
    labels: np.ndarray,
    *,
    n_permutations: int = 999,
    level: float = 0.01,
    rng: np.random.Generator | None = None,
) -> ExchangeabilityDiagnostic:
    r"""Permutation test of "views of one object are exchangeable with other observations of its class".

    Args:
        true_class_scores: B arrays ``(m_b,)``: the score of each view of object b at its true label.
        labels: ``(B,)`` true labels of the objects.
        n_permutations: number R of within-class shuffles, ``>= 1``.
        level: warn (:class:`ExchangeabilityWarning`, a ``UserWarning``) when the p-value is at most this, in
            ``(0, 1)``.
        rng: generator of the shuffles (default ``default_rng(0)``).

    Returns:
        An :class:`ExchangeabilityDiagnostic`.

    Raises:
        ValueError: empty input, non-finite scores, mismatched labels, no object with two views, bad R or level.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> scores = [rng.random(3) for _ in range(40)]
        >>> res = exchangeability_diagnostic(scores, np.repeat([0, 1], 20), n_permutations=199)
        >>> res.p_value > 0.01
        True
    """
    scores = [np.asarray(s, dtype=np.float64).ravel() for s in true_class_scores]
    lab = np.asarray(labels)
    if not scores:
        raise ValueError("true_class_scores must hold at least one object")
    if lab.shape != (len(scores),):
        raise ValueError(f"labels must have shape ({len(scores)},), got {lab.shape}")
    if any(s.size == 0 or not np.all(np.isfinite(s)) for s in scores):
        raise ValueError("true_class_scores must be non-empty and finite for every object")
    if not any(s.size >= 2 for s in scores):
        raise ValueError("true_class_scores needs at least one object with two or more views")
    if isinstance(n_permutations, bool) or not isinstance(n_permutations, int) or n_permutations < 1:
        raise ValueError(f"n_permutations must be a positive integer, got {n_permutations!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    gen = rng if rng is not None else np.random.default_rng(0)
    observed = _within_variance(scores)
    groups = {c: np.flatnonzero(lab == c) for c in np.unique(lab)}
    null = np.empty(n_permutations)
    for r in range(n_permutations):
        shuffled: list[np.ndarray] = []
        for idx in groups.values():
            pool = gen.permutation(np.concatenate([scores[i] for i in idx]))
            shuffled += np.split(pool, np.cumsum([scores[i].size for i in idx])[:-1])
        null[r] = _within_variance(shuffled)
    p_value = float((1 + np.sum(null <= observed)) / (n_permutations + 1))
    if p_value <= level:
        warnings.warn(
            f"views of one object look more alike than exchangeable views (permutation p = {p_value:.3g}); "
            "the class-conditional coverage guarantee may not hold; calibrate whole instances instead "
            "(AggregateThenCalibrate)",
            ExchangeabilityWarning,
            stacklevel=2,
        )
    return ExchangeabilityDiagnostic(statistic=observed, null_mean=float(null.mean()), p_value=p_value)
