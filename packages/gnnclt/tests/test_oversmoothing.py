"""Collapse of the class means: the singular-value ratio against the eigenvalue ratio."""

import itertools

import numpy as np
import pytest
from nips25_gnnclt import CSBM, collapse_ratio, eigenvalue_ratio, empirical_collapse_ratio, singular_value_ratio


def test_collapse_ratio_equals_eigenvalue_ratio_power(model):
    """Symmetric Q (uniform pi, symmetric B) and M = I: sigma2/sigma1(Q^k M) = (|l2|/l1)^k exactly."""
    rho = eigenvalue_ratio(model)
    lam = np.linalg.eigvalsh(model.Q)
    assert rho == pytest.approx(abs(lam[0]) / abs(lam[1]), rel=1e-12)
    for k in range(1, 7):
        assert collapse_ratio(model, k) == pytest.approx(rho**k, rel=1e-10, abs=1e-14)


def test_collapse_decreases_in_non_symmetric_case():
    m = CSBM(pi=[0.2, 0.3, 0.5], B=[[2.0, 0.3, 0.1], [0.3, 1.5, 0.4], [0.1, 0.4, 1.0]], means=np.eye(3)[:, :2] + 0.1,
             cov=np.eye(2))  # fmt: skip
    ratios = [collapse_ratio(m, k) for k in range(1, 8)]
    assert all(b < a for a, b in itertools.pairwise(ratios))
    rho = eigenvalue_ratio(m)
    assert ratios[-1] / ratios[-2] == pytest.approx(rho, rel=0.05)  # the asymptotic rate


def test_empirical_ratio_of_exact_means():
    y = np.array([0, 0, 1, 1])
    H = np.array([[2.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    assert empirical_collapse_ratio(H, y, 2) == pytest.approx(0.5)
    assert singular_value_ratio([[1.0, 1.0], [2.0, 2.0]]) == pytest.approx(0.0, abs=1e-12)


def test_collapse_rejects_bad_input(model):
    with pytest.raises(ValueError, match="means"):
        singular_value_ratio([[1.0, 2.0]])
    with pytest.raises(ValueError, match="zero"):
        singular_value_ratio(np.zeros((2, 2)))
    for k in (-1, 0):  # k = 0 refused, as by limit_covs
        with pytest.raises(ValueError, match="k must be >= 1"):
            collapse_ratio(model, k)
    with pytest.raises(ValueError, match="K"):
        eigenvalue_ratio(CSBM(pi=[1.0], B=[[1.0]], means=[[1.0]], cov=[[1.0]]))
