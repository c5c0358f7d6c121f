r"""scikit-learn-style multi-input conformal classifier with Mondrian calibration (paper, Sec. 2-4).

Each instance arrives as m views :math:`x^1..x^m` (m may vary between instances). Every view gets a Mondrian
conformal count per candidate class; the counts of the m views are aggregated into one p-value per class with an
:class:`~nips25_conformal.aggregation.AggregationStatistic` calibrated on the exact null law, and the prediction set
is :math:`C(x^{1..m}) = \{y : p_{agg}(y) > \alpha\}`, with :math:`P(y \in C \mid Y = y) \ge 1 - \alpha` for every
class when the m views and the calibration points of class y are exchangeable.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted, validate_data

from nips25_conformal.aggregation import (
    METHODS,
    AggregationStatistic,
    Method,
    NullDistribution,
    get_statistic,
    null_distribution,
)
from nips25_conformal.baselines import VIEW_RULES
from nips25_conformal.exchangeability import exchangeability_diagnostic
from nips25_conformal.pvalues import MondrianCalibration

__all__ = ["AGGREGATIONS", "MultiInputConformalClassifier", "multi_input_pvalues"]

AGGREGATIONS = (
    "sum",
    "mean",
    "fisher",
    "min",
    "majority_refined",
    "median",
    "quantile_envelope",
    "area_envelope",
    "distance_envelope",
    *VIEW_RULES,
)
ScoreFn = Callable[[np.ndarray], np.ndarray]
_NOT_CALIBRATED = (
    "This MultiInputConformalClassifier is not calibrated yet: call fit(X, y) then calibrate(X_cal, y_cal) "
    "(or calibrate alone with prefit=True) before using this method."
)


def check_estimator_param(estimator: Any) -> None:
    """Raise ``TypeError`` unless ``estimator`` is a classifier with ``predict_proba`` (the wrappers' base model)."""
    if estimator is None or not hasattr(estimator, "predict_proba"):
        raise TypeError("estimator must be a scikit-learn classifier with predict_proba")


def check_alpha(alpha: Any) -> float:
    """``alpha`` as a float in ``(0, 1)`` (numpy scalars too); ``ValueError`` naming it otherwise (0, 1, NaN)."""
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, numbers.Real) or not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must be a float in (0, 1), got {alpha!r}")
    return float(alpha)


