"""VG-Search: hand-computed beam trace, counting identities, BoN and beam-search special cases, grouping."""

from __future__ import annotations

import math

import numpy as np
import pytest
from nips25_vgsearch import (
    STOP,
    FlopsModel,
    SearchConfig,
    Step,
    StepChainTask,
    beam_search,
    best_of_n,
    vg_search,
)


def test_g1_reproduces_hand_computed_beam_trace(scripted, letters):
    """n=4, B2=2 (B1=2), g=1: round 0 keeps b, c; the refill [b, c, b, c] branches to a, a, b, b -> keeps bb, cb."""
    res = vg_search("p", scripted(), letters(), n=4, beam_width=2, g=1, max_steps=3, filter_duplicates=False)[0]
    s = STOP
    assert res.trace[0] == ["b" + s, "c" + s]
    assert res.trace[1] == ["b" + s + "b" + s, "c" + s + "b" + s]
    # last round (to the end): the refill [bb, cb, bb, cb] branches to a, a, b, b; all four complete.
    assert sorted(res.completions) == sorted([f"b{s}b{s}a", f"c{s}b{s}a", f"b{s}b{s}b", f"c{s}b{s}b"])
    assert res.answer.endswith("b") and res.scores[0] == pytest.approx(0.4)


@pytest.mark.parametrize(("n", "beam_width", "g", "iters"), [(8, 4, 3, 4), (4, 4, 1, 5), (16, 4, 2, 3), (6, 2, 4, 2)])
def test_counting_identities_on_fixed_length_chains(scripted, letters, n, beam_width, g, iters):
    """PRM calls = n I; generator calls = n + (I-1)(B1 (g-1) + n) when no path ends early."""
    res = vg_search("p", scripted(), letters(), n=n, beam_width=beam_width, g=g, num_iterations=iters,
                    filter_duplicates=False)[0]  # fmt: skip
    b1 = n // beam_width
    assert res.ledger.verifier_calls == n * iters
    assert res.ledger.gen_calls == n + (iters - 1) * (b1 * (g - 1) + n)
    assert len(res.completions) == n


def test_flops_equal_hand_count(scripted, letters):
    """n=2, B2=2, g=1, I=2, 3 tokens per step, 5-token problem (counted by hand in the docstring of the test)."""
    # round 0: prefill 2*5, gen 2*3, verifier reads 2*(5+3)=16 (all new)
    # round 1 (to the end): prefill 2*(5+3), gen 2*3, verifier reads 2*(5+6)=22, new 2*(11-8)=6
    gen, ver = scripted(tokens=3, problem_tokens=5), letters()
    model = FlopsModel(p_gen=1.0, p_ver=10.0)
    res = vg_search("p", gen, ver, n=2, beam_width=2, g=1, num_iterations=2, flops_model=model)[0]
    led = res.ledger
    assert (led.gen_tokens, led.prefill_tokens, led.verifier_tokens, led.verifier_new_tokens) == (12, 26, 38, 22)
    assert (led.gen_calls, led.verifier_calls) == (4, 4)
    assert res.flops == 2 * 1.0 * (12 + 26) + 2 * 10.0 * 38 == 836
    assert FlopsModel(p_gen=1.0, p_ver=10.0, prm_kv_cache=True).flops(led) == 76 + 2 * 10 * 22
    assert FlopsModel(p_gen=1.0, p_ver=10.0, count_prefill=False).flops(led) == 2 * 12 + 760


def test_early_end_in_extension_is_detected_at_that_step(scripted, letters):
    """A path that ends at its 2nd step is completed there, not extended through the rest of g - 1 = 4 steps."""
    gen = scripted(finish_at=2)
    res = vg_search("p", gen, letters(), n=4, beam_width=4, g=5, num_iterations=3, filter_duplicates=False)[0]
    assert all(c.count(STOP) == 1 for c in res.completions)  # exactly two steps
    # round 0: 4 calls; round 1: the single survivor takes one extension step and ends -> 1 call, then no survivors
    assert res.ledger.gen_calls == 5
    assert res.completions == ["b" + STOP + "a"]  # the 3 pruned first steps never complete
    assert len(res.trace) == 1


