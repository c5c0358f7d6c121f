"""The persistent noisy oracle: persistence, independence, noise families."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from nips25_submodular import FacilityLocation, Modular, PersistentNoisyOracle


def _oracle(sigma: float = 0.5, **kw) -> PersistentNoisyOracle:
    f = FacilityLocation(np.random.default_rng(0).random((6, 40)))
    return PersistentNoisyOracle(f, sigma=sigma, key=jax.random.key(7), **kw)


def test_persistence_across_calls_jit_vmap_and_construction_order():
    """Same set -> same value: repeated calls, under jit, under vmap, built in any element order, fresh oracle."""
    o = _oracle()
    rng = np.random.default_rng(1)
    elems = rng.choice(40, 12, replace=False)
    a = np.zeros(40, bool)
    for i in elems:
        a[i] = True
    b = np.zeros(40, bool)
    for i in elems[::-1]:
        b[i] = True
    v = float(o(a))
    assert v == float(o(a)) == float(o(b))
    assert v == float(jax.jit(lambda m: o.value(m))(jnp.asarray(a)))
    batch = jnp.asarray(np.stack([a, b, a]))
    np.testing.assert_array_equal(np.asarray(jax.vmap(o.value)(batch)), v)
    assert v == float(_oracle()(a))
    assert v != float(o.f(a))


def test_noise_is_independent_across_distinct_sets():
    """z_S and z_{S+i} of 10k random neighbouring sets: mean ~ 0, sd ~ 1, |corr| < 0.05."""
    o = _oracle()
    rng = np.random.default_rng(2)
    masks = rng.random((10_000, 40)) < 0.5
    plus = masks.copy()
    plus[np.arange(10_000), rng.integers(0, 40, 10_000)] = True
    keep = (plus != masks).any(axis=1)
    z1 = np.asarray(jax.vmap(o.noise_of)(jnp.asarray(masks[keep])))
    z2 = np.asarray(jax.vmap(o.noise_of)(jnp.asarray(plus[keep])))
    assert abs(z1.mean()) < 0.05 and abs(z1.std() - 1) < 0.05
    assert abs(np.corrcoef(z1, z2)[0, 1]) < 0.05


@pytest.mark.parametrize("family", ["gaussian", "exponential", "uniform"])
def test_noise_families_have_mean_zero_and_unit_variance(family):
    """Every family is standardised: E[z] = 0 and Var[z] = 1 (over 20k distinct sets)."""
    o = _oracle(noise=family)
    masks = np.random.default_rng(3).random((20_000, 40)) < 0.5
    z = np.asarray(jax.vmap(o.noise_of)(jnp.asarray(masks)))
    assert abs(z.mean()) < 0.03 and abs(z.var() - 1) < 0.06


def test_additive_and_multiplicative_modes_and_zero_sigma():
    """add: f~ = f + sigma z; mult: f~ = f (1 + sigma z); sigma = 0 gives f exactly; gains are differences."""
    f = Modular(np.arange(1.0, 41.0))
    mask = np.random.default_rng(4).random(40) < 0.5
    add = PersistentNoisyOracle(f, sigma=0.3, mode="add", key=jax.random.key(0))
    mult = PersistentNoisyOracle(f, sigma=0.3, mode="mult", key=jax.random.key(0))
    z = float(add.noise_of(mask))
    assert float(add(mask)) == pytest.approx(float(f(mask)) + 0.3 * z, rel=1e-6)
    assert float(mult(mask)) == pytest.approx(float(f(mask)) * (1 + 0.3 * z), rel=1e-6)
    assert float(PersistentNoisyOracle(f, sigma=0.0, key=jax.random.key(0))(mask)) == float(f(mask))
    gains = np.asarray(mult.gains(jnp.asarray(mask)))
    i = int(np.flatnonzero(~mask)[0])
    plus = mask.copy()
    plus[i] = True
    assert gains[i] == pytest.approx(float(mult(plus)) - float(mult(mask)), rel=1e-5)


def test_oracle_bad_input():
    """sigma < 0 / NaN, unknown family or mode, non-SetFunction f and a non-key raise naming the argument."""
    f = Modular([1.0, 2.0])
    k = jax.random.key(0)
    with pytest.raises(ValueError, match="sigma"):
        PersistentNoisyOracle(f, sigma=-0.1, key=k)
    with pytest.raises(ValueError, match="sigma"):
        PersistentNoisyOracle(f, sigma=float("nan"), key=k)
    with pytest.raises(ValueError, match="noise"):
        PersistentNoisyOracle(f, sigma=0.1, noise="cauchy", key=k)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mode"):
        PersistentNoisyOracle(f, sigma=0.1, mode="both", key=k)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="f must be"):
        PersistentNoisyOracle(lambda m: 0.0, sigma=0.1, key=k)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="key"):
        PersistentNoisyOracle(f, sigma=0.1, key=3)  # type: ignore[arg-type]
