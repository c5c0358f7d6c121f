"""The meta-algorithm: noiseless reduction to the inner algorithm, feasibility, determinism, presets, bad input."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from nips25_submodular import (
    VOID_GUARANTEE,
    FacilityLocation,
    Free,
    Modular,
    Partition,
    PersistentNoisyOracle,
    Uniform,
    double_greedy,
    max_cut_graph,
    noisy_meta,
)


def test_noiseless_reduction_to_greedy_and_practical_flag():
    """sigma = 0, modular f: F~(S) = w(S) + const, so the output is H' plus, in each class, the top
    (cap - |H ∩ class|) weights outside H; the set is independent and the practical preset flags a void guarantee."""
    w = np.random.default_rng(0).random(24)
    labels = np.repeat(np.arange(4), 6)
    m = Partition(labels, [4, 4, 4, 4])
    oracle = PersistentNoisyOracle(Modular(w), sigma=0.0, key=jax.random.key(0))
    sel = noisy_meta(oracle, m, "greedy", key=jax.random.key(1), monotone=True)
    H, h_prime = sel.info["H"], sel.info["H_prime"]
    expected = np.zeros(24, bool)
    for c in range(4):
        free = np.flatnonzero((labels == c) & ~H)
        expected[free[np.argsort(-w[free])[: 4 - int(H[labels == c].sum())]]] = True
    np.testing.assert_array_equal(sel.mask, expected | h_prime)
    assert H.sum() == 8 and h_prime.sum() == 3 and not (h_prime & ~H).any()
    assert bool(m.independent(sel.mask))
    assert sel.info["params"] == {"h": 8, "t": 3, "m": 56}
    assert sel.info["guarantee"] == VOID_GUARANTEE
    assert sel.info["subsets"].shape == (56, 24)
    noisy = PersistentNoisyOracle(Modular(w), sigma=0.3, key=jax.random.key(2))
    assert bool(m.independent(noisy_meta(noisy, m, "greedy", key=jax.random.key(3), monotone=True).mask))


def test_meta_double_greedy_is_deterministic_and_beats_naive_under_noise():
    """Same key -> same set; on Davis at sigma = 0.5 meta beats naive double greedy on average over 5 seeds."""
    inst = max_cut_graph("davis")
    naive, meta = [], []
    for s in range(5):
        oracle = PersistentNoisyOracle(inst.f, sigma=0.5, key=jax.random.key(100 + s))
        a = noisy_meta(oracle, Free(32), "double_greedy", key=jax.random.key(s), monotone=False)
        if s == 0:
            b = noisy_meta(oracle, Free(32), "double_greedy", key=jax.random.key(s), monotone=False)
            np.testing.assert_array_equal(a.mask, b.mask)
        meta.append(float(inst.f(a.mask)))
        naive.append(float(inst.f(double_greedy(oracle, key=jax.random.key(s)).mask)))
    assert np.mean(meta) > np.mean(naive)


def test_meta_bad_input_and_theory_preset():
    """h <= t, m > C(h,t), h >= rank, unknown preset/inner raise; preset='theory' raises when r <= 2h."""
    oracle = PersistentNoisyOracle(Modular(np.ones(20)), sigma=0.1, key=jax.random.key(0))
    k = jax.random.key(1)
    with pytest.raises(ValueError, match="t must be < h"):
        noisy_meta(oracle, Free(20), "greedy", key=k, monotone=True, h=3, t=3, m=1)
    with pytest.raises(ValueError, match="m must be <= C"):
        noisy_meta(oracle, Free(20), "greedy", key=k, monotone=True, h=4, t=2, m=7)
    with pytest.raises(ValueError, match="rank"):
        noisy_meta(oracle, Uniform(20, 8), "greedy", key=k, monotone=True)
    with pytest.raises(ValueError, match="matroid must be Free"):  # was: 17 elements returned under rank 10
        noisy_meta(oracle, Uniform(20, 10), "double_greedy", key=k, monotone=False)
    with pytest.raises(ValueError, match="t must be >= 1"):
        noisy_meta(oracle, Free(20), "greedy", key=k, monotone=True, h=3, t=0, m=1)
    with pytest.raises(ValueError, match="preset"):
        noisy_meta(oracle, Free(20), "greedy", key=k, monotone=True, preset="fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="inner"):
        noisy_meta(oracle, Free(20), "lazy", key=k, monotone=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="r > 2h"):
        noisy_meta(oracle, Free(20), "greedy", key=k, monotone=True, preset="theory")
    with pytest.raises(ValueError, match="explicit"):
        noisy_meta(oracle, Free(20), "greedy", key=k, monotone=True, preset=None)


def test_smoothing_factor_in_info_and_greedy_completion_fills_a_base():
    """info reports rho = 1 - h/(r-h) (monotone); complete=True fills a base and, for monotone f, never lowers f;
    it refuses non-monotone f."""
    f = FacilityLocation(np.random.default_rng(4).random((30, 24)))
    m = Partition(np.repeat(np.arange(4), 6), [5, 5, 5, 5])
    oracle = PersistentNoisyOracle(f, sigma=0.3, key=jax.random.key(0))
    plain = noisy_meta(oracle, m, "greedy", key=jax.random.key(1), monotone=True)
    done = noisy_meta(oracle, m, "greedy", key=jax.random.key(1), monotone=True, complete=True)
    assert plain.info["smoothing_factor"] == pytest.approx(1 - 8 / (20 - 8))
    assert int(plain.mask.sum()) == 20 - 8 + 3 and plain.info["completed"] == 0
    assert int(done.mask.sum()) == m.rank == 20 and done.info["completed"] == 5
    assert not (plain.mask & ~done.mask).any() and float(f(done.mask)) >= float(f(plain.mask))
    assert done.queries > plain.queries
    with pytest.raises(ValueError, match="monotone"):
        noisy_meta(oracle, m, "greedy", key=jax.random.key(1), monotone=False, complete=True)
