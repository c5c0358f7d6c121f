"""Data parallelism under ``accelerate launch``: 2 CPU processes equal 1 process at the same global batch, and only
the main process writes files (issue 42)."""

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

SCRIPT = Path(__file__).with_name("dp_script.py")


def _script():
    spec = importlib.util.spec_from_file_location("dp_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Parameters the loss cannot see (softmax shift invariances): a bias added to every key of a row's logits
# (k_a, k_b), to every attention logit of a head (the edge MLP's last bias) or to every key of an attention layer
# (the key third of qkv.bias). Their gradient is 0 up to float noise (~1e-9), which Adam normalises into lr-sized
# random steps, so they differ between any two summation orders (measured: up to 4e-3) without changing any output.
GAUGE = {"k_a.bias", "k_b.bias", "edge.2.bias"}


@pytest.mark.distributed
def test_two_processes_train_like_one_and_only_rank_zero_writes(tmp_path):
    """Same global batch (7 jets: shares of 4 and 3), 6 AdamW steps with the cosine schedule: the 2-process run
    equals the 1-process run: per-step losses to 1e-5 relative, every loss-visible weight to 1e-5, and the
    network's row probabilities on fresh inputs to 1e-5. Tolerance: the only difference is the float32 summation
    order of the gradient (gloo all-reduce of two partial sums vs one sum), ~1e-7 relative; Adam turns a relative
    gradient error into at most that relative error of an lr-sized step, so 6 steps of lr 3e-3 move weights by
    ~1e-8; 1e-5 leaves room and still catches the 0.1 fault: the same run with the schedule stepped twice per step
    (what a prepared scheduler does on 2 processes) differs by 5.4e-3 (measured once, in one process). The entropy
    table is built in an empty cache by whichever process takes the file lock first: both processes then hold the
    same bytes, equal to a fresh build here."""
    from accelerate import Accelerator

    from nips25_shared.testing import run_accelerate

    cache = tmp_path / "cache"  # empty: the two processes race to build the entropy table under its file lock
    done = run_accelerate(SCRIPT, str(tmp_path), num_processes=2, timeout=240.0, env={"NIPS25_CACHE_DIR": str(cache)})
    out = done.stdout
    assert sorted(re.findall(r"PROCESSES (\d) rank=(\d)", out)) == [("2", "0"), ("2", "1")], out
    writes = re.findall(r"WRITE rank=(\d) (\w+)", out)
    assert {w for _, w in writes} == {"report", "figure", "npz"}, out
    assert {r for r, _ in writes} == {"0"}, out  # only the main process wrote
    assert (tmp_path / "report" / "results.json").is_file() and (tmp_path / "jets.npz").is_file()
    # The table is the same bytes on both ranks, whichever built it, and equals a fresh build here (deterministic)
    digests = dict(re.findall(r"TABLE rank=(\d) ([0-9a-f]{64})", out))
    assert set(digests) == {"0", "1"} and digests["0"] == digests["1"], out
    script = _script()
    model, losses = script.train_tiny(Accelerator(cpu=True))
    schedule = model.config.flow().entropy
    (entry,) = cache.glob(f"treegen-entropy-k{schedule.k_max}-*.npz")  # the training model's table (K = 2..5)
    fresh = schedule._build()
    with np.load(entry) as stored:
        assert all(np.array_equal(fresh[k], stored[k]) for k in fresh)
    np.testing.assert_allclose(json.loads((tmp_path / "losses.json").read_text()), losses, rtol=1e-5)
    one = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    two = torch.load(tmp_path / "weights.pt")
    d = model.config.d_model
    two["blocks.0.qkv.bias"][d : 2 * d] = one["blocks.0.qkv.bias"][d : 2 * d]  # the key third: gauge
    gap = max(float((two[k] - one[k]).abs().max()) for k in one if k not in GAUGE)
    assert gap < 1e-5, gap
    other = type(model)(model.config).eval()
    other.load_state_dict(torch.load(tmp_path / "weights.pt"))
    from nips25_treegen.ginkgo import simulate

    jets = simulate(4, n_leaves=(6, 6), seed=99)
    leaves, parents = np.stack([j.leaves for j in jets]), np.stack([j.parents for j in jets])
    inputs, _, _ = model.loss_inputs(leaves, parents, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        p_one, p_two = torch.softmax(model.eval()(*inputs), -1), torch.softmax(other(*inputs), -1)
    assert float((p_one - p_two).abs().max()) < 1e-5
    torch.manual_seed(0)
    init = type(model)(model.config).state_dict()
    assert max(float((one[k] - init[k]).abs().max()) for k in one) > 1e-4  # training moved the weights
