"""Round-robin orchestration: every pair once, disjoint rounds, K-1 rounds for even K."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nips25_fedrw import round_robin_schedule


@given(st.integers(min_value=2, max_value=24))
def test_schedule_covers_each_pair_once_with_disjoint_rounds(k):
    rounds = round_robin_schedule(k)
    pairs = [p for r in rounds for p in r]
    assert sorted(pairs) == list(itertools.combinations(range(k), 2))
    for r in rounds:
        members = [c for p in r for c in p]
        assert len(members) == len(set(members))
    assert len(rounds) == (k - 1 if k % 2 == 0 else k)
    assert all(len(r) == k // 2 for r in rounds)


def test_schedule_hand_example_and_bad_input():
    assert round_robin_schedule(2) == [[(0, 1)]]
    assert round_robin_schedule(3) == [[(1, 2)], [(0, 2)], [(0, 1)]]
    with pytest.raises(ValueError, match="n_clients"):
        round_robin_schedule(1)
    with pytest.raises(TypeError, match="n_clients"):
        round_robin_schedule(4.0)  # type: ignore[arg-type]
