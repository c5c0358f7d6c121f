r"""Aggregate-then-calibrate: one score per multi-view instance, calibrated on multi-view instances (a baseline).

The paper's method calibrates single views and aggregates the views' p-values, which needs the views of an
instance to be exchangeable with the calibration points of its class. When the views of one instance are
correlated (frames of one recording, transformations of one image) that fails and the sets under-cover. The safe
alternative a user can take instead is to treat the *instance* as the unit: combine its views' scores into one
score,

.. math:: S(x^{1:m}, y) = \mathrm{combine}\big(S(x^1, y), \dots, S(x^m, y)\big),

and run ordinary Mondrian split conformal prediction on labelled multi-view calibration *instances*. Coverage
:math:`P(y \in C \mid Y = y) \ge 1 - \alpha` then needs only the instances to be exchangeable (same number of
views, same view-generating process), whatever the dependence within an instance. The price: calibration needs
labelled multi-view instances, and it cannot use the single-view points.

With the default score ``1 - proba`` and ``combine="mean"``, the combined score is :math:`1 - \bar p(y)`: the
**averaged-probability** baseline. ``calibrate_on="views"`` calibrates that averaged probability on single views,
as a user might naively do; it has no coverage guarantee (kept as a baseline, not a method).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted, validate_data

from nips25_conformal.classifier import _as_views, as_float, check_alpha, check_estimator_param, check_feature_names
from nips25_conformal.pvalues import MondrianCalibration

__all__ = ["COMBINERS", "AggregateThenCalibrate"]

COMBINERS = ("mean", "median", "max", "min")
Combine = Literal["mean", "median", "max", "min"]
_REDUCE: dict[str, Callable[..., np.ndarray]] = {"mean": np.mean, "median": np.median, "max": np.max, "min": np.min}


class AggregateThenCalibrate(BaseEstimator):
    r"""Mondrian split conformal prediction on instance-level scores combined over views (a baseline).

    Args:
        estimator: a scikit-learn classifier with ``predict_proba`` (fitted when ``prefit=True``).
        combine: how the views' scores ``1 - p(y | x^v)`` are combined: ``"mean"`` (= averaged probability),
            ``"median"``, ``"max"`` (the least conforming view), ``"min"``.
        calibrate_on: ``"instances"`` (calibrate on combined scores of labelled multi-view instances: valid when
            instances are exchangeable) or ``"views"`` (calibrate the combined test score on single-view scores: the
            naive averaged-probability baseline, no guarantee).
        alpha: miscoverage level in ``(0, 1)``; the set keeps y iff :math:`p(y) > \alpha`.
        prefit: the estimator is already fitted.

    Attributes:
        classes_: ``(C,)`` labels.
        estimator_: the fitted base classifier.
        calibration_: the per-class calibration scores.
        n_features_in_: number of features of one view (and ``feature_names_in_`` when fitted on a DataFrame).

    Example:
        >>> from sklearn.datasets import load_iris
        >>> from sklearn.linear_model import LogisticRegression
        >>> X, y = load_iris(return_X_y=True)
        >>> atc = AggregateThenCalibrate(LogisticRegression(max_iter=500), alpha=0.1).fit(X[::3], y[::3])
        >>> cal = [X[i : i + 2] for i in range(1, 150, 6)]  # 25 two-view instances (neighbouring flowers)
        >>> atc = atc.calibrate(cal, y[1:150:6])
        >>> atc.predict_set([X[2:4], X[100:102]]).shape
        (2, 3)
    """

    def __init__(
        self,
        estimator: Any = None,
        *,
        combine: Combine = "mean",
        calibrate_on: Literal["instances", "views"] = "instances",
        alpha: float = 0.1,
        prefit: bool = False,
    ) -> None:
        self.estimator = estimator
        self.combine = combine
        self.calibrate_on = calibrate_on
        self.alpha = alpha
        self.prefit = prefit

    def _check_params(self) -> None:
        check_estimator_param(self.estimator)
        if self.combine not in COMBINERS:
            raise ValueError(f"combine must be one of {COMBINERS}, got {self.combine!r}")
        if self.calibrate_on not in ("instances", "views"):
            raise ValueError(f"calibrate_on must be 'instances' or 'views', got {self.calibrate_on!r}")
        check_alpha(self.alpha)
        if not isinstance(self.prefit, (bool, np.bool_)):
            raise TypeError(f"prefit must be a bool, got {self.prefit!r}")

    def fit(self, X: Any, y: Any) -> AggregateThenCalibrate:
        """Fit a clone of the base classifier on single views ``X (N, D)``, labels ``y (N,)``.

        Raises:
            ValueError: bad shapes, NaN/inf or an out-of-range hyper-parameter.
            TypeError: a base model without ``predict_proba``.
        """
        self._check_params()
        if hasattr(self, "calibration_"):  # a refit model needs a new calibration
            delattr(self, "calibration_")
        as_float(X, "X")  # names X when it holds non-numbers
        X_arr, y_arr = validate_data(self, X, y, dtype=np.float64)
        self.estimator_ = clone(self.estimator).fit(X_arr, y_arr)
        self.classes_ = np.asarray(self.estimator_.classes_)
        return self

    def _view_scores(self, views: list[np.ndarray]) -> list[np.ndarray]:
        if views[0].shape[1] != self.n_features_in_:
            raise ValueError(f"views must have {self.n_features_in_} features, got {views[0].shape[1]}")
        proba = np.asarray(self.estimator_.predict_proba(np.concatenate(views)), dtype=np.float64)
        return np.split(1.0 - proba, np.cumsum([v.shape[0] for v in views])[:-1])

    def combined_scores(self, X_multi: np.ndarray | Sequence[np.ndarray]) -> np.ndarray:
        """Combined scores ``(B, C)`` of B instances (``(B, m, D)`` or a list of ``(m_b, D)`` arrays).

        Raises:
            NotFittedError: before :meth:`fit`.
        """
        check_is_fitted(self, "estimator_")
        return self._combined(_as_views(X_multi, "X_multi", self))

    def _combined(self, views: list[np.ndarray]) -> np.ndarray:
        reduce = _REDUCE[self.combine]
        return np.stack([reduce(s, axis=0) for s in self._view_scores(views)])

    def calibrate(self, X_cal: Any, y_cal: Any) -> AggregateThenCalibrate:
        """Calibrate on labelled instances ``X_cal`` (``calibrate_on="instances"``: ``(B, m, D)`` or a list of
        ``(m_b, D)`` arrays) or single views (``calibrate_on="views"``: ``(n, D)``), labels ``y_cal``.

        Raises:
            ValueError: bad shapes, a label unknown to the model, or a class without calibration instances.
            NotFittedError: :meth:`fit` was not called and ``prefit`` is False.
        """
        self._check_params()
        if self.prefit:
            check_is_fitted(self.estimator)
            self.estimator_ = self.estimator
            self.classes_ = np.asarray(self.estimator.classes_)
            n_features = getattr(self.estimator, "n_features_in_", None)
            self.n_features_in_ = int(np.shape(_first_view(X_cal))[-1] if n_features is None else n_features)
        elif not hasattr(self, "estimator_"):
            raise NotFittedError("call fit(X, y) before calibrate, or pass prefit=True with a fitted estimator")
        if self.calibrate_on == "instances":
            scores = self._combined(_as_views(X_cal, "X_cal", self))
        else:
            check_feature_names(self, X_cal, "X_cal")
            X_arr = as_float(X_cal, "X_cal")
            if X_arr.ndim != 2:
                raise ValueError(f"X_cal must be (n, D) single views when calibrate_on='views', got {X_arr.shape}")
            scores = self._view_scores([X_arr])[0]
        y_arr = np.asarray(y_cal)
        if y_arr.shape != (scores.shape[0],):
            raise ValueError(f"y_cal must have shape ({scores.shape[0]},), got {y_arr.shape}")
        unknown = np.setdiff1d(np.unique(y_arr), self.classes_)
        if unknown.size:
            raise ValueError(f"y_cal holds labels unknown to the fitted model: {unknown.tolist()}")
        missing = np.setdiff1d(self.classes_, y_arr)
        if missing.size:
            raise ValueError(
                f"y_cal has no calibration instance of class {missing.tolist()[0]!r} (missing: {missing.tolist()}); "
                "Mondrian calibration needs at least one calibration instance per class"
            )
        col = np.searchsorted(self.classes_, y_arr)
        self.calibration_ = MondrianCalibration.from_scores(scores[np.arange(y_arr.size), col], y_arr, self.classes_)
        return self

    def p_values(self, X_multi: np.ndarray | Sequence[np.ndarray]) -> np.ndarray:
        """Mondrian p-values ``(B, C)`` of the combined scores of B instances.

        Raises:
            NotFittedError: before :meth:`calibrate`.
        """
        check_is_fitted(self, "calibration_")
        return self.calibration_.pvalues(self.combined_scores(X_multi))

    def predict_set(self, X_multi: np.ndarray | Sequence[np.ndarray], *, alpha: float | None = None) -> np.ndarray:
        """Prediction sets ``(B, C)`` bool (p-value > alpha). A set may be empty: no class conforms at level alpha.

        Raises:
            NotFittedError: before :meth:`calibrate`.
        """
        level = check_alpha(self.alpha if alpha is None else alpha)
        return self.p_values(X_multi) > level


def _first_view(X: Any) -> np.ndarray:
    return np.asarray(X[0] if isinstance(X, Sequence) and not isinstance(X, np.ndarray) else X)
