"""Run in a subprocess with XLA_FLAGS=--xla_force_host_platform_device_count=2 (see test_tracing.py)."""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from nips25_submodular import GraphCut, PersistentNoisyOracle, double_greedy, max_cut_graph, noisy_sweep


def main() -> None:
    """Shard a keys batch over two host devices and compare noisy_sweep with the eager loop."""
    jax.config.update("jax_disable_most_optimizations", True)  # as in conftest.py: compile time dominates
    assert jax.device_count() == 2, jax.devices()
    mesh = Mesh(np.array(jax.devices()), ("batch",))
    inst = max_cut_graph("florentine")
    keys = jax.device_put(jax.random.split(jax.random.key(0), 2), NamedSharding(mesh, P("batch")))
    sel = noisy_sweep(inst.f, "double_greedy", sigmas=[0.0, 0.5], keys=keys)
    assert len(sel.mask.sharding.device_set) == 2 and not sel.mask.sharding.is_fully_replicated, sel.mask.sharding
    for a, sigma in enumerate((0.0, 0.5)):
        for b, key in enumerate(jax.random.split(jax.random.key(0), 2)):
            k_noise, k_alg = jax.random.split(key)
            loop = double_greedy(PersistentNoisyOracle(inst.f, sigma=sigma, key=k_noise), key=k_alg)
            assert np.array_equal(np.asarray(loop.mask), np.asarray(sel.mask[a, b])), (a, b)
            assert loop.queries == int(sel.queries[a, b])
    W = jax.device_put(np.asarray(max_cut_graph("davis").f.W), NamedSharding(mesh, P("batch", None)))  # 32 rows
    assert len(GraphCut(W).W.sharding.device_set) == 2  # validation does not pull a sharded input to one device
    print("SHARDED-OK")


if __name__ == "__main__":  # imported by pytest's --doctest-modules collection: run only as a script
    main()
