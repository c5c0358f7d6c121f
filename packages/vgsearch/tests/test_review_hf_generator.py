"""Review findings in the lead's part of the package (HFGenerator's constructor and step), left to the lead.

Each test is marked ``xfail(strict=True)``: it fails now and will turn the suite red once fixed, as a reminder to
drop the marker.
"""

from __future__ import annotations

import pytest
from nips25_vgsearch import HFGenerator


@pytest.mark.xfail(strict=True, reason="HFGenerator accepts non-int token limits and silently decodes fewer tokens")
def test_hf_generator_rejects_non_int_token_limits(tiny):
    tok, lm, _ = tiny
    with pytest.raises(ValueError, match="max_step_tokens"):
        HFGenerator(lm, tok, max_step_tokens=1.5)  # type: ignore[arg-type]


@pytest.mark.xfail(strict=True, reason="HFGenerator.step raises AttributeError, not TypeError, on a non-StepRequest")
def test_hf_generator_step_rejects_non_requests(tiny):
    tok, lm, _ = tiny
    with pytest.raises(TypeError, match="StepRequest"):
        HFGenerator(lm, tok).step([None])  # type: ignore[list-item]


@pytest.mark.xfail(strict=True, reason="HFGenerator.step fills prompt_template with str.format: other braces raise")
def test_hf_generator_prompt_template_may_hold_other_braces(tiny):
    from nips25_vgsearch import StepRequest

    tok, lm, _ = tiny
    gen = HFGenerator(lm, tok, prompt_template="put it in \\boxed{} {problem}\n\n", max_step_tokens=2)
    assert len(gen.step([StepRequest("1+1", "", 0, 0)])) == 1
