"""Known answers for the limit means and covariances (closed forms, hand values, simulation)."""

import jax
import numpy as np
import pytest
from nips25_gnnclt import (
    CSBM,
    class_moments,
    graph_power,
    limit_covs,
    limit_means,
    naive_covs,
    sample_csbm,
    scaled_centered,
    uncentered_covs,
)


def test_limit_means_and_covs_hand_values(model):
    """Q = B diag(pi) = [[.75,.25],[.25,.5]]; m^(1) = Q; Gamma^(1)_0 = .75 (e1e1^T + S) + .25 (e2e2^T + S)."""
    q = np.array([[0.75, 0.25], [0.25, 0.5]])
    np.testing.assert_allclose(limit_means(model, 1), q, atol=1e-15)
    np.testing.assert_allclose(limit_means(model, 3), q @ q @ q, atol=1e-15)
    s = 0.25 * np.eye(2)
    g0 = 0.75 * (np.diag([1.0, 0.0]) + s) + 0.25 * (np.diag([0.0, 1.0]) + s)
    np.testing.assert_allclose(limit_covs(model, 1)[0], g0, atol=1e-15)
    m1 = q  # rows m^(1)_c
    g2_1 = 0.25 * np.outer(m1[0], m1[0]) + 0.5 * np.outer(m1[1], m1[1])
    np.testing.assert_allclose(limit_covs(model, 2)[1], g2_1, atol=1e-15)
    np.testing.assert_allclose(uncentered_covs(model, 2, 50.0), limit_covs(model, 2) / 50.0)
    np.testing.assert_allclose(naive_covs(model, 3)[0], 1.0 * s)


def test_single_class_closed_form():
    """K = 1 (Erdos-Renyi), k = 1: Gamma = B pi (mu mu^T + Sigma) = mu mu^T + Sigma for B = 1."""
    mu, sigma = np.array([1.0, -2.0]), np.array([[0.5, 0.1], [0.1, 0.3]])
    m = CSBM(pi=[1.0], B=[[1.0]], means=mu[None], cov=sigma)
    np.testing.assert_allclose(limit_covs(m, 1)[0], np.outer(mu, mu) + sigma, atol=1e-15)


def test_single_class_simulation_matches_closed_form():
    """Simulated ER graph, k = 1: Cov(Z) is mu mu^T + Sigma within sampling error (n = 6000)."""
    mu, sigma = np.array([1.0, -0.5]), np.array([[0.5, 0.1], [0.1, 0.3]])
    m = CSBM(pi=[1.0], B=[[1.0]], means=mu[None], cov=sigma)
    s = sample_csbm(m, jax.random.key(3), n=6000, nu=30.0)
    y = np.asarray(s.y)
    fitted = m.conditioned_on(y, np.asarray(s.X))
    Z = scaled_centered(graph_power(s.A, s.X, 1), y, fitted, nu=30.0, k=1)
    means, covs = class_moments(Z, y, 1)
    target = np.outer(mu, mu) + sigma
    # entrywise standard error of a covariance estimate ~ sqrt(2/n) * scale; 6 standard errors
    assert np.abs(covs[0] - target).max() <= 6 * np.sqrt(2 / 6000) * np.abs(target).max()
    assert np.abs(means[0]).max() <= 6 * np.sqrt(np.abs(target).max() / 6000)


def test_scaled_centered_hand_value(model):
    """Z = (H - nu^k Q^k M) / nu^(k - 1/2) on a hand example."""
    H = np.array([[10.0, 3.0], [2.0, 6.0]])
    Z = scaled_centered(H, np.array([0, 1]), model, nu=4.0, k=1)
    expected = (H - 4.0 * limit_means(model, 1)[[0, 1]]) / 2.0
    np.testing.assert_allclose(np.asarray(Z), expected, rtol=1e-6)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda m: limit_covs(m, 0), "k"),
        (lambda m: limit_means(m, -1), "k"),
        (lambda m: uncentered_covs(m, 1, 0.0), "nu"),
        (lambda m: scaled_centered(np.ones((3, 2)), np.array([0, 1]), m, nu=1.0, k=1), "y"),
        (lambda m: scaled_centered(np.ones((2, 3)), np.array([0, 1]), m, nu=1.0, k=1), "H"),
        (lambda m: scaled_centered(np.full((2, 2), np.nan), np.array([0, 1]), m, nu=1.0, k=1), "H"),
        (lambda m: scaled_centered(np.ones((2, 2)), np.array([0, 5]), m, nu=1.0, k=1), "y"),
        (lambda m: limit_means("model", 1), "model"),
    ],
)
def test_limits_reject_bad_input(model, call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call(model)
