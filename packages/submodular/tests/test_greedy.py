"""Greedy: agreement with an independent numpy implementation, no duplicates, non-increasing gains, 1 - 1/e."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from nips25_submodular import Coverage, FacilityLocation, Modular, Uniform, greedy
from submodular_testing import all_masks


def numpy_greedy(sim: np.ndarray, k: int) -> list[int]:
    """Reference facility-location greedy written directly in numpy (first index wins ties)."""
    cover = np.zeros(sim.shape[0])
    picks: list[int] = []
    for _ in range(k):
        gains = np.maximum(sim - cover[:, None], 0.0).sum(axis=0)
        gains[picks] = -np.inf
        i = int(np.argmax(gains))
        picks.append(i)
        cover = np.maximum(cover, sim[:, i])
    return picks


def test_greedy_matches_numpy_reference_and_gains_decrease():
    """Same picks as the numpy reference; never a duplicate; gains non-increasing (monotone submodular f)."""
    sim = np.random.default_rng(0).random((30, 20))
    sel = greedy(FacilityLocation(sim), Uniform(20, 8))
    assert sel.order.tolist() == numpy_greedy(sim, 8)
    assert len(set(sel.order.tolist())) == 8
    assert np.all(np.diff(sel.gains) <= 1e-5)
    assert sel.queries == sum(20 - s + 1 for s in range(8))


def test_greedy_reaches_one_minus_one_over_e_of_brute_force():
    """Coverage under a cardinality constraint: greedy >= (1 - 1/e) OPT, OPT by enumerating all 2^10 sets."""
    rng = np.random.default_rng(1)
    f = Coverage(rng.random((25, 10)) < 0.2, rng.random(25))
    masks = all_masks(10)
    values = np.asarray(jax.vmap(f.value)(masks))
    opt = values[masks.sum(axis=1) <= 3].max()
    sel = greedy(f, Uniform(10, 3))
    assert float(f(sel.mask)) >= (1 - 1 / math.e) * opt - 1e-6


def test_greedy_stop_at_nonpositive_and_init():
    """stop_at_nonpositive keeps only positive modular weights; init completes an independent set."""
    f = Modular([3.0, -1.0, 2.0, -4.0])
    sel = greedy(f, Uniform(4, 3), stop_at_nonpositive=True)
    assert sel.indices.tolist() == [0, 2] and sel.order.tolist() == [0, 2, -1]
    done = greedy(f, Uniform(4, 3), init=np.array([False, False, False, True]))
    assert done.indices.tolist() == [0, 2, 3]


def test_greedy_bad_input():
    """Size mismatch, a dependent init and non-SetFunction inputs raise, naming the argument."""
    with pytest.raises(ValueError, match="n="):
        greedy(Modular([1.0, 2.0]), Uniform(3, 1))
    with pytest.raises(ValueError, match="init"):
        greedy(Modular([1.0, 2.0]), Uniform(2, 1), init=np.array([True, True]))
    with pytest.raises(TypeError, match="f must be"):
        greedy(np.ones(2), Uniform(2, 1))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="matroid"):
        greedy(Modular([1.0, 2.0]), 1)  # type: ignore[arg-type]
