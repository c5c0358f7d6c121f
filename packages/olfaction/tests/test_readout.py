"""Readouts, coding metrics, FlyHash and the odour inputs."""

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from nips25_olfaction import (
    Circuit,
    CircuitParams,
    WhiteNoise,
    accuracy,
    fit_readout,
    hard_subset,
    kwta_hash,
    olsen_pn,
    overlap,
    simulate,
    sparseness,
    synthetic_odors,
)
from sklearn.neighbors import NearestCentroid


@given(st.integers(2, 50), st.data())
def test_treves_rolls_closed_form(n, data):
    """k equal non-zeros out of n: S = (1 - k/n) / (1 - 1/n)."""
    k = data.draw(st.integers(1, n))
    r = np.zeros((1, n))
    r[0, :k] = 3.0
    assert sparseness(r) == pytest.approx((1 - k / n) / (1 - 1 / n))


def test_lifetime_sparseness_and_overlap():
    counts = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 2.0]])
    assert sparseness(counts, kind="lifetime") == pytest.approx(np.mean([1.0, 0.0]))
    assert overlap(counts) == pytest.approx(1 / 2)
    with pytest.raises(ValueError, match="kind"):
        sparseness(counts, kind="temporal")


@given(st.integers(1, 40))
def test_kwta_exact_winners(k):
    rng = np.random.default_rng(k)
    c = (rng.random((40, 10)) < 0.3).astype(float)
    h = kwta_hash(rng.random((5, 10)), c, k=k)
    assert (h.sum(axis=1) == k).all()


def test_kwta_bad_k():
    with pytest.raises(ValueError, match="k must"):
        kwta_hash(np.ones((1, 3)), np.ones((4, 3)), k=5)


def test_olsen_hand_value_and_drosolf():
    """PN = 165 * 12^1.5 / (12^1.5 + 12^1.5 + (10.63 * 12 / 190)^1.5) for ORN = (12, 0)."""
    expected = 165 * 12**1.5 / (2 * 12**1.5 + (10.63 * 12 / 190) ** 1.5)
    assert olsen_pn([[12.0, 0.0]])[0, 0] == pytest.approx(expected, rel=1e-12)
    drosolf = pytest.importorskip("drosolf.pns")
    from nips25_olfaction import load_hallem

    orn, _ = load_hallem()
    np.testing.assert_allclose(olsen_pn(orn), drosolf.pns().to_numpy(dtype=float), rtol=1e-12, atol=1e-12)


def test_centroid_matches_scikit_learn():
    rng = np.random.default_rng(0)
    x = rng.poisson(2.0, size=(60, 30)).astype(float)
    y = np.repeat(np.arange(3), 20)
    x[y == 1, :5] += 3
    test = rng.poisson(2.0, size=(30, 30)).astype(float)
    ours = fit_readout(x, y, kind="centroid").predict(test)
    np.testing.assert_array_equal(ours, NearestCentroid().fit(x, y).predict(test))


def test_noise_free_accuracy_is_one_on_distinct_odors():
    odors = olsen_pn(synthetic_odors(np.random.default_rng(1), 5, similarity=0.0))
    c = Circuit.random(jax.random.key(0), n_pn=24, n_kc=300, params=CircuitParams(window=0.05, w_pn=4e-3))
    for cond in ("none", "LI", "SFA", "LI+SFA"):
        counts = np.asarray(
            simulate(c.with_condition(cond), odors, noise=WhiteNoise(0.0), n_trials=4, key=jax.random.key(0))
        )
        y = np.repeat(np.arange(5), 2)
        for kind in ("mbon", "mbon_binary", "centroid", "logistic"):
            acc = accuracy(counts[:, :2].reshape(-1, 300), y, counts[:, 2:].reshape(-1, 300), y, kind=kind)
            assert acc == 1.0, (cond, kind)


