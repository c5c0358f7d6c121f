"""DVTS (diverse verifier tree search): hand-traced subtrees versus beam search on the same scripted models."""

from __future__ import annotations

import pytest
from nips25_vgsearch import STOP, SearchConfig, beam_search, dvts, vg_search

WEIGHTS = {"a": 0.4, "b": 0.3, "c": 0.1, "d": 0.2}


def test_dvts_keeps_the_best_beam_of_each_subtree_hand_traced(scripted, letters):
    """n=4, B2=2: round 0 samples a, b | c, d (subtrees 0 | 1). Beam search keeps the global top 2 (a .4, b .3,
    both in subtree 0); DVTS keeps a (subtree 0) and d (.2, subtree 1). Each survivor branches into a, b; the
    subtrees keep a.a and d.a; the last round completes a.a.a, a.a.b, d.a.a, d.a.b."""
    s = STOP
    kw = dict(n=4, beam_width=2, g=1, max_steps=3, filter_duplicates=False)
    res = dvts("p", scripted(), letters(WEIGHTS), **kw)[0]
    assert res.trace[0] == [f"a{s}", f"d{s}"]
    assert res.trace[1] == [f"a{s}a{s}", f"d{s}a{s}"]
    assert sorted(res.completions) == sorted([f"a{s}a{s}a", f"a{s}a{s}b", f"d{s}a{s}a", f"d{s}a{s}b"])
    assert res.scores[0] == pytest.approx(0.4) and res.answer.endswith("a")
    beam = beam_search("p", scripted(), letters(WEIGHTS), n=4, beam_width=2, max_steps=3, filter_duplicates=False)[0]
    assert beam.trace[0] == [f"a{s}", f"b{s}"]


def test_dvts_with_one_subtree_per_sample_is_best_of_n_like_sampling(scripted, letters):
    """beam_width=1: every sample is its own subtree with one child, so nothing is ever pruned: n paths complete."""
    res = dvts("p", scripted(), letters(WEIGHTS), n=3, beam_width=1, g=2, max_steps=5, filter_duplicates=False)[0]
    assert len(res.completions) == 3 and len(res.trace[0]) == 3 and len(res.trace[1]) == 3


def test_dvts_rejects_bad_input(scripted, letters):
    with pytest.raises(ValueError, match="refill"):
        SearchConfig(diverse=True)
    with pytest.raises(TypeError, match="diverse"):
        SearchConfig(diverse=1, refill="branch")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="diverse"):
        dvts("p", scripted(), letters(), diverse=False)
    with pytest.raises(ValueError, match="refill"):
        vg_search("p", scripted(), letters(), diverse=True)
