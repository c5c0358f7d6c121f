"""Bad input at the public entry points that a review found accepted silently (each case failed before its fix)."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_vgsearch import (
    AdaptiveG,
    ArithChainTask,
    ComputeLedger,
    FlopsModel,
    SearchConfig,
    Step,
    StepChainTask,
    StepRequest,
    SweepPoint,
    TinyGenerator,
    TinyPRM,
    pareto_front,
    path_seed,
    run_sweep,
    step_seed,
    train_tiny_prm,
    vg_search,
)
from nips25_vgsearch.arith import StepMLP, StepPRMNet


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: SearchConfig(filter_duplicates="no"), TypeError, "filter_duplicates"),
        (lambda: FlopsModel(count_prefill="no"), TypeError, "count_prefill"),
        (lambda: FlopsModel(prm_kv_cache=1), TypeError, "prm_kv_cache"),
        (lambda: FlopsModel().flops(ComputeLedger(gen_tokens=-5)), ValueError, "gen_tokens"),
        (lambda: FlopsModel().flops(ComputeLedger(verifier_tokens=float("nan"))), TypeError, "verifier_tokens"),
        (lambda: path_seed(0, None, (0,)), TypeError, "problem"),
        (lambda: path_seed(0, "p", [0]), TypeError, "lineage"),
        (lambda: step_seed(0, 1.5), TypeError, "depth"),
        (lambda: step_seed("a", 1), TypeError, "seed"),
        (lambda: StepRequest("p", "", 1.5, 0), TypeError, "depth"),
        (lambda: StepRequest("p", "", 1, "x"), TypeError, "seed"),
        (lambda: Step(None, 1, 1, False), TypeError, "text"),
        (lambda: Step("a", 1.5, 1, False), TypeError, "n_tokens"),
        (lambda: StepChainTask(depth_by_level=(2.5, 4, 5, 6, 8)), ValueError, "depth_by_level"),
        (lambda: StepChainTask(problem_tokens=float("nan")), ValueError, "problem_tokens"),
        (lambda: StepChainTask(problem_tokens=2.5), ValueError, "problem_tokens"),
        (lambda: StepChainTask(seed=-1), ValueError, "seed"),
        (lambda: AdaptiveG(tolerance="a"), TypeError, "tolerance"),
        (lambda: SweepPoint("g=1", 4, float("nan"), 0.0, 1.0, 1.0, 1.0), ValueError, "accuracy"),
        (lambda: SweepPoint("g=1", 4, 0.5, 0.0, -1.0, 1.0, 1.0), ValueError, "flops"),
        (lambda: pareto_front([None]), TypeError, "SweepPoint"),
        (lambda: ArithChainTask(n_problems=1).answer("x"), ValueError, "arithmetic chain"),
        (lambda: ArithChainTask(n_problems=1).is_correct("1;+2", None), TypeError, "completion"),
        (lambda: train_tiny_prm(steps=1, batch_size=2, depth=99), ValueError, "depth"),
    ],
)
def test_entry_points_reject_bad_values(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_tiny_pair_rejects_requests_and_prefixes_that_do_not_follow_the_problem():
    """Before: a wrong depth made the generator write the step of another operation ('1+3=...' for '1;+2;+3'),
    and the PRM scored steps of a different chain, or more steps than the problem has, without complaint."""
    gen, prm = TinyGenerator(StepMLP()), TinyPRM(StepPRMNet())
    with pytest.raises(ValueError, match="depth"):
        gen.step([StepRequest("1;+2;+3", "", 1, 0)])
    with pytest.raises(ValueError, match="does not follow"):
        prm.score(["1;+2"], ["5-3=2"])
    with pytest.raises(ValueError, match="at most 1 steps"):
        prm.score(["1;+2"], ["1+2=3\n\n3+3=6"])
    assert len(prm.score(["1;+2;+3"], ["1+2=7\n\n7+3=0"])[0]) == 2  # a wrong result is a step to score, not an error


def test_adaptive_fit_and_choose_reject_malformed_input():
    task = StepChainTask(n_problems=3, seed=0)
    gen, prm = task.generator(), task.verifier()
    res = {g: vg_search(task.problems, gen, prm, n=4, beam_width=2, g=g) for g in (1, 2)}
    with pytest.raises(ValueError, match="correct"):
        AdaptiveG().fit(res, {g: [1.5, 0.2, 3.0] for g in (1, 2)})
    with pytest.raises(TypeError, match="SearchResult"):
        AdaptiveG().fit({1: [1, 2, 3]}, {1: [True] * 3})
    AdaptiveG().fit(res, {g: np.array([1.0, 0.0, 1.0]) for g in (1, 2)})  # 0/1 numbers are fine
    fitted = AdaptiveG(policy="budget").fit(res, {g: [True, False, np.bool_(True)] for g in (1, 2)})
    with pytest.raises(ValueError, match="budget"):
        fitted.choose(budget="1e9")  # type: ignore[arg-type]


def test_run_sweep_rejects_empty_problems_bad_batch_size_and_checker():
    task = StepChainTask(n_problems=2, seed=0)
    gen, prm = task.generator(), task.verifier()
    with pytest.raises(ValueError, match="problems"):
        run_sweep([], gen, prm, task.is_correct, ns=[4], gs=[1])
    with pytest.raises(ValueError, match="batch_size"):
        run_sweep(task.problems, gen, prm, task.is_correct, ns=[4], gs=[1], batch_size=-1)
    with pytest.raises(TypeError, match="is_correct"):
        run_sweep(task.problems, gen, prm, None, ns=[4], gs=[1])  # type: ignore[arg-type]


def test_hf_prm_rejects_a_model_that_does_not_fit_its_mode_and_str_inputs(tiny):
    """Before: a causal LM in value_head mode was read through its first vocabulary logit (a silent wrong score),
    a one-label head in token_prob mode raised IndexError, and str arguments were scored character by character."""
    from nips25_vgsearch import HFPRM

    tok, lm, prm = tiny
    with pytest.raises(ValueError, match="one output per token"):
        HFPRM(lm, tok, mode="value_head").score(["1+1"], ["2\n\n"])
    with pytest.raises(ValueError, match="logits cover good_token and bad_token"):
        HFPRM(prm, tok, mode="token_prob", step_tag=" z", good_token="a", bad_token="b").score(["1+1"], ["2\n\n"])
    with pytest.raises(TypeError, match="problems"):
        HFPRM(prm, tok).score("a", "b")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="prefixes"):
        HFPRM(prm, tok).score(["a"], [None])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="batch_size"):
        HFPRM(prm, tok, batch_size=1.5)  # type: ignore[arg-type]


def test_hf_prm_prompt_template_may_hold_other_braces(tiny):
    """MATH prompts ask for ``\\boxed{}``; before, ``str.format`` read those braces as fields and raised IndexError."""
    from nips25_vgsearch import HFPRM

    tok, _, prm = tiny
    plain = HFPRM(prm, tok, prompt_template="box it {problem}\n\n").score(["1+1"], ["2\n\n"])
    braced = HFPRM(prm, tok, prompt_template="box{} {problem}\n\n").score(["1+1"], ["2\n\n"])
    assert len(braced[0]) == 1 and 0.0 <= braced[0][0] <= 1.0 and braced != plain
