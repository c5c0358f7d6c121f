"""Matroids: greedy max-weight bases against brute force, contraction, independence."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from nips25_submodular import Free, Modular, Partition, Uniform, greedy
from submodular_testing import all_masks


def _brute_force_best(w: np.ndarray, matroid: Partition) -> float:
    masks = all_masks(w.shape[0])
    independent = np.asarray(jax.vmap(matroid.independent)(masks))
    return float((masks[independent] @ w).max())


@pytest.mark.parametrize(
    "matroid",
    [Uniform(10, 4), Partition([0, 0, 0, 1, 1, 1, 1, 2, 2, 2], [1, 2, 2])],
    ids=["uniform", "partition"],
)
def test_greedy_equals_brute_force_max_weight_base(matroid):
    """On a matroid, greedy with a modular objective is exact: equals the best of all 2^10 independent sets."""
    w = np.random.default_rng(0).random(10) + 0.01
    sel = greedy(Modular(w), matroid)
    assert float(w[sel.mask].sum()) == pytest.approx(_brute_force_best(w, matroid), rel=1e-6)
    assert bool(matroid.independent(sel.mask)) and sel.mask.sum() == matroid.rank
    best = np.asarray(matroid.max_weight_independent(w))
    assert float(w[best].sum()) == pytest.approx(_brute_force_best(w, matroid), rel=1e-6)


def test_contraction_matches_definition():
    """I_H = {S ⊆ N \\ H : S ∪ H ∈ I}, checked for every S on 8 elements."""
    m = Partition([0, 0, 0, 1, 1, 1, 2, 2], [2, 1, 2])
    H = np.array([True, False, False, True, False, False, False, False])
    mh = m.contract(H)
    masks = all_masks(8)
    expected = ~(masks & H).any(axis=1) & np.asarray(jax.vmap(m.independent)(masks | H))
    np.testing.assert_array_equal(np.asarray(jax.vmap(mh.independent)(masks)), expected)
    assert mh.rank == m.rank - 2


def test_rank_and_positive_only_independent_set():
    """rank = sum_c min(cap_c, |P_c|); positive_only drops non-positive weights; a base fills every class."""
    m = Partition([0, 0, 1, 1, 1], [1, 5])
    assert m.rank == 4 and Free(5).rank == 5 and Uniform(5, 2).rank == 2
    w = np.array([-1.0, -2.0, 3.0, 0.0, 1.0])
    assert np.asarray(m.max_weight_independent(w)).tolist() == [False, False, True, False, True]
    assert np.asarray(m.max_weight_independent(w, positive_only=False)).tolist() == [True, False, True, True, True]


def test_matroid_bad_input():
    """Dependent H, out-of-range labels, negative caps and a k above n raise ValueError naming the argument."""
    with pytest.raises(ValueError, match="independent"):
        Uniform(4, 1).contract(np.array([True, True, False, False]))
    with pytest.raises(ValueError, match="labels"):
        Partition([0, 2], [1, 1])
    with pytest.raises(ValueError, match="caps"):
        Partition([0, 1], [1, -1])
    with pytest.raises(ValueError, match="k"):
        Uniform(3, 4)
    with pytest.raises(ValueError, match="H"):
        Uniform(3, 1).contract(np.array([True, False]))
