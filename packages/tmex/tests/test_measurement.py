"""T-MEX: known answers (perfect, fully mixed), invariances, the scikit-learn estimator."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_tmex import TMEX, DegenerateResidualWarning, tmex
from sklearn.base import clone
from sklearn.exceptions import NotFittedError


def _latents(n=600, k=3, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k))
    for j in range(1, k):
        z[:, j] += 0.5 * z[:, j - 1]
    return z, rng


def test_fully_mixed_scores_mk_minus_m():
    """Each block = sum of all latents + small noise, k = 3, n = 1000: every test rejects, T-MEX = 9 - 3 = 6."""
    z, rng = _latents(1000)
    blocks = [z.sum(axis=1, keepdims=True) + 0.01 * rng.normal(size=(1000, 1)) for _ in range(3)]
    res = tmex(z, blocks)
    assert res.score == 6
    assert res.estimated_graph.all()
    assert res.false_positives == 6 and res.false_negatives == 0


def test_perfect_measurement_scores_zero():
    """Z_hat_i = Z_i: the diagonal is detected and off-diagonal residuals are exactly zero (p = 1)."""
    z, _ = _latents()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = tmex(z, [z[:, [j]] for j in range(3)])
    degenerate = [w for w in caught if issubclass(w.category, DegenerateResidualWarning)]
    assert len(degenerate) == 1 and "6 (block, latent) pair(s)" in str(degenerate[0].message)
    assert res.score == 0
    np.testing.assert_array_equal(res.p_values[~np.eye(3, dtype=bool)], 1.0)


_Z, _RNG = _latents(400, 3, seed=11)
_BLOCKS = [(_Z[:, [j]] + 0.3 * _Z[:, [(j + 1) % 3]] + 0.4 * _RNG.normal(size=(400, 1))) for j in range(3)]
_BASE = tmex(_Z, _BLOCKS)


@settings(max_examples=15, deadline=None)
@given(
    scales=st.lists(st.floats(0.05, 50).map(lambda v: v) | st.floats(-50, -0.05), min_size=3, max_size=3),
    shifts=st.lists(st.floats(-100, 100), min_size=3, max_size=3),
)
def test_invariant_to_affine_maps_of_blocks(scales, shifts):
    """With LM regressions, a x + c (a != 0) of any block leaves every p-value and the score unchanged."""
    blocks = [s * b + c for s, c, b in zip(scales, shifts, _BLOCKS)]
    res = tmex(_Z, blocks)
    np.testing.assert_allclose(res.p_values, _BASE.p_values, rtol=1e-6, atol=1e-12)
    assert res.score == _BASE.score


def test_invariant_to_invertible_linear_map_of_multivariate_block_quadratic():
    """A 2-D block times an invertible matrix: the quadratic GCM (a Mahalanobis form) is unchanged."""
    z, rng = _latents(500, 3, seed=3)
    block = np.column_stack([z[:, 0] + 0.2 * rng.normal(size=500), z[:, 1] + 0.2 * rng.normal(size=500)])
    w = np.array([[1, 1, 0]])
    a = np.array([[2.0, 1.0], [-0.5, 3.0]])
    base = tmex(z, [block], w, test_type="quadratic")
    moved = tmex(z, [block @ a + 5.0], w, test_type="quadratic")
    np.testing.assert_allclose(moved.p_values, base.p_values, rtol=1e-6)
    assert moved.score == base.score


@settings(max_examples=10, deadline=None)
@given(perm=st.permutations([0, 1, 2]))
def test_invariant_to_joint_permutation_of_blocks_and_latents(perm):
    """Permuting blocks with the rows of W, or latents with the columns of W, permutes p-values only."""
    w = np.eye(3, dtype=int)
    perm = list(perm)
    by_blocks = tmex(_Z, [_BLOCKS[i] for i in perm], w[perm])
    np.testing.assert_allclose(by_blocks.p_values, _BASE.p_values[perm], rtol=1e-8)
    assert by_blocks.score == _BASE.score
    by_latents = tmex(_Z[:, perm], _BLOCKS, w[:, perm])
    np.testing.assert_allclose(by_latents.p_values, _BASE.p_values[:, perm], rtol=1e-8)
    assert by_latents.score == _BASE.score


def test_noisy_measurement_false_positive_rate_is_alpha():
    """Perfect noisy measurements: off-diagonal rejections happen at rate alpha (binomial 99.9% band)."""
    rng = np.random.default_rng(8)
    fp, total = 0, 0
    for _ in range(30):
        z = rng.normal(size=(300, 4)) @ np.triu(np.ones((4, 4)))
        res = tmex(z, [z[:, [j]] + 0.2 * rng.normal(size=(300, 1)) for j in range(4)])
        fp += res.false_positives
        total += 12
    assert 0.05 * total - 3.3 * np.sqrt(total * 0.05 * 0.95) <= fp <= 0.05 * total + 3.3 * np.sqrt(total * 0.0475)


def test_holm_and_bonferroni_never_add_rejections():
    raw = tmex(_Z, _BLOCKS)
    for corr in ("holm", "bonferroni"):
        res = tmex(_Z, _BLOCKS, correction=corr)
        assert not np.any(res.estimated_graph & ~raw.estimated_graph)


def test_targets_restrict_the_tested_latents():
    """Sec. 5.1 score: one block, W = [1, 0, 0] over z0..z2 of five latents, each test conditioning on all others."""
    z, rng = _latents(800, 5, seed=9)
    h = z[:, [0]] + 0.1 * rng.normal(size=(800, 1))
    res = tmex(z, [h], [[1, 0, 0]], targets=[0, 1, 2])
    assert res.p_values.shape == (1, 3)
    full = tmex(z, [h], [[1, 0, 0, 0, 0]])
    np.testing.assert_allclose(res.p_values, full.p_values[:, :3])


def test_estimator_matches_function_and_clones():
    """TMEX().fit(X, y) equals tmex(y, blocks of X); get_params/clone follow scikit-learn conventions."""
    x = np.hstack(_BLOCKS)
    est = TMEX(alpha=0.05).fit(x, _Z)
    assert est.score_ == _BASE.score
    np.testing.assert_allclose(est.p_values_, _BASE.p_values)
    assert est.score(x, _Z) == -float(_BASE.score)
    twin = clone(est).set_params(alpha=0.01)
    assert twin.get_params()["alpha"] == 0.01 and not hasattr(twin, "score_")
    sized = TMEX(blocks=[2, 1], measurement_graph=[[1, 1, 0], [0, 0, 1]]).fit(x, _Z)
    assert sized.p_values_.shape == (2, 3)


def test_estimator_score_needs_fit_and_blocks_must_not_overlap():
    x = np.hstack(_BLOCKS)
    with pytest.raises(NotFittedError):
        TMEX().score(x, _Z)
    with pytest.raises(ValueError, match=r"X has 2 columns, but TMEX was fitted with 3"):
        TMEX().fit(x, _Z).score(x[:, :2], _Z)
    with pytest.raises(ValueError, match=r"blocks must not overlap: column 0 is in blocks\[0\] and blocks\[1\]"):
        TMEX(blocks=[[0], [0], [1]]).fit(x, _Z)
    with pytest.raises(ValueError, match=r"blocks must not overlap: column 1"):
        TMEX(blocks=[[1, 1], [0], [2]]).fit(x, _Z)


def test_pcm_and_custom_tests_plug_in():
    """test='pcm' and a callable test run through the same loop and see the perfect structure."""
    z, rng = _latents(400, 2, seed=4)
    blocks = [z[:, [0]] + 0.2 * rng.normal(size=(400, 1)), z.sum(axis=1, keepdims=True)]
    w = [[1, 0], [1, 1]]
    assert tmex(z, blocks, w, test="pcm", reps=3).estimated_graph[1].all()
    calls = []

    def fisher(y, x, zz):
        calls.append(1)
        return 0.5

    assert tmex(z, blocks, w, test=fisher).score == 3
    assert len(calls) == 4
