"""Issue 34, the 0.2.3 positive control: routine steps keep the state, and the oracle search's closed form."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from nips25_vgsearch import StepChainTask, vg_search
from nips25_vgsearch.generator import StepRequest
from nips25_vgsearch.reproduce import CONTROL_TASK, ROUNDS, oracle_b1_accuracy

PLANTED = {**CONTROL_TASK, "q_by_level": (0.5, 0.45, 0.4, 0.35, 0.3)}


def test_routine_steps_keep_the_state_and_the_oracle_score():
    task = StepChainTask(n_problems=40, seed=3, **PLANTED)
    steps = task.generator().step(
        [StepRequest(problem=p, prefix="", depth=0, seed=1000 + i) for i, p in enumerate(task.problems)], to_eos=True
    )
    scores = task.verifier().score(task.problems, [s.text for s in steps])
    changed = 0
    for step, row in zip(steps, scores):
        ok = [m == "ok" for m in re.findall(r"\[\d+\|(ok|err)\|", step.text)]
        for k in range(1, len(ok)):  # 0-based k is step k + 1: routine when k + 1 is even
            if k % 2 == 1:
                assert ok[k] == ok[k - 1] and row[k] == row[k - 1]
            else:
                changed += ok[k] != ok[k - 1]
    assert changed > 0  # decision steps do change the state
    with pytest.raises(ValueError, match="decision_period"):
        StepChainTask(decision_period=0)


@pytest.mark.parametrize("g", [2, 4])
def test_oracle_b1_closed_form_matches_the_search(g):
    task = StepChainTask(n_problems=300, seed=5, **PLANTED)
    res = vg_search(task.problems, task.generator(), task.verifier(), n=4, beam_width=4, g=g, num_iterations=ROUNDS[g])
    got = np.mean([task.is_correct(r.problem, r.answer) for r in res])
    closed = np.mean([oracle_b1_accuracy(task, p, g, ROUNDS[g]) for p in task.problems])
    assert abs(got - closed) <= 3 * math.sqrt(closed * (1 - closed) / len(res))
    if g == 2:  # planted: g = 2 branches on every decision step, so one kept beam is exactly as good as beam search
        assert closed == pytest.approx(np.mean([oracle_b1_accuracy(task, p, 1, ROUNDS[1]) for p in task.problems]))
