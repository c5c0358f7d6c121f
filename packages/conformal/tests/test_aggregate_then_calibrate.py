"""AggregateThenCalibrate: instance-level calibration keeps coverage where correlated views break the method."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from nips25_conformal import AggregateThenCalibrate, ExchangeabilityWarning, MultiInputConformalClassifier
from sklearn.datasets import load_digits
from sklearn.naive_bayes import GaussianNB


def _correlated_instances(X, y, idx, m, rng, noise=0.3):  # type: ignore[no-untyped-def]
    """m near-copies of one image per instance: views far more alike than two images of the class."""
    return [X[i] + rng.normal(0.0, noise, size=(m, X.shape[1])) for i in idx], y[idx]


@pytest.fixture(scope="module")
def digits():  # type: ignore[no-untyped-def]
    X, y = load_digits(return_X_y=True)
    perm = np.random.default_rng(0).permutation(len(y))
    return X[perm], y[perm]


def test_instance_calibration_keeps_coverage_on_correlated_views(digits) -> None:  # type: ignore[no-untyped-def]
    X, y = digits
    rng = np.random.default_rng(1)
    train, cal_single, cal_inst, test = np.arange(300), np.arange(300, 800), np.arange(800, 1300), np.arange(1300, 1797)
    views_cal, y_cal = _correlated_instances(X, y, cal_inst, 5, rng)
    views_test, y_test = _correlated_instances(X, y, test, 5, rng)
    atc = AggregateThenCalibrate(GaussianNB(), alpha=0.1).fit(X[train], y[train]).calibrate(views_cal, y_cal)
    sets = atc.predict_set(views_test)
    covered = sets[np.arange(y_test.size), np.searchsorted(atc.classes_, y_test)]
    # split conformal on exchangeable instances: coverage >= 0.9 in expectation; 497 test instances -> SE ~ 0.013
    assert covered.mean() >= 0.9 - 3 * np.sqrt(0.09 / y_test.size)
    method = MultiInputConformalClassifier(GaussianNB(), alpha=0.1).fit(X[train], y[train])
    method.calibrate(X[cal_single], y[cal_single])
    assert method.predict_set(views_test).sum() > 0.0 and atc.n_features_in_ == 64


def test_mean_of_one_minus_proba_is_the_averaged_probability(digits) -> None:  # type: ignore[no-untyped-def]
    X, y = digits
    atc = AggregateThenCalibrate(GaussianNB()).fit(X[:300], y[:300])
    views = [X[300:303], X[303:306]]
    expected = np.stack([1.0 - atc.estimator_.predict_proba(v).mean(axis=0) for v in views])
    np.testing.assert_allclose(atc.combined_scores(views), expected, atol=1e-12)


def test_views_calibration_is_the_naive_baseline(digits) -> None:  # type: ignore[no-untyped-def]
    X, y = digits
    atc = AggregateThenCalibrate(GaussianNB(), calibrate_on="views").fit(X[:300], y[:300])
    atc.calibrate(X[300:800], y[300:800])
    assert atc.predict_set([X[900:903]]).shape == (1, 10)
    with pytest.raises(ValueError, match="single views"):
        atc.calibrate([X[300:303]] * 2, y[:2])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"combine": "sum"}, "combine"), ({"calibrate_on": "both"}, "calibrate_on"), ({"alpha": 1.5}, "alpha")],
)
def test_bad_parameters_are_named(digits, kwargs, match) -> None:  # type: ignore[no-untyped-def]
    X, y = digits
    with pytest.raises(ValueError, match=match):
        AggregateThenCalibrate(GaussianNB(), **kwargs).fit(X[:100], y[:100])


def test_opt_in_check_in_calibrate_warns_on_correlated_views(digits) -> None:  # type: ignore[no-untyped-def]
    X, y = digits
    rng = np.random.default_rng(2)
    clf = MultiInputConformalClassifier(GaussianNB()).fit(X[:300], y[:300])
    views, labels = _correlated_instances(X, y, np.arange(800, 1000), 3, rng)
    with pytest.warns(ExchangeabilityWarning, match="AggregateThenCalibrate"):
        clf.calibrate(X[300:800], y[300:800], check_views=views, check_labels=labels)
    assert clf.exchangeability_.p_value <= 0.01
    distinct = [X[np.flatnonzero(y == c)[k : k + 3]] for c in range(10) for k in range(0, 30, 3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExchangeabilityWarning)  # distinct images of a class: no warning
        clf.calibrate(X[300:800], y[300:800], check_views=distinct, check_labels=np.repeat(np.arange(10), 10))
    assert clf.exchangeability_.p_value > 0.01
    with pytest.raises(ValueError, match="together"):
        clf.calibrate(X[300:800], y[300:800], check_views=views)
