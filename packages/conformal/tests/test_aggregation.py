"""Known answers for the aggregated p-values (paper, Sec. 3-4)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_conformal import NullLaw, aggregate_pvalue, combine_view_pvalues, null_distribution
from scipy import stats

STATS = ["sum", "fisher", "min", "majority_refined", "quantile_envelope", "area_envelope", "distance_envelope"]


def _counts(cal: np.ndarray, test: np.ndarray) -> np.ndarray:
    return (cal[None, :] >= test[:, None]).sum(axis=1)


def test_sum_equals_exact_mann_whitney_hand_value():
    """Cal 0..11, test (2.5, 5.5, 9.5, 11.5): K = (9,6,2,0), sum 17, p = 0.223077 = scipy's exact Mann-Whitney."""
    cal, test = np.arange(12.0), np.array([2.5, 5.5, 9.5, 11.5])
    k = _counts(cal, test)
    np.testing.assert_array_equal(k, [9, 6, 2, 0])
    ours = float(aggregate_pvalue(k, 12, statistic="sum"))
    ref = stats.mannwhitneyu(test, cal, alternative="greater", method="exact").pvalue
    assert ours == pytest.approx(0.223077, abs=1e-6)
    assert ours == pytest.approx(ref, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 25), st.integers(1, 6), st.integers(0, 10_000))
def test_sum_equals_scipy_mann_whitney_random(n, m, seed):
    """For any n, m and continuous scores, sum-aggregation = scipy mannwhitneyu(test, cal, 'greater', exact)."""
    rng = np.random.default_rng(seed)
    cal, test = rng.normal(size=n), rng.normal(size=m) + 0.5
    ours = float(aggregate_pvalue(_counts(cal, test), n, statistic="sum"))
    ref = stats.mannwhitneyu(test, cal, alternative="greater", method="exact").pvalue
    assert ours == pytest.approx(ref, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("statistic", STATS)
def test_exact_law_equals_enumeration(statistic):
    """Closed-form / enumerated law and Monte Carlo agree: |p_exact - p_mc| <= 4 * 0.5/sqrt(R) + 1/R."""
    law = NullLaw(15, 4)
    support = law.enumerate()[::97]
    exact = aggregate_pvalue(support, 15, statistic=statistic, method="enumerate")
    auto = aggregate_pvalue(support, 15, statistic=statistic)
    np.testing.assert_allclose(auto, exact, atol=1e-12)
    mc = aggregate_pvalue(support, 15, statistic=statistic, method="mc", n_mc=20_000, rng=np.random.default_rng(0))
    assert np.max(np.abs(mc - exact)) <= 4 * 0.5 / np.sqrt(20_000) + 1 / 20_000


@pytest.mark.parametrize("statistic", STATS)
def test_super_uniform_under_exchangeability_ks(statistic):
    """Randomised p-values are U(0,1) under exchangeability (KS), deterministic ones super-uniform."""
    n, m, reps = 10, 3, 4000
    rng = np.random.default_rng(7)
    cal, test = rng.exponential(size=(reps, n)), rng.exponential(size=(reps, m))
    counts = (cal[:, None, :] >= test[:, :, None]).sum(axis=2)
    p_rand = aggregate_pvalue(counts, n, statistic=statistic, randomize=True, rng=np.random.default_rng(1))
    assert stats.kstest(p_rand, "uniform").pvalue > 1e-3
    p_det = aggregate_pvalue(counts, n, statistic=statistic)
    grid = np.linspace(0.01, 0.99, 50)
    ecdf = (p_det[:, None] <= grid).mean(axis=0)
    assert np.all(ecdf <= grid + 3 * np.sqrt(grid * (1 - grid) / reps))  # P(p <= t) <= t within 3 SE


def test_majority_refined_level_vs_naive():
    """n=20, m=5, alpha=0.1: naive vote coverage 0.983794, refined 0.930152 (exact, any score law)."""
    law = NullLaw(20, 5)
    support = law.enumerate()
    p_refined = aggregate_pvalue(support, 20, statistic="majority_refined")
    assert (p_refined > 0.1).mean() == pytest.approx(0.930152, abs=1e-6)
    p_views = (1 + support) / 21
    naive = combine_view_pvalues(p_views, rule="majority_naive")
    assert (naive > 0.1).mean() == pytest.approx(0.983794, abs=1e-6)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(STATS))
def test_invariant_to_view_permutation_and_monotone_transform(seed, statistic):
    """p_agg depends on the multiset of ranks: permuting views or applying exp() to all scores changes nothing."""
    rng = np.random.default_rng(seed)
    cal, test = rng.normal(size=12), rng.normal(size=4)
    base = aggregate_pvalue(_counts(cal, test), 12, statistic=statistic)
    perm = aggregate_pvalue(_counts(cal, test[rng.permutation(4)]), 12, statistic=statistic)
    mono = aggregate_pvalue(_counts(np.exp(cal), np.exp(test)), 12, statistic=statistic)
    assert base == perm == mono


def test_null_distribution_exact_refuses_fisher():
    with pytest.raises(ValueError, match="no closed-form"):
        null_distribution("fisher", 10, 3, method="exact")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"counts": np.array([1, 2, 30]), "n": 10}, "counts must lie"),
        ({"counts": np.array([1.5, 2.0]), "n": 10}, "finite integers"),
        ({"counts": np.array([np.nan, 2.0]), "n": 10}, "finite integers"),
        ({"counts": np.zeros((0,), dtype=int), "n": 10}, "m >= 1"),
        ({"counts": np.array([1, 2]), "n": 0}, "n must be a positive integer"),
        ({"counts": np.array([1, 2]), "n": 10, "statistic": "bogus"}, "statistic must be one of"),
        ({"counts": np.array([1, 2]), "n": 10, "method": "bogus"}, "method must be one of"),
        ({"counts": np.array([1, 2]), "n": 10, "n_mc": 0}, "n_mc must be"),
    ],
)
def test_aggregate_pvalue_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        aggregate_pvalue(**kwargs)


def test_combine_view_pvalues_rules_and_bad_input():
    """Hand values: single=p1, union=max, intersection=min, bonferroni=m*min, majority_naive=p_(ceil(m/2))."""
    p = np.array([0.3, 0.04, 0.5])
    expected = {"single": 0.3, "union": 0.5, "intersection": 0.04, "bonferroni": 0.12, "majority_naive": 0.3}
    for rule, value in expected.items():
        assert float(combine_view_pvalues(p, rule=rule)) == pytest.approx(value)
    with pytest.raises(ValueError, match="rule must be one of"):
        combine_view_pvalues(p, rule="bogus")
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        combine_view_pvalues(np.array([0.3, 1.5]), rule="union")


@pytest.mark.parametrize("statistic", STATS)
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2])
def test_deterministic_coverage_between_level_and_level_plus_atom(statistic, alpha):
    """Exact coverage P(p_agg > alpha) under A_{n,m} (enumerated) lies in [1 - alpha, 1 - alpha + largest atom]."""
    law = NullLaw(12, 3)
    support = law.enumerate()
    p = aggregate_pvalue(support, 12, statistic=statistic, method="enumerate")
    coverage = (p > alpha).mean()
    atom = np.unique(p, return_counts=True)[1].max() / len(p)
    assert 1 - alpha - 1e-12 <= coverage <= 1 - alpha + atom + 1e-12
    p_rand = aggregate_pvalue(support, 12, statistic=statistic, method="enumerate", randomize=True)
    assert np.all(p_rand <= p + 1e-12)  # randomisation only lowers the p-value (towards exact level)