@pytest.mark.parametrize("g", [1, 2, 3, None])
def test_beam_width_1_is_exactly_best_of_n(g):
    """B2 = 1 prunes nothing: for every g the completions, scores and answer equal Best-of-N's on the same seed."""
    task = StepChainTask(n_problems=25, seed=3)
    gen, prm = task.generator(), task.verifier()
    bon = best_of_n(task.problems, gen, prm, n=6, seed=11)
    vg = vg_search(task.problems, gen, prm, n=6, beam_width=1, g=g, seed=11, filter_duplicates=False)
    for a, b in zip(bon, vg):
        assert a.completions == b.completions
        assert a.scores == pytest.approx(b.scores, abs=0)
        assert a.answer == b.answer


def test_beam_search_is_vg_search_with_g1():
    task = StepChainTask(n_problems=10, seed=4)
    gen, prm = task.generator(), task.verifier()
    a = beam_search(task.problems, gen, prm, n=8, beam_width=4, seed=2)
    b = vg_search(task.problems, gen, prm, n=8, beam_width=4, g=1, seed=2)
    assert [r.answer for r in a] == [r.answer for r in b]
    assert [r.ledger for r in a] == [r.ledger for r in b]
    with pytest.raises(ValueError, match="g=1"):
        beam_search(task.problems, gen, prm, g=2)


def test_results_stay_grouped_and_do_not_depend_on_the_batch():
    """sal#28: several problems per call keep their own completions; a problem's result ignores its batch-mates."""
    task = StepChainTask(n_problems=6, seed=5)
    gen, prm = task.generator(), task.verifier()
    together = vg_search(task.problems, gen, prm, n=8, beam_width=4, g=2, seed=1)
    for problem, res in zip(task.problems, together):
        alone = vg_search([problem], gen, prm, n=8, beam_width=4, g=2, seed=1)[0]
        assert res.problem == problem
        assert res.completions == alone.completions and res.ledger == alone.ledger
        assert all(c.count("answer=") == 1 for c in res.completions)


def test_deterministic_under_a_seed_and_seed_matters():
    task = StepChainTask(n_problems=8, seed=6)
    gen, prm = task.generator(), task.verifier()
    a = vg_search(task.problems, gen, prm, n=8, beam_width=2, g=3, seed=9)
    b = vg_search(task.problems, gen, prm, n=8, beam_width=2, g=3, seed=9)
    c = vg_search(task.problems, gen, prm, n=8, beam_width=2, g=3, seed=10)
    assert [r.completions for r in a] == [r.completions for r in b]
    assert [r.flops for r in a] == [r.flops for r in b]
    assert [r.completions for r in a] != [r.completions for r in c]


def test_adaptive_policy_is_called_per_problem(scripted, letters):
    seen = []

    def policy(first_scores: np.ndarray) -> int:
        seen.append(first_scores.copy())
        return 2

    res = vg_search(["p", "q"], scripted(), letters(), n=4, beam_width=2, g=policy, max_steps=5)
    assert len(seen) == 2 and all(s.shape == (4,) for s in seen)
    assert all(r.g == 2 for r in res)
    np.testing.assert_allclose(seen[0], [0.1, 0.4, 0.3, 0.2])


