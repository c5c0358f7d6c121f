"""Ginkgo simulator and split likelihood: conservation, normalisation, symmetry, determinism."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_treegen.ginkgo import U_MAX, child_log_density, invariant_mass2, simulate, split_log_lik, tree_log_lik
from nips25_treegen.hierarchy import children_of, is_binary_tree
from scipy import integrate


def test_simulated_jets_conserve_four_momentum_and_masses():
    """Leaves sum to the root; every node's t recomputed from its 4-vector equals the sampled t; t_cut separates."""
    for jet in simulate(20, n_leaves=(3, 9), seed=0):
        n = jet.n_leaves
        root = np.array([math.hypot(400.0, 30.0), *([400 / math.sqrt(3)] * 3)])
        assert np.allclose(jet.leaves.sum(0), root, atol=1e-9, rtol=0)
        assert np.allclose(invariant_mass2(jet.content), jet.t, atol=1e-6)
        assert np.all(jet.t[n:] > 16.0) and np.all(jet.t[:n] <= 16.0)
        kids = children_of(jet.parents, n)
        for v in range(n, 2 * n - 1):
            assert np.allclose(jet.content[v], jet.content[kids[v]].sum(0), atol=1e-9)
        assert is_binary_tree(jet.parents, n) and np.isfinite(jet.log_lik)
        assert np.all(jet.parents[n:-1] > np.arange(n, 2 * n - 2))  # parents heavier, later


def test_simulate_is_deterministic():
    a = simulate(5, n_leaves=(4, 7), seed=3)
    b = simulate(5, n_leaves=(4, 7), seed=3)
    assert all(np.array_equal(x.leaves, y.leaves) and x.log_lik == y.log_lik for x, y in zip(a, b))


@pytest.mark.parametrize(("t_par", "lam"), [(40.0, 1.5), (900.0, 1.5), (200.0, 3.0)])
def test_child_density_normalises(t_par, lam):
    """The public split density normalises: e^{f_leaf} + int_{t_cut}^{(1-1e-3) t_par} e^{f_internal} dt = 1."""
    leaf = math.exp(float(child_log_density(t_par, 1.0, t_cut=16.0, lam=lam)))
    integral, _ = integrate.quad(
        lambda t: math.exp(float(child_log_density(t_par, t, t_cut=16.0, lam=lam))), 16.0, U_MAX * t_par
    )
    assert leaf + integral == pytest.approx(1.0, abs=1e-8)
    assert leaf == pytest.approx((1 - math.exp(-lam * 16.0 / t_par)) / (1 - math.exp(-U_MAX * lam)))


def test_child_density_is_what_the_split_likelihood_combines_and_rejects_bad_input():
    """psi(L, R) = log(1/4pi) + logsumexp over orders of log 1/2 + f(t_P, t_L) + f((sqrt t_P - sqrt t_L)^2, t_R)."""
    jet = simulate(1, n_leaves=(5, 5), seed=2)[0]
    kids = children_of(jet.parents, 5)
    left, right = jet.content[kids[-1][0]], jet.content[kids[-1][1]]
    t_l, t_r, t_p = invariant_mass2(left), invariant_mass2(right), invariant_mass2(left + right)

    def order(a, b):
        rest = (math.sqrt(t_p) - math.sqrt(a)) ** 2
        return math.log(0.5) + float(child_log_density(t_p, a, lam=1.5) + child_log_density(rest, b, lam=1.5))

    expected = np.logaddexp(order(t_l, t_r), order(t_r, t_l)) - math.log(4 * math.pi)
    assert float(split_log_lik(left, right, lam=1.5)) == pytest.approx(expected, abs=1e-12)
    with pytest.raises(ValueError, match="t_par"):
        child_log_density(np.nan, 1.0)
    with pytest.raises(ValueError, match="lam"):
        child_log_density(40.0, 1.0, lam=0.0)
    with pytest.raises(ValueError, match="t_cut"):
        child_log_density(40.0, 1.0, t_cut=-1.0)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000))
