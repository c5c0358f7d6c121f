"""Scale-out (issue 42): FedAvg under `accelerate launch` with 2 CPU processes equals 1 process; rank 0 writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from nips25_shared.testing import ACCELERATE_CPU_ENV, run_accelerate

SCRIPT = Path(__file__).with_name("dist_fedavg.py")


@pytest.mark.distributed
def test_two_processes_equal_one_process_and_only_rank_0_writes(tmp_path):
    """Clients are sharded (rank 0 trains 0 and 2, rank 1 trains 1); the model equals the 1-process run bit for bit.

    Exact equality is the right tolerance: each client trains the same steps from the same global model whatever
    process runs it (one thread each), and the average adds the client terms in client order on every process (an
    all-reduce of one term and zeros is exact). The loss history is a float64 all-reduce of two partial sums, equal
    to 1e-12.
    """
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    env = {**os.environ, **ACCELERATE_CPU_ENV}
    subprocess.run([sys.executable, str(SCRIPT), str(one)], check=True, env=env, timeout=300, capture_output=True)
    run_accelerate(SCRIPT, str(two), "--cli", num_processes=2)
    assert json.loads((one / "clients_rank0.json").read_text()) == [0, 1, 2]
    assert json.loads((two / "clients_rank0.json").read_text()) == [0, 2]
    assert json.loads((two / "clients_rank1.json").read_text()) == [1]
    h1, h2 = (json.loads((d / "history.json").read_text()) for d in (one, two))
    assert [h["steps"] for h in h1] == [h["steps"] for h in h2] == [9.0, 9.0]
    assert [h["train_loss"] for h in h2] == pytest.approx([h["train_loss"] for h in h1], rel=1e-12)
    s1, s2 = (torch.load(d / "state.pt") for d in (one, two))
    assert s1.keys() == s2.keys()
    assert all(torch.equal(s1[n], s2[n]) for n in s1)
    # the CLI ran on both processes; process 1's writers were replaced by a function that raises, so the files
    # below come from process 0 alone
    assert (two / "report" / "results.json").is_file() and (two / "report" / "fedrw.png").is_file()
