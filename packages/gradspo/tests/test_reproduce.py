"""Smoke test of reproduce (tiny profile), the CLI's user errors, the README quickstart, the reward protocol."""

from __future__ import annotations

import json
import math
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
    var = report.claims[1].measured
    assert var["verdict"].startswith(("holds", "does not hold", "undecided"))
    for u in var["units"]:  # issue 30 item 2: a compared step has the threshold acting for every method there
        if u["compared"]:
            assert 0 < u["valid_fraction_spo"] < 1
    assert var["units_compared"] == sum(u["compared"] for u in var["units"])


def _est(valid_g, valid_s, rv_s=(2.0, 2.0, 2.0), se=0.1):
    """A synthetic per-checkpoint variance record over t = 333 / 167 / 1 (the last step is index 2)."""
    t = [333.0, 167.0, 1.0]
    arm = lambda rv, vf: {  # noqa: E731
        "timestep": t, "relative_variance": list(rv), "relative_variance_se": [se] * 3, "valid_fraction": list(vf)
    }  # fmt: skip
    return {
        "gradspo": arm((1.0, 1.0, 1.0), valid_g),
        "spo": arm(rv_s, valid_s),
        "control_flipped": {"timestep": t, "relative_variance": [3.0] * 3, "relative_variance_se": [se] * 3},
    }


def test_step_units_compare_only_where_the_threshold_acts():
    """A unit is compared only with every thresholded valid fraction strictly inside (0, 1) and both relvars
    defined; GradSPO's last step (every pair kept by its rule) is exempt; each exclusion says why."""
    from nips25_gradspo.reproduce import step_units

    units = step_units("ck", _est(valid_g=(1.0, 0.4, 1.0), valid_s=(0.5, 0.3, 0.02)))
    assert [u["compared"] for u in units] == [False, True, True]
    assert "gradspo 1" in units[0]["reason"] and units[1]["reason"] == units[2]["reason"] == ""
    assert all(u["lower"] and u["control_resolved"] and not u["higher"] for u in units)
    units = step_units("ck", _est(valid_g=(0.5, 0.4, 1.0), valid_s=(0.5, 0.0, 1.0), rv_s=(2.0, math.nan, 0.5)))
    assert [u["compared"] for u in units] == [True, False, False]
    assert "spo 0" in units[1]["reason"] and "spo 1" in units[2]["reason"]
    assert units[0]["defined"] and not units[1]["defined"] and units[2]["defined"] and units[2]["higher"]
    for u in units:
        if u["compared"]:
            assert 0 < u["valid_fraction_gradspo"] < 1 and 0 < u["valid_fraction_spo"] < 1
    units = step_units("ck", _est(valid_g=(0.5, 0.5, 1.0), valid_s=(0.5, 0.5, 0.5), rv_s=(math.inf, 2.0, 2.0)))
    assert units[0]["reason"].startswith("undefined: spo") and not units[0]["compared"]


def test_variance_verdicts_are_undecided_without_the_control():
    from nips25_gradspo.reproduce import _verdict

    assert _verdict(False, 5, 5).startswith("undecided")
    assert _verdict(True, 0, 0).startswith("undecided")
    assert _verdict(True, 3, 2) == "holds" and _verdict(True, 4, 2) == "does not hold"


def test_figure_is_written_by_the_main_rank_only(tmp_path, monkeypatch):
    """Under a launch (RANK=1) the reproduction's figure is computed but not written (issue 42)."""
    from nips25_gradspo.reproduce import PROFILES, _figure

    cfg = PROFILES["tiny"]
    est = _est((0.5,) * 3, (0.5,) * 3)
    out = {"curves": {m: [[0.0, 1.0]] for m in ("gradspo", "spo", "dpo")}, "variance": {"gradspo@2": est}}
    monkeypatch.setenv("RANK", "1")
    name = _figure(out, cfg, tmp_path)
    assert not (tmp_path / name).exists()
    monkeypatch.setenv("RANK", "0")
    assert (tmp_path / _figure(out, cfg, tmp_path)).is_file()


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
    capsys.readouterr()
    with pytest.raises(SystemExit):  # the value and the rule are in the message (review finding, 0.2.2)
        main(["train", "--lr", "-0.5"])
    assert "nips25-gradspo train: error: --lr must be > 0, got -0.5" in capsys.readouterr().err


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
