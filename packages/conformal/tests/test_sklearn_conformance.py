"""The applicable scikit-learn estimator checks (the estimators are conformal wrappers, not plain classifiers)."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_conformal import AggregateThenCalibrate, MultiInputConformalClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.utils import estimator_checks as ec

# Checks that need only fit/get_params/set_params/clone; predict-based checks do not apply (no predict: the output
# is a prediction set from predict_set).
CHECKS = [
    ec.check_n_features_in,
    ec.check_get_params_invariance,
    ec.check_set_params,
    ec.check_no_attributes_set_in_init,
    ec.check_parameters_default_constructible,
    ec.check_dont_overwrite_parameters,
    ec.check_estimators_overwrite_params,
    ec.check_dict_unchanged,
    ec.check_fit_check_is_fitted,
    ec.check_fit2d_1sample,
    ec.check_estimators_nan_inf,
    ec.check_estimators_empty_data_messages,
    ec.check_complex_data,
    ec.check_fit2d_1feature,
    ec.check_supervised_y_no_nan,
]
ESTIMATORS = [
    MultiInputConformalClassifier(LogisticRegression(max_iter=200)),
    AggregateThenCalibrate(LogisticRegression(max_iter=200)),
]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_sklearn_check(estimator, check) -> None:  # type: ignore[no-untyped-def]
    check(type(estimator).__name__, estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_feature_names_in_from_a_dataframe(estimator) -> None:  # type: ignore[no-untyped-def]
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "c"])
    est = estimator.fit(frame, np.arange(40) % 2)
    assert est.n_features_in_ == 3 and list(est.feature_names_in_) == ["a", "b", "c"]
