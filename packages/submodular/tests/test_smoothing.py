"""The smoothing surrogate, its subsets, the smoothing lemma (exact, by enumeration) and theory_params."""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from nips25_submodular import (
    Coverage,
    FacilityLocation,
    GraphCut,
    PersistentNoisyOracle,
    SmoothedSurrogate,
    smoothing_factor,
    smoothing_subsets,
    theory_params,
)
from submodular_testing import all_masks


def _instance(seed: int, m: int) -> tuple[FacilityLocation, np.ndarray, np.ndarray]:
    """Facility location on 12 elements, H = {1, 4, 6, 9, 11}, m 2-subsets of H, S = {0, 3}."""
    f = FacilityLocation(np.random.default_rng(seed).random((9, 12)))
    H = np.isin(np.arange(12), [1, 4, 6, 9, 11])
    return f, smoothing_subsets(H, t=2, m=m, key=jax.random.key(seed)), np.isin(np.arange(12), [0, 3])


def test_surrogate_equals_brute_force_average_when_enumerated():
    """m = C(h, t), no noise: F~(S) = C(h,t)^-1 sum_{|H'|=t} f(S ∪ H') exactly, and gains are its differences."""
    f, subsets, S = _instance(0, 10)
    F = SmoothedSurrogate(f, subsets)
    expected = np.mean([float(f(S | np.isin(np.arange(12), c))) for c in itertools.combinations([1, 4, 6, 9, 11], 2)])
    assert float(F(S)) == pytest.approx(expected, rel=1e-6)
    S2 = S.copy()
    S2[5] = True
    assert float(F.gains(jnp.asarray(S))[5]) == pytest.approx(float(F(S2)) - float(F(S)), rel=1e-5, abs=1e-5)
    assert F.queries_per_eval == 10


def test_surrogate_noise_averages_down_by_sqrt_m():
    """Multiplicative noise over 3000 oracle keys: error mean ~ 0, sd = sigma rms(f(S ∪ H'_j)) / sqrt(m) ± 15%."""
    f, subsets, s_np = _instance(1, 8)
    S = jnp.asarray(s_np)
    clean = np.array([float(f(s_np | s)) for s in subsets])

    def surrogate_value(key: jax.Array) -> jax.Array:
        return SmoothedSurrogate(PersistentNoisyOracle(f, sigma=0.5, key=key), subsets).value(S)

    err = np.asarray(jax.vmap(surrogate_value)(jax.random.split(jax.random.key(3), 3000))) - clean.mean()
    predicted = 0.5 * np.sqrt((clean**2).mean()) / np.sqrt(8)
    assert abs(err.mean()) < 4 * predicted / np.sqrt(3000)
    assert err.std() == pytest.approx(predicted, rel=0.15)


def test_smoothing_subsets_are_distinct_t_subsets_of_h():
    """Rows are distinct, have t elements, lie inside H; m > C(h, t), t >= h and m < 1 raise."""
    H = np.zeros(20, bool)
    H[[2, 3, 5, 7, 11, 13]] = True
    sub = smoothing_subsets(H, t=3, m=12, key=jax.random.key(0))
    assert sub.shape == (12, 20) and (sub.sum(axis=1) == 3).all() and not (sub & ~H).any()
    assert np.unique(sub, axis=0).shape[0] == 12
    with pytest.raises(ValueError, match="m must be <= C"):
        smoothing_subsets(H, t=3, m=21, key=jax.random.key(0))
    with pytest.raises(ValueError, match="t must be < h"):
        smoothing_subsets(H, t=6, m=1, key=jax.random.key(0))
    with pytest.raises(ValueError, match="m must be"):
        smoothing_subsets(H, t=2, m=0, key=jax.random.key(0))
    with pytest.raises(ValueError, match="t must be >= 1"):  # t = 0 used to return empty subsets silently
        smoothing_subsets(H, t=0, m=1, key=jax.random.key(0))
    with pytest.raises(ValueError, match="distinct"):
        SmoothedSurrogate(GraphCut(np.zeros((20, 20))), np.stack([sub[0], sub[0]]))


def _lemma_ratio(table: np.ndarray, n: int, base: np.ndarray, h: int, t: int, r: int) -> float:
    """E_H[max_{S ∈ I_H} F^{H,t}(S)] / f(O*) for a uniform matroid of rank r, by exhaustive enumeration."""
    masks = all_masks(n)
    codes = masks @ (1 << np.arange(n))
    size = masks.sum(axis=1)
    opt = table[size <= r].max()
    best = []
    for H in itertools.combinations(np.flatnonzero(base), h):
        h_code = sum(1 << i for i in H)
        feasible = ((codes & h_code) == 0) & (size <= r - h)
        sub_codes = [sum(1 << i for i in c) for c in itertools.combinations(H, t)]
        surrogate = np.mean([table[codes[feasible] | c] for c in sub_codes], axis=0)
        best.append(surrogate.max())
    return float(np.mean(best) / opt)


def test_smoothing_lemma_holds_exactly_on_small_instances():
    """E_H[max F^{H,t}] >= (1 - h/(r-h) [- t/(h-t)]) f(O*): monotone coverage (bound 2/3), graph cut (1/3)."""
    rng = np.random.default_rng(4)
    n = 16
    masks = all_masks(n)
    cov = Coverage(rng.random((30, n)) < 0.15, rng.random(30))
    table = np.asarray(jax.vmap(cov.value)(masks), dtype=np.float64)
    for seed in range(2):
        base = np.zeros(n, bool)
        base[np.random.default_rng(seed).choice(n, 8, replace=False)] = True
        assert _lemma_ratio(table, n, base, h=2, t=1, r=8) >= 1 - 2 / 6
    w = rng.random((n, n)) * (rng.random((n, n)) < 0.3)
    cut = GraphCut(w + w.T)
    table = np.asarray(jax.vmap(cut.value)(masks), dtype=np.float64)
    assert _lemma_ratio(table, n, np.ones(n, bool), h=4, t=1, r=n) >= 1 - 4 / 12 - 1 / 3


def test_theory_params_formula_and_feasibility():
    """m = ceil(nu^2 (n + ln 1/delta) / eps^2), t = ceil(log2 4m), h = t^2; feasible iff r > 2h."""
    p = theory_params(32, 32, eps=0.1, nu=1.0, delta=0.1)
    m = math.ceil((32 + math.log(10)) / 0.01)
    assert (p.m, p.t, p.h) == (m, math.ceil(math.log2(4 * m)), math.ceil(math.log2(4 * m)) ** 2)
    assert not p.feasible
    big = theory_params(10, 10_000, eps=1.0, nu=0.5, monotone=True)
    assert big.feasible and big.smoothing_loss == pytest.approx(big.h / (10_000 - big.h))
    with pytest.raises(ValueError, match="eps"):
        theory_params(10, 10, eps=0.0)
    with pytest.raises(ValueError, match="delta"):
        theory_params(10, 10, eps=0.1, delta=1.0)


def test_smoothing_factor_closed_form_and_bad_input():
    """rho = 1 - h/(r-h) - t/(h-t); the practical preset on Davis (r=32) gives 1 - 1/3 - 3/5 = 1/15 (issue 41)."""
    assert smoothing_factor(32, 8, 3, monotone=False) == pytest.approx(1 / 15)
    assert smoothing_factor(60, 8, 3, monotone=True) == pytest.approx(1 - 8 / 52)
    with pytest.raises(ValueError, match="r must be"):
        smoothing_factor(8, 8, 3, monotone=False)
    with pytest.raises(ValueError, match="h must be"):
        smoothing_factor(32, 3, 3, monotone=False)
