"""Simulation traces, realised loss and determinism."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_market import LMSR, QuadraticDCFMM, SmoothQuadratic, realized_loss, replay, simulate, worst_outcome_loss


def test_replay_hand_values():
    """LMSR(b=1), n=2, one share of outcome 0 from q=0 costs log((1+e)/2); the maker loses 1 - that if 0 occurs."""
    tr = replay(LMSR(2, b=1.0), np.array([[1.0, 0.0]]))
    cost = np.log((1 + np.e) / 2)
    assert float(tr.payments[0]) == pytest.approx(cost, abs=1e-14)
    assert realized_loss(tr, 0) == pytest.approx(1 - cost, abs=1e-14)
    assert realized_loss(tr, 1) == pytest.approx(-cost, abs=1e-14)
    assert worst_outcome_loss(tr) == pytest.approx(1 - cost, abs=1e-14)
    np.testing.assert_allclose(np.asarray(tr.prices[1]), [np.e / (1 + np.e), 1 / (1 + np.e)], atol=1e-14)


def test_replay_is_vmap_clean_and_deterministic():
    """Same trades give identical traces; the SQPM quote vmaps over a batch of states."""
    mm = SmoothQuadratic(LMSR(3, b=2.0))
    trades = np.random.default_rng(8).normal(size=(30, 3))
    a, b = replay(mm, trades), replay(mm, trades)
    assert np.array_equal(np.asarray(a.payments), np.asarray(b.payments))
    import jax

    batched = jax.vmap(mm.quote)(a.q[:-1], a.trades)
    np.testing.assert_allclose(np.asarray(batched), np.asarray(a.payments), atol=1e-13)


@pytest.mark.parametrize(
    "mm",
    [
        LMSR(6, b=3.0),
        QuadraticDCFMM(6, b=3.0),
        SmoothQuadratic(LMSR(6, b=3.0)),
        SmoothQuadratic(LMSR(6, b=3.0), norm="linf"),
    ],
    ids=["lmsr", "quadratic", "sqpm", "sqpm-linf"],
)
def test_replay_states_in_trade_order_and_equal_to_the_0_2_0_prefix_sum(mm):
    """0.2.1's replay sums the states left to right (a ``lax.scan``): bit for bit ``np.cumsum``'s order, and equal to
    0.2.0's ``jnp.cumsum`` replay (rebuilt here) to rounding: 1e-13 relative (measured <= 4e-15 on states and
    prices, payments within 1e-13 of max(|pay|, |C(q)|): the DCFMMs' payments are cost differences)."""
    import jax.numpy as jnp

    rng = np.random.default_rng(3)
    trades, q0 = rng.normal(size=(400, 6)) * 5.0, rng.normal(size=6)
    tr = replay(mm, trades, q0=q0)
    seq = np.empty((401, 6))
    seq[0] = q0
    for t, r in enumerate(trades):  # the state evolution q_{t+1} = q_t + r_t, in float64
        seq[t + 1] = seq[t] + r
    assert np.array_equal(np.asarray(tr.q), seq)
    assert np.array_equal(np.asarray(replay(mm, trades).q[1:]), np.cumsum(trades, axis=0))
    q_old = jnp.concatenate([jnp.asarray(q0)[None], q0 + jnp.cumsum(jnp.asarray(trades), axis=0)])  # 0.2.0's path
    p_old = mm.price(q_old)
    pay_old = mm.path_payments(q_old, jnp.asarray(trades), p_old)
    # a DCFMM's payments are differences of its cost C(q_t), so they carry C's rounding
    scale = max(1.0, float(np.max(np.abs(np.asarray(pay_old)))), float(np.max(np.abs(np.asarray(mm.cost(q_old))))))
    np.testing.assert_allclose(np.asarray(tr.q), np.asarray(q_old), rtol=0, atol=1e-13 * float(np.max(np.abs(seq))))
    np.testing.assert_allclose(np.asarray(tr.prices), np.asarray(p_old), rtol=0, atol=1e-13)
    np.testing.assert_allclose(np.asarray(tr.payments), np.asarray(pay_old), rtol=0, atol=1e-13 * scale)


def test_simulate_with_q0_and_mixed_traders():
    """A nonzero start is respected and heterogeneous beliefs give prices between them."""
    mm = SmoothQuadratic(LMSR(2, b=1.0))
    beliefs = np.array([[0.7, 0.3], [0.6, 0.4]] * 20)
    tr = simulate(mm, beliefs, q0=np.array([1.0, 0.0]))
    assert np.allclose(np.asarray(tr.q[0]), [1.0, 0.0])
    assert 0.6 <= float(tr.prices[-1, 0]) <= 0.7
