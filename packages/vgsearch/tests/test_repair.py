"""Issue 34 item 5: the repair task (checks redo an operation), its generator, PRM and oracle."""

from __future__ import annotations

import pytest
import torch
from nips25_vgsearch import (
    ArithRepairTask,
    RepairGenerator,
    RepairOracle,
    RepairPRM,
    StepRequest,
    best_of_n,
    path_seed,
    vg_search,
)
from nips25_vgsearch.arith import StepMLP, StepPRMNet, train_tiny_generator
from nips25_vgsearch.repair import GEN_HIDDEN, N_REPAIR_FEATURES, _teacher_batch, train_repair_prm

PROBLEM = "7;+3;-5;+4"  # truths 0, 5, 9


def test_layout_repair_and_answer():
    task = ArithRepairTask(n_problems=3, n_ops=3, seed=0)
    assert task.depth == 5
    right = "a:check 7+3=0\n\nb:0-5=5\n\nc:check 0-5=5\n\nd:5+4=9\n\ne:check 5+4=9"
    assert task.solution(PROBLEM, tag="a").startswith("a:check 7+3=0\n\na:0-5=5")
    assert task.is_correct(PROBLEM, right) and task.answer(PROBLEM) == 9
    repaired = right.replace("b:0-5=5", "b:0-5=1").replace("d:5+4=9", "d:5+4=3")  # wrong compute steps, right checks
    assert task.is_correct(PROBLEM, repaired)
    oracle = RepairOracle().score([PROBLEM], [repaired])[0]
    assert oracle[1] < 0.01 and oracle[2] > 0.99 and oracle[3] < 0.01 and oracle[4] > 0.99  # rises after a repair
    spoiled = right.replace("c:check 0-5=5", "c:check 0-5=6")  # a wrong check is absorbing: the next step reads it
    with pytest.raises(ValueError, match="does not follow"):
        task.is_correct(PROBLEM, spoiled)
    absorbed = "a:check 7+3=0\n\nb:0-5=5\n\nc:check 0-5=6\n\nd:6+4=0\n\ne:check 6+4=0"
    assert (
        not task.is_correct(PROBLEM, absorbed)
        and RepairOracle().score([PROBLEM], [absorbed])[0][2:] == [RepairOracle.LOW] * 3
    )
    assert not task.is_correct(PROBLEM, "a:check 7+3=0")  # incomplete
    with pytest.raises(ValueError, match="t:check"):
        task.is_correct(PROBLEM, "7+3=0")
    with pytest.raises(ValueError, match="n_ops"):
        ArithRepairTask(n_ops=9)


@pytest.fixture(scope="module")
def pair():
    gen, _ = train_tiny_generator(steps=30, teacher_error=0.6, d_hidden=GEN_HIDDEN, step_kind_flag=True)
    prm, _ = train_repair_prm(steps=5, batch_size=16)
    return RepairGenerator(gen), RepairPRM(prm)


def test_generator_paths_are_seeded_and_tags_make_duplicates_rare(pair):
    gen, prm = pair
    task = ArithRepairTask(n_problems=4, seed=1)
    reqs = [StepRequest(problem=p, prefix="", depth=0, seed=path_seed(0, p, (j,))) for p in task.problems
            for j in range(16)]  # fmt: skip
    full = gen.step(reqs, to_eos=True)
    prefixes = [""] * len(reqs)
    for k in range(task.depth):  # step by step, in a shuffled batch, equals to the end
        order = list(range(len(reqs)))[::-1]
        out = gen.step([StepRequest(problem=reqs[i].problem, prefix=prefixes[i], depth=k, seed=reqs[i].seed)
                        for i in order])  # fmt: skip
        for i, s in zip(order, out):
            prefixes[i] += s.text
            assert s.finished == (k == task.depth - 1)
    assert prefixes == [s.text for s in full]
    assert all(task.is_correct(r.problem, s.text) in (True, False) for r, s in zip(reqs, full))  # all parse
    firsts = [s.text.split("\n\n")[0] for s in full[:16]]
    assert len(set(firsts)) >= 10  # 16 first steps of one problem: tags keep them apart
    batched = prm.score([r.problem for r in reqs[:5]], [s.text.rsplit("\n\n", 2)[0] if i % 2 else s.text
                                                       for i, s in enumerate(full[:5])])  # fmt: skip
    for i, row in enumerate(batched):  # right padding does not change a causal GRU's scores
        text = full[i].text.rsplit("\n\n", 2)[0] if i % 2 else full[i].text
        assert row == pytest.approx(prm.score([reqs[i].problem], [text])[0], abs=1e-6)
    with pytest.raises(TypeError, match="33 inputs"):
        RepairGenerator(StepMLP())
    with pytest.raises(TypeError, match="33 inputs"):
        RepairPRM(StepPRMNet())


def test_teacher_labels_are_the_oracle(pair):
    import numpy as np

    x, y, kinds = _teacher_batch(np.random.default_rng(0), 50, 3, 0.4)
    assert x.shape == (50, 5, N_REPAIR_FEATURES) and kinds.tolist() == [True, False, True, False, True]
    assert torch.tensor(x[:, :, -1]).eq(torch.tensor(kinds, dtype=torch.float32)).all()
    assert 0.2 < y.mean() < 0.8  # errors both absorbed (after wrong checks) and repaired (after wrong computes)


def test_oracle_search_beam_width_one_is_bon_and_g2_verifies_only_checks(pair):
    gen, _ = pair
    task = ArithRepairTask(n_problems=6, n_ops=3, seed=2)
    oracle = task.oracle()
    a = vg_search(task.problems, gen, oracle, n=4, beam_width=1, g=2, seed=0, max_steps=task.depth)
    b = best_of_n(task.problems, gen, oracle, n=4, seed=0)
    assert [r.answer for r in a] == [r.answer for r in b]
    res = vg_search(task.problems, gen, oracle, n=4, beam_width=4, g=2, num_iterations=6, seed=0)
    for r in res:
        kept = [b for beams in r.trace for b in beams]  # g = 2 verifies after steps 1 and 3: the checks
        assert len(kept) >= 2 and all([s for s in b.split("\n\n") if s][-1][2:].startswith("check ") for b in kept)
