r"""Class-conditional (Mondrian) conformal counts and p-values of single views (paper, Sec. 2).

For class :math:`y` with calibration scores :math:`S_1..S_{n_y}` of the calibration points labelled :math:`y`,
a test view with score :math:`S(x, y)` gets :math:`K = \#\{i : S_i \ge S(x, y)\}` and :math:`p = (1 + K)/(n_y + 1)`;
the randomised version is :math:`p = (\#\{S_i > s\} + U(\#\{S_i = s\} + 1))/(n_y + 1)`, :math:`U \sim U(0,1)`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["MondrianCalibration", "class_conditional_pvalues"]


def _finite(name: str, arr: np.ndarray) -> None:
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")


@dataclass(frozen=True)
class MondrianCalibration:
    """Sorted calibration scores of each class.

    Attributes:
        classes: ``(C,)`` class labels, in column order.
        sorted_scores: one sorted ``(n_c,)`` float64 array per class.
    """

    classes: np.ndarray
    sorted_scores: tuple[np.ndarray, ...]

    @classmethod
    def from_scores(
        cls, cal_scores: np.ndarray, cal_labels: np.ndarray, classes: np.ndarray | None = None
    ) -> MondrianCalibration:
        """Group the true-label scores of calibration points by class.

        Args:
            cal_scores: ``(n,)`` non-conformity score of each calibration point at its own label.
            cal_labels: ``(n,)`` labels.
            classes: ``(C,)`` labels in column order (default: sorted unique ``cal_labels``).

        Raises:
            ValueError: on shape mismatch, non-finite scores, empty input or a class without calibration points.
        """
        scores = np.asarray(cal_scores, dtype=np.float64)
        labels = np.asarray(cal_labels)
        if scores.ndim != 1:
            raise ValueError(f"cal_scores must be 1-D (n,), got shape {scores.shape}")
        _finite("cal_scores", scores)
        if labels.shape != scores.shape:
            raise ValueError(f"cal_labels must have shape {scores.shape} like cal_scores, got {labels.shape}")
        cls_arr = np.unique(labels) if classes is None else np.asarray(classes)
        sorted_scores = []
        for c in cls_arr:
            s = np.sort(scores[labels == c])
            if s.size == 0:
                label = c.item() if isinstance(c, np.generic) else c
                raise ValueError(f"cal_labels has no calibration point of class {label!r}; Mondrian needs n_y >= 1")
            sorted_scores.append(s)
        return cls(classes=cls_arr, sorted_scores=tuple(sorted_scores))

    @property
    def n_per_class(self) -> np.ndarray:
        """``(C,)`` number of calibration points of each class."""
        return np.array([s.size for s in self.sorted_scores], dtype=np.int64)

    def counts(self, test_scores: np.ndarray) -> np.ndarray:
        r"""Counts :math:`K = \#\{i : S_i^{(c)} \ge s\}` for every test score and class column.

        Args:
            test_scores: ``(..., C)`` score of each test view at each candidate class.

        Returns:
            ``(..., C)`` int64 counts, column c in ``[0, n_c]``.
        """
        scores = np.asarray(test_scores, dtype=np.float64)
        if scores.ndim < 1 or scores.shape[-1] != len(self.classes):
            raise ValueError(f"test_scores must have shape (..., {len(self.classes)}), got {scores.shape}")
        _finite("test_scores", scores)
        out = np.empty(scores.shape, dtype=np.int64)
        for c, cal in enumerate(self.sorted_scores):
            out[..., c] = cal.size - np.searchsorted(cal, scores[..., c], side="left")
        return out

    def pvalues(
        self, test_scores: np.ndarray, *, randomize: bool = False, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """Per-view Mondrian p-values ``(..., C)``; see :func:`class_conditional_pvalues`."""
        n = self.n_per_class
        k_ge = self.counts(test_scores)
        if not randomize:
            return (1.0 + k_ge) / (n + 1.0)
        scores = np.asarray(test_scores, dtype=np.float64)
        k_gt = np.empty_like(k_ge)
        for c, cal in enumerate(self.sorted_scores):
            k_gt[..., c] = cal.size - np.searchsorted(cal, scores[..., c], side="right")
        gen = rng if rng is not None else np.random.default_rng(0)
        u = gen.random(k_ge.shape)
        return (k_gt + u * (k_ge - k_gt + 1.0)) / (n + 1.0)


def class_conditional_pvalues(
    cal_scores: np.ndarray,
    cal_labels: np.ndarray,
    test_scores: np.ndarray,
    *,
    classes: np.ndarray | None = None,
    randomize: bool = False,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    r"""Mondrian conformal p-values :math:`p_j(y) = (1 + \#\{i : Y_i = y, S_i \ge S_j(y)\})/(n_y + 1)`.

    Args:
        cal_scores: ``(n,)`` calibration scores at the true labels.
        cal_labels: ``(n,)`` calibration labels.
        test_scores: ``(..., C)`` test scores at each candidate class (columns follow ``classes``).
        classes: ``(C,)`` column labels (default: sorted unique ``cal_labels``).
        randomize: smoothed p-values, exactly uniform under exchangeability even with ties.
        rng: generator for the smoothing.

    Returns:
        ``(..., C)`` p-values in ``(0, 1]``.

    Raises:
        ValueError: on shape mismatch, NaN/inf, empty input or a class without calibration points.

    References:
        Vovk, Gammerman, Shafer, "Algorithmic Learning in a Random World" (Mondrian conformal prediction);
        Fermanian, Hebiri, Salmon, NeurIPS 2025, Sec. 2.

    Example:
        >>> class_conditional_pvalues(np.array([0.1, 0.5, 0.2]), np.array([0, 0, 1]), np.array([[0.3, 0.1]]))
        array([[0.66666667, 1.        ]])
    """
    calib = MondrianCalibration.from_scores(cal_scores, cal_labels, classes)
    return calib.pvalues(test_scores, randomize=randomize, rng=rng)
