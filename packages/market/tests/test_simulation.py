"""Simulation traces, realised loss and determinism."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_market import LMSR, SmoothQuadratic, realized_loss, replay, simulate, worst_outcome_loss


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


def test_simulate_with_q0_and_mixed_traders():
    """A nonzero start is respected and heterogeneous beliefs give prices between them."""
    mm = SmoothQuadratic(LMSR(2, b=1.0))
    beliefs = np.array([[0.7, 0.3], [0.6, 0.4]] * 20)
    tr = simulate(mm, beliefs, q0=np.array([1.0, 0.0]))
    assert np.allclose(np.asarray(tr.q[0]), [1.0, 0.0])
    assert 0.6 <= float(tr.prices[-1, 0]) <= 0.7
