"""W1: 1-D against scipy, against a mixture by quadrature, sliced, matching against brute force."""

import itertools

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_gnnclt import sliced_w1, sliced_w1_to_mixture, w1_1d, w1_1d_to_mixture, w1_matching
from scipy.stats import norm, wasserstein_distance


@pytest.mark.parametrize(("n_a", "n_b", "seed"), [(1, 1, 0), (17, 40, 1), (300, 451, 2)])
def test_w1_1d_equals_scipy(n_a, n_b, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n_a), rng.normal(1.0, 2.0, size=n_b)
    assert float(w1_1d(a, b)) == pytest.approx(wasserstein_distance(a, b), rel=1e-6, abs=1e-6)


@settings(max_examples=12, deadline=None)
@given(
    st.lists(st.floats(-100, 100), min_size=5, max_size=5),  # fixed sizes: one jit compile
    st.lists(st.floats(-100, 100), min_size=7, max_size=7),
    st.floats(-50, 50),
)
def test_w1_1d_symmetric_and_translation_invariant(a, b, shift):
    a, b = np.array(a), np.array(b)
    d = float(w1_1d(a, b))
    assert d == pytest.approx(float(w1_1d(b, a)), rel=1e-5, abs=1e-3)
    assert d == pytest.approx(float(w1_1d(a + shift, b + shift)), rel=1e-4, abs=1e-2)
    assert d == pytest.approx(wasserstein_distance(a, b), rel=1e-4, abs=1e-3)


def test_w1_to_mixture_matches_quadrature():
    """Closed-form integration against brute quadrature of |F_n - F| on a 2e6-point grid."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=500) * 1.3 + 0.2
    w, m, s = np.array([0.3, 0.7]), np.array([-1.0, 1.0]), np.array([0.5, 1.5])
    grid = np.linspace(-14, 14, 2_000_001)
    fn = np.searchsorted(np.sort(x), grid, side="right") / x.size
    f = (w * norm.cdf((grid[:, None] - m) / s)).sum(1)
    assert w1_1d_to_mixture(x, w, m, s) == pytest.approx(np.trapezoid(np.abs(fn - f), grid), rel=1e-5)
    assert w1_1d_to_mixture([0.0], [1.0], [0.0], [1.0]) == pytest.approx(np.sqrt(2 / np.pi), rel=1e-12)


def test_sliced_distances_are_deterministic_and_consistent():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(400, 2))
    key = jax.random.key(0)
    assert float(sliced_w1(z, z, key, n_proj=8)) == 0.0
    assert float(sliced_w1(z, z + 1.0, key, n_proj=8)) == float(sliced_w1(z, z + 1.0, key, n_proj=8))
    d1 = sliced_w1_to_mixture(z, [1.0], np.zeros((1, 2)), np.eye(2)[None], key, n_proj=8)
    d2 = sliced_w1_to_mixture(z, [1.0], np.zeros((1, 2)), np.eye(2)[None], key, n_proj=8)
    assert d1 == d2 < 0.15
    far = sliced_w1_to_mixture(z, [1.0], np.full((1, 2), 3.0), np.eye(2)[None], key, n_proj=8)
    assert far > 1.0


def test_w1_matching_equals_brute_force():
    """Optimal assignment equals the minimum over all 6! permutations."""
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(6, 2)), rng.normal(size=(6, 2))
    brute = min(np.linalg.norm(a - b[list(p)], axis=1).mean() for p in itertools.permutations(range(6)))
    assert w1_matching(a, b) == pytest.approx(brute, rel=1e-12)


def test_w1_rejects_bad_input():
    with pytest.raises(ValueError, match="a"):
        w1_1d([], [1.0])
    with pytest.raises(ValueError, match="b"):
        w1_1d([1.0], [np.nan])
    with pytest.raises(ValueError, match="same shape"):
        w1_matching(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="stds"):
        w1_1d_to_mixture([0.0], [1.0], [0.0], [0.0])
    with pytest.raises(ValueError, match="weights"):
        w1_1d_to_mixture([0.0], [0.5], [0.0], [1.0])
    with pytest.raises(ValueError, match="n_proj"):
        sliced_w1(np.ones((3, 2)), np.ones((3, 2)), jax.random.key(0), n_proj=0)
    with pytest.raises(ValueError, match="columns"):
        sliced_w1(np.ones((3, 2)), np.ones((3, 3)), jax.random.key(0))


def test_w1_1d_under_jit_and_vmap_equals_the_eager_value() -> None:
    import jax
    import jax.numpy as jnp
    from nips25_gnnclt import w1_1d

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4, 50)), rng.normal(1.0, 2.0, size=(4, 30))
    eager = np.array([float(w1_1d(x, y)) for x, y in zip(a, b)])
    np.testing.assert_allclose(float(jax.jit(w1_1d)(jnp.asarray(a[0]), jnp.asarray(b[0]))), eager[0], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.vmap(w1_1d)(jnp.asarray(a), jnp.asarray(b))), eager, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.jit(jax.vmap(w1_1d))(jnp.asarray(a), jnp.asarray(b))), eager, rtol=1e-6)
    with pytest.raises(ValueError, match="1-D"):
        jax.jit(w1_1d)(jnp.ones((2, 2)), jnp.ones(3))
