"""Scoring identities: the oracle, None semantics, baseline closed forms, order invariance."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_commono import (
    NONE_OPTION,
    AllOptions,
    Example,
    NoisyOracle,
    NoneOption,
    Oracle,
    RandomGuess,
    bootstrap_difference,
    evaluate,
    score,
)
from PIL import Image

IM = Image.new("RGB", (8, 8))


def _ex(options: tuple[str, ...], answer: set[int], **meta: object) -> Example:
    return Example(images=(IM, IM), options=options, answer=frozenset(answer), meta=meta)


def test_none_plus_object_is_wrong_and_not_a_hallucination_by_default() -> None:
    none_gt = _ex(("apple", "pear", NONE_OPTION), {2})
    obj_gt = _ex(("apple", "pear", NONE_OPTION), {0})
    rep = score(["Answer: A, C", "Answer: C", "Answer: A, C"], [none_gt, obj_gt, obj_gt])
    assert rep.correct.tolist() == [False, False, False]
    # "A, C" on a None question names apple, not common: hallucination; a wrong None alone is not one.
    assert rep.hallucinated.tolist() == [True, False, False]
    strict = score(["Answer: C"], [obj_gt], none_is_hallucination=True)
    assert strict.hallucinated.tolist() == [True]


def test_precision_recall_by_hand() -> None:
    ex1 = _ex(("a1", "a2", "a3", NONE_OPTION), {0, 1}, n_objects=3, similar_present=True)
    ex2 = _ex(("b1", "b2", NONE_OPTION), {2}, n_objects=4, similar_present=False)
    rep = score([{0, 2}, {1}], [ex1, ex2])
    # predicted objects: {a1, a3} and {b2}; true: {a1, a2} and {}; hits 1 -> precision 1/3, recall 1/2
    assert rep.precision == pytest.approx(1 / 3)
    assert rep.recall == pytest.approx(1 / 2)
    assert rep.accuracy == 0.0 and rep.hallucination_rate == 1.0
    assert rep.by_n_objects == {3: {"n": 1, "accuracy": 0.0, "hallucination_rate": 1.0},
                                4: {"n": 1, "accuracy": 0.0, "hallucination_rate": 1.0}}  # fmt: skip
    assert set(rep.by_similarity) == {"similar", "no_similar"}


def test_oracle_scores_one_and_never_hallucinates(examples: list[Example]) -> None:
    rep = evaluate(Oracle(), examples)
    assert rep.accuracy == 1.0 and rep.hallucination_rate == 0.0 and rep.invalid_rate == 0.0
    assert rep.recall in (1.0,) or math.isnan(rep.recall)


def test_none_and_all_options_closed_forms(examples: list[Example]) -> None:
    none_rep = evaluate(NoneOption(), examples)
    assert none_rep.accuracy == pytest.approx(np.mean([not ex.common for ex in examples]))
    assert none_rep.hallucination_rate == 0.0
    all_rep = evaluate(AllOptions(), examples)
    all_common = [set(ex.object_indices) == set(ex.common) for ex in examples]
    assert all_rep.hallucination_rate == pytest.approx(1 - np.mean(all_common))
    assert all_rep.accuracy == pytest.approx(np.mean([a and bool(ex.common) for a, ex in zip(all_common, examples)]))


def test_noisy_oracle_matches_closed_form_within_3_sigma(examples: list[Example]) -> None:
    """Mean over examples of (1-p_miss)^|C| (1-p_false)^|N| equals the simulated accuracy within 3 sigma."""
    model = NoisyOracle(p_miss=0.2, p_false=0.1, seed=3)
    reps = 25
    data = examples * reps
    rep = evaluate(model, data)
    p = np.array([model.expected_accuracy(ex) for ex in data])
    h = np.array([model.expected_hallucination(ex) for ex in data])
    se_p = math.sqrt((p * (1 - p)).sum()) / len(p)
    se_h = math.sqrt((h * (1 - h)).sum()) / len(h)
    assert abs(rep.accuracy - p.mean()) <= 3 * se_p
    assert abs(rep.hallucination_rate - h.mean()) <= 3 * se_h
    assert NoisyOracle(p_miss=0.0, p_false=0.0).expected_accuracy(examples[0]) == 1.0


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 39), st.randoms(use_true_random=False))
def test_scores_invariant_to_option_order(examples: list[Example], i: int, rnd) -> None:  # type: ignore[no-untyped-def]
    """An order-invariant model (Oracle, AllOptions, NoneOption) scores the same after shuffling the options."""
    ex = examples[i]
    order = list(range(len(ex.options)))
    rnd.shuffle(order)
    shuffled = ex.with_options_permuted(order)
    for model in (Oracle(), AllOptions(), NoneOption()):
        a, b = score([model.answer(ex)], [ex]), score([model.answer(shuffled)], [shuffled])
        assert (a.accuracy, a.hallucination_rate) == (b.accuracy, b.hallucination_rate)
    assert {shuffled.options[j] for j in shuffled.answer} == {ex.options[j] for j in ex.answer}


def test_random_guess_is_deterministic_per_seed(examples: list[Example]) -> None:
    a = evaluate(RandomGuess(p=0.3, seed=5), examples)
    b = evaluate(RandomGuess(p=0.3, seed=5), examples)
    assert a.predictions == b.predictions


def test_bootstrap_difference_known_values() -> None:
    out = bootstrap_difference(np.ones(50), np.zeros(40), n_boot=200)
    assert out == {"difference": 1.0, "low": 1.0, "high": 1.0, "standard_error": 0.0}
    rng = np.random.default_rng(0)
    a, b = rng.random(400) < 0.6, rng.random(400) < 0.4
    out = bootstrap_difference(a, b, n_boot=1000)
    assert out["low"] < out["difference"] < out["high"] and out["low"] > 0


def test_a_letter_beyond_the_options_is_invalid_not_dropped() -> None:

    ex = _ex(("apple", "pear", "key", NONE_OPTION), {0})
    report = score(["Answer: A, E", "Answer: A", "I think A"], [ex, ex, ex])
    assert report.correct.tolist() == [False, True, True]
    assert report.invalid_rate == pytest.approx(1 / 3) and report.out_of_range_rate == pytest.approx(1 / 3)
    assert report.predictions[0] == frozenset() and not report.hallucinated[0]
    assert report.summary()["out_of_range_rate"] == pytest.approx(1 / 3)


def test_paired_bootstrap_is_narrower_for_correlated_arms() -> None:
    rng = np.random.default_rng(0)
    b = rng.random(400) < 0.5
    a = b | (rng.random(400) < 0.1)  # a = b plus a few extra successes: strongly correlated arms
    paired = bootstrap_difference(a, b, paired=True, n_boot=500)
    independent = bootstrap_difference(a, b, n_boot=500)
    assert paired["difference"] == independent["difference"] > 0
    assert paired["low"] > 0 > independent["low"] or paired["standard_error"] < independent["standard_error"] / 2
    with pytest.raises(ValueError, match="equal lengths"):
        bootstrap_difference(a, b[:10], paired=True)
