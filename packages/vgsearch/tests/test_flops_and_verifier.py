"""FLOPs model and score aggregation: closed forms and bad input."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nips25_vgsearch import ComputeLedger, FlopsModel, aggregate_scores, path_seed, step_seed


def test_flops_is_two_p_per_token():
    """F = 2 P_G (gen + prefill) + 2 P_V * verifier tokens on a toy with known token counts."""
    led = ComputeLedger(gen_tokens=100, prefill_tokens=50, verifier_tokens=70, verifier_new_tokens=20)
    m = FlopsModel(p_gen=1.5e9, p_ver=7e9)
    assert m.generator_flops(led) == 2 * 1.5e9 * 150
    assert m.verifier_flops(led) == 2 * 7e9 * 70
    assert m.flops(led) == 2 * 1.5e9 * 150 + 2 * 7e9 * 70


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8))
def test_aggregations_match_their_definitions(scores):
    assert aggregate_scores(scores, agg="last") == scores[-1]
    assert aggregate_scores(scores, agg="min") == min(scores)
    assert aggregate_scores(scores, agg="prod") == pytest.approx(math.prod(scores), abs=1e-12)
    assert aggregate_scores(scores, agg="prod") <= aggregate_scores(scores, agg="min") + 1e-12


def test_seeds_are_pure_functions():
    assert path_seed(0, "p", (1, 2)) == path_seed(0, "p", (1, 2))
    assert path_seed(0, "p", (1,)) != path_seed(0, "p", (2,))
    assert step_seed(5, 0) != step_seed(5, 1)
    assert 0 <= step_seed(5, 3) < 2**63


def test_bad_inputs_rejected():
    with pytest.raises(ValueError, match="p_gen"):
        FlopsModel(p_gen=0)
    with pytest.raises(ValueError, match="p_ver"):
        FlopsModel(p_ver=float("nan"))
    with pytest.raises(TypeError, match="p_gen"):
        FlopsModel(p_gen="1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ledger"):
        FlopsModel().flops({"gen_tokens": 1})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="agg"):
        aggregate_scores([0.5], agg="mean")
    with pytest.raises(ValueError, match="non-empty"):
        aggregate_scores([])
    with pytest.raises(ValueError, match="finite"):
        aggregate_scores([0.5, float("inf")])
    with pytest.raises(TypeError, match="seed"):
        path_seed(1.0, "p", (0,))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="depth"):
        step_seed(1, -1)
