"""The scikit-learn-style estimator: agreement with crepes, monotonicity, coverage, determinism, bad input."""

import numpy as np
import pytest
from nips25_conformal import (
    AGGREGATIONS,
    MultiInputConformalClassifier,
    class_conditional_pvalues,
    mean_set_size,
    per_class_coverage,
)
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=1500, n_features=6, n_informative=4, n_classes=4, n_clusters_per_class=1, class_sep=0.6,
        random_state=0,
    )  # fmt: skip
    return X, y


@pytest.fixture(scope="module")
def fitted(data):
    X, y = data
    clf = MultiInputConformalClassifier(GaussianNB(), alpha=0.1)
    return clf.fit(X[:300], y[:300]).calibrate(X[300:700], y[300:700])


def test_single_view_equals_crepes_mondrian(fitted, data):
    """m=1: our p-values = crepes' non-smoothed Mondrian p-values; sets equal where alpha(n_y+1) is not an integer."""
    crepes = pytest.importorskip("crepes")
    X, y = data
    est = fitted.estimator_
    cal_alphas = 1 - est.predict_proba(X[300:700])[np.arange(400), y[300:700]]
    test_alphas = 1 - est.predict_proba(X[700:900])
    cc = crepes.ConformalClassifier().fit(cal_alphas, bins=y[300:700])
    ref = np.column_stack([cc.predict_p(test_alphas, np.full(200, c), smoothing=False)[:, c] for c in range(4)])
    ours = fitted.p_values(X[700:900, None, :])
    np.testing.assert_allclose(ours, ref, atol=1e-12)
    n_y = np.bincount(y[300:700])
    assert not np.any(np.isclose(0.1 * (n_y + 1), np.round(0.1 * (n_y + 1))))
    ref_sets = np.column_stack(
        [cc.predict_set(test_alphas, np.full(200, c), confidence=0.9, smoothing=False)[:, c] for c in range(4)]
    ).astype(bool)
    np.testing.assert_array_equal(fitted.predict_set(X[700:900, None, :]), ref_sets)
    direct = class_conditional_pvalues(cal_alphas, y[300:700], test_alphas)
    np.testing.assert_allclose(direct, ref, atol=1e-12)


@pytest.mark.parametrize("aggregation", AGGREGATIONS)
def test_sets_monotone_in_alpha(fitted, data, aggregation):
    """Larger alpha gives nested (smaller or equal) sets, for every aggregation."""
    X, _ = data
    X_all, y_all = data
    clf = MultiInputConformalClassifier(fitted.estimator_, prefit=True, aggregation=aggregation)
    clf.calibrate(X_all[300:700], y_all[300:700])
    views = X[900:1200].reshape(100, 3, 6)
    previous = None
    for alpha in (0.02, 0.05, 0.1, 0.2, 0.4):
        sets = clf.predict_set(views, alpha=alpha)
        if previous is not None:
            assert np.all(sets <= previous)
        previous = sets


def test_class_conditional_coverage_randomized(data):
    """Randomised sum aggregation: per-class coverage = 1 - alpha within 4 binomial SE (exchangeable views)."""
    X, y = data
    clf = MultiInputConformalClassifier(GaussianNB(), alpha=0.2, randomize=True, random_state=1)
    clf.fit(X[:300], y[:300])
    rng = np.random.default_rng(0)
    hits = {c: [] for c in range(4)}
    pool_x, pool_y = X[300:], y[300:]
    for _rep in range(40):
        perm = rng.permutation(len(pool_y))
        cal, test = perm[:400], perm[400:]
        clf.calibrate(pool_x[cal], pool_y[cal])
        inst_x, inst_y = [], []
        for c in range(4):
            idx = test[pool_y[test] == c][:30].reshape(10, 3)
            inst_x += [pool_x[i] for i in idx]
            inst_y += [c] * 10
        sets = clf.predict_set(inst_x)
        for c, cov in per_class_coverage(sets, np.array(inst_y), clf.classes_).items():
            hits[c].append(cov)
    for c, covs in hits.items():
        assert abs(np.mean(covs) - 0.8) <= 4 * np.std(covs) / np.sqrt(len(covs)) + 0.01, (c, np.mean(covs))


def test_more_views_give_smaller_sets(fitted, data):
    """Exchangeable views of one class: mean sum-aggregated set size decreases from m=1 to m=5."""
    X, y = data
    sizes = []
    for m in (1, 3, 5):
        inst = [X[900:][y[900:] == c][: 20 * m].reshape(20, m, 6) for c in range(4)]
        sizes.append(mean_set_size(fitted.predict_set(np.concatenate(inst))))
    assert sizes[0] > sizes[1] > sizes[2]


def test_varying_number_of_views_matches_grouped(fitted, data):
    """A list with m_b in {1, 2, 4} gives the same p-values as each group alone."""
    X, _ = data
    views = [X[900:901], X[901:903], X[903:907], X[907:909]]
    together = fitted.p_values(views)
    alone = np.vstack([fitted.p_values([v]) for v in views])
    np.testing.assert_allclose(together, alone)


