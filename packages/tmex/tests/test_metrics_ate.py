"""Baselines (MCC, R²) and the downstream ATE: known answers."""

import itertools

import numpy as np
import pytest
from nips25_tmex import FiveLatentSCM, ate_ols, mcc, mean_r2
from nips25_tmex.metrics import correlation_matrix


def test_mcc_of_permuted_sign_flipped_copy_is_one():
    z = np.random.default_rng(0).normal(size=(300, 4))
    h = -z[:, [2, 0, 3, 1]] * np.array([1.0, -2.0, 3.0, -0.5])
    assert mcc(z, h) == pytest.approx(1.0, abs=1e-12)
    assert mcc(z, h, method="spearman") == pytest.approx(1.0, abs=1e-12)


def test_mcc_matching_agrees_with_brute_force():
    """Hungarian matching = the best of all k! permutations (k = 5)."""
    rng = np.random.default_rng(1)
    z = rng.normal(size=(200, 5))
    h = z @ rng.normal(size=(5, 5)) + rng.normal(size=(200, 5))
    c = correlation_matrix(z, h)
    brute = max(np.mean([c[i, p[i]] for i in range(5)]) for p in itertools.permutations(range(5)))
    assert mcc(z, h) == pytest.approx(brute, rel=1e-12)


def test_mcc_of_a_representation_missing_a_latent_is_not_perfect():
    """The review's case: z[:, :2] for a 3-latent z scored 1.0 under a 1/min(k, d) normalisation."""
    z = np.random.default_rng(4).normal(size=(500, 3))
    assert mcc(z, z[:, :2]) == pytest.approx(2 / 3, abs=1e-12)
    assert mcc(z, z[:, :1]) == pytest.approx(1 / 3, abs=1e-12)
    assert mcc(z, np.column_stack([z, z[:, 0]])) == pytest.approx(1.0, abs=1e-12)  # an extra column: not penalised


def test_mean_r2_is_one_for_invertible_linear_map_and_near_zero_for_noise():
    rng = np.random.default_rng(2)
    z = rng.normal(size=(400, 3))
    assert mean_r2(z, z @ rng.normal(size=(3, 3))) == pytest.approx(1.0, abs=1e-10)
    assert mean_r2(z, rng.normal(size=(400, 3))) < 0.05


def test_ate_with_true_confounder_within_three_standard_errors():
    """z0_hat = z0 in the five-latent SCM: the OLS ATE covers tau = 1 within 3 SE."""
    scm = FiveLatentSCM()
    z = scm.sample(2000, np.random.default_rng(3))
    res = ate_ols(z[:, 4], z[:, 3], z[:, 0])
    assert abs(res.estimate - scm.tau) < 3 * res.std_error


def test_ate_matches_closed_form_and_descendant_adjustment_biases():
    """OLS coefficient equals numpy.linalg.lstsq; adjusting for the descendant z1 moves the estimate away from tau."""
    scm = FiveLatentSCM()
    z = scm.sample(5000, np.random.default_rng(4))
    design = np.column_stack([np.ones(5000), z[:, 3], z[:, 0]])
    beta = np.linalg.lstsq(design, z[:, 4], rcond=None)[0]
    assert ate_ols(z[:, 4], z[:, 3], z[:, 0]).estimate == pytest.approx(beta[1], rel=1e-10)
    bad = ate_ols(z[:, 4], z[:, 3], z[:, [0, 1]])
    assert abs(bad.estimate - scm.tau) > 10 * bad.std_error
