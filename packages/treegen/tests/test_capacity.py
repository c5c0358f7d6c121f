"""The capacity sweep's bookkeeping (issue 40.5): summary, decision rule, and that only the main rank writes."""

import json

import numpy as np
import pytest
from nips25_treegen.experiments import capacity
from nips25_treegen.experiments.capacity import CapacityConfig, capacity_sweep, decide
from nips25_treegen.reproduce import PROFILES


def _fake_run(base, size, seed, train_jets, test_jets):
    """A run whose TV falls with width (0.9 - d/1000) and shifts with the seed; 3 TV jets, 2 more for the gap."""
    tv = 0.9 - size[0] / 1000 + 0.01 * seed
    rows = [{"n": 5, "gap": 1.0, "valid": 1.0, "tv": tv + 0.01 * j} for j in range(3)]
    rows += [{"n": 6, "gap": 2.0, "valid": 1.0} for _ in range(2)]
    return {"d_model": size[0], "n_layers": size[1], "seed": seed, "n_parameters": size[0], "final_loss": 1.0,
            "train_s": 0.0, "wall_s": 0.0, "rows": rows}  # fmt: skip


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(capacity, "_jets", lambda base: ([], []))
    monkeypatch.setattr(capacity, "_references", lambda base, jets: [{"tv_sgreedy": 0.7, "tv_exact": 0.5}] * 3)
    monkeypatch.setattr(capacity, "_run_one", _fake_run)
    return CapacityConfig(sizes=((16, 1), (32, 1)), seeds=(0, 1), base=PROFILES["tiny"])


def test_sweep_summary_and_verdict(fake, tmp_path, monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    result = capacity_sweep(fake, out_dir=tmp_path)
    summary = result["summary"]
    large = summary["sizes"]["32x1"]
    tv = np.array([[0.868 + 0.01 * (s + j) for j in range(3)] for s in (0, 1)])
    assert large["tv"][0] == pytest.approx(tv.mean())
    # SE: the larger of the SE over jets (of the seed-averaged values) and the SE of the seeds' means (0.005)
    assert large["tv"][1] == pytest.approx(max(tv.mean(0).std(ddof=1) / np.sqrt(3), 0.005))
    assert large["tv_minus_quick"][0] == pytest.approx(-0.016) and large["tv_minus_quick"][1] == pytest.approx(0.0)
    assert summary["n_tv_jets"] == 3 and summary["n_gap_jets"] == 5
    assert summary["verdict"] == "capacity is a lever, not the whole gap"
    assert json.loads((tmp_path / "capacity.json").read_text())["summary"]["verdict"] == summary["verdict"]


def test_non_main_rank_writes_nothing(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    capacity_sweep(fake, out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_decision_rule_and_config_validation():
    assert decide((0.01, 0.01), (-0.1, 0.01), 0.15) == "capacity closes the gap"
    assert decide((0.10, 0.01), (0.0, 0.05), 0.15) == "undecided"
    with pytest.raises(ValueError, match="base profile"):
        CapacityConfig(sizes=((8, 1), (96, 3)))
    with pytest.raises(ValueError, match="seeds"):
        CapacityConfig(seeds=(0,))
