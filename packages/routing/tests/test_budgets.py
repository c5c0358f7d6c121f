"""Budget splits and the serving ledger: hand values, and spend never exceeds a budget."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_routing import BudgetLedger, evaluate_actions, split_budget, total_budget


def test_split_budget_hand_values():
    """weighted: B_i ~ sqrt(perf/cost); cost: ~ sqrt(1/cost); perf: ~ perf; uniform: equal; all sum to total."""
    perf, cost = np.array([1.0, 1.0]), np.array([1.0, 4.0])
    np.testing.assert_allclose(split_budget("weighted", perf, cost, 3.0), [2.0, 1.0])
    np.testing.assert_allclose(split_budget("cost", perf, cost, 3.0), [2.0, 1.0])
    np.testing.assert_allclose(split_budget("perf", [1.0, 3.0], cost, 8.0), [2.0, 6.0])
    np.testing.assert_allclose(split_budget("uniform", perf, cost, 3.0), [1.5, 1.5])
    assert total_budget([[1.0, 5.0], [2.0, 0.5]], 2.0) == pytest.approx(2 * 3.0)


def test_ledger_rejects_what_a_model_cannot_afford_and_counts_throughput():
    """Hand example: the second query to model 0 would overspend and is lost; a later cheaper one still fits."""
    quality = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    cost = np.array([[0.6, 9.0], [0.6, 9.0], [9.0, 2.0], [0.3, 9.0], [0.1, 0.1]])
    res = evaluate_actions(np.array([0, 0, 1, 0, 2]), quality, cost, [1.0, 2.0])
    # served: q0 (0.6), q2 (2.0), q3 (0.3, total 0.9); lost: q1 (rejected), q4 (dropped)
    assert res.throughput == 3 and res.n_queries == 5
    assert res.quality == pytest.approx(3.0)
    assert res.cost == pytest.approx(2.9)


@settings(max_examples=50, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 200),
    m=st.integers(1, 5),
    batches=st.integers(1, 5),
)
def test_spend_never_exceeds_budget(seed, n, m, batches):
    """Whatever the actions and costs, per-model spend stays within budget and served queries are counted once."""
    rng = np.random.default_rng(seed)
    budgets = rng.uniform(0.0, 10.0, size=m)
    ledger = BudgetLedger(budgets)
    served = 0
    for chunk in np.array_split(np.arange(n), batches):
        actions = rng.integers(0, m + 1, size=chunk.size)
        mask = ledger.charge(actions, rng.uniform(0.0, 3.0, size=chunk.size))
        assert not mask[actions == m].any()
        served += int(mask.sum())
    assert (ledger.spent <= budgets + 1e-12).all()
    assert served <= n
