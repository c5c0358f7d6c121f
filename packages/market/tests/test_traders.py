"""Myopic traders: closed forms, budgets, buy-only, geometric convergence of prices to beliefs."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from nips25_market import LMSR, MyopicTrader, QuadraticDCFMM, SmoothQuadratic, simulate, worst_case_spend
from scipy.optimize import minimize

MU = np.array([0.1, 0.2, 0.3, 0.4])


def test_l2_best_trade_is_gradient_step_and_maximises_profit():
    """r* = (mu - p)/L, and no random perturbation of r* earns more expected profit."""
    mm = SmoothQuadratic(LMSR(4, b=2.0))
    q = jnp.array([1.0, 0.0, -0.5, 0.2])
    trader = MyopicTrader(MU)
    r = trader.best_trade(mm, q)
    np.testing.assert_allclose(np.asarray(r), (MU - np.asarray(mm.price(q))) / mm.L, atol=1e-12)
    base = float(trader.profit(mm, q, r))
    pert = np.random.default_rng(7).normal(size=(500, 4)) * 0.3
    assert np.all(np.asarray(trader.profit(mm, q, np.asarray(r) + pert)) <= base + 1e-12)


def test_lmsr_myopic_trade_moves_price_to_belief():
    """In a DCFMM a myopic trader moves the price exactly to its belief (LMSR and quadratic)."""
    for mm in (LMSR(4, b=2.0), QuadraticDCFMM(4, b=2.0)):
        q = jnp.array([1.0, 0.0, -0.5, 0.2])
        r = MyopicTrader(MU).best_trade(mm, q)
        np.testing.assert_allclose(np.asarray(mm.price(q + r)), MU, atol=1e-12)


def test_myopic_l2_trades_converge_geometrically():
    """Repeated l2 SQPM trades drive ||p - mu|| below 1e-6 with errors shrinking by a constant factor < 1."""
    mm = SmoothQuadratic(LMSR(4, b=5.0))
    err = np.linalg.norm(np.asarray(simulate(mm, np.tile(MU, (60, 1))).prices) - MU, axis=1)
    assert err[-1] < 1e-6
    ratios = err[11:50] / err[10:49]
    assert np.all(ratios < 1.0) and ratios.max() < 0.9


def test_buy_only_closed_form_and_moves_toward_belief():
    """Buy-only l2 trades are >= 0, equal max(mu - p, 0)/L, and reduce ||p - mu||; a KKT check by SLSQP."""
    mm = SmoothQuadratic(LMSR(4, b=1.0))
    q = jnp.array([2.0, 0.0, 0.0, -1.0])
    trader = MyopicTrader(MU, buy_only=True)
    r = np.asarray(trader.best_trade(mm, q))
    p = np.asarray(mm.price(q))
    assert np.all(r >= 0)
    np.testing.assert_allclose(r, np.maximum(MU - p, 0) / mm.L, atol=1e-12)
    assert np.linalg.norm(np.asarray(mm.price(q + r)) - MU) < np.linalg.norm(p - MU)
    res = minimize(lambda x: -float(trader.profit(mm, q, x)), np.zeros(4), bounds=[(0, None)] * 4, method="L-BFGS-B")
    np.testing.assert_allclose(r, res.x, atol=1e-4)


def test_buy_only_traders_converge():
    """Repeated buy-only l2 trades still bring prices to the belief (slower, still geometric)."""
    mm = SmoothQuadratic(LMSR(4, b=1.0))
    tr = simulate(mm, [MyopicTrader(MU, buy_only=True)] * 400)
    assert np.all(np.asarray(tr.trades) >= 0)
    assert np.linalg.norm(np.asarray(tr.prices[-1]) - MU) < 1e-6


def test_budget_binds_and_solver_matches_reference():
    """A binding budget gives spend == B and the optimum of scipy's SLSQP on the epigraph form."""
    mm = SmoothQuadratic(LMSR(3, b=1.0))
    q = jnp.zeros(3)
    mu = np.array([0.8, 0.1, 0.1])
    free = MyopicTrader(mu).best_trade(mm, q)
    budget = 0.5 * float(worst_case_spend(mm, q, free))
    trader = MyopicTrader(mu, budget=budget)
    r = trader.best_trade(mm, q)
    assert float(worst_case_spend(mm, q, r)) == pytest.approx(budget, abs=1e-7)
    assert float(trader.profit(mm, q, r)) < float(trader.profit(mm, q, free))
    # independent reference: brute force over the two-parameter family r = (a, c, c) the symmetry allows
    grid = [(a, c) for a in np.linspace(0, 3, 301) for c in np.linspace(-3, 0, 301)]
    rs = np.array([[a, c, c] for a, c in grid])
    ok = np.asarray(worst_case_spend(mm, jnp.zeros((len(rs), 3)), rs)) <= budget
    best = np.asarray(trader.profit(mm, jnp.zeros((len(rs), 3)), rs))[ok].max()
    assert float(trader.profit(mm, q, r)) >= best - 1e-6


def test_budget_traders_converge():
    """Budget-bounded traders converge too: once close, the unconstrained step fits the budget."""
    mm = SmoothQuadratic(LMSR(4, b=5.0))
    tr = simulate(mm, [MyopicTrader(MU, budget=0.5)] * 60)
    spends = [float(worst_case_spend(mm, tr.q[t], tr.trades[t])) for t in range(60)]
    assert max(spends) <= 0.5 + 1e-9
    assert np.linalg.norm(np.asarray(tr.prices[-1]) - MU) < 1e-6


def test_linf_trade_closed_form():
    """l-inf SQPM: r* = (||d||_1 / L) sign(d) with d = mu - p."""
    mm = SmoothQuadratic(LMSR(4, b=2.0), norm="linf")
    q = jnp.zeros(4)
    d = MU - 0.25
    r = np.asarray(MyopicTrader(MU).best_trade(mm, q))
    np.testing.assert_allclose(r, np.abs(d).sum() / mm.L * np.sign(d), atol=1e-12)
