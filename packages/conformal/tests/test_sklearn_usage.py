"""How a scikit-learn user drives the estimators: refitting, DataFrames, numpy scalars from a grid, bad params."""

import numpy as np
import pytest
from nips25_conformal import AggregateThenCalibrate, MultiInputConformalClassifier
from sklearn.datasets import load_iris
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


def _lr():
    return LogisticRegression(max_iter=500)


def test_refit_drops_the_old_calibration(iris) -> None:
    """A refit model with the old calibration scores has no guarantee: fit must forget calibrate."""
    X, y = iris
    clf = MultiInputConformalClassifier(_lr()).fit(X, y).calibrate(X[1::3], y[1::3])
    clf.fit(X, np.random.default_rng(0).permutation(y))
    with pytest.raises(NotFittedError, match="calibrate"):
        clf.predict_set([X[:3]])
    atc = AggregateThenCalibrate(_lr()).fit(X, y).calibrate(X[:, None], y)
    atc.fit(X[:100], y[:100])
    with pytest.raises(NotFittedError):
        atc.predict_set([X[:2]])


@pytest.mark.parametrize("cls", [MultiInputConformalClassifier, AggregateThenCalibrate])
def test_dataframe_views_with_other_columns_are_refused(iris, cls) -> None:
    """Like scikit-learn, views whose column names differ from the fit's are an error, not a silent reorder."""
    pd = pytest.importorskip("pandas")
    X, y = iris
    df = pd.DataFrame(X, columns=list("abcd"))
    est = cls(_lr()).fit(df, y)
    views = [df.iloc[:3], df.iloc[50:53]]
    if cls is MultiInputConformalClassifier:
        est.calibrate(df, y)
        with pytest.raises(ValueError, match="X_cal.*feature names"):
            est.calibrate(df[list("dcba")], y)
    else:
        est.calibrate([df.iloc[i : i + 2] for i in range(0, 150, 2)], y[::2])
        with pytest.raises(ValueError, match="X_cal\\[0\\].*feature names"):
            est.calibrate([df.iloc[i : i + 2][list("dcba")] for i in range(0, 150, 2)], y[::2])
    good = est.predict_set(views)
    assert np.array_equal(good, est.predict_set([v.to_numpy() for v in views]))
    with pytest.raises(ValueError, match="X_multi\\[1\\].*feature names"):
        est.predict_set([views[0], views[1][list("dcba")]])


def test_numpy_scalar_hyper_parameters_are_accepted(iris) -> None:
    """Values from np.linspace / np.arange (np.float32, np.int64) are valid hyper-parameters."""
    X, y = iris
    ref = MultiInputConformalClassifier(_lr(), aggregation="fisher", alpha=0.25, n_mc=500, enumeration_limit=10)
    got = MultiInputConformalClassifier(
        _lr(), aggregation="fisher", alpha=np.float32(0.25), n_mc=np.int64(500), enumeration_limit=np.int64(10),
        random_state=np.int64(0),
    )  # fmt: skip
    for est in (ref, got):
        est.fit(X[::3], y[::3]).calibrate(X[1::3], y[1::3])
    views = [X[2:8:3], X[100:106:3]]
    assert np.array_equal(ref.p_values(views), got.p_values(views))
    assert np.array_equal(ref.predict_set(views, alpha=0.2), got.predict_set(views, alpha=np.float32(0.2)))
    AggregateThenCalibrate(_lr(), alpha=np.float32(0.1)).fit(X, y)


@pytest.mark.parametrize(
    ("param", "value", "exc"),
    [
        ("enumeration_limit", -1, ValueError),
        ("enumeration_limit", "x", ValueError),
        ("enumeration_limit", 2.5, ValueError),
        ("random_state", "x", ValueError),
        ("random_state", -3, ValueError),
        ("random_state", np.random.RandomState(0), ValueError),
        ("n_mc", 2.0, ValueError),
    ],
)
def test_bad_hyper_parameters_name_themselves(iris, param, value, exc) -> None:
    X, y = iris
    with pytest.raises(exc, match=param):
        MultiInputConformalClassifier(_lr(), **{param: value}).fit(X, y)


def test_score_callable_of_the_wrong_shape_is_named(iris) -> None:
    X, y = iris
    clf = MultiInputConformalClassifier(_lr(), score=lambda p: p[:, 0]).fit(X, y)
    with pytest.raises(ValueError, match="score"):
        clf.calibrate(X, y)


@pytest.mark.parametrize("cls", [MultiInputConformalClassifier, AggregateThenCalibrate])
def test_non_numeric_features_name_the_argument(iris, cls) -> None:
    X, y = iris
    bad = np.where(X > 5, "a", X).astype(object)
    with pytest.raises(ValueError, match="^X "):
        cls(_lr()).fit(bad, y)


def test_aggregate_then_calibrate_errors_name_its_arguments(iris) -> None:
    X, y = iris
    atc = AggregateThenCalibrate(_lr()).fit(X, y)
    with pytest.raises(ValueError, match="X_cal must be"):
        atc.calibrate(X, y)  # single views where instances are expected
    with pytest.raises(ValueError, match="y_cal has no calibration instance of class 2"):
        atc.calibrate(X[:100, None], y[:100])