def test_deterministic_under_seed(data):
    """Same random_state: identical Monte Carlo and randomised p-values."""
    X, y = data

    def run():
        clf = MultiInputConformalClassifier(LogisticRegression(max_iter=300), aggregation="fisher", method="mc",
                                            n_mc=2000, randomize=True, random_state=5)  # fmt: skip
        return clf.fit(X[:300], y[:300]).calibrate(X[300:700], y[300:700]).p_values(X[900:960].reshape(20, 3, 6))

    np.testing.assert_array_equal(run(), run())


def test_prefit_and_sklearn_params(data):
    """prefit uses the given model as is; get_params/set_params/clone work like any sklearn estimator."""
    X, y = data
    model = GaussianNB().fit(X[:300], y[:300])
    clf = MultiInputConformalClassifier(model, prefit=True, aggregation="fisher").calibrate(X[300:700], y[300:700])
    assert clf.estimator_ is model
    assert clf.get_params()["aggregation"] == "fisher"
    assert clone(clf).set_params(alpha=0.2).alpha == 0.2
    assert clf.p_values(X[900:906].reshape(2, 3, 6)).shape == (2, 4)


def test_bad_input(fitted, data):
    X, y = data
    with pytest.raises(ValueError, match="alpha must be"):
        MultiInputConformalClassifier(GaussianNB(), alpha=1.5).fit(X[:50], y[:50])
    with pytest.raises(ValueError, match="aggregation must be"):
        MultiInputConformalClassifier(GaussianNB(), aggregation="nope").fit(X[:50], y[:50])
    with pytest.raises(TypeError, match="estimator must be"):
        MultiInputConformalClassifier(object()).fit(X[:50], y[:50])
    with pytest.raises(ValueError, match="X must be finite"):
        MultiInputConformalClassifier(GaussianNB()).fit(np.full((5, 6), np.nan), y[:5])
    with pytest.raises(ValueError, match="y must have shape"):
        MultiInputConformalClassifier(GaussianNB()).fit(X[:50], y[:40])
    with pytest.raises(ValueError, match="X_cal must be a non-empty"):
        clone(fitted).fit(X[:300], y[:300]).calibrate(X[:0], y[:0])
    with pytest.raises(ValueError, match="no calibration point of class"):
        clone(fitted).fit(X[:300], y[:300]).calibrate(X[y == 0][:20], y[y == 0][:20])
    with pytest.raises(ValueError, match="call fit"):
        clone(fitted).calibrate(X[:50], y[:50])
    with pytest.raises(ValueError, match="at least one instance"):
        fitted.predict_set([])
    with pytest.raises(ValueError, match=r"X_multi\[0\] must be finite"):
        fitted.predict_set([np.full((2, 6), np.inf)])
    with pytest.raises(ValueError, match="m_b >= 1"):
        fitted.predict_set([np.zeros((0, 6))])
    with pytest.raises(ValueError, match="features"):
        fitted.predict_set([np.zeros((2, 5))])
    with pytest.raises(ValueError, match="alpha must be"):
        fitted.predict_set([X[:2]], alpha=0.0)
    with pytest.raises(TypeError, match="X_multi must be"):
        fitted.predict_set("abc")
    with pytest.raises(TypeError, match="sets must be boolean"):
        mean_set_size(np.ones((2, 2)))


@pytest.mark.parametrize("name", ["randomize", "prefit"])
def test_bool_hyperparameters_are_validated(data, name):
    """A string such as 'no' is not silently truthy: fit and calibrate raise a TypeError naming the argument."""
    X, y = data
    clf = MultiInputConformalClassifier(GaussianNB(), **{name: "no"})
    with pytest.raises(TypeError, match=f"{name} must be a bool"):
        clf.fit(X[:300], y[:300])
    with pytest.raises(TypeError, match=f"{name} must be a bool"):
        clf.calibrate(X[300:700], y[300:700])


def test_not_calibrated_raises_not_fitted_error(data):
    """Using the model before fit, or after fit but before calibrate, raises NotFittedError with the remedy."""
    from sklearn.exceptions import NotFittedError

    X, y = data
    views = X[:6].reshape(2, 3, 6)
    fresh = MultiInputConformalClassifier(GaussianNB())
    fit_only = MultiInputConformalClassifier(GaussianNB()).fit(X[:300], y[:300])
    for clf in (fresh, fit_only):
        for call in (clf.predict_set, clf.p_values, clf.view_scores):
            with pytest.raises(NotFittedError, match="call fit.*then calibrate"):
                call(views)


def test_missing_class_message_names_y_cal_and_plain_label(data):
    """The error names calibrate's argument y_cal and prints the label as a plain int, not np.int64(3)."""
    X, y = data
    clf = MultiInputConformalClassifier(GaussianNB()).fit(X[:300], y[:300])
    keep = y != 3
    with pytest.raises(ValueError, match=r"y_cal has no calibration point of class 3 ") as err:
        clf.calibrate(X[keep][:200], y[keep][:200])
    assert "np.int64" not in str(err.value)
