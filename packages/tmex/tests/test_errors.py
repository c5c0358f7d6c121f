"""Bad input: every public entry point raises ValueError/TypeError naming the argument."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_tmex import TMEX, ate_ols, gcm_test, mcc, mean_r2, measurements, pcm_test, random_dag, tmex
from nips25_tmex.encoder import EncoderConfig
from nips25_tmex.reproduce import ReproduceConfig

Z = np.random.default_rng(0).normal(size=(50, 3))


@settings(max_examples=20, deadline=None)
@given(row=st.integers(0, 49), col=st.integers(0, 2), bad=st.sampled_from([np.nan, np.inf, -np.inf]))
def test_non_finite_latents_are_rejected_everywhere(row, col, bad):
    z = Z.copy()
    z[row, col] = bad
    with pytest.raises(ValueError, match="latents contains NaN or inf"):
        tmex(z, [Z[:, [0]]], [[1, 0, 0]])
    with pytest.raises(ValueError, match="Z contains NaN or inf"):
        gcm_test(Z[:, 0], Z[:, 1], z)
    with pytest.raises(ValueError, match="latents contains NaN"):
        mcc(z, Z)


def test_tmex_shape_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"blocks\[1\] has 40 rows"):
        tmex(Z, [Z[:, [0]], Z[:40, [1]]], [[1, 0, 0], [0, 1, 0]])
    with pytest.raises(ValueError, match=r"measurement_graph must have shape \(m, t\) = \(1, 3\)"):
        tmex(Z, [Z[:, [0]]], np.eye(3))
    with pytest.raises(ValueError, match="measurement_graph must hold only 0/1"):
        tmex(Z, [Z[:, [0]]], [[2, 0, 0]])
    with pytest.raises(ValueError, match="measurement_graph is required"):
        tmex(Z, [Z[:, [0]]])
    with pytest.raises(ValueError, match="blocks must hold at least one block"):
        tmex(Z, [])
    with pytest.raises(TypeError, match="blocks must be a sequence"):
        tmex(Z, 3.0)
    with pytest.raises(ValueError, match="latents must have at least 3 rows"):
        tmex(Z[:2], [Z[:2, [0]]], [[1, 0, 0]])
    with pytest.raises(ValueError, match="targets must be distinct"):
        tmex(Z, [Z[:, [0]]], [[1]], targets=[5])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"alpha": 0.0}, "alpha must be in"),
        ({"alpha": 1.5}, "alpha must be in"),
        ({"test": "fisher"}, "test must be one of"),
        ({"test_type": "sum"}, "test_type must be one of"),
        ({"B": 0}, "B must be a positive integer"),
        ({"correction": "bh"}, "correction must be"),
        ({"regressor": "svm"}, "regressor must be one of"),
    ],
)
def test_tmex_hyperparameters_out_of_range(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tmex(Z, [Z[:, [j]] for j in range(3)], **kwargs)


def test_tests_metrics_ate_reject_bad_input():
    with pytest.raises(ValueError, match="X has 10 rows but Y has 50"):
        gcm_test(Z[:, 0], Z[:10, 1])
    with pytest.raises(ValueError, match="Y must be 1-D"):
        gcm_test(np.zeros((50, 2, 2)), Z[:, 1])
    with pytest.raises(TypeError, match="Y must be a numeric array"):
        gcm_test(["a", "b", "c"], Z[:3, 0])
    with pytest.raises(ValueError, match="split must be in"):
        pcm_test(Z[:, 0], Z[:, 1], split=1.0)
    with pytest.raises(ValueError, match="reps must be a positive integer"):
        pcm_test(Z[:, 0], Z[:, 1], reps=0)
    with pytest.raises(ValueError, match="method must be"):
        mcc(Z, Z, method="kendall")
    with pytest.raises(ValueError, match="cv must be an integer"):
        mean_r2(Z, Z, cv=1)
    with pytest.raises(ValueError, match="representation has a constant column"):
        mcc(Z, np.ones((50, 2)))
    with pytest.raises(ValueError, match="outcome must be one variable"):
        ate_ols(Z, Z[:, 0])
    with pytest.raises(ValueError, match="adjustment has 10 rows"):
        ate_ols(Z[:, 0], Z[:, 1], Z[:10, 2])
    with pytest.raises(ValueError, match="rank-deficient"):
        ate_ols(Z[:, 0], Z[:, 1], Z[:, 1])


def test_simulators_configs_and_estimator_reject_bad_input():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="k must be an integer"):
        random_dag(0, rng)
    with pytest.raises(ValueError, match="kind must be one of"):
        measurements(Z, "blurry", rng)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="noise_sd must be"):
        measurements(Z, "noisy", rng, noise_sd=-1.0)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        EncoderConfig(steps=0)
    with pytest.raises(ValueError, match="temperature must be"):
        EncoderConfig(temperature=0.0)
    with pytest.raises(ValueError, match="demo_ks"):
        ReproduceConfig(demo_ks=(1,))
    with pytest.raises(ValueError, match="blocks as sizes must be positive and sum"):
        TMEX(blocks=[1, 1]).fit(Z, Z)
    with pytest.raises(ValueError, match="X has 10 rows but y has 50"):
        TMEX().fit(Z[:10], Z)


def test_non_finite_error_names_the_first_row_and_column():
    z = Z.copy()
    z[7, 2] = np.nan
    with pytest.raises(ValueError, match=r"latents contains NaN or inf values \(first at row 7, column 2\)"):
        tmex(z, [Z[:, [0]]], [[1, 0, 0]])


def test_complex_input_is_rejected_not_truncated():
    with pytest.raises(TypeError, match="Y must be a real numeric array"):
        gcm_test(Z[:, 0] + 1j, Z[:, 1], Z[:, 2])


def test_lm_with_too_few_samples_raises_instead_of_p_one():
    # n = 3 with an intercept and 2 conditioning latents interpolates exactly: every residual is zero and every
    # p-value would silently be 1 (T-MEX = k, blamed on 'degenerate' blocks).
    z = Z[:3]
    msg = r"regressor='lm' needs n > 3 samples \(2 covariates \+ intercept\), got n = 3"
    with pytest.raises(ValueError, match=msg):
        tmex(z, [z[:, [0]], z[:, [1]], z[:, [2]]])
    with pytest.raises(ValueError, match="regressor='lm' needs n > 3"):
        gcm_test(z[:, 0], z[:, 1], z[:, 1:])


def test_krr_with_too_few_samples_for_its_cv_raises_naming_the_regressor():
    with pytest.raises(ValueError, match=r"regressor='krr' .*5-fold.* needs n >= 10 samples, got n = 9"):
        gcm_test(Z[:9, 0], Z[:9, 1], Z[:9, 2], regressor="krr")
