"""The official per-video res.json layout: read as released, scored equal to the official evaluator's values."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from nips25_sama import caption_metrics as cm
from nips25_sama.gcg_results import evaluate_gcg_results, load_gcg_results

DATA = Path(__file__).parent / "data"
REF = json.loads((DATA / "gcg_res_reference.json").read_text())
BLEU_ROUGE_CIDER = ("Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "ROUGE_L", "CIDEr")


@pytest.fixture(scope="module")
def results():
    return load_gcg_results(DATA / "gcg_res")


def test_fixture_layout_is_read_with_the_official_skip_rules(results):
    """Folders without res.json or img_frames/ are skipped; a missing mask_<t>.png is an empty frame."""
    assert [v.name for v in results.videos] == ["000000", "000001", "000002", "000005"]
    assert results.skipped == ["000003", "000004"]
    v0, v1, v2 = results.videos[:3]
    assert v0.gt_masks.shape == (2, 3, 8, 8) and v0.pred_masks.shape == (3, 3, 8, 8)
    assert v0.pred_phrases == ["a tree", "the cat", "the dog"]
    assert v1.gt_masks[0, :2].any() and not v1.gt_masks[0, 2].any()
    assert v2.pred_masks.shape == (0, 3, 8, 8)


def test_scores_equal_the_official_evaluator(results):
    """mIoU, Recall (official pairing) and BLEU/METEOR/ROUGE-L/CIDEr equal the values the official
    eval_gcg_metrics_demo.py printed on this fixture (provenance in data/gcg_res_reference.json)."""
    pytest.importorskip("pycocoevalcap")
    java = shutil.which("java") is not None
    out = evaluate_gcg_results(results, text_sim="exact", official_compat=True, with_meteor=java)
    assert out["mIoU"] == pytest.approx(REF["mIoU"], abs=1e-12)
    assert out["Recall"] == pytest.approx(REF["Recall_official"], abs=1e-12)
    names = BLEU_ROUGE_CIDER + (("METEOR",) if java else ())
    if not java:  # the regular-expression tokenizer equals PTB on this fixture's plain text
        assert cm.ptb_tokenize({"0": ["A tree, the cat sits left;"]}) == {"0": ["a tree the cat sits left"]}
    for k in names:
        assert out["captions"][k] == pytest.approx(REF["captions"][k], rel=1e-12), k
    assert out["captions"]["backend"] == "pycocoevalcap"
    assert out["captions"]["SPICE"] is None and "SPICE" in out["captions"]["unavailable"]


def test_corrected_recall_and_strict_miou_by_hand(results):
    """Corrected pairing: video 0 recalls both objects (the official crop reads pred 2 out), video 5 one: 3/5.
    Strict mIoU divides by max(n_pred, n_gt): (1.75/3 + 0.25 + 0 + 5/6) / 4."""
    out = evaluate_gcg_results(results, text_sim="exact", caption_backend="ours")
    assert out["Recall"] == pytest.approx(3 / 5, abs=1e-12)
    assert out["mIoU_strict"] == pytest.approx((1.75 / 3 + 0.25 + 0 + 5 / 6) / 4, abs=1e-12)
    assert out["mIoU"] == pytest.approx(REF["mIoU"], abs=1e-12)


def test_our_caption_scorers_equal_pycocoevalcap_on_the_fixture(results, monkeypatch):
    """The fallback path (our BLEU/ROUGE-L/CIDEr-D, regex tokenizer without Java) gives the official numbers."""
    monkeypatch.setattr(cm.shutil, "which", lambda name: None)
    out = evaluate_gcg_results(results, text_sim="exact", caption_backend="ours")
    assert out["captions"]["backend"] == "ours" and out["captions"]["METEOR"] is None
    for k in BLEU_ROUGE_CIDER:
        assert out["captions"][k] == pytest.approx(REF["captions"][k], rel=1e-12), k


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(DATA / "gcg_res", tmp_path / "r")
    return tmp_path / "r" / "video_gcg"


def test_malformed_res_trees_raise_naming_file_and_field(tmp_path):
    base = _copy(tmp_path)
    res = base / "000001" / "res.json"
    data = json.loads(res.read_text())
    res.write_text(json.dumps({k: v for k, v in data.items() if k != "pred_phrases"}))
    with pytest.raises(ValueError, match=r"000001/res\.json.*'pred_phrases'"):
        load_gcg_results(base.parent)
    res.write_text(json.dumps({**data, "gt_phrases": "the horse"}))
    with pytest.raises(ValueError, match="'gt_phrases' must be a list of strings"):
        load_gcg_results(base.parent)
    res.write_text(json.dumps(data))
    shutil.rmtree(base / "000001" / "pred_masks_0")
    with pytest.raises(ValueError, match="pred_masks_0"):
        load_gcg_results(base.parent)
    with pytest.raises(FileNotFoundError, match="root"):
        load_gcg_results(tmp_path / "nowhere")
    (base / "000000" / "res.json").write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_gcg_results(base.parent)


def test_caption_backend_is_validated():
    with pytest.raises(ValueError, match="backend"):
        cm.caption_metrics({"0": ["a"]}, {"0": "a"}, backend="nltk")
    assert np.isclose(cm.caption_metrics({"0": ["a b"]}, {"0": "a b"}, with_meteor=False)["ROUGE_L"], 1.0)


def test_cli_eval_res_prints_the_official_numbers(capsys, tmp_path):
    from nips25_sama.cli import main

    assert main(["eval-res", "--root", str(DATA / "gcg_res"), "--text-sim", "exact", "--official-compat", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mIoU"] == pytest.approx(REF["mIoU"]) and out["Recall"] == pytest.approx(REF["Recall_official"])
    with pytest.raises(SystemExit) as exc:
        main(["eval-res", "--root", str(tmp_path / "none")])
    assert exc.value.code == 2


@pytest.mark.parametrize(("rel", "what"), [("pred_masks_0/mask_0.png", "mask"), ("img_frames/0.jpg", "frame")])
def test_unreadable_image_names_the_file(tmp_path, rel, what):
    """A corrupt mask or frame file (fresh-user review): a ValueError naming it, not an imageio traceback."""
    base = _copy(tmp_path)
    folder = base / "000000"
    target = folder / rel
    assert target.is_file()
    target.write_bytes(b"not an image")
    with pytest.raises(ValueError, match=rf"{target.name}: cannot be read as a {what} image"):
        load_gcg_results(base.parent)
