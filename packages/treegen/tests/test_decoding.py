"""Constrained decoding of the (A, B) rows: known answers (brute force over all tables) first, then properties."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_treegen.decoding import EXACT_MAX_LEAVES, decode_rows, decode_trees, table_log_prob
from nips25_treegen.hierarchy import decode, is_binary_tree
from scipy.stats import chisquare


def _valid_tables(n):
    """Every (A, B) table over N leaves that decodes to a binary tree (brute force)."""
    s = n - 1
    ranges = [range(s)] * n + [range(i + 1, s) for i in range(n - 2)]
    return [
        np.array(x) for x in itertools.product(*ranges) if is_binary_tree(decode(np.array(x[:n]), np.array(x[n:])), n)
    ]


def test_valid_table_count_is_the_number_of_ranked_trees():
    """Tables with two children per slot are ranked binary trees: N! (N-1)! / 2^(N-1) of them (3, 18, 180)."""
    assert [len(_valid_tables(n)) for n in (3, 4, 5)] == [3, 18, 180]


@pytest.mark.parametrize("decoder", ["assignment", "exact"])
def test_map_decoder_equals_brute_force_maximum(decoder):
    """The constrained MAP is the highest-scoring valid table over all (A, B) tables, N = 3, 4, 5."""
    rng = np.random.default_rng(0)
    for n in (3, 4, 5):
        tables = _valid_tables(n)
        for _ in range(3):
            logits = rng.normal(scale=2.0, size=(2 * n - 2, n - 1))
            best = max(tables, key=lambda x: table_log_prob(logits, x))
            rows = decode_rows(logits, decoder=decoder, mode="map")
            assert np.array_equal(rows, best), (n, rows, best)


def test_exact_decoder_samples_the_restricted_row_product():
    """Exact draws follow q(x) ∝ prod_r p_r(x_r) 1[x valid] over the 18 tables at N = 4 (chi-square, fixed seed)."""
    n, m = 4, 12000
    rng = np.random.default_rng(1)
    logits = rng.normal(scale=1.5, size=(2 * n - 2, n - 1))
    tables = _valid_tables(n)
    lp = np.array([table_log_prob(logits, x) for x in tables])
    p = np.exp(lp - lp.max())
    p /= p.sum()
    rows = decode_rows(np.broadcast_to(logits, (m, *logits.shape)), decoder="exact", seed=3)
    index = {tuple(x): i for i, x in enumerate(tables)}
    counts = np.bincount([index[tuple(x)] for x in rows], minlength=len(tables))
    assert chisquare(counts, p * m).pvalue > 1e-3


def test_map_decoders_agree_and_beat_every_sample():
    """Assignment and DP MAPs have the same score, at least that of any constrained sample (N = 6..9)."""
    rng = np.random.default_rng(2)
    for n in (6, 7, 8, 9):
        logits = rng.normal(scale=3.0, size=(4, 2 * n - 2, n - 1))
        a = table_log_prob(logits, decode_rows(logits, decoder="assignment", mode="map"))
        e = table_log_prob(logits, decode_rows(logits, decoder="exact", mode="map"))
        np.testing.assert_allclose(a, e, rtol=1e-12)
        samples = decode_rows(np.repeat(logits, 20, 0), decoder="exact", seed=0).reshape(4, 20, -1)
        for k in range(4):
            assert table_log_prob(np.repeat(logits[k : k + 1], 20, 0), samples[k]).max() <= e[k] + 1e-9


def test_independent_decoder_is_the_per_row_argmax_and_a_certain_table_is_returned():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(8, 4))
    mask = np.ones((8, 4), dtype=bool)
    mask[5:] = np.arange(4)[None] > np.arange(3)[:, None]
    assert np.array_equal(
        decode_rows(logits, decoder="independent", mode="map"), np.where(mask, logits, -np.inf).argmax(-1)
    )
    truth = np.array([0, 0, 1, 2, 1, 2, 3, 3])  # leaves 0,1 -> slot 0; 2, 4 -> 1; 3 -> 2; slot 0 -> 2; slots 1, 2 -> 3
    certain = np.where(np.eye(4, dtype=bool)[truth], 0.0, -60.0)
    for decoder in ("independent", "assignment", "exact"):
        assert np.array_equal(decode_rows(np.stack([certain] * 5), decoder=decoder, seed=0), np.stack([truth] * 5))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(3, 9), scale=st.floats(0.1, 8.0), seed=st.integers(0, 2**31 - 1))
def test_every_constrained_sample_is_a_binary_tree(n, scale, seed):
    """Random logits, several N: every draw of both constrained decoders is a binary tree over the N leaves."""
    logits = np.random.default_rng(seed).normal(scale=scale, size=(6, 2 * n - 2, n - 1))
    for decoder in ("assignment", "exact"):
        for mode in ("sample", "map"):
            trees = decode_trees(logits, decoder=decoder, mode=mode, seed=seed)
            assert trees.shape == (6, 2 * n - 1)
            assert all(is_binary_tree(p, n) for p in trees), (decoder, mode)


def test_forbidden_entries_are_respected_and_infeasible_logits_rejected():
    n = 5
    logits = np.zeros((2 * n - 2, n - 1))
    logits[0, 0] = -np.inf  # leaf 0 may not go to slot 0
    for decoder in ("assignment", "exact"):
        rows = decode_rows(np.stack([logits] * 30), decoder=decoder, seed=1)
        assert np.all(rows[:, 0] != 0)
    bad = np.zeros((2 * n - 2, n - 1))
    bad[:n, 0] = -np.inf  # no leaf may go to slot 0, yet slot 0 can only hold leaves
    for decoder in ("assignment", "exact"):
        with pytest.raises(ValueError, match="no binary tree"):
            decode_rows(bad, decoder=decoder, seed=0)


def test_decoding_rejects_bad_input():
    ok = np.zeros((8, 4))
    with pytest.raises(ValueError, match="logits"):
        decode_rows(np.zeros((7, 4)))
    with pytest.raises(ValueError, match="logits"):
        decode_rows(np.zeros((2, 3, 8, 4)))
    with pytest.raises(ValueError, match="NaN"):
        decode_rows(np.full((8, 4), np.nan))
    with pytest.raises(ValueError, match="NaN"):
        decode_rows(np.full((8, 4), np.inf))
    with pytest.raises(ValueError, match="logits"):
        decode_rows(np.zeros((0, 8, 4)))
    with pytest.raises(TypeError, match="logits"):
        decode_rows(np.array([["a"] * 4] * 8))
    with pytest.raises(ValueError, match="decoder"):
        decode_rows(ok, decoder="greedy")
    with pytest.raises(ValueError, match="mode"):
        decode_rows(ok, mode="mean")
    with pytest.raises(ValueError, match="seed"):
        decode_rows(ok, decoder="exact", seed=-1)
    n = EXACT_MAX_LEAVES + 1
    with pytest.raises(ValueError, match="EXACT_MAX_LEAVES"):
        decode_rows(np.zeros((2 * n - 2, n - 1)), decoder="exact")
    with pytest.raises(ValueError, match="no allowed"):
        decode_rows(np.where(np.arange(4) == 3, -np.inf, 0.0) * np.ones((8, 1)), decoder="exact")
    with pytest.raises(ValueError, match="rows"):
        table_log_prob(ok, np.zeros(7, dtype=int))
    with pytest.raises(ValueError, match="rows"):
        table_log_prob(ok, np.full(8, 4))
    with pytest.raises(TypeError, match="rows"):
        table_log_prob(ok, np.zeros(8))


def test_non_numeric_logits_and_single_table_rows_errors_name_the_argument():
    """Review regressions: a list of strings named ``logits`` (not numpy's bare message); one table's ``rows`` are
    checked against ``(2N-2,)``, the shape the docstring asks for, and a ``(1, 2N-2)`` batch is not taken for it."""
    with pytest.raises(TypeError, match="logits"):
        decode_rows([["a", "b"]] * 4)
    with pytest.raises(ValueError, match=r"rows must have shape \(8,\)"):
        table_log_prob(np.zeros((8, 4)), np.zeros(7, dtype=int))
    with pytest.raises(ValueError, match=r"rows must have shape \(8,\)"):
        table_log_prob(np.zeros((8, 4)), np.zeros((1, 8), dtype=int))
    assert table_log_prob(np.zeros((1, 8, 4)), np.zeros((1, 8), dtype=int)).shape == (1,)


@pytest.mark.parametrize(("n", "decoders"), [(2, ("assignment", "exact")), (10, ("exact",)), (48, ("assignment",))])
def test_constrained_samples_are_binary_trees_at_the_edges(n, decoders):
    """Edge cases of the range: N = 2 (one slot), the exact decoder's limit, and a large N for the assignment."""
    logits = np.random.default_rng(n).normal(scale=3.0, size=(4, 2 * n - 2, n - 1))
    for decoder in decoders:
        for mode in ("sample", "map"):
            trees = decode_trees(logits, decoder=decoder, mode=mode, seed=0)
            assert trees.shape == (4, 2 * n - 1)
            assert all(is_binary_tree(p, n) for p in trees), (decoder, mode)