def test_split_likelihood_is_left_right_symmetric(seed):
    jet = simulate(1, n_leaves=(4, 6), seed=seed)[0]
    kids = children_of(jet.parents, jet.n_leaves)
    left = np.stack([jet.content[k[0]] for k in kids if k])
    right = np.stack([jet.content[k[1]] for k in kids if k])
    assert np.allclose(split_log_lik(left, right), split_log_lik(right, left))


def test_split_likelihood_inadmissible_is_minus_inf():
    light = np.array([3.0, 0.0, 0.0, 2.0])  # parent of light and light/2 has t = 11.25 <= t_cut
    assert split_log_lik(light, light * 0.5) == -np.inf
    heavy = np.array([100.0, 0.0, 0.0, 0.0])  # t_L / t_P = 0.9998 >= 1 - 1e-3
    assert split_log_lik(heavy, np.array([0.01, 0.0, 0.0, 0.0099])) == -np.inf
    assert np.isfinite(split_log_lik(heavy, np.array([60.0, 0.0, 0.0, 59.9])))


def test_ginkgo_rejects_bad_input():
    with pytest.raises(ValueError, match="p_l"):
        split_log_lik(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="finite"):
        split_log_lik(np.full(4, np.inf), np.zeros(4))
    with pytest.raises(ValueError, match="lam"):
        split_log_lik(np.ones(4), np.ones(4), lam=0.0)
    with pytest.raises(ValueError, match="n_jets"):
        simulate(0)
    with pytest.raises(ValueError, match="n_leaves"):
        simulate(1, n_leaves=(5, 3))
    with pytest.raises(ValueError, match="jet_type"):
        simulate(1, jet_type="top")
    with pytest.raises(ValueError, match="t_cut"):
        simulate(1, t_cut=-1.0)
    with pytest.raises(RuntimeError, match="acceptance"):
        simulate(1, n_leaves=(40, 40), max_tries=5)
    jet = simulate(1, n_leaves=(4, 4), seed=0)[0]
    with pytest.raises(ValueError, match="two children"):
        tree_log_lik(jet.leaves, np.array([4, 4, 4, 5, 6, 6, -1]))
    with pytest.raises(ValueError, match="shape"):
        tree_log_lik(jet.leaves, np.array([4, 4, 5, -1]))


def test_w_jets_and_ginkgo_dict():
    jet = simulate(1, jet_type="W", n_leaves=(3, 12), seed=1)[0]
    assert invariant_mass2(jet.leaves.sum(0)) == pytest.approx(80.0**2, rel=1e-9)
    d = jet.to_ginkgo_dict()
    assert d["root_id"] == 0 and d["tree"].shape == (2 * jet.n_leaves - 1, 2)
    assert np.allclose(d["content"][0], jet.leaves.sum(0)) and d["M_Hard"] == pytest.approx(80.0)


def test_unphysical_leaves_are_refused_naming_the_row_and_simulated_ones_pass():
    """Review 0.2.2: leaves with E < 0 or |p| > E gave log Z = -inf and 0 valid trees silently."""
    from nips25_treegen.ginkgo import _check_leaves

    jets = simulate(200, seed=3)
    for jet in jets:  # no false alarm on the simulator's own (boosted, rounded) leaves
        _check_leaves(jet.leaves)
    leaves = jets[0].leaves.copy()
    bad = leaves.copy()
    bad[1, 0] = -1.0
    with pytest.raises(ValueError, match=r"leaves row 1 has energy -1 < 0"):
        tree_log_lik(bad, jets[0].parents)
    bad = leaves.copy()
    bad[2, 0] = 0.5 * np.linalg.norm(bad[2, 1:])
    with pytest.raises(ValueError, match=r"leaves row 2 has \|p\| = .* > E = .*negative invariant mass"):
        tree_log_lik(bad, jets[0].parents)