def test_hard_subset_is_centre_and_neighbours():
    pn = olsen_pn(synthetic_odors(np.random.default_rng(2), 12))
    idx = hard_subset(pn, 4)
    assert len(idx) == 4
    assert len(set(idx.tolist())) == 4
    corr = np.corrcoef(pn)
    centre = int(np.argmax(corr.mean(axis=1)))
    assert centre in idx


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: fit_readout(np.ones((4, 3)), [0, 0, 0, 0]), "two classes"),
        (lambda: fit_readout(np.ones((4, 3)), [0, 1]), "labels"),
        (lambda: fit_readout(np.ones((4, 3)), [0, 1, 0, 1], kind="svm"), "kind"),
        (lambda: olsen_pn(np.array([[np.inf]])), "finite"),
        (lambda: synthetic_odors(np.random.default_rng(0), 1), "n_odors"),
        (lambda: synthetic_odors(np.random.default_rng(0), 3, similarity=1.0), "similarity"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_review_findings_bad_input():
    """Inputs a new user got wrong answers or obscure errors for (review of 2026-11-29)."""
    import jax
    from nips25_olfaction import CircuitParams, calibrate, lif_rate, random_claws, sfa_gain_for_ratio

    x = np.ones((20, 5))
    with pytest.raises(TypeError, match="labels"):
        fit_readout(x, np.repeat([0.2, 0.7], 10))
    with pytest.raises(ValueError, match="counts"):
        fit_readout(-x, np.repeat([0, 1], 10))
    with pytest.raises(ValueError, match="ratio"):
        sfa_gain_for_ratio(CircuitParams(), ratio=1.5)
    with pytest.raises(ValueError, match="drive"):
        sfa_gain_for_ratio(CircuitParams(), drive=0.5)
    with pytest.raises(TypeError, match="n_kc"):
        random_claws(jax.random.key(0), 2.5, 4, 2)
    with pytest.raises(TypeError, match="key"):
        random_claws(0, 2, 4, 2)
    with pytest.raises(ValueError, match="k must"):
        hard_subset(np.random.default_rng(0).random((5, 3)), 2.5)
    with pytest.raises(ValueError, match="k must"):
        kwta_hash(np.ones((1, 3)), np.ones((4, 3)), k=True)
    with pytest.raises(TypeError, match="rng"):
        synthetic_odors(0, 3)
    circuit = Circuit.random(jax.random.key(0), n_pn=4, n_kc=50, claws=2, params=CircuitParams(window=0.05))
    with pytest.raises(ValueError, match="cannot drive"):
        calibrate(np.zeros((3, 4)), circuit)
    counts = simulate(
        circuit, np.full((1, 4), 50.0), noise=WhiteNoise(0.0), n_trials=np.int64(2), key=jax.random.key(0)
    )
    assert counts.shape == (1, 2, 50)
    with pytest.raises(TypeError, match="key"):
        simulate(circuit, np.full((1, 4), 50.0), noise=WhiteNoise(0.0), n_trials=1, key=0)
    assert round(lif_rate(2.0, CircuitParams()), 2) == 111.96  # the docstring's example


def test_count_readout_sees_sfa_binary_readout_cannot():
    """SFA is spike-triggered: with the same key the binary code under SFA equals "none" bit for bit (so the binary
    MBON readout is blind to it), while the spike counts, which the count MBON reads, differ."""
    odors = olsen_pn(synthetic_odors(np.random.default_rng(3), 4))
    c = Circuit.random(jax.random.key(0), n_pn=24, n_kc=200, params=CircuitParams(window=0.05, w_pn=4e-3, g_sfa=0.3))
    none, sfa = (
        np.asarray(simulate(c.with_condition(k), odors, noise=WhiteNoise(0.0), n_trials=1, key=jax.random.key(0)))
        for k in ("none", "SFA")
    )
    np.testing.assert_array_equal(none > 0, sfa > 0)
    assert sfa.sum() < none.sum()


def test_mbon_count_rule_hand_value():
    """w_c = mean count on class c minus the mean over classes; drive = w_c . n (hand-computed 2-KC example)."""
    x = np.array([[4.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
    y = np.array([0, 0, 1, 1])
    r = fit_readout(x, y, kind="mbon")
    np.testing.assert_allclose(r.model, [[1.5, -1.0], [-1.5, 1.0]])
    # binary rule: P(active | c) - P(active): the same signs, magnitudes 0.5
    np.testing.assert_allclose(fit_readout(x, y, kind="mbon_binary").model, [[0.5, -0.5], [-0.5, 0.5]])
    np.testing.assert_array_equal(r.predict([[1.0, 0.0], [0.0, 5.0]]), [0, 1])


def test_ties_are_broken_at_random_not_by_class_order():
    """A silent trial drives every MBON equally: its predicted class is drawn at random, not always class 0."""
    x = np.vstack([np.eye(4), np.eye(4)])
    y = np.tile(np.arange(4), 2)
    pred = fit_readout(x, y, kind="mbon").predict(np.zeros((200, 4)))
    assert len(set(pred.tolist())) == 4


def test_readout_classifier_is_a_scikit_learn_estimator():
    """ReadoutClassifier: any labels, the same predictions as fit_readout, clone / cross_val_score / score work."""
    from nips25_olfaction import ReadoutClassifier
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_score

    rng = np.random.default_rng(0)
    means = rng.gamma(1.0, 2.0, (3, 20))
    y_idx = np.repeat(np.arange(3), 10)
    x = rng.poisson(means[y_idx]).astype(float)
    names = np.array(["apple", "banana", "cherry"])[y_idx]
    for kind in ("mbon", "mbon_binary", "centroid", "logistic"):
        clf = ReadoutClassifier(kind=kind).fit(x, names)
        assert clf.classes_.tolist() == ["apple", "banana", "cherry"] and clf.n_features_in_ == 20
        expected = fit_readout(x, y_idx, kind=kind).predict(x)
        assert clf.predict(x).tolist() == clf.classes_[expected].tolist()
        assert clf.score(x, names) == pytest.approx(np.mean(expected == y_idx))
    assert clone(ReadoutClassifier(kind="centroid")).get_params() == {"kind": "centroid"}
    scores = cross_val_score(ReadoutClassifier(), x, names, cv=2)
    assert scores.shape == (2,) and np.all((scores >= 0) & (scores <= 1))
    with pytest.raises(ValueError, match="not fitted"):
        ReadoutClassifier().predict(x)
    with pytest.raises(ValueError, match="y must be 1-D"):
        ReadoutClassifier().fit(x, names[:, None])
    with pytest.raises(ValueError, match="kind"):
        ReadoutClassifier(kind="svm").fit(x, names)
