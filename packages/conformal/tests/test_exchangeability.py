"""The permutation diagnostic flags correlated views and not exchangeable ones."""

import numpy as np
import pytest
from nips25_conformal import exchangeability_diagnostic


def test_exchangeable_views_not_flagged_and_pvalues_uniformish():
    """Exchangeable views: the permutation p-value is super-uniform; over 40 draws, few are below 0.1."""
    rng = np.random.default_rng(0)
    pvals = []
    for _ in range(40):
        scores = [rng.normal(size=3) for _ in range(30)]
        pvals.append(exchangeability_diagnostic(scores, np.repeat([0, 1, 2], 10), n_permutations=99, rng=rng).p_value)
    assert np.mean(np.array(pvals) <= 0.1) <= 0.25


def test_correlated_views_flagged_with_warning():
    """Views = object effect + small noise (like transforms of one image): tiny p-value and a UserWarning."""
    rng = np.random.default_rng(1)
    scores = [rng.normal() + 0.1 * rng.normal(size=4) for _ in range(30)]
    with pytest.warns(UserWarning, match="more alike"):
        res = exchangeability_diagnostic(scores, np.zeros(30, dtype=int), n_permutations=199, rng=rng)
    assert res.p_value == pytest.approx(1 / 200)
    assert res.statistic < res.null_mean


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (([], np.array([])), {}, "at least one object"),
        (([np.ones(2)], np.array([0, 1])), {}, "labels must have shape"),
        (([np.array([1.0, np.nan])], np.array([0])), {}, "finite"),
        (([np.ones(1), np.ones(1)], np.array([0, 0])), {}, "two or more views"),
        (([np.ones(2)], np.array([0])), {"n_permutations": 0}, "n_permutations"),
        (([np.ones(2)], np.array([0])), {"level": 1.5}, "level"),
    ],
)
def test_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        exchangeability_diagnostic(*args, **kwargs)
