"""The tiny trained arithmetic pair: task checks, path determinism, PRM padding invariance, training."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_vgsearch import ArithChainTask, StepRequest, TinyGenerator, TinyPRM, best_of_n, vg_search
from nips25_vgsearch.arith import StepMLP, StepPRMNet, teacher_solution, train_tiny_generator, train_tiny_prm


def test_task_answers_and_correct_teacher():
    task = ArithChainTask(n_problems=20, depth=5, seed=0)
    rng = np.random.default_rng(0)
    assert task.answer("7;+3;-5;+4") == 9
    assert task.is_correct("7;+3;-5;+4", "7+3=0\n\n0-5=5\n\n5+4=9")
    assert not task.is_correct("7;+3;-5;+4", "7+3=0\n\n0-5=5\n\n5+4=8")
    assert not task.is_correct("7;+3;-5;+4", "7+3=0\n\n0-5=5\n\n")
    for p in task.problems:
        sol, labels = teacher_solution(p, rng, error=0.0)
        assert task.is_correct(p, sol) and all(labels)


def test_noisy_teacher_labels_track_prefix_correctness():
    rng = np.random.default_rng(1)
    task = ArithChainTask(n_problems=200, depth=4, seed=1)
    for p in task.problems:
        sol, labels = teacher_solution(p, rng, error=0.3)
        assert labels[-1] == task.is_correct(p, sol)


@pytest.fixture(scope="module")
def pair():
    gen, _ = train_tiny_generator(steps=150, seed=0)
    prm, _ = train_tiny_prm(steps=20, batch_size=32, seed=0)
    return TinyGenerator(gen), TinyPRM(prm)


def test_generator_learns_arithmetic(pair):
    """After training on a teacher that is right 75% of the time, sampled steps are right far above chance."""
    gen, _ = pair
    task = ArithChainTask(n_problems=50, depth=1, seed=3)
    steps = gen.step([StepRequest(p, "", 0, i) for i, p in enumerate(task.problems)])
    acc = np.mean([task.is_correct(p, s.text) for p, s in zip(task.problems, steps)])
    assert acc > 0.5  # chance is 0.1


def test_tiny_paths_same_stepwise_and_to_eos_and_bon_equivalence(pair):
    gen, prm = pair
    task = ArithChainTask(n_problems=6, depth=4, seed=4)
    for p in task.problems:
        full = gen.step([StepRequest(p, "", 0, 7)], to_eos=True)[0]
        prefix = ""
        for k in range(4):
            prefix += gen.step([StepRequest(p, prefix, k, 7)])[0].text
        assert prefix == full.text and full.finished and full.n_steps == 4
    bon = best_of_n(task.problems, gen, prm, n=4, seed=3)
    vg = vg_search(task.problems, gen, prm, n=4, beam_width=1, g=2, seed=3, filter_duplicates=False)
    assert [r.completions for r in bon] == [r.completions for r in vg]


def test_prm_batched_equals_one_by_one(pair):
    _, prm = pair
    probs = ["7;+3;-5;+4", "1;+1", "2;-3;+9"]
    prefixes = ["7+3=0\n\n0-5=5\n\n", "1+1=2", "2-3=9\n\n9+9=8"]
    batched = prm.score(probs, prefixes)
    for p, s, row in zip(probs, prefixes, batched):
        np.testing.assert_allclose(prm.score([p], [s])[0], row, atol=1e-6)
    assert [len(r) for r in batched] == [2, 1, 2]


def test_arith_bad_input(pair):
    _, prm = pair
    with pytest.raises(ValueError, match="n_problems"):
        ArithChainTask(n_problems=0)
    with pytest.raises(ValueError, match="depth"):
        ArithChainTask(depth=0)
    with pytest.raises(ValueError, match="arithmetic chain"):
        ArithChainTask().answer("2+2")
    with pytest.raises(ValueError, match="a\\+b=c"):
        prm.score(["1;+1"], ["hello"])
    with pytest.raises(ValueError, match="empty"):
        prm.score(["1;+1"], [""])
    with pytest.raises(ValueError, match="same length"):
        prm.score(["1;+1"], [])
    with pytest.raises(ValueError, match="temperature"):
        TinyGenerator(StepMLP(), temperature=0.0)
    with pytest.raises(TypeError, match="StepMLP"):
        TinyGenerator(StepPRMNet())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="StepPRMNet"):
        TinyPRM(StepMLP())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="teacher_error"):
        train_tiny_generator(steps=1, teacher_error=1.0)
    with pytest.raises(ValueError, match="steps"):
        train_tiny_prm(steps=0)


def test_evaluate_prm_known_answer_and_bad_input():
    """A PRM whose head outputs logit 0 everywhere scores BCE = ln 2 and gets exactly the 'wrong prefix' labels."""
    import math

    import torch
    from nips25_vgsearch.arith import evaluate_prm

    model = StepPRMNet()
    with torch.no_grad():
        model.head.weight.zero_()
        model.head.bias.zero_()
    out = evaluate_prm(model, depth=3, n_chains=50, teacher_error=0.3, seed=0)
    rng = np.random.default_rng(0)
    from nips25_vgsearch.arith import random_problem

    labels = [teacher_solution(random_problem(rng, 3), rng, error=0.3)[1] for _ in range(50)]
    assert out["loss"] == pytest.approx(math.log(2), rel=1e-6)
    assert out["step_acc"] == pytest.approx(1.0 - np.mean(labels))
    with pytest.raises(ValueError, match="depth"):
        evaluate_prm(model, depth=0)
    with pytest.raises(ValueError, match="n_chains"):
        evaluate_prm(model, n_chains=0)
    with pytest.raises(TypeError, match="model"):
        evaluate_prm(None)  # type: ignore[arg-type]
