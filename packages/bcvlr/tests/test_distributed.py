"""Data parallelism under ``accelerate launch`` (2 CPU processes, gloo): equal to one process at the same global
batch, identical weights on every rank, and only the main process writes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from nips25_bcvlr import BCVLR

from nips25_shared.testing import run_accelerate

sys.path.insert(0, str(Path(__file__).parent))
from distributed_setup import make_agent_inputs

SCRIPT = Path(__file__).parent / "scripts" / "data_parallel.py"
PER_PROCESS = 8


@pytest.mark.distributed
def test_two_processes_equal_one_process_at_the_same_global_batch(tmp_path: Path) -> None:
    """2 processes x batch 8 == 1 process x batch 16 after Stages 2-3 (IDM + VQ-EMA + FDM, latent policy).

    Both draw the same global minibatch (a shared index stream, each process its slice), DDP averages the
    per-process gradients (= the gradient of the global mean) and the VQ's EMA statistics are all-reduced (= the
    global batch's counts and sums). The only difference is the order of float32 additions in gloo's all-reduce,
    about 1e-7 relative per step; after 8 Adam steps at lr 1e-3 we allow 1e-5 absolute on weights of scale ~0.1
    (a wrong batch split or an unsynchronised codebook moves them by ~1e-3, see the last assertion).
    Only rank 0 calls ``torch.save`` on the checkpoint path; rank 1 calls it for nothing.
    """
    run_accelerate(SCRIPT, str(tmp_path), str(PER_PROCESS), num_processes=2, timeout=240)
    config, video, envs = make_agent_inputs(2 * PER_PROCESS)
    single = BCVLR(config, obs_shape=video.frames.shape[1:], action_space=envs[0].action_space, seed=0)
    single.pretrain(video, show_progress=False)
    expected = single.state_dict()["modules"]
    ranks = [torch.load(tmp_path / f"pretrain_rank{r}.pt", weights_only=True) for r in (0, 1)]
    worst = 0.0
    for module, params in expected.items():
        for name, value in params.items():
            for got in ranks:
                if value.is_floating_point():
                    worst = max(worst, float((got[module][name] - value).abs().max()))
                else:
                    assert torch.equal(got[module][name], value), (module, name)
    assert worst < 1e-5, worst
    # the saved checkpoint is the agent after the online loop, written once, by rank 0
    assert (tmp_path / "saves_rank0.txt").read_text().splitlines() == [str(tmp_path / "agent.pt")]
    assert (tmp_path / "saves_rank1.txt").read_text() == ""
    assert BCVLR.load(tmp_path / "agent.pt").pretrained
    # the comparison can fail: one process at the per-process batch (half the data per step) is far off
    half = BCVLR(make_agent_inputs(PER_PROCESS)[0], obs_shape=video.frames.shape[1:],
                 action_space=envs[0].action_space, seed=0)  # fmt: skip
    half.pretrain(video, show_progress=False)
    gap = max(float((half.state_dict()["modules"]["lam"][k] - v).abs().max())
              for k, v in ranks[0]["lam"].items() if v.is_floating_point())  # fmt: skip
    assert gap > 100 * max(worst, 1e-7), gap
