"""Issue 34: the paper's run as a preset, rounds per g, paired SEs, the robust adaptive slack, TQDM_DISABLE."""

from __future__ import annotations

import math

import numpy as np
import pytest
from nips25_vgsearch import PAPER, ComputeLedger, FlopsModel, PaperPreset, SearchConfig, SearchResult, vg_search
from nips25_vgsearch.adaptive import AdaptiveG
from nips25_vgsearch.progress import progress
from nips25_vgsearch.reproduce import matched_flops_comparison, never_loses, rounds_per_g
from nips25_vgsearch.sweep import SweepPoint, score_results


def test_paper_preset_is_the_official_run():
    """example.sh + recipe: n=4, beam width 4 (one kept beam), g in 1..4 with num_iterations 12/6/4/3."""
    assert (PAPER.n, PAPER.beam_width, PAPER.gs) == (4, 4, (1, 2, 3, 4))
    assert [PAPER.rounds(g) for g in PAPER.gs] == [12, 6, 4, 3]
    assert PAPER.config(3) == SearchConfig(n=4, beam_width=4, g=3, num_iterations=4, filter_duplicates=True)
    assert PAPER.config(1).keep == 1 and PAPER.filter_duplicates and PAPER.agg == "last" and PAPER.seed == 0
    assert rounds_per_g() == {"1": 12, "2": 6, "3": 4, "4": 3, "inf": 2}
    # the derived default is not the paper's: 1 + ceil(11 / g)
    assert [SearchConfig(g=g).iterations(g) for g in (1, 2, 3, 4)] == [12, 7, 5, 4]
    with pytest.raises(ValueError, match="granularities"):
        PAPER.rounds(5)
    with pytest.raises(ValueError, match="each g once"):
        PaperPreset(num_iterations=((1, 12), (1, 6)))


@pytest.mark.parametrize("g", [1, 2, 3, 4])
def test_paper_rounds_counting_identity(scripted, letters, g):
    """Fixed-length steps that never end early: PRM calls = n * I and the depth is 1 + (I - 1) g (the brief's
    identity), with I the preset's rounds (the scripted generator's run to the end is one step)."""
    gen = scripted(tokens=2, problem_tokens=3)
    (res,) = vg_search("p", gen, letters(), **{**PAPER.search_kwargs(g), "filter_duplicates": False})
    rounds = PAPER.rounds(g)
    assert res.ledger.verifier_calls == PAPER.n * rounds
    assert len(res.trace) == rounds
    depth = 1 + (rounds - 1) * g
    assert all(len([s for s in c.split("\n\n") if s]) == depth for c in res.completions)


def test_num_iterations_mapping_and_bad_input():
    config = SearchConfig(num_iterations={1: 12, 2: 6, None: 3})
    assert (config.iterations(1), config.iterations(2), config.iterations(None), config.iterations(3)) == (12, 6, 3, 5)
    with pytest.raises(ValueError, match=r"num_iterations\[2\]"):
        SearchConfig(num_iterations={2: 0})
    with pytest.raises(ValueError, match="keys"):
        SearchConfig(num_iterations={0: 3})
    with pytest.raises(ValueError, match="num_iterations"):
        SearchConfig(num_iterations=1.5)  # type: ignore[arg-type]


def _pt(method: str, n: int, acc: float, flops: float) -> SweepPoint:
    return SweepPoint(method, n, acc, 0.0, flops, 1.0, 1.0)


def test_matched_flops_paired_se_hand_example():
    """Same FLOPs for every method: per-problem differences d = [0, 1, 0, 1]; SE = sd(d, ddof=1) / 2."""
    pts = [_pt("g=2", 4, 0.75, 10.0), _pt("g=1", 4, 0.25, 10.0), _pt("bon", 4, 0.0, 10.0)]
    correct = {("g=2", 4): [1, 1, 0, 1], ("g=1", 4): [1, 0, 0, 0], ("bon", 4): [0, 0, 0, 0]}
    out = matched_flops_comparison(pts, candidates=["g=2"], n_problems=4, correct=correct)
    assert out["baseline"] == "g=1" and out["margins"]["g=1"] == pytest.approx(0.5)
    assert out["se"] == pytest.approx(np.std([0, 1, 0, 1], ddof=1) / 2)
    assert out["se_binomial"] == pytest.approx(math.sqrt(0.25 * 0.75 / 4))
    assert not out["beats"]  # 0.5 < 2 * 0.2887


