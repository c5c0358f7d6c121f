"""Scale-out: a batch of starts sharded over 2 (forced host) devices stays sharded through jit(vmap(bfgs))."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
    from nips25_bfgs import bfgs, logistic_l2

    assert jax.device_count() == 2, jax.devices()
    with jax.enable_x64(True):
        rng = np.random.default_rng(0)
        X = rng.normal(size=(40, 10))
        y = np.where(X @ rng.normal(size=10) > 0, 1.0, -1.0)
        fun = logistic_l2(jnp.asarray(X), jnp.asarray(y), lam=0.05)
        starts = jnp.asarray(rng.normal(size=(4, 10)))
        # Auto axes: JAX 0.10's vmap of any while_loop whose carry becomes batched fails on Explicit mesh axes
        sharding = NamedSharding(jax.make_mesh((2,), ("batch",), axis_types=(AxisType.Auto,)), P("batch"))
        run = jax.jit(jax.vmap(lambda z: bfgs(fun, z, tol=1e-14).x))
        out = run(jax.device_put(starts, sharding))
        assert out.sharding.is_equivalent_to(sharding, out.ndim), out.sharding
        assert sorted(s.data.shape for s in out.addressable_shards) == [(2, 10), (2, 10)]
        loop = np.stack([np.asarray(bfgs(fun, z, tol=1e-14).x) for z in starts])
        np.testing.assert_allclose(np.asarray(out), loop, atol=1e-12)
    print("sharded ok")
    """
)


def test_sharded_batch_of_starts_stays_sharded_and_equals_the_loop():
    """XLA_FLAGS is read at import, so the check runs in a fresh interpreter with 2 forced CPU devices."""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sharded ok" in proc.stdout
