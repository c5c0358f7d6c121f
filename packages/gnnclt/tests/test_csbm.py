"""The CSBM model: validation, closed-form helpers, the plug-in model and the SBM fit."""

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.experimental import sparse as jsparse
from nips25_gnnclt import CSBM, fit_csbm, limit_means, sample_csbm


def test_q_and_average_degree(model):
    """Q = B diag(pi); average degree nu pi^T B pi = 100 * 0.875."""
    np.testing.assert_allclose(model.Q, [[0.75, 0.25], [0.25, 0.5]])
    assert model.average_degree(100.0) == pytest.approx(87.5)
    assert model.nu_for_average_degree(87.5) == pytest.approx(100.0)
    np.testing.assert_allclose(model.edge_probabilities(n=1000, nu=10.0), 0.01 * model.B)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pi": [0.5, 0.6]}, "pi"),
        ({"pi": [1.0, 0.0]}, "pi"),
        ({"B": [[1.0, 0.5], [0.4, 1.0]]}, "B"),
        ({"B": [[1.0, -0.5], [-0.5, 1.0]]}, "B"),
        ({"B": np.zeros((2, 2))}, "B must have a positive entry"),  # was accepted: eigenvalue_ratio gave NaN
        ({"B": [[1.0]]}, "B"),
        ({"means": np.ones((3, 2))}, "means"),
        ({"cov": -np.eye(2)}, "cov"),
        ({"cov": np.eye(3)}, "cov"),
        ({"means": [[np.nan, 0.0], [0.0, 1.0]]}, "means"),
        ({"pi": []}, "pi"),
    ],
)
def test_csbm_rejects_bad_parameters(kwargs, match):
    base = {"pi": [0.5, 0.5], "B": [[1.0, 0.5], [0.5, 1.0]], "means": np.eye(2), "cov": np.eye(2)}
    with pytest.raises(ValueError, match=match):
        CSBM(**{**base, **kwargs})


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0.01, 10.0), min_size=2, max_size=5))
def test_csbm_accepts_any_normalised_pi(weights):
    """Property: any positive normalised pi is accepted and Q's columns scale with pi."""
    pi = np.array(weights) / np.sum(weights)
    k = len(pi)
    m = CSBM(pi=pi, B=np.ones((k, k)), means=np.eye(k), cov=np.eye(k))
    np.testing.assert_allclose(m.Q.sum(axis=0), k * pi)


def test_edge_probability_above_one_is_rejected(model):
    with pytest.raises(ValueError, match="nu"):
        model.edge_probabilities(n=10, nu=100.0)


def test_fit_recovers_B_and_nu_invariance(model):
    """Fitting a sampled CSBM recovers B (6 standard errors), and predicted means do not depend on nu_hat."""
    s = sample_csbm(model, jax.random.key(1), n=2000, nu=30.0)
    fitted, nu_hat = fit_csbm(s.A, np.asarray(s.y), np.asarray(s.X), nu=30.0)
    edges_per_block = (30.0 * model.B / 2000) * 1000**2
    np.testing.assert_allclose(fitted.B, model.B, rtol=6 / np.sqrt(edges_per_block.min()))
    other, nu2 = fit_csbm(s.A, np.asarray(s.y), np.asarray(s.X))
    assert nu2 == pytest.approx(s.A.nse / 2000)
    np.testing.assert_allclose(nu_hat**2 * limit_means(fitted, 2), nu2**2 * limit_means(other, 2), rtol=1e-10)


def test_fit_rejects_bad_input():
    with pytest.raises(ValueError, match="A"):
        fit_csbm(np.ones((3, 4)), np.array([0, 1, 0]), np.ones((3, 2)))
    with pytest.raises(ValueError, match="X"):
        fit_csbm(np.ones((3, 3)), np.array([0, 1, 0]), np.ones((4, 2)))
    with pytest.raises(ValueError, match="y"):
        fit_csbm(np.ones((3, 3)), np.array([0, 2, 0]), np.ones((3, 2)))
    with pytest.raises(ValueError, match="edges"):
        fit_csbm(np.eye(3), np.array([0, 1, 0]), np.ones((3, 2)))


def test_fit_rejects_directed_or_weighted_adjacency():
    """A directed (upper-triangular) or weighted adjacency is refused, dense or BCOO, instead of silently binarised."""
    A = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    y, X = np.array([0, 0, 1]), np.eye(3)[:, :2]

    def bcoo(dense):  # built from numpy, no JAX compilation
        return jsparse.BCOO((dense[np.nonzero(dense)], np.argwhere(dense)), shape=dense.shape)

    for bad in (np.triu(A), 2 * A, bcoo(np.triu(A)), bcoo(2 * A)):
        with pytest.raises(ValueError, match="A must be symmetric with 0/1 entries"):
            fit_csbm(bad, y, X)
    dense, nu = fit_csbm(A, y, X)
    sparse, nu_s = fit_csbm(bcoo(A), y, X)
    assert nu == nu_s == pytest.approx(4 / 3)
    np.testing.assert_allclose(sparse.B, dense.B)
