"""Known answers of the prompt format and the answer parser (messy replies included)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nips25_commono import NONE_OPTION, Example, format_answer, format_prompt, parse_answer
from PIL import Image

IM = Image.new("RGB", (8, 8))
OPTIONS = ("red apple", "apple", "tomato", NONE_OPTION)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Answer: a, C ,c", {0, 2}),
        ("A and C", {0, 2}),
        ("I see A and C.", {0, 2}),
        ("**Answer:** B", {1}),
        ("Let me think. A red apple is in both. Answer: A", {0}),
        ("The answer is (c).", {2}),
        ("answer: A;C\n", {0, 2}),
        ("A & D", {0, 3}),
        ("Final answers are: b and d", {1, 3}),
        ("I cannot tell.", set()),
    ],
)
def test_parse_answer_messy_letters(text: str, expected: set[int]) -> None:
    assert parse_answer(text, 4) == frozenset(expected)


def test_parse_answer_option_texts_longest_first() -> None:
    """Option texts are matched longest first, so "red apple" does not also select "apple"."""
    assert parse_answer("The red apple and the tomato.", OPTIONS) == {0, 2}
    assert parse_answer("apple", OPTIONS) == {1}
    assert parse_answer("None, nothing is shared", OPTIONS) == {3}


def test_parse_answer_out_of_range_letters() -> None:
    with pytest.raises(ValueError, match="beyond the 4 options"):
        parse_answer("Answer: A, E", 4)
    assert parse_answer("Answer: A, E", 4, out_of_range="ignore") == {0}


@given(st.sets(st.integers(0, 25), min_size=1))
def test_format_then_parse_roundtrip(indices: set[int]) -> None:
    assert parse_answer(format_answer(indices), 26) == frozenset(indices)


def test_format_prompt_lists_lettered_options() -> None:
    ex = Example(images=(IM, IM), options=OPTIONS, answer=frozenset({0}))
    prompt = format_prompt(ex)
    assert "A. red apple\nB. apple\nC. tomato\nD. No objects are in common" in prompt
    assert "Answer: A, C" in prompt
    assert format_prompt(ex, template="Q {options}") == "Q A. red apple\nB. apple\nC. tomato\nD. " + NONE_OPTION
    with pytest.raises(ValueError, match="options"):
        format_prompt(ex, template="no field")
    with pytest.raises(ValueError, match="fields"):
        format_prompt(ex, template="{options} {other}")
