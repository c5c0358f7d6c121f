"""Known values, closed-form gains and submodularity of the set functions."""

from __future__ import annotations

import itertools
import re

import jax
import numpy as np
import pytest
from nips25_submodular import (
    Coverage,
    FacilityLocation,
    GraphCut,
    Modular,
    PersistentNoisyOracle,
    SetFunction,
    exact_max_cut,
    max_cut_graph,
)
from submodular_testing import all_masks


def test_hand_values():
    """Hand-computed values on 2-3 element ground sets."""
    fl = FacilityLocation([[1.0, 0.2, 0.0], [0.5, 1.0, 0.3]])
    assert float(fl(np.array([False, False, False]))) == 0.0
    assert float(fl(np.array([True, False, True]))) == pytest.approx(1.0 + 0.5)
    assert float(fl(np.array([True, True, False]))) == pytest.approx(2.0)
    cut = GraphCut([[0, 1, 0], [1, 0, 2], [0, 2, 0]])
    assert float(cut(np.array([False, True, False]))) == 3.0
    assert float(cut(np.array([True, False, True]))) == 3.0
    assert float(cut(np.array([True, True, True]))) == 0.0
    cov = Coverage([[1, 0], [1, 1], [0, 1]], weights=[1.0, 2.0, 4.0])
    assert float(cov(np.array([False, True]))) == 6.0
    assert float(Modular([1.0, -2.0, 3.0])(np.array([True, True, False]))) == -1.0


def _functions(rng: np.random.Generator, n: int) -> list[SetFunction]:
    w = rng.random((n, n)) * (rng.random((n, n)) < 0.5)
    return [
        FacilityLocation(rng.random((7, n))),
        GraphCut(w + w.T),
        Coverage(rng.random((9, n)) < 0.3, rng.random(9)),
        Modular(rng.normal(size=n)),
    ]


def test_closed_form_gains_match_value_differences():
    """gains(S)_i == f(S + i) - f(S) (base-class vmap definition) for every function, on random masks."""
    rng = np.random.default_rng(0)
    for f in _functions(rng, 9):
        for _ in range(4):
            mask = rng.random(9) < 0.4
            expected = SetFunction.gains(f, mask)
            np.testing.assert_allclose(np.asarray(f.gains(mask)), np.asarray(expected), atol=1e-5)
            assert np.all(np.asarray(f.gains(mask))[mask] == 0.0)


def test_submodularity_by_brute_force():
    """Diminishing returns f(A+i)-f(A) >= f(B+i)-f(B) for A ⊆ B, checked on all pairs at n = 6."""
    rng = np.random.default_rng(1)
    masks = all_masks(6)
    for f in _functions(rng, 6)[:3]:
        gains = np.asarray(jax.vmap(f.gains)(masks))
        for a, b in itertools.product(range(64), repeat=2):
            if (a & b) == a:
                outside = ~masks[b]
                assert np.all(gains[a][outside] >= gains[b][outside] - 1e-5)


def test_florentine_max_cut_is_17_by_brute_force():
    """Florentine families: the maximum over all 2^15 cuts is 17 (the brief's value)."""
    inst = max_cut_graph("florentine")
    values = np.asarray(jax.vmap(inst.f.value)(all_masks(15)))
    assert values.max() == 17.0 == inst.opt


def test_exact_max_cut_certifies_the_stored_optima():
    """HiGHS MILP (gap 0) re-derives the stored optima of Florentine (= the brute force above), Davis and karate
    (the review's local search found 179 too; the old design divided by the total weight 231), and its side
    attains the value."""
    for name in ("florentine", "davis", "karate"):
        inst = max_cut_graph(name)
        value, side = exact_max_cut(np.asarray(inst.f.W))
        assert value == inst.opt and float(inst.f(side)) == pytest.approx(value)
    assert max_cut_graph("karate").opt == 179.0 < max_cut_graph("karate").total_weight == 231.0
    assert max_cut_graph("les_mis").opt == 535.0  # certified by exact_max_cut offline (about a minute)
    with pytest.raises(ValueError, match="symmetric"):
        exact_max_cut([[0.0, 1.0], [0.0, 0.0]])


def test_davis_bipartition_cuts_every_edge():
    """Davis Southern Women is bipartite: the women/events split cuts all 89 edges, so max-cut = 89."""
    inst = max_cut_graph("davis")
    women = np.array([re.fullmatch(r"E\d+", name) is None for name in inst.nodes])
    assert float(inst.f(women)) == 89.0 == inst.total_weight == inst.opt


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: FacilityLocation([[1.0, -0.1]]), "non-negative"),
        (lambda: FacilityLocation([[1.0, np.nan]]), "finite"),
        (lambda: FacilityLocation(np.zeros((0, 3))), "non-empty"),
        (lambda: FacilityLocation([1.0, 2.0]), "2-D"),
        (lambda: GraphCut([[0, 1], [2, 0]]), "symmetric"),
        (lambda: GraphCut(np.ones((2, 3))), "square"),
        (lambda: Coverage([[0, 2]]), "0 and 1"),
        (lambda: Coverage([[0, 1]], weights=[1.0, 2.0]), "weights"),
        (lambda: Modular([1.0, np.inf]), "finite"),
    ],
)
def test_bad_input_names_the_argument(build, match):
    """Every constructor rejects bad arrays with a ValueError naming the problem."""
    with pytest.raises(ValueError, match=match):
        build()


def test_call_checks_concrete_masks_and_names_mask():
    """f(mask) and the oracle reject a wrong length or a non-boolean mask naming mask; 0/1 ints and lists pass."""
    f = GraphCut([[0, 1, 0], [1, 0, 2], [0, 2, 0]])
    oracle = PersistentNoisyOracle(f, sigma=0.1, key=jax.random.key(0))
    for g in (f, oracle):
        with pytest.raises(ValueError, match=r"mask must be a boolean mask of shape \(3,\)"):
            g(np.zeros(5, bool))
        with pytest.raises(TypeError, match="mask must be a boolean mask"):
            g(np.array([0.5, 0.0, 1.0]))
    assert float(f(np.array([0, 1, 0]))) == float(f([False, True, False])) == 3.0