def test_config_derives_iterations():
    assert SearchConfig(g=1, max_steps=12).iterations(1) == 12
    assert SearchConfig(g=4, max_steps=12).iterations(4) == 1 + math.ceil(11 / 4)
    assert SearchConfig(g=None).iterations(None) == 2
    assert SearchConfig(num_iterations=3).iterations(5) == 3
    assert SearchConfig(n=8, beam_width=2).keep == 4


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": 0}, "n must be >= 1"),
        ({"n": 6, "beam_width": 4}, "multiple of beam_width"),
        ({"g": 0}, "g must be"),
        ({"g": 1.5}, "g must be"),
        ({"num_iterations": 0}, "num_iterations"),
        ({"agg": "mean"}, "agg must be"),
        ({"refill": "x"}, "refill"),
        ({"max_steps": 0}, "max_steps"),
    ],
)
def test_bad_hyper_parameters_are_rejected(scripted, letters, kwargs, match):
    with pytest.raises(ValueError, match=match):
        vg_search("p", scripted(), letters(), **kwargs)


def test_bad_inputs_are_rejected(scripted, letters):
    gen, ver = scripted(), letters()
    with pytest.raises(ValueError, match="problems must be non-empty"):
        vg_search([], gen, ver)
    with pytest.raises(ValueError, match=r"problems\[1\]"):
        vg_search(["a", ""], gen, ver)
    with pytest.raises(TypeError, match="generator"):
        vg_search("p", object(), ver)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="verifier"):
        vg_search("p", gen, object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="seed"):
        vg_search("p", gen, ver, seed=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="flops_model"):
        best_of_n("p", gen, ver, flops_model="x")  # type: ignore[arg-type]

    class NaNVerifier:
        n_params = 1.0

        def score(self, problems, prefixes):
            return [[float("nan")] for _ in prefixes]

    with pytest.raises(ValueError, match="finite"):
        vg_search("p", gen, NaNVerifier())

    class ShortVerifier(NaNVerifier):
        def score(self, problems, prefixes):
            return []

    with pytest.raises(ValueError, match="score lists"):
        best_of_n("p", gen, ShortVerifier())
    with pytest.raises(ValueError, match="g must be"):
        vg_search("p", gen, ver, n=4, beam_width=2, g=lambda s: 0)


def test_one_verifier_call_per_round_hand_count(scripted, letters):
    """Paths that end inside the extension are verified in the round's one verifier call, not in a call of their own.

    Problems p and q, n=4, B2=2 (B1=2), g=2, I=3; q's paths end at their 2nd step. Round 0: one generator and one
    verifier call for both. Round 1: one extension call (q's two survivors end there), one branch call (p's four
    beams), ONE verifier call for q's two ended paths and p's four beams (before: two). Round 2 (to the end, p only):
    one extension call, one branch call, one verifier call. Hand count: 5 generator calls, 3 verifier calls.
    """

    class EndsEarly(scripted):
        def step(self, requests, *, to_eos=False):
            out = super().step(requests, to_eos=to_eos)
            return [
                Step(s.text.removesuffix(STOP), s.n_tokens, 1, True) if r.problem == "q" and r.depth + 1 >= 2 else s
                for r, s in zip(requests, out)
            ]

    class Counting:
        def __init__(self, inner):
            self.inner, self.calls, self.n_params = inner, [], inner.n_params

        def score(self, problems, prefixes):
            self.calls.append(len(prefixes))
            return self.inner.score(problems, prefixes)

    gen, ver = EndsEarly(), Counting(letters())
    calls = []
    step = gen.step
    gen.step = lambda requests, to_eos=False: calls.append(len(requests)) or step(requests, to_eos=to_eos)
    res = vg_search(["p", "q"], gen, ver, n=4, beam_width=2, g=2, num_iterations=3, filter_duplicates=False)
    assert calls == [8, 4, 4, 2, 4]
    assert ver.calls == [8, 2 + 4, 4]
    p, q = res
    assert len(q.completions) == 2 and all(c.count(STOP) == 1 for c in q.completions)
    assert q.scores == sorted(q.scores, reverse=True) and all(math.isfinite(s) for s in q.scores)
    assert q.ledger.verifier_calls == 4 + 2 and p.ledger.verifier_calls == 4 + 4 + 4
    # the ended paths' scores are those of a verifier call of their own (the old schedule)
    alone = [letters().score(["q"], [c])[0][-1] for c in q.completions]
    assert q.scores == alone
