"""Sharding on 2 host devices (a subprocess: XLA reads the device count at import): a sharded batch of replicate
keys through ``clt_sweep`` stays sharded and equals the loop over ``clt_metrics``; sharded inputs of the eager
entry points stay sharded."""

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    from nips25_gnnclt import METRICS, class_moments, clt_metrics, clt_sweep, default_model, scaled_centered

    assert jax.device_count() == 2, jax.devices()
    mesh = Mesh(jax.devices(), ("r",))  # automatic (GSPMD) axes
    rows = NamedSharding(mesh, P("r"))
    model = default_model()
    nus = [20.0, 40.0]
    kw = dict(n=600, ks=(1, 2), n_proj=4, capacity=model.edge_capacity(n=600, nu=40.0))
    keys = jax.random.split(jax.random.key(0), 2)
    out = clt_sweep(model, jax.device_put(keys, rows), nus, **kw)
    loop = [[clt_metrics(model, k, nu=nu, **kw) for nu in nus] for k in keys]
    for name in METRICS:
        v = out[name]
        assert v.shape == (2, 2, 2) and len(v.sharding.device_set) == 2, (name, v.sharding)
        assert v.sharding.shard_shape(v.shape)[0] == 1, (name, v.sharding)  # split along the replicate axis
        want = np.array([[np.asarray(cell[name]) for cell in row] for row in loop])
        np.testing.assert_allclose(np.asarray(v), want, rtol=1e-5, atol=1e-6, err_msg=name)
        assert np.all(np.isfinite(want)) and np.ptp(want[:, 0, 0]) > 0, name  # replicates differ: real draws
    H = jax.device_put(jnp.ones((600, 2)) + jnp.arange(600.0)[:, None] % 7, rows)
    y = jax.device_put(jnp.arange(600, dtype=jnp.int32) % 2, rows)
    Z = scaled_centered(H, y, model, nu=20.0, k=1)  # eager validation must not gather H
    assert len(Z.sharding.device_set) == 2 and Z.sharding.shard_shape(Z.shape)[0] == 300, Z.sharding
    means, _ = class_moments(Z, y, 2)
    assert isinstance(means, jax.Array)
    print("SHARDED-OK")
    """
)


@pytest.mark.slow  # 13-21 s: a fresh JAX process compiles the vmapped sweep and the loop
def test_sharded_replicates_stay_sharded_and_equal_the_loop():
    env = {
        **os.environ,
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
        "JAX_PLATFORMS": "cpu",
    }
    run = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "SHARDED-OK" in run.stdout, run.stdout + run.stderr