def test_matched_flops_interpolates_per_problem():
    """Halfway in log FLOPs between n=4 and n=16 a problem right at only one of them counts 1/2."""
    pts = [_pt("g=2", 4, 0.5, 10.0), _pt("g=2", 16, 1.0, 1000.0), _pt("g=1", 4, 0.5, 10.0),
           _pt("g=1", 16, 0.5, 1000.0), _pt("bon", 4, 0.0, 10.0), _pt("bon", 16, 0.0, 1000.0)]  # fmt: skip
    correct = {("g=2", 4): [1, 0], ("g=2", 16): [1, 1], ("g=1", 4): [1, 0], ("g=1", 16): [0, 1],
               ("bon", 4): [0, 0], ("bon", 16): [0, 0]}  # fmt: skip
    out = matched_flops_comparison(pts, candidates=["g=2"], n_problems=2, correct=correct, n_grid=3)
    assert out["budget"] == pytest.approx(1000.0) and out["margins"]["g=1"] == pytest.approx(0.5)
    ctl = never_loses(pts, correct, candidates=["g=2"], n_grid=3)
    assert ctl["holds"] and ctl["worst_margin"] == pytest.approx(0.0)  # at 10 FLOPs both are [1, 0]


def test_score_results_recounts_flops_under_another_accounting():
    ledger = ComputeLedger(gen_tokens=3, prefill_tokens=5, verifier_tokens=4, verifier_new_tokens=1)
    res = [SearchResult("p", "a", ["a"], [1.0], 1, ledger, 0.0, np.zeros(1))]
    point, ok = score_results("g=1", 4, res, lambda p, c: True, flops_model=FlopsModel(
        p_gen=1.0, p_ver=2.0, count_prefill=False, prm_kv_cache=True))  # fmt: skip
    assert point.flops == pytest.approx(2 * 3 + 2 * 2 * 1) and ok == [True]


def _result(problem: str, first: float, flops: float) -> SearchResult:
    return SearchResult(problem, "x", ["x"], [1.0], 1, ComputeLedger(), flops, np.array([first, first]))


def test_adaptive_slack_needs_more_than_noise():
    """One bin of 100 problems; g=4 (cheap) is right on 6 fewer problems than g=1. With a 0.02 tolerance alone
    (se_slack=0) g=1 wins; with one paired SE (sd(d)/10 = 0.0239 for d of six 1s, 94 0s) the slack is 0.0439 and
    g=1 still wins; with 3 SE (0.0916 > 0.06) the difference is within the noise and the cheap g=4 is chosen."""
    problems = [f"p{i}" for i in range(100)]
    results = {g: [_result(p, 0.5, 10.0 / g) for p in problems] for g in (1, 4)}
    correct = {1: [True] * 100, 4: [False] * 6 + [True] * 94}
    d = np.array([1.0] * 6 + [0.0] * 94)
    se = d.std(ddof=1) / 10
    assert 0.02 + se < 0.06 < 0.02 + 3 * se
    assert AdaptiveG(n_bins=1, se_slack=0.0).fit(results, correct).table_ == [1]
    assert AdaptiveG(n_bins=1, se_slack=1.0).fit(results, correct).table_ == [1]
    assert AdaptiveG(n_bins=1, se_slack=3.0).fit(results, correct).table_ == [4]
    # a bin of 10 problems: one problem (0.1) of slack even with tolerance 0
    few = {g: r[:10] for g, r in results.items()}
    assert AdaptiveG(n_bins=1, tolerance=0.0, se_slack=0.0).fit(few, {1: [True] * 10, 4: [False] + [True] * 9}
                                                                ).table_ == [4]  # fmt: skip
    with pytest.raises(ValueError, match="se_slack"):
        AdaptiveG(se_slack=-1.0)


def test_progress_honours_tqdm_disable(monkeypatch, capsys):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert list(progress(range(3), desc="bar")) == [0, 1, 2]
    assert "bar" not in capsys.readouterr().err
    monkeypatch.delenv("TQDM_DISABLE")
    assert list(progress(range(3), desc="bar", show=False)) == [0, 1, 2]
    assert "bar" not in capsys.readouterr().err
