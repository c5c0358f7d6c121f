"""reproduce (tiny profile), determinism of the proxy, the CLI's user errors, and the README quickstart."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from nips25_sama.cli import main


def test_reproduce_tiny_report_structure(tmp_path):
    from nips25_sama.reproduce import reproduce

    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path)
    ids = [c.id for c in report.claims]
    assert ids == [
        "evaluator-known-answers",
        "temporal-readout-control",
        "temporal-beats-spatial-on-motion",
        "region-injection-helps",
        "aggregator-beats-pooling",
        "token-budget",
        "tracker-through-evaluator",
    ]
    assert all(isinstance(c.holds, bool) and c.criterion for c in report.claims)
    assert report.claims[0].holds  # exact arithmetic: holds at any scale
    claims = {c.id: c for c in report.claims}
    assert set(claims["aggregator-beats-pooling"].measured) == {"sama_minus_mean_pool", "sama_minus_spatial_only"}
    assert claims["region-injection-helps"].measured["sama_minus_spatio_temporal_identity"]["n_seeds"] == 2
    assert claims["token-budget"].measured["sama"] == 1322
    runs = report.config["runs"]
    assert [r["seed"] for r in runs] == [0, 1]
    assert set(runs[0]["accuracies"]) == {"mean_pool", "spatial_only", "spatio_temporal", "sama",
                                          "control_spatio_temporal"}  # fmt: skip
    # the motion claim can only hold when the positive control does
    if not claims["temporal-readout-control"].holds:
        assert not claims["temporal-beats-spatial-on-motion"].holds
    assert (tmp_path / report.figures[0]).is_file()
    with pytest.raises(ValueError, match="profile"):
        reproduce(profile="huge", out_dir=tmp_path)


def test_paired_test_passes_and_fails():
    """The pre-registered rule: holds iff mean(d) > 2 SE, SE = sd(ddof=1)/sqrt(R)."""
    from nips25_sama.reproduce import paired_test

    ok = paired_test([0.10, 0.12, 0.08, 0.11, 0.09])  # mean 0.10, sd 0.0158, SE 0.00707: 14 SE
    assert ok["holds"] and ok["n_seeds"] == 5
    assert ok["mean"] == pytest.approx(0.10) and ok["se"] == pytest.approx(0.0158114 / 5**0.5, rel=1e-5)
    noisy = paired_test([0.30, -0.20, 0.25, -0.15, 0.05])  # mean 0.05 > 0, SE 0.1: a positive mean that fails
    assert noisy["mean"] > 0 and not noisy["holds"]
    one_se = paired_test([0.0, 0.5])  # mean 0.25 = 1 SE
    assert one_se["se"] == pytest.approx(0.25) and not one_se["holds"]
    assert paired_test([0.0, 0.5], n_se=0.5)["holds"]
    assert not paired_test([-0.1, -0.1, -0.1])["holds"]  # negative mean with SE 0
    assert paired_test([0.05, 0.05])["holds"]  # positive mean, SE 0
    with pytest.raises(ValueError, match="diffs"):
        paired_test([0.1])
    with pytest.raises(ValueError, match="diffs"):
        paired_test([0.1, float("nan")])


def test_control_clips_move_only_the_target(tokenizer):
    from nips25_sama.proxy import make_proxy_data
    from nips25_sama.synthetic import make_scene

    plain = make_proxy_data(3, tokenizer=tokenizer, seed=5)
    ctrl = make_proxy_data(3, tokenizer=tokenizer, seed=5, control=True)
    assert [m["target"] for m in plain.meta] == [m["target"] for m in ctrl.meta]
    assert torch.equal(plain.answers, ctrl.answers) and not torch.equal(plain.tokens, ctrl.tokens)
    _, masks = make_scene(["cat", "horse"], ["right", "down"], n_frames=8, speed=[9.0, 0.0], seed=1)
    assert (masks[1, 0] == masks[1, -1]).all()  # still object (horse drawn last, never occluded)
    assert np.nonzero(masks[0, -1].any(axis=0))[0].min() - np.nonzero(masks[0, 0].any(axis=0))[0].min() == 63
    with pytest.raises(ValueError, match="speed"):
        make_scene(["cat", "horse"], ["right", "down"], speed=[3.0])
    again = make_scene(["cat", "horse"], ["right", "down"], n_frames=8, speed=np.array([9.0, 0.0]), seed=1)[1]
    assert np.array_equal(again, masks)


def test_proxy_training_is_deterministic(tokenizer):
    """Same seed, same data and weights -> identical accuracies and logits."""
    from nips25_sama.proxy import ProxyTrainConfig, make_proxy_data, proxy_config, train_proxy

    data = make_proxy_data(8, tokenizer=tokenizer, seed=3)
    again = make_proxy_data(8, tokenizer=tokenizer, seed=3)
    assert torch.equal(data.tokens, again.tokens) and torch.equal(data.answers, again.answers)
    cfg = proxy_config(vis_dim=int(data.tokens.shape[-1]))
    tc = ProxyTrainConfig(epochs=1, batch_size=4)
    m1, m2 = train_proxy("sama", data, cfg, tc, seed=1), train_proxy("sama", data, cfg, tc, seed=1)
    batch = {k: getattr(data, k)[:4] for k in ("tokens", "region_visual", "region_shape", "text_ids", "text_mask")}
    with torch.no_grad():
        torch.testing.assert_close(m1(batch), m2(batch), atol=0, rtol=0)
    with pytest.raises(ValueError, match="kind"):
        train_proxy("lstm", data, cfg, tc, seed=1)
    with pytest.raises(ValueError, match="epochs"):
        ProxyTrainConfig(epochs=0)


def test_cli_demo_then_eval(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--n-clips", "1", "-q"]) == 0
    paths = json.loads(capsys.readouterr().out)
    assert main(["eval", "--gt", paths["gt"], "--pred", paths["pred"], "--text-sim", "exact"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert 0.0 < result["mIoU"] <= 1.0 and result["text_sim"] == "exact"


def test_cli_user_errors_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["eval", "--gt", str(tmp_path / "nope.json"), "--pred", str(tmp_path / "nope.json")])
    assert exc.value.code == 2
    assert "--gt" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SystemExit) as exc:
        main(["eval", "--gt", str(bad), "--pred", str(bad)])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--out", str(tmp_path), "--n-clips", "0"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "--profile", "huge"])
    assert exc.value.code == 2


@pytest.mark.parametrize("command", [["demo"], ["reproduce", "--profile", "quick"]])
def test_cli_out_that_is_a_file_exits_2(tmp_path, capsys, command):
    """--out naming an existing file: a usage error naming --out (before: FileExistsError from mkdir)."""
    target = tmp_path / "a_file"
    target.write_text("")
    with pytest.raises(SystemExit) as exc:
        main([*command, "--out", str(target)])
    assert exc.value.code == 2
    assert "--out: " in capsys.readouterr().err


@pytest.mark.parametrize(
    ("gt", "pred", "match"),
    [
        ("[]", "{}", "--gt: .*gt.json holds no video"),
        (None, "{}", "none of the 1 videos has a prediction"),
        (None, '{"clip000": {"caption": "x", "pred_masks": [[null]]}}', r"'pred_masks'\[0\] must be a list of"),
        (None, '{"clip000": {"caption": 3}}', "field 'caption' must be a string"),
        (
            None,
            '{"clip000": {"caption": "x", "phrases": ["a"], "pred_masks": [[{"size": [1, 1], "counts": 5}]]}}',
            "must be a list of",
        ),
    ],
)
def test_cli_eval_bad_files_exit_2_naming_the_field(tmp_path, capsys, gt, pred, match):
    """The user's own files (fresh-user review): a clear message with exit code 2, never a traceback."""
    assert main(["demo", "--out", str(tmp_path), "--n-clips", "1", "-q"]) == 0
    paths = json.loads(capsys.readouterr().out)
    gt_path, pred_path = Path(paths["gt"]), tmp_path / "pred.json"
    if gt is not None:
        gt_path = tmp_path / "gt.json"
        gt_path.write_text(gt)
    pred_path.write_text(pred)
    with pytest.raises(SystemExit) as exc:
        main(["eval", "--gt", str(gt_path), "--mask-dict", str(tmp_path / "mask_dict.json"), "--pred", str(pred_path),
              "--text-sim", "exact"])  # fmt: skip
    assert exc.value.code == 2
    assert re.search(match, capsys.readouterr().err)


def test_readme_quickstart_runs():
    """The README's first python block runs exactly as written."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = re.search(r"```python\n(.*?)```", readme, re.S)
    assert block is not None
    exec(compile(block.group(1), "README.md", "exec"), {})
