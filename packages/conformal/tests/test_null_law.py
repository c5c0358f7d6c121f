"""Known answers for the exact null law A_{n,m} of the sorted counts (paper, Sec. 3)."""

import math

import numpy as np
import pytest
from nips25_conformal import NullLaw


def test_enumeration_size_and_sum_pmf_agree():
    """A_{12,4} has C(16,4) = 1820 points; the Gaussian-binomial pmf of the sum equals the enumerated one."""
    law = NullLaw(12, 4)
    support = law.enumerate()
    assert support.shape == (1820, 4)
    assert np.all(np.diff(support, axis=1) >= 0) and support.min() == 0 and support.max() == 12
    assert len({tuple(r) for r in support}) == 1820
    enumerated = np.bincount(support.sum(axis=1), minlength=12 * 4 + 1) / 1820
    np.testing.assert_allclose(law.sum_pmf(), enumerated, atol=1e-15)
    assert law.sum_pmf().sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_order_stat_cdf_equals_enumeration_and_sampler(k):
    """Hypergeometric CDF of K_(k) = enumerated law exactly, and sampler frequencies within 4 SE."""
    law = NullLaw(12, 4)
    support = law.enumerate()
    x = np.arange(13)
    exact = (support[:, k - 1][:, None] <= x).mean(axis=0)
    np.testing.assert_allclose(law.order_stat_cdf(k, x), exact, atol=1e-12)
    draws = law.sample(20_000, rng=np.random.default_rng(1))
    freq = (draws[:, k - 1][:, None] <= x).mean(axis=0)
    se = np.sqrt(exact * (1 - exact) / 20_000) + 1e-12
    assert np.all(np.abs(freq - exact) <= 4 * se + 1e-9)


def test_min_closed_form():
    """P(K_(1) <= x) = 1 - C(n+m-x-1, m)/C(n+m, m); n=20, m=5: P(K_(1)=0) = m/(n+m) = 0.2."""
    law = NullLaw(20, 5)
    assert law.order_stat_cdf(1, 0) == pytest.approx(0.2, abs=1e-12)
    for x in range(0, 20):
        assert law.order_stat_cdf(1, x) == pytest.approx(1 - math.comb(25 - x - 1, 5) / math.comb(25, 5), abs=1e-12)


def test_majority_known_probabilities():
    """n=20, m=5: naive majority rejects iff K_(3) <= 1 (prob 0.016206); refined x*=3 (0.069848 <= 0.1 < 0.113043)."""
    law = NullLaw(20, 5)
    assert law.order_stat_cdf(3, 1) == pytest.approx(0.016206, abs=1e-6)
    assert law.order_stat_cdf(3, 3) == pytest.approx(0.069848, abs=1e-6)
    assert law.order_stat_cdf(3, 4) == pytest.approx(0.113043, abs=1e-6)


def test_sampler_matches_exchangeable_scores():
    """The sampler's law equals the counts of m iid test scores against n iid calibration scores (chi-square)."""
    from scipy import stats

    n, m, reps = 5, 2, 20_000
    rng = np.random.default_rng(3)
    cal = rng.normal(size=(reps, n))
    test = rng.normal(size=(reps, m))
    counts = np.sort((cal[:, None, :] >= test[:, :, None]).sum(axis=2), axis=1)
    law = NullLaw(n, m)
    codes = counts[:, 0] * (n + 1) + counts[:, 1]
    support = law.enumerate()
    observed = np.array([(codes == a * (n + 1) + b).sum() for a, b in support])
    assert observed.sum() == reps
    assert stats.chisquare(observed).pvalue > 1e-3


@pytest.mark.parametrize(("n", "m"), [(0, 3), (5, 0), (-1, 1)])
def test_bad_sizes_raise(n, m):
    with pytest.raises(ValueError, match="must be >= 1"):
        NullLaw(n, m)


def test_bad_types_raise():
    with pytest.raises(TypeError, match="n must be an integer"):
        NullLaw(2.5, 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="exceeds limit"):
        NullLaw(100, 10).enumerate(limit=1000)
    with pytest.raises(ValueError, match="k must be <= m"):
        NullLaw(10, 3).order_stat_cdf(4, 1)
