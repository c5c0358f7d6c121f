"""Known answers of the exact trellis: brute-force enumeration, split counts, exact samples."""

from collections import Counter

import numpy as np
import pytest
from nips25_treegen.ginkgo import simulate, tree_log_lik
from nips25_treegen.hierarchy import clusters
from nips25_treegen.labelling import canonical_parents
from nips25_treegen.trellis import (
    Trellis,
    brute_force,
    enumerate_trees,
    n_split_evaluations,
    n_trees,
    total_variation,
)
from scipy import stats


@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_log_partition_and_map_equal_brute_force(n):
    """log Z and the MAP of the trellis equal full enumeration of the (2N-3)!! trees."""
    jet = simulate(1, n_leaves=(n, n), seed=10 + n)[0]
    tr = Trellis(jet.leaves)
    log_z, map_ll, map_masks = brute_force(jet.leaves)
    assert tr.log_partition() == pytest.approx(log_z, abs=1e-9)
    assert tr.map_log_lik() == pytest.approx(map_ll, abs=1e-9)
    assert clusters(tr.map_tree(), n) == map_masks
    assert tree_log_lik(jet.leaves, tr.map_tree()) == pytest.approx(map_ll, abs=1e-9)


def test_counts_split_evaluations_and_trees():
    """(3^N - 2^(N+1) + 1)/2 split evaluations; (2N-3)!! trees; valid-tree count by enumeration."""
    assert n_split_evaluations(10) == 28501 and n_split_evaluations(12) == 261625
    assert n_trees(6) == 945 and n_trees(9) == 2027025 and n_trees(10) == 34459425
    assert sum(1 for _ in enumerate_trees(6)) == 945
    jet = simulate(1, n_leaves=(6, 6), seed=3)[0]
    tr = Trellis(jet.leaves)
    assert tr.n_split_evaluations == n_split_evaluations(6)
    finite = sum(np.isfinite(tree_log_lik(jet.leaves, canonical_parents(jet.leaves, t))) for t in enumerate_trees(6))
    assert tr.n_valid_trees() == finite


def test_samples_match_exact_posterior_chi_square():
    """Exact trellis samples over the 945 trees of a 6-leaf jet pass a chi-square test against the posterior."""
    jet = simulate(1, n_leaves=(6, 6), seed=5)[0]
    tr = Trellis(jet.leaves)
    trees = list(enumerate_trees(6))
    probs = np.array([np.exp(tr.log_posterior(canonical_parents(jet.leaves, t))) for t in trees])
    assert probs.sum() == pytest.approx(1.0, abs=1e-9)
    counts = Counter(clusters(p, 6) for p in tr.sample(3000, seed=0))
    big = probs * 3000 >= 5  # pool rare trees into one cell
    observed = np.array([counts.get(t, 0) for t, b in zip(trees, big) if b] + [0])
    observed[-1] = 3000 - observed[:-1].sum()
    expected = np.append(probs[big], probs[~big].sum()) * 3000
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_total_variation_known_answers():
    """TV of a point mass is 1 - p(tree); TV of many exact samples is small; invalid samples count fully."""
    jet = simulate(1, n_leaves=(5, 5), seed=2)[0]
    tr = Trellis(jet.leaves)
    top = tr.map_tree()
    p_top = np.exp(tr.log_posterior(top))
    assert total_variation(tr, np.stack([top] * 7)) == pytest.approx(1 - p_top, abs=1e-12)
    assert total_variation(tr, np.stack(tr.sample(4000, seed=1))) < 0.1
    bad = np.array([5, 5, 5, 6, 6, 7, 8, 8, -1])
    assert total_variation(tr, np.stack([bad, top])) == pytest.approx(0.5 * (0.5 + abs(0.5 - p_top) + 1 - p_top))


def test_trellis_rejects_bad_input():
    jet = simulate(1, n_leaves=(4, 4), seed=0)[0]
    with pytest.raises(ValueError, match="leaves"):
        Trellis(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="finite"):
        Trellis(np.full((4, 4), np.nan))
    with pytest.raises(ValueError, match="at most 12"):
        Trellis(np.ones((13, 4)))
    with pytest.raises(ValueError, match="at least 2"):
        Trellis(np.ones((1, 4)))
    with pytest.raises(ValueError, match="lam"):
        Trellis(jet.leaves, lam=-1.0)
    with pytest.raises(ValueError, match="k must"):
        Trellis(jet.leaves).sample(0)
    with pytest.raises(ValueError, match="samples"):
        total_variation(Trellis(jet.leaves), np.zeros((0, 7), dtype=int))
    with pytest.raises(ValueError, match="n_leaves"):
        enumerate_trees(10).__next__()
