"""jit/vmap over the public entry points: the padded sampler's exact law, models as pytrees, traced metrics."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from nips25_gnnclt import (
    CSBM,
    CEHead,
    ce_lipschitz,
    class_moments,
    collapse_ratio,
    covariance_error,
    eigenvalue_ratio,
    empirical_collapse_ratio,
    limit_covs,
    limit_means,
    poly_features,
    risk_gap,
    sample_csbm,
    scaled_centered,
    sliced_w1_to_mixture,
    w1_1d_to_mixture,
)


def test_padded_sampler_has_the_exact_bernoulli_law(model):
    """Poissonised candidates thinned by B_ab / max B: P(A_ij = 1 | y) = nu B_{y_i y_j} / n for every pair.

    n = 6, nu = 2 (p in {1/2, 1/6, 1/3}), 3000 graphs in one vmapped call; every pair's mean residual
    A_ij - p_{y_i y_j} is within 4.5 standard errors of 0 (15 pairs: a false alarm has probability < 1e-4).
    """
    n, nu, reps = 6, 2.0, 3000
    cap = model.edge_capacity(n=n, nu=nu)
    p = jnp.asarray(model.edge_probabilities(n=n, nu=nu), jnp.float32)

    def draw(key):
        s = sample_csbm(model, key, n=n, nu=nu, method="blockwise", capacity=cap)
        return s.A.todense(), p[s.y][:, s.y]

    dense, prob = (np.asarray(a) for a in jax.jit(jax.vmap(draw))(jax.random.split(jax.random.key(0), reps)))
    iu = np.triu_indices(n, 1)
    mean = (dense - prob).mean(0)[iu]
    se = np.sqrt((prob * (1 - prob)).mean(0)[iu] / reps)
    assert np.all(np.abs(mean) <= 4.5 * se), np.abs(mean) / se
    assert np.all(dense == np.swapaxes(dense, 1, 2)) and np.all(np.diagonal(dense, axis1=1, axis2=2) == 0)


@pytest.mark.slow  # 5-7 s: three compiled samplers
def test_padded_sampler_jit_equals_eager_and_overflow_is_loud(model):
    n, nu = 600, 10.0
    cap = model.edge_capacity(n=n, nu=nu)
    eager = sample_csbm(model, jax.random.key(3), n=n, nu=nu, capacity=cap)
    jitted = jax.jit(lambda k: sample_csbm(model, k, n=n, nu=nu, capacity=cap))(jax.random.key(3))
    np.testing.assert_array_equal(np.asarray(eager.A.indices), np.asarray(jitted.A.indices))
    np.testing.assert_array_equal(np.asarray(eager.X), np.asarray(jitted.X))
    edges = float(eager.A.data.sum()) / 2  # expected n/2 * nu pi'B pi = 2625, sd ~ 51
    assert abs(edges - 0.5 * n * model.average_degree(nu)) <= 4 * np.sqrt(0.5 * n * model.average_degree(nu))
    with pytest.raises(ValueError, match="capacity"):
        sample_csbm(model, jax.random.key(3), n=n, nu=nu, capacity=100)
    X = jax.jit(lambda k: sample_csbm(model, k, n=n, nu=nu, capacity=100).X)(jax.random.key(3))
    assert bool(jnp.isnan(X).all())  # under tracing an overflow poisons X instead of dropping edges
    with pytest.raises(ValueError, match="capacity must be given"):
        jax.jit(lambda k: sample_csbm(model, k, n=n, nu=nu).X)(jax.random.key(0))
    with pytest.raises(ValueError, match="keep"):
        sample_csbm(model, jax.random.key(0), n=n, nu=nu, capacity=cap, duplicates="keep")


def test_vmap_over_models_equals_the_loop():
    """A batch of models (stacked leaves) through the limits and collapse ratios equals the float64 loop."""
    Bs = np.array([[[1.5, 0.5], [0.5, 1.0]], [[2.0, 0.2], [0.2, 0.7]], [[1.0, 0.9], [0.9, 1.0]]])
    pis = np.array([[0.5, 0.5], [0.3, 0.7], [0.6, 0.4]])
    means, cov = np.array([[1.0, 0.2], [0.0, 1.0]]), 0.25 * np.eye(2)

    def stats(pi, B):
        m = CSBM(pi=pi, B=B, means=jnp.asarray(means), cov=jnp.asarray(cov))
        return limit_means(m, 3), limit_covs(m, 2), collapse_ratio(m, 2), eigenvalue_ratio(m)

    got = jax.jit(jax.vmap(stats))(jnp.asarray(pis), jnp.asarray(Bs))
    models = [CSBM(pi=pi, B=B, means=means, cov=cov) for pi, B in zip(pis, Bs, strict=True)]
    fns = (lambda m: limit_means(m, 3), lambda m: limit_covs(m, 2), lambda m: collapse_ratio(m, 2), eigenvalue_ratio)
    want = [np.stack([f(m) for m in models]) for f in fns]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=2e-5, atol=1e-6)
    leaves = jax.tree.leaves(models[0])
    assert len(leaves) == 4 and isinstance(jax.tree.unflatten(jax.tree.structure(models[0]), leaves), CSBM)


def test_dense_traced_adjacency_and_coefficients_are_accepted():
    rng = np.random.default_rng(0)
    a = np.triu(rng.random((3, 12, 12)) < 0.3, 1).astype(np.float32)
    a = a + np.swapaxes(a, 1, 2)
    x = rng.normal(size=(12, 2)).astype(np.float32)
    coeffs = jnp.array([0.5, -1.0, 2.0])
    batched = jax.jit(jax.vmap(lambda A, c: poly_features(A, x, c), in_axes=(0, None)))(jnp.asarray(a), coeffs)
    for i in range(3):
        ref = 0.5 * x - a[i] @ x + 2.0 * a[i] @ a[i] @ x
        np.testing.assert_allclose(np.asarray(batched[i]), ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="coeffs"):
        poly_features(jnp.asarray(a[0]), x, jnp.array([1.0, 0.0]))  # a_k = 0, concrete: still refused


def test_metrics_under_jit_equal_the_float64_host_values(model):
    """scaled_centered, the plug-in model, class moments, covariance error, collapse ratio and both mixture W1
    distances computed inside jit (float32) equal the float64 host computation."""
    rng = np.random.default_rng(1)
    y = np.repeat([0, 1], [230, 170]).astype(np.int32)
    H = (np.eye(2)[y] * 40 + rng.normal(size=(400, 2)) * 3).astype(np.float32)
    nu, key = 50.0, jax.random.key(2)

    def everything(H, y, nu):
        fitted = model.conditioned_on(y, H / nu)
        Z = scaled_centered(H, y, fitted, nu=nu, k=1)
        zeros = jnp.zeros((2, 2))
        return (
            Z,
            fitted.means,
            class_moments(Z, y, 2)[1],
            covariance_error(Z, y, fitted, 1),
            empirical_collapse_ratio(H, y, 2),
            sliced_w1_to_mixture(Z, fitted.pi, zeros, limit_covs(fitted, 1), key, n_proj=3),
            w1_1d_to_mixture(Z[:, 0], fitted.pi, jnp.zeros(2), jnp.array([1.0, 2.0])),
        )

    got = jax.jit(everything)(jnp.asarray(H), jnp.asarray(y), jnp.float32(nu))
    fitted = model.conditioned_on(y, H.astype(np.float64) / nu)
    Z = np.asarray(scaled_centered(H, y, fitted, nu=nu, k=1), np.float64)
    want = (
        Z,
        fitted.means,
        class_moments(Z, y, 2)[1],
        covariance_error(Z, y, fitted, 1),
        empirical_collapse_ratio(H.astype(np.float64), y, 2),
        sliced_w1_to_mixture(Z, fitted.pi, np.zeros((2, 2)), limit_covs(fitted, 1), key, n_proj=3),
        w1_1d_to_mixture(Z[:, 0], fitted.pi, np.zeros(2), np.array([1.0, 2.0])),
    )
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=1e-4, atol=1e-5)
    assert float(ce_lipschitz(jnp.eye(2))) == pytest.approx(np.sqrt(2.0), rel=1e-6)
    with pytest.raises(TypeError, match="host"):
        jax.jit(lambda P: risk_gap(CEHead(jnp.eye(2), jnp.zeros(2)), P, y, P, y))(
            jnp.asarray(H)
        )  # exact matching W1: host only
