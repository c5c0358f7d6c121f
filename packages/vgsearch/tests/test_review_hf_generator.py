"""Review findings in HFGenerator's constructor and step (review rev3), fixed by the lead."""

from __future__ import annotations

import pytest
from nips25_vgsearch import HFGenerator


def test_hf_generator_rejects_non_int_token_limits(tiny):
    tok, lm, _ = tiny
    with pytest.raises(ValueError, match="max_step_tokens"):
        HFGenerator(lm, tok, max_step_tokens=1.5)  # type: ignore[arg-type]


def test_hf_generator_step_rejects_non_requests(tiny):
    tok, lm, _ = tiny
    with pytest.raises(TypeError, match="StepRequest"):
        HFGenerator(lm, tok).step([None])  # type: ignore[list-item]


def test_hf_generator_prompt_template_may_hold_other_braces(tiny):
    from nips25_vgsearch import StepRequest

    tok, lm, _ = tiny
    gen = HFGenerator(lm, tok, prompt_template="put it in \\boxed{} {problem}\n\n", max_step_tokens=2)
    assert len(gen.step([StepRequest("1+1", "", 0, 0)])) == 1
