"""Multilinear extension, pipage rounding and measured continuous greedy."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from nips25_submodular import (
    FacilityLocation,
    Modular,
    Partition,
    Uniform,
    measured_continuous_greedy,
    multilinear,
    pipage_rounding,
)
from submodular_testing import all_masks


def exact_multilinear(f, y: np.ndarray) -> float:
    """F(y) = sum_S f(S) prod_{i in S} y_i prod_{i not in S} (1 - y_i), by enumerating all 2^n sets."""
    masks = all_masks(y.shape[0])
    probs = np.where(masks, y, 1 - y).prod(axis=1)
    return float(probs @ np.asarray(jax.vmap(f.value)(masks), dtype=np.float64))


def test_multilinear_of_modular_is_w_dot_y_and_sampling_within_3_se():
    """Modular: F(y) = w.y (exact enumeration); facility location at n = 10: MC estimate within 3 SE of exact."""
    rng = np.random.default_rng(0)
    w, y = rng.normal(size=10), rng.random(10)
    assert exact_multilinear(Modular(w), y) == pytest.approx(float(w @ y), abs=1e-5)
    f = FacilityLocation(rng.random((12, 10)))
    est, se = multilinear(f, y, n_samples=4000, key=jax.random.key(1))
    assert abs(est - exact_multilinear(f, y)) < 3 * se


def test_pipage_rounding_is_independent_and_preserves_marginals():
    """Every rounding is independent; the mean over 200 keys matches y (tolerance 4 binomial SE)."""
    m = Partition([0, 0, 0, 1, 1, 1], [2, 1])
    y = np.array([0.7, 0.6, 0.5, 0.2, 0.3, 0.4])
    draws = np.asarray(jax.vmap(lambda k: pipage_rounding(y, m, key=k))(jax.random.split(jax.random.key(0), 200)))
    assert all(bool(m.independent(d)) for d in draws[:50])
    assert (draws[:, :3].sum(axis=1) <= 2).all() and (draws[:, 3:].sum(axis=1) <= 1).all()
    assert np.all(np.abs(draws.mean(axis=0) - y) < 4 * np.sqrt(y * (1 - y) / 200))


def test_mcg_on_modular_puts_mass_only_on_top_k_and_returns_them():
    """Top-3 weights > e x the 4th: y is zero elsewhere and y_top = 1 - (1 - delta)^(1/delta); output = top 3."""
    w = np.array([1.0, 10.0, 1.0, 12.0, 0.5, 11.0, 1.0, 0.2])
    sel = measured_continuous_greedy(
        Modular(w), Uniform(8, 3), key=jax.random.key(0), monotone=True, delta=0.1, n_samples=64
    )
    top = np.array([1, 3, 5])
    assert np.all(sel.y[np.setdiff1d(np.arange(8), top)] == 0)
    np.testing.assert_allclose(sel.y[top], 1 - 0.9**10, rtol=1e-5)
    assert sel.indices.tolist() == top.tolist()


def test_mcg_reaches_one_minus_one_over_e_under_a_partition_matroid():
    """Monotone facility location, partition matroid at n = 10: MCG >= (1 - 1/e) OPT (brute force)."""
    f = FacilityLocation(np.random.default_rng(2).random((15, 10)))
    m = Partition([0] * 5 + [1] * 5, [2, 1])
    masks = all_masks(10)
    ok = np.asarray(jax.vmap(m.independent)(masks))
    opt = np.asarray(jax.vmap(f.value)(masks[ok])).max()
    sel = measured_continuous_greedy(f, m, key=jax.random.key(3), monotone=True, delta=0.1, n_samples=8)
    assert bool(m.independent(sel.mask)) and sel.mask.sum() == m.rank
    assert float(f(sel.mask)) >= (1 - 1 / math.e) * opt


def test_continuous_greedy_bad_input():
    """delta out of (0, 1], y outside [0, 1] or the polytope, wrong shapes raise naming the argument."""
    f, m = Modular([1.0, 2.0, 3.0]), Uniform(3, 1)
    with pytest.raises(ValueError, match="delta"):
        measured_continuous_greedy(f, m, key=jax.random.key(0), monotone=True, delta=0.0)
    with pytest.raises(ValueError, match="n_samples"):
        measured_continuous_greedy(f, m, key=jax.random.key(0), monotone=True, n_samples=0)
    with pytest.raises(ValueError, match="y"):
        multilinear(f, [0.5, 1.5, 0.0], key=jax.random.key(0))
    with pytest.raises(ValueError, match="y"):
        multilinear(f, [0.5, 0.5], key=jax.random.key(0))
    with pytest.raises(ValueError, match="polytope"):
        pipage_rounding([0.9, 0.9, 0.0], m, key=jax.random.key(0))
