"""Adaptive g, matched-FLOPs interpolation and the Pareto front: hand values and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from nips25_vgsearch import AdaptiveG, ComputeLedger, SearchResult, StepChainTask, vg_search
from nips25_vgsearch.reproduce import matched_flops_comparison
from nips25_vgsearch.sweep import SweepPoint, accuracy_at, pareto_front, run_sweep


def _result(problem: str, first: float, flops: float) -> SearchResult:
    return SearchResult(problem, "x", ["x"], [1.0], 1, ComputeLedger(), flops, np.array([first, first]))


def test_difficulty_policy_picks_cheapest_g_within_tolerance_per_bin():
    """Easy half (high first scores): g=4 as accurate as g=1 and cheaper; hard half: only g=1 is right."""
    problems = [f"p{i}" for i in range(8)]
    first = [0.9, 0.8, 0.85, 0.95, 0.1, 0.2, 0.15, 0.05]
    results = {g: [_result(p, f, 10.0 / g) for p, f in zip(problems, first)] for g in (1, 4)}
    correct = {1: [True] * 8, 4: [True] * 4 + [False] * 4}
    policy = AdaptiveG(n_bins=2, tolerance=0.0).fit(results, correct)
    assert policy(np.array([0.9, 0.9])) == 4
    assert policy(np.array([0.1, 0.1])) == 1
    budget = AdaptiveG(policy="budget").fit(results, correct)
    assert budget.choose(budget=5.0) == 4  # only g=4 (2.5 FLOPs) fits
    assert budget.choose(budget=20.0) == 1  # g=1 is the most accurate
    assert budget.choose(budget=1.0) == 4  # nothing fits: the cheapest


def test_adaptive_bad_input():
    with pytest.raises(ValueError, match="policy"):
        AdaptiveG(policy="gapp")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_bins"):
        AdaptiveG(n_bins=0)
    with pytest.raises(ValueError, match="tolerance"):
        AdaptiveG(tolerance=1.5)
    with pytest.raises(RuntimeError, match="not fitted"):
        AdaptiveG().choose(first_scores=np.ones(2))
    with pytest.raises(ValueError, match="same g keys"):
        AdaptiveG().fit({1: [_result("p", 0.5, 1.0)]}, {2: [True]})
    with pytest.raises(ValueError, match="at least one g"):
        AdaptiveG().fit({}, {})
    fitted = AdaptiveG(policy="budget").fit({1: [_result("p", 0.5, 1.0)]}, {1: [True]})
    with pytest.raises(ValueError, match="budget"):
        fitted.choose(budget=float("nan"))
    with pytest.raises(ValueError, match="difficulty"):
        fitted(np.ones(2))
    with pytest.raises(ValueError, match="first_scores"):
        AdaptiveG().fit({1: [_result("p", 0.5, 1.0)]}, {1: [True]}).choose(first_scores=np.array([]))


def test_adaptive_runs_inside_search():
    task = StepChainTask(n_problems=12, seed=2)
    gen, prm = task.generator(), task.verifier()
    dev = {g: vg_search(task.problems, gen, prm, n=4, beam_width=2, g=g) for g in (1, 3)}
    ok = {g: [task.is_correct(r.problem, r.answer) for r in res] for g, res in dev.items()}
    policy = AdaptiveG(n_bins=2).fit(dev, ok)
    res = vg_search(task.problems, gen, prm, n=4, beam_width=2, g=policy)
    assert {r.g for r in res} <= {1, 3}


def _pt(method, n, acc, flops):
    return SweepPoint(method, n, acc, 0.01, flops, 0.0, 0.0)


def test_accuracy_at_is_log_linear_and_does_not_extrapolate():
    pts = [_pt("g=1", 4, 0.5, 10.0), _pt("g=1", 16, 0.7, 1000.0)]
    assert accuracy_at(pts, 100.0) == pytest.approx(0.6)
    assert math.isnan(accuracy_at(pts, 5.0))
    with pytest.raises(ValueError, match="one method"):
        accuracy_at([*pts, _pt("bon", 4, 0.1, 1.0)], 10.0)
    with pytest.raises(ValueError, match="flops"):
        accuracy_at(pts, -1.0)


def test_pareto_front_hand_example():
    pts = [_pt("a", 1, 0.5, 1.0), _pt("b", 1, 0.4, 2.0), _pt("c", 1, 0.7, 3.0), _pt("d", 1, 0.7, 4.0)]
    assert [p.method for p in pareto_front(pts)] == ["a", "c"]


def test_matched_flops_comparison_hand_example():
    pts = [_pt("g=1", 4, 0.5, 10.0), _pt("g=1", 16, 0.6, 1000.0), _pt("bon", 4, 0.4, 1.0),
           _pt("bon", 16, 0.55, 1000.0), _pt("g=2", 4, 0.7, 5.0), _pt("g=2", 16, 0.8, 500.0)]  # fmt: skip
    out = matched_flops_comparison(pts, candidates=["g=2"], n_problems=100)
    assert out["beats"] and out["method"] == "g=2"
    # By hand, x = log10 FLOPs: g=2 is 0.7 + 0.05 (x - log10 5), beam 0.5 + 0.05 (x - 1), BoN 0.4 + 0.05 x below
    # beam everywhere: the margin over beam is 0.25 - 0.05 log10 5 at every budget; SE = sqrt(p (1 - p) / 100).
    margin = 0.25 - 0.05 * math.log10(5.0)
    assert out["margins"]["g=1"] == pytest.approx(margin)
    assert out["se"] == pytest.approx(math.sqrt(out["baseline_best"] * (1 - out["baseline_best"]) / 100))
    assert out["range"] == [10.0, 500.0]
    with pytest.raises(ValueError, match="lack"):
        matched_flops_comparison(pts, candidates=["g=3"], n_problems=100)


def test_run_sweep_points_and_bad_input():
    task = StepChainTask(n_problems=6, seed=3)
    points, raw = run_sweep(task.problems, task.generator(), task.verifier(), task.is_correct, ns=(4,), gs=(1, None))
    assert {p.method for p in points} == {"bon", "g=1", "g=inf"}
    assert all(0 <= p.accuracy <= 1 and p.flops > 0 for p in points)
    assert len(raw[("g=1", 4)]) == 6
    with pytest.raises(ValueError, match="non-empty"):
        run_sweep(task.problems, task.generator(), task.verifier(), task.is_correct, ns=())
