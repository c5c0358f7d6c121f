"""Known answers for the dual fit: strong duality, hand values, ample budgets, invariances."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_routing import GreedyRouter, PORTRouter, dual_objective, fit_dual, lp_oracle
from scipy.optimize import linprog

from .conftest import make_history


def small_instance(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    d = rng.uniform(size=(40, 3))
    g = rng.uniform(0.1, 1.0, size=(40, 3)) * np.array([1.0, 2.0, 4.0])
    budgets = np.array([4.0, 5.0, 6.0])
    return d, g, budgets


def dense_primal(d: np.ndarray, g: np.ndarray, budgets: np.ndarray) -> float:
    """max sum d x s.t. sum_j g x <= B, sum_i x <= 1, x >= 0, written independently with dense matrices."""
    n, m = d.shape
    a = np.zeros((m + n, n * m))
    for j in range(n):
        for i in range(m):
            a[i, j * m + i] = g[j, i]
            a[m + j, j * m + i] = 1.0
    res = linprog(-d.ravel(), A_ub=a, b_ub=np.concatenate([budgets, np.ones(n)]), bounds=(0, None), method="highs")
    assert res.success
    return float(-res.fun)


def test_dual_equals_primal_lp_on_small_instance():
    """Strong duality: min F (textbook dual, eps = alpha = 1, gamma >= 0) equals the primal LP optimum."""
    d, g, budgets = small_instance()
    primal = dense_primal(d, g, budgets)
    fit = fit_dual(d, g, budgets, alpha=1.0, eps=1.0, clip_zero=True, gamma_max=None, solver="lp")
    assert fit.value == pytest.approx(primal, rel=1e-6)
    assert lp_oracle(d, g, budgets)[1] == pytest.approx(primal, rel=1e-6)
    # L-BFGS-B on the piecewise-linear F is only approximate; it can never beat the exact minimum.
    approx = fit_dual(d, g, budgets, alpha=1.0, eps=1.0, clip_zero=True, gamma_max=50.0, solver="lbfgsb")
    assert fit.value - 1e-9 <= approx.value <= fit.value * 1.05


def test_dual_objective_hand_value():
    """F on a 2x2 instance computed by hand: eps*gamma.B + sum_j max_i(alpha d - g gamma)."""
    d = np.array([[1.0, 0.5], [0.2, 0.8]])
    g = np.array([[2.0, 1.0], [1.0, 3.0]])
    gamma, budgets = np.array([0.1, 0.2]), np.array([10.0, 20.0])
    # row 0: max(1 - 0.2, 0.5 - 0.2) = 0.8; row 1: max(0.2 - 0.1, 0.8 - 0.6) = 0.2; eps term 0.5*(1 + 4) = 2.5
    assert dual_objective(gamma, d, g, budgets, alpha=1.0, eps=0.5) == pytest.approx(3.5)
    # with clip_zero a negative row contributes 0
    assert dual_objective([5.0, 5.0], d, g, budgets, alpha=1.0, eps=0.5, clip_zero=True) == pytest.approx(75.0)


def test_ample_budget_gives_zero_prices_and_greedy_perf_decisions():
    """If eps*B_i exceeds the learning sample's estimated spend on every model, gamma* = 0 and PORT = Greedy-Perf."""
    hist = make_history(1)
    from nips25_routing import ANNEstimator

    est = ANNEstimator(hist, backend="faiss-flat")
    stream = np.random.default_rng(5).normal(size=(200, hist.embeddings.shape[1])) * 3
    budgets = np.full(3, 1e6)
    port = PORTRouter(est, budgets, n_total=200, eps=0.1, alpha=1.0)
    ours = port.route(stream)
    assert np.array_equal(port.gamma_, np.zeros(3))
    greedy = GreedyRouter(est, budgets, kind="perf").route(stream)
    assert np.array_equal(ours[port.n_learn :], greedy[port.n_learn :])


@pytest.mark.parametrize("solver", ["lp", "lbfgsb"])
def test_scaling_costs_budgets_and_alpha_leaves_decisions_unchanged(solver):
    """Multiplying costs, budgets and alpha by c scales F by c: the same gamma*, the same decisions."""
    hist = make_history(2)
    from nips25_routing import ANNEstimator, HistoryStore

    c = 8.0
    scaled = HistoryStore(hist.embeddings, hist.quality, hist.cost * c, hist.models)
    stream = np.random.default_rng(3).normal(size=(300, hist.embeddings.shape[1])) * 3
    budgets = np.array([20.0, 30.0, 40.0])
    kw = {"n_total": 300, "eps": 0.2, "solver": solver, "seed": 4}
    bound = {"gamma_max": 50.0} if solver == "lbfgsb" else {}  # gamma is unchanged by the scaling: same bound
    a = PORTRouter(ANNEstimator(hist, backend="faiss-flat"), budgets, alpha=0.5, **kw, **bound)
    b = PORTRouter(ANNEstimator(scaled, backend="faiss-flat"), budgets * c, alpha=0.5 * c, **kw, **bound)
    assert np.array_equal(a.route(stream), b.route(stream))
    np.testing.assert_allclose(a.gamma_, b.gamma_, rtol=1e-6, atol=1e-9)


def test_permuting_models_permutes_decisions():
    """Relabelling the models relabels PORT's exploit decisions (continuous estimates, so no ties)."""
    from nips25_routing import ANNEstimator, HistoryStore

    hist = make_history(3)
    perm = np.array([2, 0, 1])
    permuted = HistoryStore(hist.embeddings, hist.quality[:, perm], hist.cost[:, perm], [hist.models[p] for p in perm])
    stream = np.random.default_rng(6).normal(size=(300, hist.embeddings.shape[1])) * 3
    budgets = np.array([20.0, 30.0, 40.0])
    a = PORTRouter(ANNEstimator(hist, backend="faiss-flat"), budgets, n_total=300, eps=0.2, alpha=1.0)
    b = PORTRouter(ANNEstimator(permuted, backend="faiss-flat"), budgets[perm], n_total=300, eps=0.2, alpha=1.0)
    # the learning sample is every learning-phase query's estimates, whatever the random actions: same P, permuted
    ours, theirs = a.route(stream), b.route(stream)
    np.testing.assert_allclose(b.gamma_, a.gamma_[perm], atol=1e-9)
    assert np.array_equal(ours[a.n_learn :], perm[theirs[b.n_learn :]])
