"""Simulators, PCM and KCI against independent references."""

import numpy as np
import pytest
from nips25_tmex import (
    FiveLatentSCM,
    MultiViewMixing,
    corrupt_with_descendants,
    kci_available,
    kci_test,
    location_scale_scm,
    measurements,
    pcm_test,
    random_dag,
)


def test_random_dag_is_strictly_lower_triangular_and_roots_are_standard_normal():
    rng = np.random.default_rng(0)
    adj = random_dag(6, rng)
    assert np.all(np.triu(adj) == 0) and set(np.unique(adj)) <= {0, 1}
    adj = np.zeros((3, 3), dtype=int)
    adj[2, 0] = 1
    z = location_scale_scm(20000, adj, rng)
    assert z[:, 0].std() == pytest.approx(1.0, abs=0.03)
    assert abs(np.corrcoef(z[:, 0], z[:, 1])[0, 1]) < 0.03  # node 1 is a root, independent of node 0


def test_measurement_kinds_follow_their_formulas():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(50, 3))
    np.testing.assert_array_equal(np.hstack(measurements(z, "perfect", rng)), z)
    np.testing.assert_allclose(np.hstack(measurements(z, "full", rng)), 0.8 * z + 0.2 * z.sum(1, keepdims=True))
    part = np.hstack(measurements(z, "partial", rng, noise_sd=0.0))
    np.testing.assert_allclose(part, 0.8 * z + 0.2 * z[:, [1, 2, 0]])


def test_five_latent_views_share_only_z0():
    z = FiveLatentSCM().sample(10, np.random.default_rng(2))
    v1, v2 = MultiViewMixing().views(z)
    z_other = z.copy()
    z_other[:, [3, 4]] += 1.0  # x, y only enter view 2
    np.testing.assert_array_equal(MultiViewMixing().views(z_other)[0], v1)
    assert not np.allclose(MultiViewMixing().views(z_other)[1], v2)
    np.testing.assert_allclose(corrupt_with_descendants(z[:, 0], z), z[:, 0] + 0.2 * z[:, 1] - 0.1 * z[:, 2])


def test_pcm_null_and_alternative():
    rng = np.random.default_rng(3)
    p_null = []
    for i in range(40):
        zc = rng.normal(size=(300, 2))
        x = zc[:, 0] + rng.normal(size=300)
        y = zc[:, 1] + rng.normal(size=300)
        p_null.append(pcm_test(y, x, zc, reps=3, random_state=i).pvalue)
    assert np.mean(np.asarray(p_null) < 0.05) <= 0.2
    x = rng.normal(size=300)
    assert pcm_test(x + 0.5 * rng.normal(size=300), x).pvalue < 1e-4


@pytest.mark.skipif(not kci_available(), reason="causal-learn not installed")
def test_kci_detects_dependence_and_accepts_independence():
    rng = np.random.default_rng(4)
    z = rng.normal(size=(150, 1))
    x = z[:, 0] + 0.5 * rng.normal(size=150)
    assert kci_test(x**2 + 0.1 * rng.normal(size=150), x, z).pvalue < 0.01
    assert kci_test(z[:, 0] + rng.normal(size=150), x, z).pvalue > 0.001


def test_kci_missing_dependency_names_the_extra(monkeypatch):
    import nips25_tmex.kci as kci

    monkeypatch.setattr(kci, "kci_available", lambda: False)
    with pytest.raises(ImportError, match=r"nips25-tmex\[kci\]"):
        kci.kci_test(np.arange(10.0), np.arange(10.0) ** 2)


def test_kci_with_a_constant_conditioning_set_is_the_marginal_test():
    """Before: a raw LinAlgError from causal-learn. A constant Z carries no information: same as no Z."""
    pytest.importorskip("causallearn")
    rng = np.random.default_rng(5)
    x = rng.normal(size=150)
    y = x + rng.normal(size=150)
    marginal = kci_test(y, x)
    constant = kci_test(y, x, np.ones((150, 2)))
    assert constant.pvalue == pytest.approx(marginal.pvalue) and constant.statistic == pytest.approx(marginal.statistic)
    w = rng.normal(size=(150, 1))
    mixed = kci_test(y, x, np.column_stack([w, np.ones(150)]))  # the constant column is dropped, w is kept
    assert mixed.statistic == pytest.approx(kci_test(y, x, w).statistic)
