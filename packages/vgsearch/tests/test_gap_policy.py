"""The `gap` adaptive-g policy: hand-traced schedules, beam search as its special case, bad input."""

from __future__ import annotations

import pytest
from nips25_vgsearch import STOP, GapPolicy, beam_search, vg_search


def test_gap_policy_doubles_g_while_scores_do_not_move(scripted, letters):
    """Hand trace (n=2, B2=2, max_steps=8, tau=0.05): every kept beam's last score equals its parent's (0.4 -> 0.4),
    so the per-step change is 0 < tau and g doubles: rounds run at g = 1, 2, 4; depths 2, 4, 8; the third round
    is the last (it samples to the end) and ends in "...b" (score 0.4)."""
    res = vg_search("p", scripted(), letters(), n=2, beam_width=2, max_steps=8, filter_duplicates=False,
                    g=GapPolicy(threshold=0.05, g_start=1, g_min=1, g_max=4))[0]  # fmt: skip
    s = STOP
    assert res.g_schedule == [1, 2, 4] and res.g == 4
    assert res.trace[1] == [f"b{s}b{s}"]
    assert res.trace[2] == [f"b{s}b{s}a{s}b{s}"]
    assert res.answer == f"b{s}b{s}a{s}b{s}a{s}a{s}a{s}b" and res.scores[0] == pytest.approx(0.4)
    # verifier calls: round 0 (2) + 3 rounds x 2 beams; no extension step verifies (nothing ends early)
    assert res.ledger.verifier_calls == 8


def test_gap_policy_halves_g_when_scores_move(scripted, letters):
    """tau = 0: a change is never below it, so g halves from 4 to the floor: rounds at g = 4, 2, 1 (depths 5, 7, 8)."""
    res = vg_search("p", scripted(), letters(), n=2, beam_width=2, max_steps=8,
                    g=GapPolicy(threshold=0.0, g_start=4, g_min=1, g_max=4))[0]  # fmt: skip
    assert res.g_schedule == [4, 2, 1]


def test_gap_policy_with_g1_floor_is_beam_search_exactly(scripted, letters):
    """threshold=0, g_start=g_min=1: g never changes, the search is beam search (same trace, answers, ledger)."""
    kw = dict(n=4, beam_width=2, max_steps=5, filter_duplicates=False)
    gap = vg_search(["p", "q"], scripted(), letters(), g=GapPolicy(threshold=0.0, g_start=1, g_max=1), **kw)
    beam = beam_search(["p", "q"], scripted(), letters(), **kw)
    for a, b in zip(gap, beam):
        assert a.trace == b.trace and a.completions == b.completions and a.ledger == b.ledger
        assert a.g_schedule == [1, 1, 1, 1]


def test_gap_policy_rejects_bad_input(scripted, letters):
    with pytest.raises(ValueError, match="threshold"):
        GapPolicy(threshold=-0.1)
    with pytest.raises(ValueError, match="threshold"):
        GapPolicy(threshold=float("nan"))
    with pytest.raises(ValueError, match="g_min <= g_start <= g_max"):
        GapPolicy(g_start=8, g_max=4)
    with pytest.raises(ValueError, match="g_max"):
        GapPolicy(g_max=0)
    with pytest.raises(ValueError, match="num_iterations"):
        vg_search("p", scripted(), letters(), g=GapPolicy(), num_iterations=3)
