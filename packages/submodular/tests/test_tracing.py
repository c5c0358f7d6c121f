"""jit/vmap over the public algorithms equals the Python loop; a sharded batch stays sharded (issue 42)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from nips25_submodular import (
    FacilityLocation,
    Partition,
    PersistentNoisyOracle,
    Uniform,
    greedy,
    measured_continuous_greedy,
    multilinear,
    noisy_sweep,
    pipage_rounding,
)

SIM = np.random.default_rng(0).random((12, 8))
MATROID = Partition([0, 0, 0, 0, 1, 1, 1, 1], [2, 1])
KEYS = jax.random.split(jax.random.key(3), 3)


def test_vmap_greedy_and_mcg_over_noisy_oracles_equal_the_loop():
    """vmap over oracle keys (greedy) and over keys and sigmas (noisy_sweep, MCG) reproduce the eager loop."""
    f = FacilityLocation(SIM)

    def run(k: jax.Array) -> jax.Array:
        return greedy(PersistentNoisyOracle(f, sigma=0.5, key=k), MATROID).mask

    batched = jax.jit(jax.vmap(run))(KEYS)
    for b, k in enumerate(KEYS):
        np.testing.assert_array_equal(batched[b], run(k))
    sel = noisy_sweep(f, "measured_continuous_greedy", matroid=MATROID, monotone=True, sigmas=[0.0, 1.0], keys=KEYS,
                      delta=0.25, n_samples=2)  # fmt: skip
    assert sel.mask.shape == (2, 3, 8) and sel.queries.shape == (2, 3)
    for a, sigma in enumerate((0.0, 1.0)):
        k_noise, k_alg = jax.random.split(KEYS[1])
        oracle = PersistentNoisyOracle(f, sigma=sigma, key=k_noise)
        loop = measured_continuous_greedy(oracle, MATROID, key=k_alg, monotone=True, delta=0.25, n_samples=2)
        np.testing.assert_array_equal(sel.mask[a, 1], loop.mask)
        assert int(sel.queries[a, 1]) == loop.queries
        assert int(sel.mask[a, 1].sum()) == MATROID.rank


def test_vmap_multilinear_and_pipage_over_points_and_keys():
    """Modular check of vmapped multilinear (F(y) = w.y exactly at integral y); vmapped pipage keeps the polytope."""
    f = FacilityLocation(SIM)
    ys = jnp.asarray(np.random.default_rng(1).integers(0, 2, (4, 8)), jnp.float32)
    est, se = jax.vmap(lambda y: multilinear(f, y, n_samples=4, key=jax.random.key(0)))(ys)
    np.testing.assert_allclose(est, [float(f(y.astype(bool))) for y in ys], rtol=1e-5)
    np.testing.assert_allclose(se, 0.0, atol=1e-5)  # float32 rounding of a zero spread
    y = jnp.array([0.7, 0.6, 0.5, 0.2, 0.3, 0.4, 0.0, 0.0])
    draws = jax.vmap(lambda k: pipage_rounding(y, MATROID, key=k))(jax.random.split(jax.random.key(0), 64))
    assert np.all(np.asarray(jax.vmap(MATROID.independent)(draws)))


def test_traced_validation_keeps_shape_errors():
    """Under jit a wrong-shaped mask still raises ValueError naming it (shape checks need no values)."""
    f = FacilityLocation(SIM)
    with pytest.raises(ValueError, match="mask"):
        jax.jit(lambda m: f(m))(jnp.zeros(5, bool))
    cardinality = Uniform(8, 2)
    with pytest.raises(ValueError, match="init"):
        jax.jit(lambda m: greedy(f, cardinality, init=m).mask)(jnp.zeros(3, bool))


def test_sharded_batch_stays_sharded_and_equals_the_loop():
    """Two host devices (XLA flag, so a subprocess): a keys batch sharded over both stays sharded through
    noisy_sweep, every cell equals the eager loop, and a sharded weight matrix survives validation."""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    script = Path(__file__).with_name("sharding_check.py")
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SHARDED-OK" in proc.stdout
