"""Known-answer and calibration tests of the generalised covariance measure."""

import math
import warnings

import numpy as np
import pytest
from nips25_tmex import DegenerateResidualWarning, gcm_test
from scipy import stats


def test_univariate_statistic_equals_hand_computation():
    """6-point example, marginal test: residuals are the centred values, T = 87 sqrt(3) / 48 by hand."""
    x = np.array([1.0, 2, 3, 4, 5, 6])
    y = np.array([2.0, 1, 4, 3, 6, 5])
    # r_x = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], r_y = [-1.5, -2.5, 0.5, -0.5, 2.5, 1.5]
    # R = [3.75, 3.75, -0.25, -0.25, 3.75, 3.75]: mean 29/12, mean(R^2) - mean^2 = 32/9
    expected = math.sqrt(6) * (29 / 12) / math.sqrt(32 / 9)
    assert expected == pytest.approx(87 * math.sqrt(3) / 48, rel=1e-12)
    res = gcm_test(y, x)
    assert res.statistic == pytest.approx(expected, rel=1e-10)
    assert res.pvalue == pytest.approx(2 * stats.norm.sf(expected), rel=1e-10)
    assert res.df == 1


def test_univariate_statistic_with_conditioning_matches_polyfit_residuals():
    """With a 1-D Z the residuals are those of a degree-1 polynomial fit (independent reference: numpy.polyfit)."""
    rng = np.random.default_rng(3)
    z = rng.normal(size=6)
    x = z + rng.normal(size=6)
    y = 2 * z + rng.normal(size=6)
    rx = x - np.polyval(np.polyfit(z, x, 1), z)
    ry = y - np.polyval(np.polyfit(z, y, 1), z)
    prod = rx * ry
    expected = np.sqrt(6) * prod.mean() / np.sqrt(np.mean(prod**2) - prod.mean() ** 2)
    assert gcm_test(y, x, z).statistic == pytest.approx(expected, rel=1e-8)


def _null_sample(rng, n, dy=1):
    z = rng.normal(size=(n, 2))
    x = z @ np.array([1.0, -0.5]) + rng.normal(size=n)
    y = z @ rng.normal(size=(2, dy)) + rng.normal(size=(n, dy))
    return y, x, z


def test_pvalues_uniform_under_null_ks():
    """Under H0 (linear-Gaussian, LM regressions) the p-values are uniform: KS p > 0.01 over 500 repetitions."""
    rng = np.random.default_rng(0)
    p = [gcm_test(*_null_sample(rng, 200)).pvalue for _ in range(500)]
    assert stats.kstest(p, "uniform").pvalue > 0.01


def test_power_under_clear_alternative():
    rng = np.random.default_rng(1)
    y, x, z = _null_sample(rng, 500)
    assert gcm_test(y[:, 0] + 0.5 * x, x, z).pvalue < 1e-6


def test_one_dimensional_test_types_agree():
    """For 1-D X and Y, 'max', 'quadratic' and the univariate test give the same p-value (chi2_1 = N(0,1)^2)."""
    rng = np.random.default_rng(2)
    y, x, z = _null_sample(rng, 300)
    y = y[:, 0] + 0.1 * x
    p_max = gcm_test(y, x, z, test_type="max").pvalue
    p_quad = gcm_test(y, x, z, test_type="quadratic").pvalue
    t = gcm_test(y, x, z).statistic
    assert p_max == pytest.approx(p_quad, rel=1e-9)
    assert p_quad == pytest.approx(stats.chi2.sf(t**2, 1), rel=1e-9)


def test_quadratic_statistic_is_chi2_with_two_products():
    """Two independent residual products under H0: the quadratic statistic follows chi2(2) (KS p > 0.01)."""
    rng = np.random.default_rng(4)
    t = [gcm_test(*_null_sample(rng, 300, dy=2), test_type="quadratic").statistic for _ in range(300)]
    assert stats.kstest(t, stats.chi2(2).cdf).pvalue > 0.01


def test_max_bootstrap_is_calibrated_for_multivariate_block():
    """The normalised max statistic with the multiplier bootstrap: uniform p-values under H0 (KS p > 0.01)."""
    rng = np.random.default_rng(5)
    p = [gcm_test(*_null_sample(rng, 200, dy=3), B=199, random_state=i).pvalue for i in range(200)]
    assert stats.kstest(p, "uniform").pvalue > 0.01
    y, x, z = _null_sample(rng, 400, dy=3)
    y[:, 2] += 0.4 * x
    assert gcm_test(y, x, z, B=199).pvalue <= 0.01


def test_degenerate_residual_gives_p_one_with_warning():
    """Y an exact function of Z: the residual is zero, so the test is defined as p = 1 (never NaN)."""
    rng = np.random.default_rng(6)
    z = rng.normal(size=(100, 2))
    x = rng.normal(size=100)
    with pytest.warns(DegenerateResidualWarning):
        res = gcm_test(z[:, 0] * 3 + 1, x, z)
    assert res.pvalue == 1.0


def test_vectorised_univariate_columns_equal_one_call_per_column():
    from nips25_tmex.gcm import degenerate_columns, gcm_from_residuals, gcm_univariate_columns

    rng = np.random.default_rng(3)
    n = 300
    r_x = rng.normal(size=(n, 1))
    r_y = rng.normal(size=(n, 6)) + 0.3 * r_x  # dependent columns: small p-values too
    r_y[:, 2] = 0.0  # a degenerate residual
    target = rng.normal(size=(n, 6))
    keep_y = degenerate_columns(r_y, target, 1e-10)
    p, t, n_degenerate = gcm_univariate_columns(r_x, r_y, keep_x=True, keep_y=keep_y)
    assert n_degenerate == 1
    for b in range(6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateResidualWarning)
            one = gcm_from_residuals(r_x, r_y[:, [b]], keep_x=np.array([True]), keep_y=keep_y[[b]])
        assert p[b] == pytest.approx(one.pvalue, rel=1e-12, abs=1e-300)
        assert t[b] == pytest.approx(one.statistic, rel=1e-12, abs=0.0)
    p_off, _, n_off = gcm_univariate_columns(r_x, r_y, keep_x=False, keep_y=keep_y)
    assert n_off == 6 and np.all(p_off == 1.0)


def test_tmex_with_1d_blocks_equals_gcm_test_per_pair():
    from nips25_tmex import location_scale_scm, measurements, random_dag, tmex

    rng = np.random.default_rng(0)
    z = location_scale_scm(400, random_dag(4, rng), rng)
    hz = measurements(z, "noisy", rng)
    res = tmex(z, hz)
    for i, block in enumerate(hz):
        for j in range(z.shape[1]):
            ref = gcm_test(block, z[:, j], np.delete(z, j, axis=1)).pvalue
            assert res.p_values[i, j] == pytest.approx(ref, rel=1e-9, abs=1e-300)
