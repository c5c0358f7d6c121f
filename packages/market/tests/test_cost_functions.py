"""Known-answer tests of the DCFMM base markets (LMSR, quadratic)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_market import LMSR, QuadraticDCFMM, project_simplex, realized_loss, replay
from scipy.optimize import minimize
from scipy.special import softmax


def test_lmsr_worst_case_loss_is_b_ln_n_and_attained():
    """Buying one outcome without bound from the uniform start drives LMSR's loss to b ln n (13.8629436112)."""
    mm = LMSR(4, b=10.0)
    assert mm.worst_case_loss() == pytest.approx(13.8629436112, abs=1e-10)
    trace = replay(mm, np.tile([[25.0, 0.0, 0.0, 0.0]], (40, 1)))  # q_0 = 1000 = 100 b
    assert realized_loss(trace, 0) == pytest.approx(10.0 * math.log(4.0), abs=1e-9)


def test_quadratic_worst_case_loss_closed_form_and_attained():
    """Quadratic DCFMM: loss (b/2)(1 - 1/n), attained once the price of the bought outcome reaches 1."""
    mm = QuadraticDCFMM(5, b=3.0)
    assert mm.worst_case_loss() == pytest.approx(1.5 * 0.8)
    trace = replay(mm, np.array([[10.0, 0.0, 0.0, 0.0, 0.0]]))
    assert realized_loss(trace, 0) == pytest.approx(1.5 * 0.8, abs=1e-12)


def test_lmsr_price_matches_scipy_softmax_and_is_stable_at_large_q():
    """p(q) = softmax(q/b) (scipy reference), including |q/b| ~ 1e3 where exp overflows."""
    rng = np.random.default_rng(0)
    mm = LMSR(6, b=2.0)
    q = rng.normal(size=(50, 6)) * 5
    np.testing.assert_allclose(np.asarray(mm.price(q)), softmax(q / 2.0, axis=-1), rtol=1e-12, atol=1e-15)
    big = np.array([2000.0, 1990.0, -2000.0, 0.0, 0.0, 0.0])
    p = np.asarray(mm.price(big))
    assert np.all(np.isfinite(p)) and p.sum() == pytest.approx(1.0)
    assert float(mm.cost(big)) == pytest.approx(2000.0 + 2.0 * math.log1p(math.exp(-5.0)), rel=1e-14)


@pytest.mark.parametrize("mm", [LMSR(4, b=1.5), QuadraticDCFMM(4, b=1.5)], ids=["lmsr", "quadratic"])
def test_cost_is_conjugate_of_regularizer_and_price_is_gradient(mm):
    """C(q) = sup_{mu in simplex} <mu, q> - R(mu) (scipy SLSQP) and p(q) = grad C(q) (jax.grad)."""
    rng = np.random.default_rng(1)
    for q in rng.normal(size=(4, 4)) * 2:
        res = minimize(
            lambda m, q=q: -(m @ q - float(mm.regularizer(np.clip(m, 0, None)))),
            np.full(4, 0.25),
            bounds=[(0.0, 1.0)] * 4,
            constraints=[{"type": "eq", "fun": lambda m: m.sum() - 1.0}],
            method="SLSQP",
            options={"ftol": 1e-14, "maxiter": 500},
        )
        assert float(mm.cost(q)) == pytest.approx(-res.fun, abs=1e-6)
        np.testing.assert_allclose(np.asarray(jax.grad(mm.cost)(jnp.asarray(q))), np.asarray(mm.price(q)), atol=1e-10)


def test_project_simplex_matches_scipy_qp():
    """Sort-based projection equals argmin ||mu - v||^2 over the simplex solved by scipy (SLSQP)."""
    rng = np.random.default_rng(2)
    for v in rng.normal(size=(10, 5)) * 2:
        res = minimize(
            lambda m, v=v: 0.5 * np.sum((m - v) ** 2),
            np.full(5, 0.2),
            jac=lambda m, v=v: m - v,
            bounds=[(0.0, None)] * 5,
            constraints=[{"type": "eq", "fun": lambda m: m.sum() - 1.0, "jac": lambda m: np.ones(5)}],
            method="SLSQP",
            options={"ftol": 1e-15, "maxiter": 500},
        )
        np.testing.assert_allclose(np.asarray(project_simplex(v)), res.x, atol=1e-7)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-30, 30), min_size=3, max_size=3), st.floats(0.1, 10.0))
def test_prices_on_simplex(q, b):
    """Prices of both markets are non-negative and sum to one for any finite state."""
    for mm in (LMSR(3, b=b), QuadraticDCFMM(3, b=b)):
        p = np.asarray(mm.price(np.asarray(q)))
        assert np.all(p >= 0) and p.sum() == pytest.approx(1.0, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=4, max_size=4).filter(lambda w: sum(w) > 1e-3))
def test_lmsr_hessian_eigenvalue_at_most_half(w):
    """lambda_max(diag p - p p^T) <= 1/2 for any p on the simplex: LMSR is 1/(2b)-smooth in the 2-norm."""
    p = np.asarray(w) / np.sum(w)
    assert np.linalg.eigvalsh(np.diag(p) - np.outer(p, p)).max() <= 0.5 + 1e-12


@pytest.mark.parametrize("mm", [LMSR(5, b=2.0), QuadraticDCFMM(5, b=2.0)], ids=["lmsr", "quadratic"])
def test_dcfmm_translation_invariance(mm):
    """quote(q, r + c 1) = quote(q, r) + c for a DCFMM (cost of a sure dollar is a dollar)."""
    rng = np.random.default_rng(3)
    q, r = rng.normal(size=(2, 20, 5)) * 2
    c = rng.normal(size=(20, 1)) * 3
    np.testing.assert_allclose(np.asarray(mm.quote(q, r + c)), np.asarray(mm.quote(q, r)) + c[:, 0], atol=1e-10)
