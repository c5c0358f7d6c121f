"""Smoke test of reproduce (tiny profile), the CLI's user errors, the README quickstart, the reward protocol."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from nips25_gradspo import DigitReward, NoisyDigitClassifier, StepAwareReward, load_digits
from nips25_gradspo.cli import main
from nips25_gradspo.reproduce import reproduce

README = Path(__file__).resolve().parents[1] / "README.md"


def test_reproduce_tiny_profile_report_structure(tmp_path):
    """The tiny profile runs every method and computes every claim (not asserting that they hold)."""
    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path)
    assert report.package == "gradspo" and report.profile == "tiny"
    assert [c.id for c in report.claims] == [
        "reward-ordering",
        "gradspo-lower-variance",
        "gradspo-lower-iteration-variance",
        "no-collapse",
    ]
    for c in report.claims:
        assert isinstance(c.holds, bool) and c.criterion
    measured = report.claims[0].measured
    assert set(measured) >= {"reward_gradspo", "reward_spo", "reward_dpo", "reward_ref"}
    assert all(isinstance(measured[f"reward_{m}"], float) for m in ("gradspo", "spo", "dpo", "ref"))
    assert (tmp_path / report.figures[0]).is_file()
    json.dumps(report.to_dict())


def test_cli_turns_user_errors_into_exit_code_2(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("NIPS25_GRADSPO_SD15", raising=False)
    with pytest.raises(SystemExit) as err:
        main(["reproduce", "--profile", "paper", "--out", str(tmp_path)])
    assert err.value.code == 2
    assert "NIPS25_GRADSPO_SD15" in capsys.readouterr().err
    for argv in (["train", "--iters", "0"], ["train", "--candidates", "1"], ["weights", "--steps", "0"],
                 ["train", "--method", "ppo"]):  # fmt: skip
        with pytest.raises(SystemExit) as err:
            main(argv)
        assert err.value.code == 2


def test_cli_weights_prints_the_sd15_ratios(capsys):
    assert main(["weights", "--schedule", "sd15"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^951\t.*\t0\.856$", out, re.M) and re.search(r"^51\t.*\t24\.4\d*$", out, re.M)


def test_digit_reward_is_a_step_aware_reward_and_validates():
    torch.manual_seed(0)
    r = DigitReward(NoisyDigitClassifier(width=8))
    assert isinstance(r, StepAwareReward)
    x, t = torch.zeros(2, 1, 8, 8), torch.tensor([0, 500])
    lp = r(x, t, {"class_labels": torch.tensor([1, 2])})
    assert lp.shape == (2,) and bool((lp <= 0).all())
    probs = sum(DigitReward(r.classifier, target=d)(x, t, {}).exp() for d in range(10))
    torch.testing.assert_close(probs, torch.ones(2))
    with pytest.raises(ValueError, match="class_labels"):
        r(x, t, {})
    with pytest.raises(ValueError, match="target"):
        DigitReward(r.classifier, target=10)
    with pytest.raises(ValueError, match="x must"):
        r.classifier(torch.zeros(2, 1, 4, 4), t)
    with pytest.raises(ValueError, match="test_fraction"):
        load_digits(test_fraction=1.0)


def test_readme_quickstart_runs():
    """The README's quickstart block runs as written."""
    text = README.read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S)
    assert block is not None
    exec(compile(block.group(1), "README-quickstart", "exec"), {})


def test_threshold_calibration_rule():
    """thr = tanh(m / 2) with m the smallest per-step median gap (last step excluded): at that step at most half
    of the calibration pairs clear the margin, and the threshold is in [0, 1)."""
    from nips25_gradspo.candidates import validity_margin
    from nips25_gradspo.reproduce import PROFILES, calibrate_threshold

    cal = calibrate_threshold(PROFILES["tiny"], seed=0)
    assert 0 <= cal["threshold"] < 1
    assert validity_margin(cal["threshold"]) == pytest.approx(cal["margin"], abs=1e-9)
    hardest = min(range(len(cal["median_gap"]) - 1), key=lambda i: cal["median_gap"][i])
    assert cal["margin"] == cal["median_gap"][hardest]
    assert cal["valid_fraction"][hardest] <= 0.5
