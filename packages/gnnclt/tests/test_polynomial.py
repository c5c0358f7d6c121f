"""Horner's rule on BCOO against dense powers, under jit, with weights, and the E[A] class-mean identity."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import sparse as jsparse
from nips25_gnnclt import CSBM, graph_power, limit_means, poly_features


def _random_graph(n, seed):
    rng = np.random.default_rng(seed)
    a = np.triu(rng.random((n, n)) < 0.2, 1).astype(np.float64)
    return a + a.T, rng.normal(size=(n, 3))


def test_horner_equals_dense_polynomial():
    """p(A)X = sum_j a_j A^j X by numpy matrix powers (float64 reference)."""
    a, x = _random_graph(30, 0)
    coeffs = [0.5, -1.0, 0.25, 2.0]
    ref = sum(c * np.linalg.matrix_power(a, j) @ x for j, c in enumerate(coeffs))
    got = poly_features(jsparse.BCOO.fromdense(jnp.asarray(a, jnp.float32)), x, coeffs)
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(np.asarray(poly_features(a, x, coeffs)), ref, rtol=1e-5, atol=1e-4)


def test_same_numbers_inside_and_outside_jit():
    a, x = _random_graph(25, 1)
    A = jsparse.BCOO.fromdense(jnp.asarray(a, jnp.float32))
    eager = poly_features(A, x, [1.0, 0.0, 1.0])
    jitted = jax.jit(lambda A_, X_: poly_features(A_, X_, [1.0, 0.0, 1.0]))(A, jnp.asarray(x, jnp.float32))
    np.testing.assert_array_equal(np.asarray(eager), np.asarray(jitted))


def test_weights_multiply_on_the_right():
    a, x = _random_graph(20, 2)
    w0, w1 = np.random.default_rng(3).normal(size=(3, 4)), np.random.default_rng(4).normal(size=(4, 2))
    got = poly_features(a, x, [0.0, 0.0, 1.0], weights=[w0, w1])
    np.testing.assert_allclose(np.asarray(got), a @ a @ x @ w0 @ w1, rtol=1e-4, atol=1e-3)


def test_expected_adjacency_gives_theory_means():
    """With E[A] (no diagonal) in place of A, class means of A^k X equal nu^k Qhat^k Mhat up to O(k/n)."""
    n, nu = 400, 8.0
    m = CSBM(pi=[0.3, 0.7], B=[[2.0, 0.5], [0.5, 1.0]], means=[[1.0, 0.0], [0.0, 2.0]], cov=0.1 * np.eye(2))
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], [120, 280])
    x = m.means[y] + rng.normal(size=(n, 2)) * 0.3
    ea = nu * m.B[y][:, y] / n
    np.fill_diagonal(ea, 0.0)
    plug = m.conditioned_on(y, x)
    for k in (1, 2, 3):
        h = np.asarray(graph_power(ea, x, k), np.float64)
        emp = np.stack([h[y == c].mean(0) for c in range(2)])
        pred = nu**k * limit_means(plug, k)
        assert np.abs(emp - pred).max() <= 3 * k * nu**k / n * np.abs(m.means).max() * m.B.max() + 1e-3


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((np.ones((3, 3)), np.ones((4, 2)), [1.0]), "X must have 3 rows"),
        ((np.ones((3, 4)), np.ones((3, 2)), [1.0]), "A must be a square"),
        ((np.ones((3, 3)), np.ones((3, 2)), [1.0, 0.0]), "coeffs"),
        ((np.ones((3, 3)), np.ones((3, 2)), []), "coeffs"),
        ((np.ones((3, 3)), np.full((3, 2), np.inf), [1.0]), "X"),
        (("graph", np.ones((3, 2)), [1.0]), "A"),
    ],
)
def test_poly_features_rejects_bad_input(args, match):
    with pytest.raises((ValueError, TypeError), match=match):
        poly_features(*args)
    with pytest.raises(ValueError, match="k"):
        graph_power(np.ones((3, 3)), np.ones((3, 2)), -1)
    with pytest.raises(ValueError, match="X must have 3 rows"):  # X, not A, has the wrong row count
        graph_power(np.ones((3, 3)), np.ones((2, 2)), 2)
