"""Physically valid decoding in the canonical labelling: brute-force known answers, then validity properties."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_treegen.decoding import VALID_MAX_LEAVES, decode_rows, decode_trees, table_log_prob
from nips25_treegen.ginkgo import simulate, tree_log_lik
from nips25_treegen.hierarchy import clusters, encode, is_binary_tree
from nips25_treegen.labelling import canonical_parents, canonical_rows
from nips25_treegen.trellis import Trellis, enumerate_trees
from scipy.stats import chisquare


def _target(leaves, logits):
    """Brute force: every tree of (2N-3)!!, kept if physically valid, scored in its canonical table."""
    n = leaves.shape[0]
    tables, scores = [], []
    for masks in enumerate_trees(n):
        parents = canonical_parents(leaves, masks)
        if np.isfinite(tree_log_lik(leaves, parents)):
            x = np.concatenate(encode(parents, n))
            tables.append(x)
            scores.append(table_log_prob(logits, x))
    scores = np.array(scores)
    p = np.exp(scores - scores.max())
    return np.array(tables), p / p.sum()


def test_canonical_rows_equal_the_encoded_canonical_parents_and_the_truth_labelling():
    """The vectorised canonical tables equal encode(canonical_parents(...)) tree by tree, and simulated jets come in
    the canonical labelling, so training targets and decoded rows mean the same slots."""
    for jet in simulate(40, n_leaves=(3, 9), seed=5):
        n = jet.n_leaves
        assert np.array_equal(canonical_parents(jet.leaves, clusters(jet.parents, n)), jet.parents)
        assert np.array_equal(canonical_rows(jet.leaves, jet.parents), np.concatenate(encode(jet.parents, n)))
    jet = simulate(1, n_leaves=(6, 6), seed=2)[0]
    trees = Trellis(jet.leaves).valid_trees()
    rows = canonical_rows(jet.leaves, trees)
    for masks, x in zip(trees[::17], rows[::17]):
        assert np.array_equal(x, np.concatenate(encode(canonical_parents(jet.leaves, masks), 6)))


def test_valid_trees_are_exactly_the_finite_likelihood_trees():
    """The trellis enumeration of valid trees equals brute force over all 945 trees at N = 6."""
    jet = simulate(1, n_leaves=(6, 6), seed=0)[0]
    brute = {t for t in enumerate_trees(6) if np.isfinite(tree_log_lik(jet.leaves, canonical_parents(jet.leaves, t)))}
    tr = Trellis(jet.leaves)
    got = {frozenset(int(m) for m in row) for row in tr.valid_trees()}
    assert got == brute and len(brute) == tr.n_valid_trees() < 945


def test_valid_decoder_samples_the_physically_restricted_canonical_product():
    """Exact draws follow q(T) ∝ prod_r p_r(x_r(T)) over the valid trees (chi-square against brute force, N = 5)."""
    n, m = 5, 6000
    jet = simulate(1, n_leaves=(n, n), seed=1)[0]
    logits = np.random.default_rng(0).normal(scale=1.5, size=(2 * n - 2, n - 1))
    tables, p = _target(jet.leaves, logits)
    rows = decode_rows(np.broadcast_to(logits, (m, *logits.shape)), leaves=jet.leaves, seed=2)
    index = {tuple(x): i for i, x in enumerate(tables)}
    counts = np.bincount([index[tuple(x)] for x in rows], minlength=len(tables))  # KeyError: not a valid table
    keep = p * m >= 5
    assert chisquare(np.r_[counts[keep], counts[~keep].sum()], np.r_[p[keep], p[~keep].sum()] * m).pvalue > 1e-3
    best = decode_rows(logits, leaves=jet.leaves, mode="map")
    assert np.array_equal(best, tables[np.argmax(p)])


def test_merge_decoder_approaches_the_exact_decoder_as_particles_grow():
    """Sampling-importance-resampling: with 32 particles the merge decoder's draws are as close (TV) to q as exact
    draws of the same size (within 0.03); one particle (plain sequential merges) is far off (N = 6)."""
    n, m = 6, 3000
    jet = simulate(1, n_leaves=(n, n), seed=3)[0]
    logits = np.random.default_rng(1).normal(scale=1.5, size=(2 * n - 2, n - 1))
    tables, p = _target(jet.leaves, logits)
    index = {tuple(x): i for i, x in enumerate(tables)}

    def tv(**kw):
        rows = decode_rows(np.broadcast_to(logits, (m, *logits.shape)), leaves=jet.leaves, seed=4, **kw)
        freq = np.bincount([index[tuple(x)] for x in rows], minlength=len(tables)) / m
        return 0.5 * np.abs(freq - p).sum()

    floor = tv(decoder="valid")
    assert tv(decoder="merge", particles=32) < floor + 0.03
    assert tv(decoder="merge", particles=1) > floor + 0.1


@settings(max_examples=12, deadline=None)
@given(n=st.integers(3, 11), scale=st.floats(0.1, 8.0), seed=st.integers(0, 2**31 - 1))
def test_every_physical_draw_is_a_valid_tree(n, scale, seed):
    """Random logits, N = 3..11: every draw and MAP of the physical decoders is a binary tree with a finite Ginkgo
    likelihood, in the canonical labelling."""
    jet = simulate(1, n_leaves=(n, n), seed=seed % 1000)[0]
    logits = np.random.default_rng(seed).normal(scale=scale, size=(4, 2 * n - 2, n - 1))
    decoders = ("valid", "merge") if n <= VALID_MAX_LEAVES else ("merge",)
    for decoder in decoders:
        for mode in ("sample", "map"):
            trees = decode_trees(logits, decoder=decoder, mode=mode, seed=seed, leaves=jet.leaves, particles=8)
            for p in trees:
                assert is_binary_tree(p, n) and np.isfinite(tree_log_lik(jet.leaves, p)), (decoder, mode)
                assert np.array_equal(canonical_parents(jet.leaves, clusters(p, n)), p)


def test_physical_decoders_reject_bad_input():
    jet = simulate(1, n_leaves=(5, 5), seed=0)[0]
    ok = np.zeros((8, 4))
    with pytest.raises(ValueError, match="leaves"):
        decode_rows(ok)
    with pytest.raises(ValueError, match="leaves"):
        decode_rows(ok, leaves=jet.leaves[:4])
    with pytest.raises(ValueError, match="particles"):
        decode_rows(ok, decoder="merge", leaves=jet.leaves, particles=0)
    with pytest.raises(ValueError, match="t_cut"):
        decode_rows(ok, leaves=jet.leaves, t_cut=-1.0)
    n = VALID_MAX_LEAVES + 1
    big = simulate(1, n_leaves=(n, n), seed=0)[0]
    with pytest.raises(ValueError, match="VALID_MAX_LEAVES"):
        decode_rows(np.zeros((2 * n - 2, n - 1)), leaves=big.leaves)
    light = np.tile([3.0, 0.0, 0.0, 2.9], (4, 1)) * np.array([[1.0], [1.01], [1.02], [1.03]])  # no valid tree
    with pytest.raises(ValueError, match="no physically valid tree"):
        decode_rows(np.zeros((6, 3)), leaves=light)
