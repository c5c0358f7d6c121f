"""Known-answer tests of the Smooth Quadratic Prediction Market: fee rule, axioms, revenue identity."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from nips25_market import LMSR, QuadraticDCFMM, SmoothQuadratic, realized_loss, replay

MARKETS = {
    "sq-lmsr-l2": SmoothQuadratic(LMSR(4, b=3.0)),
    "sq-lmsr-linf": SmoothQuadratic(LMSR(4, b=3.0), norm="linf"),
    "sq-quad-l2": SmoothQuadratic(QuadraticDCFMM(4, b=3.0)),
    "sq-lmsr-zero-sum": SmoothQuadratic(LMSR(4, b=3.0), fee_on="zero_sum"),
}


def test_default_L_is_the_tight_smoothness_constant():
    """L defaults to 1/(2b) (LMSR, l2), 1/b (LMSR, linf), 1/b (quadratic, l2), n/b (quadratic, linf)."""
    assert pytest.approx(0.125) == SmoothQuadratic(LMSR(3, b=4.0)).L
    assert pytest.approx(0.25) == SmoothQuadratic(LMSR(3, b=4.0), norm="linf").L
    assert pytest.approx(0.25) == SmoothQuadratic(QuadraticDCFMM(3, b=4.0)).L
    assert pytest.approx(0.75) == SmoothQuadratic(QuadraticDCFMM(3, b=4.0), norm="linf").L


def test_quote_hand_value():
    """At q = 0 with LMSR(b=1), n = 2: quote(r=(2, 0)) = <(1/2, 1/2), r> + (1/4)*4 = 2."""
    mm = SmoothQuadratic(LMSR(2, b=1.0))
    assert float(mm.quote(jnp.zeros(2), jnp.array([2.0, 0.0]))) == pytest.approx(2.0, abs=1e-14)
    linf = SmoothQuadratic(LMSR(2, b=1.0), norm="linf")
    assert float(linf.quote(jnp.zeros(2), jnp.array([2.0, -1.0]))) == pytest.approx(0.5 + 0.5 * 4.0, abs=1e-14)


@pytest.mark.parametrize("name", list(MARKETS))
def test_instantaneous_price_is_gradient_of_quote_at_zero(name):
    """d quote(q, r)/dr at r = 0 equals p(q) (jax.grad), the instantaneous-price axiom."""
    mm = MARKETS[name]
    q = jnp.asarray(np.random.default_rng(4).normal(size=4) * 3)
    g = jax.grad(lambda r: mm.quote(q, r))(jnp.zeros(4))
    np.testing.assert_allclose(np.asarray(g), np.asarray(mm.price(q)), atol=1e-12)


@pytest.mark.parametrize("name", list(MARKETS))
def test_no_arbitrage_and_information_incorporation_random_bundles(name):
    """quote(q, r) >= min_x r_x (no arbitrage) and quote(q+r, r) >= quote(q, r) over 10k random (q, r)."""
    mm = MARKETS[name]
    rng = np.random.default_rng(5)
    q = rng.normal(size=(10_000, 4)) * 10
    r = rng.normal(size=(10_000, 4)) * rng.exponential(3.0, size=(10_000, 1))
    pay = np.asarray(mm.quote(q, r))
    assert np.all(pay >= r.min(axis=1) - 1e-9)
    assert np.all(np.asarray(mm.quote(q + r, r)) >= pay - 1e-9)


@pytest.mark.parametrize("name", ["sq-lmsr-l2", "sq-lmsr-linf", "sq-quad-l2", "sq-lmsr-zero-sum"])
def test_payment_dominates_dcfmm_and_revenue_identity(name):
    """Every SQPM payment >= the DCFMM payment; rev_SQ - rev_DC = sum_t fee_t - D_C(q_t+1, q_t) to 1e-10."""
    mm = MARKETS[name]
    trades = np.random.default_rng(6).normal(size=(200, 4)) * 2
    sq, dc = replay(mm, trades), replay(mm.base, trades)
    assert np.all(np.asarray(sq.payments) >= np.asarray(dc.payments) - 1e-12)
    gap = np.asarray(mm.fee(trades)) - np.asarray(mm.bregman(np.asarray(dc.q[:-1]), trades))
    assert float(jnp.sum(sq.payments) - jnp.sum(dc.payments)) == pytest.approx(gap.sum(), abs=1e-10)
    for x in range(4):
        assert realized_loss(sq, x) <= realized_loss(dc, x) + 1e-9


def test_translation_invariance_only_for_zero_sum_fee():
    """fee_on='zero_sum' gives quote(r + c 1) = quote(r) + c; the bundle fee does not (it sees ||r||)."""
    q = jnp.array([0.3, -1.0, 2.0, 0.0])
    r = jnp.array([1.0, -2.0, 0.5, 0.0])
    zs, bundle = MARKETS["sq-lmsr-zero-sum"], MARKETS["sq-lmsr-l2"]
    assert float(zs.quote(q, r + 1.7)) == pytest.approx(float(zs.quote(q, r)) + 1.7, abs=1e-12)
    assert abs(float(bundle.quote(q, r + 1.7)) - float(bundle.quote(q, r)) - 1.7) > 1e-3


def test_splitting_a_purchase_approaches_the_dcfmm_loss():
    """Splitting 200 shares of outcome 0 into K pieces: SQPM loss rises towards LMSR's b ln n, never above it.

    The handbook's reconstruction check (b = 10, n = 4): K = 100 gives 4.62, K = 1000 gives 12.94, LMSR 13.86.
    """
    mm = SmoothQuadratic(LMSR(4, b=10.0))
    losses = [realized_loss(replay(mm, np.tile([[200.0 / k, 0, 0, 0]], (k, 1))), 0) for k in (10, 100, 1000)]
    assert losses[0] < losses[1] < losses[2] <= 10.0 * np.log(4.0)
    assert losses[1] == pytest.approx(4.62, abs=0.01)
    assert losses[2] == pytest.approx(12.94, abs=0.01)
