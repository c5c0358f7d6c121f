"""Parametrisation round trips, linkage export and the clustering baselines."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_treegen.baselines import beam, greedy, kt_cluster, stochastic_greedy, uniform_valid
from nips25_treegen.ginkgo import simulate, tree_log_lik
from nips25_treegen.hierarchy import clusters, decode, encode, is_binary_tree, leaf_masks, to_linkage
from nips25_treegen.trellis import Trellis
from scipy.cluster import hierarchy as sch


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 9))
def test_tree_to_ab_to_tree_round_trip(seed, n):
    jet = simulate(1, n_leaves=(n, n), seed=seed)[0]
    a, b = encode(jet.parents, n)
    assert np.all(b > np.arange(n - 2))
    assert np.array_equal(decode(a, b), jet.parents)


def test_leaf_permutation_invariance_of_likelihood_and_trellis():
    """Relabelling the leaves leaves tree likelihoods and log Z unchanged."""
    jet = simulate(1, n_leaves=(6, 6), seed=4)[0]
    perm = np.random.default_rng(0).permutation(6)
    inv = np.argsort(perm)
    parents = jet.parents.copy()
    parents[:6] = jet.parents[perm]
    assert tree_log_lik(jet.leaves[perm], parents) == pytest.approx(jet.log_lik)
    assert Trellis(jet.leaves[perm]).log_partition() == pytest.approx(Trellis(jet.leaves).log_partition())
    assert np.array_equal(inv[perm], np.arange(6))


def test_linkage_is_valid_scipy_linkage():
    jet = simulate(1, n_leaves=(7, 7), seed=2)[0]
    z = to_linkage(jet.parents, 7, heights=jet.t)
    assert sch.is_valid_linkage(z) and z.shape == (6, 4) and z[-1, 3] == 7
    masks = leaf_masks(jet.parents, 7)
    assert masks[-1] == 127


def test_greedy_and_beam_bounded_by_map():
    """greedy, beam <= MAP; beam with a huge width on N=5 (every partition kept) finds the MAP."""
    for seed in range(4):
        jet = simulate(1, n_leaves=(5, 5), seed=seed)[0]
        tr = Trellis(jet.leaves)
        g, bm = tree_log_lik(jet.leaves, greedy(jet.leaves)), tree_log_lik(jet.leaves, beam(jet.leaves))
        assert max(g, bm) <= tr.map_log_lik() + 1e-9
        assert tree_log_lik(jet.leaves, beam(jet.leaves, beam_width=1000)) == pytest.approx(tr.map_log_lik())
        assert clusters(greedy(jet.leaves), 5) == clusters(beam(jet.leaves, beam_width=1), 5)


def test_kt_cambridge_merges_closest_angle_first():
    """With p = 0 both distances reduce to the angle: the first merge joins the angularly closest pair."""
    leaves = np.array([[10, 10, 0, 0], [10, 9.9, 1.4, 0], [10, 0, 10, 0], [10, 0, 0, 10]], dtype=float)
    leaves[:, 0] = np.linalg.norm(leaves[:, 1:], axis=1) + 0.5
    for distance in ("ginkgo", "ee"):
        _, history = kt_cluster(leaves, p=0.0, distance=distance, return_history=True)
        assert 0b0011 in history[1]
        assert len(history) == 4 and history[-1] == frozenset({15})


def test_uniform_and_stochastic_samples_are_valid_trees():
    jet = simulate(1, n_leaves=(6, 6), seed=8)[0]
    for p in uniform_valid(jet.leaves, 20, seed=0) + stochastic_greedy(jet.leaves, n_samples=5, seed=0):
        assert is_binary_tree(p, 6)
    lls = [tree_log_lik(jet.leaves, p) for p in uniform_valid(jet.leaves, 20, seed=0)]
    assert np.all(np.isfinite(lls))


def test_kt_matches_fastjet_exclusive_jets():
    """ee_genkt with R = pi: our partitions equal fastjet's exclusive_jets(n) for every n (optional peer)."""
    fastjet = pytest.importorskip("fastjet")
    for seed, p in [(0, 1.0), (1, 0.0), (2, -1.0), (3, 1.0)]:
        jet = simulate(1, n_leaves=(7, 9), seed=seed)[0]
        _, ours = kt_cluster(jet.leaves, p=p, distance="ee", return_history=True)
        particles = []
        for i, (e, px, py, pz) in enumerate(jet.leaves):
            pj = fastjet.PseudoJet(float(px), float(py), float(pz), float(e))
            pj.set_user_index(i)
            particles.append(pj)
        seq = fastjet.ClusterSequence(particles, fastjet.JetDefinition(fastjet.ee_genkt_algorithm, np.pi, p))
        n = jet.n_leaves
        for k in range(n, 0, -1):
            theirs = frozenset(sum(1 << c.user_index() for c in j.constituents()) for j in seq.exclusive_jets(k))
            assert theirs == ours[n - k]


def test_hierarchy_and_baselines_reject_bad_input():
    leaves = simulate(1, n_leaves=(4, 4), seed=0)[0].leaves
    with pytest.raises(ValueError, match="shape"):
        is_binary_tree([0, 1], 4)
    with pytest.raises(TypeError, match="integer"):
        is_binary_tree(["a"] * 7, 4)
    with pytest.raises(ValueError, match="n_leaves"):
        leaf_masks([0], 0)
    with pytest.raises(ValueError, match="b must"):
        decode([0, 0, 1, 1], [0])
    with pytest.raises(ValueError, match="b\\[i\\]"):
        decode(np.array([0, 0, 1, 1]), np.array([0, 2]))
    with pytest.raises(ValueError, match="beam_width"):
        beam(leaves, beam_width=0)
    with pytest.raises(ValueError, match="temperature"):
        stochastic_greedy(leaves, temperature=0.0)
    with pytest.raises(ValueError, match="distance"):
        kt_cluster(leaves, distance="pp")
    with pytest.raises(ValueError, match="p must"):
        kt_cluster(leaves, p=float("nan"))
    with pytest.raises(ValueError, match="leaves"):
        greedy(np.zeros((4, 5)))
    with pytest.raises(ValueError, match="heights"):
        to_linkage(simulate(1, n_leaves=(4, 4), seed=0)[0].parents, 4, heights=np.ones(3))