def check_int(name: str, value: Any, minimum: int) -> int:
    """``value`` as an ``int >= minimum`` (numpy integers too); ``ValueError`` naming ``name`` otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_feature_names(estimator: Any, X: Any, name: str) -> None:
    """``ValueError`` when ``X`` is a DataFrame whose columns differ from the ``feature_names_in_`` of the fit."""
    fitted = getattr(estimator, "feature_names_in_", None)
    columns = getattr(X, "columns", None)
    if fitted is None or columns is None:
        return
    if [str(c) for c in columns] != [str(c) for c in fitted]:
        raise ValueError(
            f"{name} has feature names {[str(c) for c in columns]}, but the estimator was fitted with feature names "
            f"{[str(c) for c in fitted]} (same names, same order)"
        )


def as_float(X: Any, name: str) -> np.ndarray:
    """``X`` as a float64 array; ``ValueError`` naming ``name`` when it holds non-numeric values."""
    try:
        return np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must hold numbers only: {err}") from None


def _one_minus_proba(proba: np.ndarray) -> np.ndarray:
    return 1.0 - proba


def _as_views(x_multi: Any, name: str = "X_multi", estimator: Any = None) -> list[np.ndarray]:
    """Validate ``(B, m, D)`` or a list of ``(m_b, D)`` arrays (or DataFrames, whose columns must match the
    ``feature_names_in_`` of ``estimator``); return the list of 2-D float arrays."""
    if isinstance(x_multi, np.ndarray):
        if x_multi.ndim != 3:
            raise ValueError(f"{name} must be (B, m, D) or a list of (m_b, D) arrays, got an array of {x_multi.shape}")
        views = list(x_multi)
    elif isinstance(x_multi, Sequence) and not isinstance(x_multi, (str, bytes)):
        views = list(x_multi)
    else:
        raise TypeError(f"{name} must be a (B, m, D) array or a list of (m_b, D) arrays, got {type(x_multi).__name__}")
    if not views:
        raise ValueError(f"{name} must hold at least one instance")
    out = []
    for b, v in enumerate(views):
        check_feature_names(estimator, v, f"{name}[{b}]")
        arr = as_float(v, f"{name}[{b}]")
        if arr.ndim != 2 or arr.shape[0] < 1:
            raise ValueError(f"{name}[{b}] must be a (m_b, D) array with m_b >= 1 views, got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name}[{b}] must be finite (no NaN or inf)")
        out.append(arr)
    if len({a.shape[1] for a in out}) != 1:
        raise ValueError(f"{name}: every view must have the same number of features D")
    return out


def multi_input_pvalues(
    calibration: MondrianCalibration,
    view_scores: Sequence[np.ndarray] | np.ndarray,
    *,
    aggregation: str | AggregationStatistic = "sum",
    method: Method = "auto",
    randomize: bool = False,
    n_mc: int = 20_000,
    enumeration_limit: int = 200_000,
    random_state: int | None = 0,
    null_cache: dict[tuple[Any, ...], NullDistribution] | None = None,
) -> np.ndarray:
    r"""Aggregated class-conditional p-values of multi-view instances from their scores.

    Args:
        calibration: the per-class calibration scores.
        view_scores: ``(B, m, C)`` array or a list of ``(m_b, C)`` arrays: score of each view at each class.
        aggregation: a statistic name or object (exact-law aggregation), or a classical rule of
            :data:`~nips25_conformal.baselines.VIEW_RULES` applied to the per-view p-values.
        method, n_mc, enumeration_limit: how the null law is computed (:func:`~nips25_conformal.null_law`).
        randomize: randomised aggregated p-values (exactly uniform under the null).
        random_state: seed of Monte Carlo null laws (one stream per (n, m)) and of the randomisation.
        null_cache: optional dict reused across calls to keep computed null laws.

    Returns:
        ``(B, C)`` float64 aggregated p-values.
    """
    scores = [np.asarray(s, dtype=np.float64) for s in view_scores]
    if not scores:
        raise ValueError("view_scores must hold at least one instance")
    n_classes = len(calibration.classes)
    for b, s in enumerate(scores):
        if s.ndim != 2 or s.shape[0] < 1 or s.shape[1] != n_classes:
            raise ValueError(f"view_scores[{b}] must have shape (m_b >= 1, {n_classes}), got {s.shape}")
    if aggregation in VIEW_RULES:
        return np.stack([VIEW_RULES[str(aggregation)](calibration.pvalues(s).T) for s in scores])
    stat = get_statistic(aggregation)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    cache = {} if null_cache is None else null_cache
    seed = 0 if random_state is None else int(random_state)
    rng = np.random.default_rng(seed)
    out = np.empty((len(scores), n_classes), dtype=np.float64)
    sizes = np.array([s.shape[0] for s in scores])
    n_per_class = calibration.n_per_class
    for m in np.unique(sizes):
        idx = np.flatnonzero(sizes == m)
        counts = np.sort(calibration.counts(np.stack([scores[i] for i in idx])), axis=1)  # (B_m, m, C)
        for c, n in enumerate(n_per_class):
            key = (stat.key(), int(n), int(m), method, n_mc, enumeration_limit, seed)
            if key not in cache:
                stream = np.random.default_rng(np.random.SeedSequence([seed, int(n), int(m)]))
                cache[key] = null_distribution(
                    stat, int(n), int(m), method=method, n_mc=n_mc, enumeration_limit=enumeration_limit, rng=stream
                )
            t = stat(counts[:, :, c], int(n))
            out[idx, c] = cache[key].pvalue(t, rng.random(t.shape) if randomize else None)
    return out


class MultiInputConformalClassifier(BaseEstimator):
    r"""Class-conditional conformal classifier for instances observed through several views (paper, Sec. 3-4).

    Wraps any scikit-learn classifier with ``predict_proba``. The non-conformity score of view x at class y is
    :math:`S(x, y) = 1 - \hat p(y \mid x)` (or ``score(proba)``); calibration is per class (Mondrian).

    Args:
        estimator: a scikit-learn classifier with ``predict_proba`` (fitted when ``prefit=True``).
        aggregation: ``"sum"`` (default; = ``"mean"``, the exact Mann-Whitney aggregation), ``"fisher"``,
            ``"min"``, ``"majority_refined"``, ``"median"``, ``"quantile_envelope"``, ``"area_envelope"``,
            ``"distance_envelope"``, an
            :class:`~nips25_conformal.aggregation.AggregationStatistic`, or a classical rule (``"single"``,
            ``"union"``, ``"intersection"``, ``"bonferroni"``, ``"majority_naive"``).
        alpha: miscoverage level in ``(0, 1)``; the set keeps y iff :math:`p_{agg}(y) > \alpha`.
        method: ``"auto"`` | ``"exact"`` | ``"enumerate"`` | ``"mc"`` (see
            :func:`~nips25_conformal.aggregation.null_distribution`).
        randomize: randomised aggregated p-values (exact coverage 1 - alpha instead of at least).
        n_mc: Monte Carlo draws when the law is sampled (p-value error sd <= 1/(2 sqrt(n_mc))).
        enumeration_limit: largest support enumerated by ``method="auto"``.
        prefit: the estimator is already fitted; :meth:`fit` is then not needed.
        score: ``"1-proba"`` or a callable mapping ``(N, C)`` probabilities to ``(N, C)`` scores.
        random_state: seed of Monte Carlo laws and randomisation.

    Attributes:
        classes_: ``(C,)`` labels, the columns of :meth:`p_values` and :meth:`predict_set`.
        estimator_: the fitted base classifier.
        calibration_: the per-class calibration scores.
        n_features_in_: number of features of one view; ``feature_names_in_`` too when fitted on a DataFrame.
        exchangeability_: the :class:`~nips25_conformal.exchangeability.ExchangeabilityDiagnostic` of the
            opt-in check in :meth:`calibrate` (only when ``check_views`` was given).

    Example:
        >>> from sklearn.datasets import load_iris
        >>> from sklearn.linear_model import LogisticRegression
        >>> X, y = load_iris(return_X_y=True)
        >>> clf = MultiInputConformalClassifier(LogisticRegression(max_iter=500), alpha=0.1)
        >>> clf = clf.fit(X[::3], y[::3]).calibrate(X[1::3], y[1::3])
        >>> clf.predict_set([X[2:8:3], X[100:106:3]]).shape
        (2, 3)
    """

    def __init__(
        self,
        estimator: Any = None,
        *,
        aggregation: str | AggregationStatistic = "sum",
        alpha: float = 0.1,
        method: Method = "auto",
        randomize: bool = False,
        n_mc: int = 20_000,
        enumeration_limit: int = 200_000,
        prefit: bool = False,
        score: str | ScoreFn = "1-proba",
        random_state: int | None = 0,
    ) -> None:
        self.estimator = estimator
        self.aggregation = aggregation
        self.alpha = alpha
        self.method = method
        self.randomize = randomize
        self.n_mc = n_mc
        self.enumeration_limit = enumeration_limit
        self.prefit = prefit
        self.score = score
        self.random_state = random_state

    def _check_params(self) -> None:
        check_estimator_param(self.estimator)
        check_alpha(self.alpha)
        if not isinstance(self.aggregation, AggregationStatistic) and self.aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {AGGREGATIONS} or an AggregationStatistic")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        for name in ("randomize", "prefit"):
            value = getattr(self, name)
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{name} must be a bool, got {value!r} of type {type(value).__name__}")
        check_int("n_mc", self.n_mc, 1)
        check_int("enumeration_limit", self.enumeration_limit, 0)
        if self.random_state is not None:
            check_int("random_state", self.random_state, 0)
        if not (self.score == "1-proba" or callable(self.score)):
            raise ValueError(f"score must be '1-proba' or a callable, got {self.score!r}")

    def fit(self, X: np.ndarray, y: np.ndarray) -> MultiInputConformalClassifier:
        """Fit a clone of the base classifier on single views ``X (N, D)``, labels ``y (N,)``.

        Raises:
            ValueError: bad shapes, NaN/inf or an out-of-range hyper-parameter.
            TypeError: a base model without ``predict_proba``, or a non-bool ``randomize`` or ``prefit``.
        """
        self._check_params()
        for name in ("calibration_", "_null_cache", "exchangeability_"):  # a refit model needs a new calibration
            if hasattr(self, name):
                delattr(self, name)
        X_arr, y_arr = self._check_xy(X, y, "X", "y")
        validate_data(self, X, reset=True, skip_check_array=True)  # n_features_in_, feature_names_in_
        self.estimator_ = clone(self.estimator).fit(X_arr, y_arr)
        self.classes_ = np.asarray(self.estimator_.classes_)
        return self

    def _check_xy(self, X: np.ndarray, y: np.ndarray, xname: str, yname: str) -> tuple[np.ndarray, np.ndarray]:
        X_arr = as_float(X, xname)
        y_arr = np.asarray(y)
        if X_arr.ndim != 2 or X_arr.shape[0] == 0:
            raise ValueError(f"{xname} must be a non-empty (N, D) array, got shape {X_arr.shape}")
        if not np.all(np.isfinite(X_arr)):
            raise ValueError(f"{xname} must be finite (no NaN or inf)")
        if y_arr.shape != (X_arr.shape[0],):
            raise ValueError(f"{yname} must have shape ({X_arr.shape[0]},), got {y_arr.shape}")
        return X_arr, y_arr

    def _scores(self, X: np.ndarray) -> np.ndarray:
        proba = np.asarray(self.estimator_.predict_proba(X), dtype=np.float64)
        if self.score == "1-proba":
            return _one_minus_proba(proba)
        out = np.asarray(self.score(proba), dtype=np.float64)  # type: ignore[operator]
        if out.shape != proba.shape:
            raise ValueError(f"score must map (N, C) probabilities to (N, C) scores, got {out.shape} for {proba.shape}")
        return out

    def calibrate(
        self,
        X_cal: np.ndarray,
        y_cal: np.ndarray,
        *,
        check_views: Sequence[np.ndarray] | np.ndarray | None = None,
        check_labels: np.ndarray | None = None,
        check_level: float = 0.01,
    ) -> MultiInputConformalClassifier:
        """Store the per-class scores of single-view calibration points ``X_cal (n, D)``, ``y_cal (n,)``.

        The guarantee needs the views of a test instance to be exchangeable with the calibration points of its
        class. Views that are correlated (frames of one recording, transformations of one image) break it and the
        sets then under-cover, silently. Pass labelled multi-view instances (``check_views``: ``(B, m, D)`` or a
        list of ``(m_b, D)`` arrays, ``check_labels``: ``(B,)``; held out from ``X_cal``) to run
        :func:`~nips25_conformal.exchangeability.exchangeability_diagnostic` on them: an
        :class:`~nips25_conformal.exchangeability.ExchangeabilityWarning` is raised when its p-value is at most
        ``check_level``, and the result is stored as ``exchangeability_``. When it warns, calibrate whole
        instances instead (:class:`~nips25_conformal.aggregate_then_calibrate.AggregateThenCalibrate`).

        Raises:
            ValueError: bad shapes, NaN/inf, a label unknown to the model, or a class without calibration points.
            TypeError: a non-bool ``randomize`` or ``prefit``.
            NotFittedError: :meth:`fit` was not called and ``prefit`` is False.
        """
        self._check_params()
        if self.prefit:
            check_is_fitted(self.estimator)
            self.estimator_ = self.estimator
            self.classes_ = np.asarray(self.estimator.classes_)
            for name in ("n_features_in_", "feature_names_in_"):
                if hasattr(self.estimator, name):
                    setattr(self, name, getattr(self.estimator, name))
        elif not hasattr(self, "estimator_"):
            raise NotFittedError("call fit(X, y) before calibrate, or pass prefit=True with a fitted estimator")
        check_feature_names(self, X_cal, "X_cal")
        X_arr, y_arr = self._check_xy(X_cal, y_cal, "X_cal", "y_cal")
        unknown = np.setdiff1d(np.unique(y_arr), self.classes_)
        if unknown.size:
            raise ValueError(f"y_cal holds labels unknown to the fitted model: {unknown.tolist()}")
        missing = np.setdiff1d(self.classes_, y_arr)
        if missing.size:
            raise ValueError(
                f"y_cal has no calibration point of class {missing.tolist()[0]!r} (missing: {missing.tolist()}); "
                "Mondrian calibration needs at least one calibration point per class"
            )
        col = np.searchsorted(self.classes_, y_arr)
        true_scores = self._scores(X_arr)[np.arange(y_arr.size), col]
        self.calibration_ = MondrianCalibration.from_scores(true_scores, y_arr, self.classes_)
        self._null_cache: dict[tuple[Any, ...], NullDistribution] = {}
        if (check_views is None) != (check_labels is None):
            raise ValueError("check_views and check_labels must be given together")
        if check_views is not None:
            views = _as_views(check_views, "check_views", self)
            labels = np.asarray(check_labels)
            if labels.shape != (len(views),):
                raise ValueError(f"check_labels must have shape ({len(views)},), got {labels.shape}")
            unknown_check = np.setdiff1d(np.unique(labels), self.classes_)
            if unknown_check.size:
                raise ValueError(f"check_labels holds labels unknown to the fitted model: {unknown_check.tolist()}")
            cols = np.searchsorted(self.classes_, labels)
            per_view = [self._scores(v)[:, c] for v, c in zip(views, cols)]
            self.exchangeability_ = exchangeability_diagnostic(per_view, labels, level=check_level)
        return self

    def view_scores(self, X_multi: np.ndarray | Sequence[np.ndarray]) -> list[np.ndarray]:
        """Scores ``(m_b, C)`` of each instance's views (one model call for all views).

        Raises:
            NotFittedError: before :meth:`fit` then :meth:`calibrate`.
        """
        check_is_fitted(self, "calibration_", msg=_NOT_CALIBRATED)
        views = _as_views(X_multi, "X_multi", self)
        n_features = getattr(self.estimator_, "n_features_in_", views[0].shape[1])
        if views[0].shape[1] != n_features:
            raise ValueError(f"X_multi views must have {n_features} features, got {views[0].shape[1]}")
        scores = self._scores(np.concatenate(views))
        return np.split(scores, np.cumsum([v.shape[0] for v in views])[:-1])

    def p_values(self, X_multi: np.ndarray | Sequence[np.ndarray]) -> np.ndarray:
        """Aggregated class-conditional p-values ``(B, C)`` of B multi-view instances.

        Args:
            X_multi: ``(B, m, D)`` array or a list of B arrays ``(m_b, D)`` (views of one instance each).

        Raises:
            NotFittedError: before :meth:`fit` then :meth:`calibrate`.
        """
        check_is_fitted(self, "calibration_", msg=_NOT_CALIBRATED)
        self._check_params()
        return multi_input_pvalues(
            self.calibration_,
            self.view_scores(X_multi),
            aggregation=self.aggregation,
            method=self.method,
            randomize=self.randomize,
            n_mc=self.n_mc,
            enumeration_limit=self.enumeration_limit,
            random_state=self.random_state,
            null_cache=self._null_cache,
        )

    def predict_set(self, X_multi: np.ndarray | Sequence[np.ndarray], *, alpha: float | None = None) -> np.ndarray:
        """Prediction sets ``(B, C)`` bool: column c is True iff ``classes_[c]`` is kept (p-value > alpha).

        A row may be all False (an **empty set**): no class's aggregated p-value exceeds alpha, i.e. the instance
        conforms to no class at this level. Empty sets count as misses in the coverage and as size 0; they are
        frequent when views are not exchangeable with the calibration points (see :meth:`calibrate`) or alpha is
        large, and rare otherwise. Do not replace them by the arg-max class: that breaks the guarantee's accounting.

        Raises:
            NotFittedError: before :meth:`fit` then :meth:`calibrate`.
        """
        check_is_fitted(self, "calibration_", msg=_NOT_CALIBRATED)
        level = check_alpha(self.alpha if alpha is None else alpha)
        return self.p_values(X_multi) > level
