"""Simulator closed forms (Monte Carlo within 3 SE), the gap statistic and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from nips25_vgsearch import StepChainTask, best_of_n, consecutive_gap_share
from nips25_vgsearch.generator import STOP


class OutcomeVerifier:
    """Perfect outcome verifier: every step scores 1 if the path is right at that step, else 0."""

    n_params = 1.0

    def score(self, problems, prefixes):
        return [[1.0 if "|ok|" in s else 0.0 for s in p.split(STOP) if s] for p in prefixes]


class ConstantVerifier:
    n_params = 1.0

    def score(self, problems, prefixes):
        return [[0.5 for s in p.split(STOP) if s] for p in prefixes]


def _fixed_task(q: float, depth: int, n_problems: int) -> StepChainTask:
    return StepChainTask(n_problems=n_problems, level_mix=(1.0,), depth_by_level=(depth,), q_by_level=(q,),
                         q_spread=0.0, recovery=0.0, seed=0)  # fmt: skip


@pytest.mark.parametrize("n", [1, 4])
def test_bon_with_perfect_outcome_verifier_matches_closed_form(n):
    """Accuracy of BoN with a perfect outcome verifier is 1 - (1 - q^L)^n."""
    task = _fixed_task(0.8, 3, 400)
    res = best_of_n(task.problems, task.generator(), OutcomeVerifier(), n=n, seed=0)
    acc = np.mean([task.is_correct(r.problem, r.answer) for r in res])
    p = 1 - (1 - 0.8**3) ** n
    assert abs(acc - p) < 3 * math.sqrt(p * (1 - p) / 400)


def test_bon_with_constant_verifier_is_single_sample_accuracy():
    """With a constant verifier (ties broken by a random path order) BoN accuracy is q^L."""
    task = _fixed_task(0.8, 3, 400)
    res = best_of_n(task.problems, task.generator(), ConstantVerifier(), n=8, seed=0)
    acc = np.mean([task.is_correct(r.problem, r.answer) for r in res])
    p = 0.8**3
    assert abs(acc - p) < 3 * math.sqrt(p * (1 - p) / 400)


def test_generator_paths_are_the_same_stepwise_and_to_eos():
    from nips25_vgsearch import StepRequest

    task = StepChainTask(n_problems=3, seed=1)
    gen = task.generator()
    for problem in task.problems:
        full = gen.step([StepRequest(problem, "", 0, 42)], to_eos=True)[0]
        prefix, depth, finished = "", 0, False
        while not finished:
            st = gen.step([StepRequest(problem, prefix, depth, 42)])[0]
            prefix, depth, finished = prefix + st.text, depth + st.n_steps, st.finished
        assert prefix == full.text and depth == full.n_steps
        assert gen.count_tokens(prefix) == full.n_tokens


def test_prm_scores_are_deterministic_and_in_unit_interval():
    task = StepChainTask(n_problems=5, seed=2)
    res = best_of_n(task.problems, task.generator(), task.verifier(), n=4)
    prm = task.verifier()
    comps = [c for r in res for c in r.completions]
    probs = [r.problem for r in res for _ in r.completions]
    a, b = prm.score(probs, comps), prm.score(probs, comps)
    assert a == b and all(0 < s < 1 for row in a for s in row)
    share = consecutive_gap_share(a)
    assert 0.0 <= share <= 1.0


def test_gap_share_closed_form():
    assert consecutive_gap_share([[0.5, 0.505, 0.6], [0.2]]) == pytest.approx(0.5)
    assert math.isnan(consecutive_gap_share([[0.3]]))
    with pytest.raises(ValueError, match="threshold"):
        consecutive_gap_share([[0.1, 0.2]], threshold=0.0)
    with pytest.raises(ValueError, match="finite"):
        consecutive_gap_share([[0.1, float("nan")]])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_problems": 0}, "n_problems"),
        ({"level_mix": ()}, "level_mix"),
        ({"level_mix": (1.0, -1.0)}, "level_mix"),
        ({"q_by_level": (0.9, 0.9, 0.9, 0.9, 1.5)}, "q_by_level"),
        ({"q_by_level": (0.9,)}, "one entry per level"),
        ({"rho": 1.0}, "rho"),
        ({"prm_noise": float("nan")}, "prm_noise"),
        ({"prm_detect": 0.0}, "prm_detect"),
        ({"tokens_per_step": 0.5}, "tokens_per_step"),
    ],
)
def test_bad_task_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        StepChainTask(**kwargs)


def test_foreign_problem_is_rejected():
    task = StepChainTask(n_problems=1)
    with pytest.raises(ValueError, match="problem"):
        task.is_correct("what is 2+2?", "4")
    with pytest.raises(ValueError, match="at least one step"):
        task.verifier().score(task.problems, [""])


def _reference_scores(task, prm, prefix):
    """The PRM recursion of the StepChainTask docstring, one path at a time (0.2.0's scalar code)."""
    from statistics import NormalDist

    from nips25_vgsearch.simulator import _STEP, _normal

    steps = _STEP.findall(prefix)
    bias = task.prm_bias * _normal(prm.seed, int(steps[0][3]), 1)
    z, out, noticed = 0.0, [], False
    for i, (_, tag, _, ident) in enumerate(steps):
        if tag == "err" and not noticed:
            noticed = NormalDist().cdf(_normal(prm.seed, int(ident), 3)) < task.prm_detect
        elif tag == "ok":
            noticed = False
        mu = -task.prm_signal if noticed else task.prm_signal
        eps = _normal(prm.seed, int(ident), 2)
        z = mu + bias + task.prm_first_noise * eps if i == 0 else (
            task.rho * z + (1 - task.rho) * (mu + bias) + task.prm_noise * eps)  # fmt: skip
        out.append(1.0 / (1.0 + math.exp(-z)))
    return out


def test_batched_prm_equals_the_scalar_recursion():
    """The vectorised SimPRM (0.2.2) computes the documented recursion with 0.2.0's noise hash, path by path."""
    task = StepChainTask(n_problems=6, seed=3, prm_detect=0.5, recovery=0.3)
    res = best_of_n(task.problems, task.generator(), task.verifier(), n=8)
    probs = [r.problem for r in res for _ in r.completions]
    comps = [c for r in res for c in r.completions]
    comps += [c[: c.index(STOP) + 2] for c in comps if STOP in c]  # prefixes of different lengths in one batch
    probs += [r.problem for r in res for c in r.completions if STOP in c]
    prm = task.verifier()
    got = prm.score(probs, comps)
    assert any("|err|" in c for c in comps) and len({len(row) for row in got}) > 1
    for c, row in zip(comps, got):
        assert row == pytest.approx(_reference_scores(task, prm, c), abs=1e-12)


def test_generator_is_batch_invariant_and_matches_its_token_counts():
    """A request's step does not depend on the other requests of the call (the per-path seeding contract)."""
    from nips25_vgsearch import StepRequest

    task = StepChainTask(n_problems=4, seed=5)
    gen = task.generator()
    reqs = [StepRequest(p, "", 0, 100 + i) for i, p in enumerate(task.problems)]
    for to_eos in (False, True):
        batch = gen.step(reqs, to_eos=to_eos)
        alone = [gen.step([r], to_eos=to_eos)[0] for r in reqs]
        assert batch == alone
        assert all(gen.count_tokens(s.text) == s.n_tokens for s in batch)
    assert gen.step([]) == []
