"""Data-parallel training of the tiny pair: 2 processes equal 1 process at the same global batch (issue 42)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nips25_shared.testing import run_accelerate

SCRIPT = Path(__file__).parent / "scripts" / "train_pair_distributed.py"


def _one_process(tmp_path: Path, monkeypatch) -> dict[str, np.ndarray]:
    """The reference: the same training in this process (one process, the whole global batch)."""
    from nips25_vgsearch.arith import load_or_train_pair

    monkeypatch.setenv("NIPS25_CACHE_DIR", str(tmp_path / "cache1"))
    gen, prm, info = load_or_train_pair(gen_steps=6, prm_steps=6, seed=3, depth=4)
    arrays = {f"gen.{k}": v.numpy() for k, v in gen.model.state_dict().items()}
    arrays |= {f"prm.{k}": v.numpy() for k, v in prm.model.state_dict().items()}
    return {**arrays, "gen_loss": np.array(info["gen_loss"]), "prm_loss": np.array(info["prm_loss"])}


@pytest.mark.distributed
def test_two_processes_equal_one_and_only_rank0_writes(tmp_path, monkeypatch):
    """6 Adam steps of both models on 2 processes (each its half of every global batch, gradients averaged by DDP)
    equal the 1-process run: same data, same initial weights, the same mean gradient up to float32 summation
    order (~1e-7 relative), which Adam's normalised step cannot amplify beyond ~1e-5 in 6 steps."""
    one = _one_process(tmp_path, monkeypatch)
    out = tmp_path / "p2"
    out.mkdir()
    proc = run_accelerate(SCRIPT, str(out), num_processes=2, env={"NIPS25_CACHE_DIR": str(out / "cache"),
                                                                  "TQDM_DISABLE": "1"})  # fmt: skip
    with np.load(out / "weights.npz") as f:
        two = dict(f)
    writes_two = [line for line in proc.stdout.splitlines() if line.startswith("WRITES ")]
    assert set(one) == set(two)
    for key in one:
        np.testing.assert_allclose(two[key], one[key], rtol=1e-4, atol=1e-5, err_msg=key)
    assert sorted(writes_two) == [
        "WRITES 0 vgsearch/arith-gen-v3-s6-seed3,vgsearch/arith-prm-v3-d4-s6-seed3",
        "WRITES 1 -",
    ]
    # each rank read half of every global batch of 256 rows (sharded work, not the same work twice)
    rows = sorted(line for line in proc.stdout.splitlines() if line.startswith("ROWS "))
    assert rows == ["ROWS 0 [128]", "ROWS 1 [128]"]
    # the weights moved: the comparison is not between two untrained models
    import torch
    from nips25_vgsearch.arith import StepMLP

    torch.manual_seed(3)
    init = StepMLP().state_dict()
    assert max(float(np.abs(one[f"gen.{k}"] - v.numpy()).max()) for k, v in init.items()) > 1e-3
