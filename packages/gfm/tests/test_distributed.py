"""Two processes under ``accelerate launch`` equal one process at the same global batch; only rank 0 writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from nips25_gfm import TSGNN, FitConfig, fit

from nips25_shared.testing import run_accelerate

SCRIPT = Path(__file__).with_name("distributed_fit.py")
# float64 weights: the processes differ from one process only in the order of one sum (the gradient all-reduce);
# rounding of about 1e-16 relative, amplified by Adam's normalisation over 4 steps, stays far below 1e-9.
ATOL = 1e-9


def _one_process(tasks: list) -> dict:
    torch.manual_seed(0)
    model = TSGNN(hidden=4).double()
    history = fit(model, tasks, config=FitConfig(epochs=4, lr=1e-2), seed=0, use_accelerate=False)
    return {"history": history, "state": model.state_dict()}


@pytest.mark.distributed
def test_two_processes_equal_one(tmp_path, task_factory) -> None:
    run_accelerate(SCRIPT, "fit", str(tmp_path), num_processes=2)
    got = json.loads((tmp_path / "fit.json").read_text())
    assert got["processes"] == 2
    tasks = [task_factory(n=30 + 6 * i, f=3 + i, c=2 + i % 2, seed=i) for i in range(3)]
    for key, subset in (("three", tasks), ("one", tasks[:1])):  # "one": rank 1 holds no graph (zero-loss steps)
        want = _one_process(subset)
        assert got[key]["history"] == pytest.approx(want["history"], abs=ATOL)
        for name, value in want["state"].items():
            torch.testing.assert_close(torch.tensor(got[key]["state"][name], dtype=torch.float64), value,
                                       atol=ATOL, rtol=0)  # fmt: skip


@pytest.mark.distributed
def test_only_rank_0_writes_the_model(tmp_path) -> None:
    run_accelerate(SCRIPT, "cli", str(tmp_path), num_processes=2)
    assert (tmp_path / "writes-0.txt").read_text().splitlines() == [str(tmp_path / "m.pt")]
    assert not (tmp_path / "writes-1.txt").exists()
    assert TSGNN.load(tmp_path / "m.pt").num_parameters() == TSGNN(hidden=4).num_parameters()
