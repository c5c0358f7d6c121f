"""Final-answer votes over completed paths: hand-traced majority and PRM-weighted majority."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_vgsearch import ComputeLedger, SearchResult, extract_answer, final_answer


def _result(completions: list[str], scores: list[float]) -> SearchResult:
    return SearchResult(problem="p", answer=completions[0] if completions else "", completions=completions,
                        scores=scores, g=1, ledger=ComputeLedger(), flops=0.0, first_scores=np.zeros(1))  # fmt: skip


def test_votes_hand_traced():
    """Best first: B1 (0.9, answer 7), A1 (0.5, answer 3), A2 (0.45, answer 3), C (0.1, answer 1).

    best -> B1; majority: 3 has 2 votes -> its best completion A1; weighted: 3 scores 0.95 > 7's 0.9 -> A1.
    Lowering A2 to 0.3 makes 3 weigh 0.8 < 0.9 -> weighted picks B1, majority still A1.
    """
    texts = ["x\n\ny=7\n\n", "x\n\n\\boxed{3}\n\n", "z\n\nthe answer \\boxed{ 3 }\n\n", "w\n\n1\n\n"]
    r = _result(texts, [0.9, 0.5, 0.45, 0.1])
    assert final_answer(r) == texts[0]
    assert final_answer(r, method="majority") == texts[1]
    assert final_answer(r, method="weighted") == texts[1]
    r2 = _result(texts, [0.9, 0.5, 0.3, 0.1])
    assert final_answer(r2, method="weighted") == texts[0]
    assert final_answer(r2, method="majority") == texts[1]


def test_vote_ties_go_to_the_answer_ranked_first_and_custom_extract():
    """Two answers with one vote each: the one whose completion ranks first wins; `extract` groups completions."""
    r = _result(["a|1", "b|2"], [0.6, 0.4])
    assert final_answer(r, method="majority") == "a|1"
    r = _result(["a|1", "b|2", "c|2"], [0.6, 0.4, 0.3])
    assert final_answer(r, method="majority", extract=lambda t: t.split("|")[1]) == "b|2"
    assert final_answer(_result([], []), method="weighted") == ""


def test_extract_answer_known_values():
    assert extract_answer("1+2=3\n\nso \\boxed{3}\n\n") == "3"
    assert extract_answer("a\n\n  b=4 \n\n") == "b=4"
    assert extract_answer("") == ""


def test_votes_reject_bad_input():
    r = _result(["a"], [0.5])
    with pytest.raises(ValueError, match="method"):
        final_answer(r, method="mode")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="result"):
        final_answer("a")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="extract"):
        final_answer(r, method="majority", extract=lambda t: 3)  # type: ignore[arg-type, return-value]
    with pytest.raises(ValueError, match="scores"):
        final_answer(_result(["a"], [float("nan")]), method="weighted")
    with pytest.raises(TypeError, match="completion"):
        extract_answer(None)  # type: ignore[arg-type]


def test_extract_answer_keeps_nested_braces():
    """MATH-500 answers such as ``\\frac{1}{2}`` hold braces: the box is read with balanced braces, the last wins."""
    assert extract_answer("so \\boxed{\\frac{1}{2}}\n\n") == "\\frac{1}{2}"
    assert extract_answer("\\boxed{3}\n\nno, \\boxed{\\sqrt{2}+1}") == "\\sqrt{2}+1"
    assert extract_answer("\\boxed{3}\n\nthen \\boxed{4") == "3"  # an unclosed (truncated) box is ignored
    r = _result(["a \\boxed{\\frac{1}{2}}", "b \\boxed{\\frac{1}{3}}", "c \\boxed{ \\frac{1}{2} }"], [0.6, 0.5, 0.4])
    assert final_answer(r, method="majority") == "a \\boxed{\\frac{1}{2}}"
