"""Scale-out (issue 42): simulate traces under jit/vmap, a vmapped noise sweep equals the loop, sharding is kept."""

import os
import subprocess
import sys
import textwrap
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
from nips25_olfaction import (
    Circuit,
    CircuitParams,
    OUNoise,
    olsen_pn,
    random_claws,
    simulate,
    simulate_noise_levels,
    synthetic_odors,
)

PARAMS = CircuitParams(window=0.03, w_pn=4e-3, w_li=0.03, g_sfa=0.2)
ODORS = olsen_pn(synthetic_odors(np.random.default_rng(0), 4))


def _circuit(n_kc=60):
    return Circuit.random(jax.random.key(1), n_pn=24, n_kc=n_kc, params=PARAMS)


def test_vmapped_noise_levels_equal_the_loop():
    """One vmapped program over (sigma, key) gives the counts of simulate called level by level."""
    c = _circuit()
    sigmas = [0.0, 20.0, 80.0]
    keys = jax.random.split(jax.random.key(3), 3)
    batched = np.asarray(simulate_noise_levels(c, ODORS, sigmas=sigmas, keys=keys, n_trials=2))
    loop = np.stack([np.asarray(simulate(c, ODORS, noise=OUNoise(s), n_trials=2, key=k)) for s, k in zip(sigmas, keys)])
    np.testing.assert_array_equal(batched, loop)
    assert batched[0].sum() != batched[2].sum()


def test_vmap_over_wirings_and_strengths_jit_over_rates():
    """Traced connectivity (vmap over wiring keys), traced w_li (vmap over strengths) and traced rates (jit) pass
    validation; the batched results equal the eager calls, and activity falls as w_li grows."""
    noise, key = OUNoise(10.0), jax.random.key(0)

    def run(k):
        return simulate(Circuit(random_claws(k, 60, 24, 6), params=PARAMS), ODORS, noise=noise, n_trials=2, key=key)

    wkeys = jax.random.split(jax.random.key(5), 2)
    np.testing.assert_array_equal(np.asarray(jax.vmap(run)(wkeys)), np.stack([np.asarray(run(k)) for k in wkeys]))
    c = _circuit()

    def total(w):
        strong = Circuit(c.connectivity, li=True, sfa=False, params=replace(PARAMS, w_li=w))
        return simulate(strong, ODORS, noise=noise, n_trials=2, key=key).sum()

    totals = np.asarray(jax.vmap(total)(jnp.asarray([0.0, 0.03, 0.2])))
    assert totals[0] > totals[1] > totals[2]
    jitted = jax.jit(lambda r: simulate(c, r, noise=noise, n_trials=2, key=key))
    eager = simulate(c, ODORS, noise=noise, n_trials=2, key=key)
    np.testing.assert_array_equal(np.asarray(jitted(jnp.asarray(ODORS, jnp.float32))), np.asarray(eager))


SHARDED = textwrap.dedent(
    """
    import jax, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    from nips25_olfaction import Circuit, CircuitParams, OUNoise, olsen_pn, simulate, synthetic_odors
    assert jax.device_count() == 2, jax.devices()
    params = CircuitParams(window=0.03, w_pn=4e-3, w_li=0.03, g_sfa=0.2)
    c = Circuit.random(jax.random.key(1), n_pn=24, n_kc=50, params=params)
    odors = olsen_pn(synthetic_odors(np.random.default_rng(0), 4)).astype(np.float32)
    mesh = Mesh(np.array(jax.devices()), ("odors",))
    sharded = jax.device_put(odors, NamedSharding(mesh, P("odors", None)))
    out = simulate(c, sharded, noise=OUNoise(20.0), n_trials=3, key=jax.random.key(2))
    assert len(out.sharding.device_set) == 2, out.sharding
    assert not out.sharding.is_fully_replicated, out.sharding
    plain = np.asarray(simulate(c, odors, noise=OUNoise(20.0), n_trials=3, key=jax.random.key(2)))
    np.testing.assert_array_equal(np.asarray(out), plain)
    print("OK", out.sharding.spec)
    """
)


def test_sharded_batch_stays_sharded_and_equals_the_loop():
    """With two host devices, odours sharded over them: the counts come back sharded and equal the unsharded run."""
    env = os.environ | {"XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", SHARDED], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OK" in proc.stdout
