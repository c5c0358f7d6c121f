"""SAMA-Bench format: RLE round trip, writer/loader round trip, evaluator on perfect and empty predictions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from nips25_sama.sama_bench import (
    decode_rle,
    encode_rle,
    evaluate_predictions,
    load_predictions,
    load_sama_bench,
    write_predictions,
    write_sama_bench,
)
from nips25_sama.synthetic import make_scene, scene_conversation


def test_rle_round_trip_and_uncompressed():
    rng = np.random.default_rng(0)
    m = rng.random((7, 5)) > 0.5
    assert np.array_equal(decode_rle(encode_rle(m), 7, 5), m)
    assert encode_rle(np.zeros((3, 3), bool)) is None
    assert not decode_rle(None, 3, 3).any()
    # uncompressed COCO RLE (column-major counts): 2 zeros, 3 ones, 4 zeros in a 3x3 mask
    u = decode_rle({"size": [3, 3], "counts": [2, 3, 4]}, 3, 3)
    assert u.T.reshape(-1).tolist() == [0, 0, 1, 1, 1, 0, 0, 0, 0]
    with pytest.raises(ValueError, match="size"):
        decode_rle(encode_rle(m), 5, 7)


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench")
    frames, masks = make_scene(
        ["cat", "horse"], ["left", "up"], "brick", n_frames=3, size=64, object_size=20, speed=2.0, seed=0
    )
    clip = {
        "video_id": "v0",
        "frames": frames,
        "masks": {"1": masks[0], "2": masks[1]},
        "phrases": {"1": "the cat", "2": "the horse"},
        "conversations": scene_conversation(["cat", "horse"], ["left", "up"]),
    }
    return write_sama_bench(root, [clip]), frames, masks


def test_writer_loader_round_trip(bench):
    path, frames, masks = bench
    (video,) = load_sama_bench(path, frame_ext=".png")
    assert video.phrases == ["the cat", "the horse"]
    assert np.array_equal(video.masks(), masks)
    assert np.array_equal(video.frames(), frames)
    assert video.reference_caption() == "the cat moves left the horse moves up"
    assert len(load_sama_bench(path, qa_per_item=1)[0].conversations) == 2
    items = json.loads(path.read_text())
    assert set(items[0]) == {"video", "video_id", "height", "width", "frames", "anno_map", "conversation",
                             "obj_masks", "groundtruth"}  # fmt: skip
    with pytest.raises(FileNotFoundError, match="frame_ext"):
        load_sama_bench(path)[0].frames()  # the release's .jpg default


def test_evaluator_perfect_and_empty_predictions(bench, tmp_path):
    path, _, masks = bench
    videos = load_sama_bench(path)
    perfect = {
        "v0": {"masks": masks, "phrases": ["the cat", "the horse"], "caption": "the cat moves left the horse moves up"}
    }
    pred_path = write_predictions(tmp_path / "pred.json", perfect)
    out = evaluate_predictions(videos, load_predictions(pred_path), text_sim="exact")
    assert out["mIoU"] == out["mIoU_strict"] == out["Recall"] == out["J&F"] == 1.0
    assert out["captions"]["Bleu_4"] == pytest.approx(1.0) and out["text_sim"] == "exact"
    empty = {"v0": {"caption": "", "phrases": [], "pred_masks": []}}
    out = evaluate_predictions(videos, empty, text_sim="exact")
    assert out["mIoU"] == 0.0 and out["Recall"] == 0.0 and out["J"] == 0.0
    with pytest.raises(ValueError, match="none of the 1 videos has a prediction"):  # wrong ids, not a zero score
        evaluate_predictions(videos, {}, text_sim="exact")


def test_loader_bad_inputs(tmp_path, bench):
    with pytest.raises(FileNotFoundError, match="json_path"):
        load_sama_bench(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"videos": [{"video_id": "x"}]}))
    (tmp_path / "mask_dict.json").write_text("{}")
    with pytest.raises(ValueError, match="JSON list"):
        load_sama_bench(bad)
    with pytest.raises(ValueError, match="qa_per_item"):
        load_sama_bench(bench[0], qa_per_item=0)
    with pytest.raises(ValueError, match="videos"):
        evaluate_predictions([], {})
    with pytest.raises(FileNotFoundError, match="prediction file"):
        load_predictions(tmp_path / "none.json")


RELEASED = Path(__file__).parent / "data" / "sama_bench_released"
TL, BR, TR = (np.zeros((4, 4), bool) for _ in range(3))
TL[:2, :2] = BR[2:, 2:] = TR[:2, 2:] = True


def test_released_layout_fixture():
    videos = load_sama_bench(RELEASED / "mevis_vidstg_lvvis.json", frame_root="/data/sama")
    assert [v.video_id for v in videos] == ["mevis/valid_u/JPEGImages/0a2c0bfe6909", "7", "lvvis/val/JPEGImages/12"]
    mevis, vidstg, lvvis = videos
    # round 101 is dropped (one <mask>, no obj_masks entry), the unanswered trailing turn too; empty targets skipped
    assert mevis.skipped_rounds == 1 and [c.get("question_id") for c in mevis.conversations[::2]] == [100, 102]
    assert mevis.object_ids == ["100:0", "100:1", "102:0"]
    assert mevis.phrases == ["the dog", "the balls", "a cat"]
    assert mevis.objects["100:1"]["mask_ids"] == [12, 13]
    gt = mevis.masks()
    assert gt.shape == (3, 2, 4, 4)
    assert np.array_equal(gt[0], [TL, TL]) and np.array_equal(gt[1, 0], BR | TR) and not gt[1, 1].any()
    assert np.array_equal(gt[2], [TR, np.zeros_like(TR)])  # LV-VIS-style track shorter than the frames
    assert mevis.frame_paths[1] == Path("/data/sama/mevis/valid_u/JPEGImages/0a2c0bfe6909/00005.jpg")
    assert vidstg.frame_paths[0].name == "00000.jpg" and np.array_equal(vidstg.masks()[0], [TL, BR])
    assert lvvis.frame_paths[0].parent.name == "00012" and np.array_equal(lvvis.masks()[0, 1], TR)
    assert lvvis.reference_caption() == "the bird flies"
    assert len(load_sama_bench(RELEASED / "mevis_vidstg_lvvis.json", qa_per_item=1)[0].conversations) == 2


def test_released_layout_scores_perfect_and_swapped():
    videos = load_sama_bench(RELEASED / "mevis_vidstg_lvvis.json")
    perfect = {v.video_id: {"masks": v.masks(), "phrases": v.phrases, "caption": v.reference_caption()} for v in videos}
    out = evaluate_predictions(videos, perfect, text_sim="exact")
    assert out["n_videos"] == 3 and out["mIoU"] == out["Recall"] == 1.0
    vidstg = videos[1]
    swapped = dict(perfect, **{"7": {"masks": vidstg.masks()[:, ::-1], "phrases": ["the child"], "caption": ""}})
    out = evaluate_predictions(videos, swapped, text_sim="exact")
    assert out["mIoU"] == pytest.approx(2 / 3)  # IoU(TL->BR, BR->TL) = 0 on the VidSTG video


def _released(tmp_path, **change):
    items = json.loads((RELEASED / "mevis_vidstg_lvvis.json").read_text())
    items[1].update(change)
    items[1] = {k: v for k, v in items[1].items() if v is not None}
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(items))
    return path


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"anno_map": None}, "video #1 .*lacks the field 'anno_map'"),
        ({"height": "4"}, "video #1 .*'height' must be a positive int"),
        ({"groundtruth": [[[99]]]}, "mask_dict.json.*mask id 99 .*not in the mask dictionary"),
        ({"obj_masks": []}, "'obj_masks' must be a list with one entry per QA round"),
        ({"frames": [3, 4]}, r"'frames'\[0\] must be a string"),
    ],
)
def test_released_layout_malformed(tmp_path, change, match):
    with pytest.raises(ValueError, match=match):
        load_sama_bench(_released(tmp_path, **change), mask_dict=RELEASED / "mask_dict.json")


def test_released_layout_missing_files(tmp_path):
    path = _released(tmp_path)
    with pytest.raises(FileNotFoundError, match="mask_dict"):
        load_sama_bench(path)
    (tmp_path / "mask_dict.json").write_text("[1")
    with pytest.raises(ValueError, match="mask_dict.json: not valid JSON"):
        load_sama_bench(path)
    (tmp_path / "mask_dict.json").write_text("[]")
    with pytest.raises(ValueError, match="must hold a mapping"):
        load_sama_bench(path)


def test_writers_write_on_the_main_rank_only(tmp_path, monkeypatch, tiny_config):
    """Under a launch (RANK=1) every writer returns its path and writes nothing; is_main_process= overrides."""
    from nips25_sama import SpatioTemporalAggregator
    from nips25_sama.gcg_results import write_gcg_results

    frames, masks = make_scene(["cat"], ["left"], "brick", n_frames=2, size=32, object_size=10, speed=1.0, seed=0)
    clip = {"video_id": "v0", "frames": frames, "masks": {"1": masks[0]}, "phrases": {"1": "the cat"},
            "conversations": scene_conversation(["cat"], ["left"])}  # fmt: skip
    agg = SpatioTemporalAggregator(tiny_config())
    monkeypatch.setenv("RANK", "1")
    assert write_sama_bench(tmp_path / "b", [clip]) == tmp_path / "b" / "annotations.json"
    assert write_predictions(tmp_path / "p.json", {}) == tmp_path / "p.json"
    assert agg.save_pretrained(tmp_path / "m") == tmp_path / "m"
    assert write_gcg_results(tmp_path / "g", []) == tmp_path / "g" / "video_gcg"
    assert not any(tmp_path.iterdir())
    agg.save_pretrained(tmp_path / "m", is_main_process=True)  # the caller's accelerator decides
    assert (tmp_path / "m" / "model.safetensors").is_file()
    monkeypatch.setenv("RANK", "0")
    assert write_predictions(tmp_path / "p.json", {}).is_file()
    with pytest.raises(TypeError, match="is_main_process"):
        write_predictions(tmp_path / "q.json", {}, is_main_process=1)


# --- fresh-user review (0.2.2): malformed prediction files name the video and field instead of scoring silently ---


def _released_prediction(**change):
    videos = load_sama_bench(RELEASED / "mevis_vidstg_lvvis.json")
    v = videos[1]  # the VidSTG video: 1 object, 2 frames of 4x4
    pred = {"caption": "the child", "phrases": list(v.phrases),
            "pred_masks": [[encode_rle(m) for m in vol] for vol in v.masks()]}  # fmt: skip
    pred.update(change)
    first = videos[0]
    good = {"caption": "", "phrases": first.phrases, "masks": first.masks()}
    return videos, {first.video_id: good, "7": {k: x for k, x in pred.items() if x is not None}}


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"phrases": None}, "video 7: lacks the field 'phrases'"),
        ({"phrases": []}, "video 7: field 'phrases' has 0 entries but there are 1 predicted masks"),
        ({"phrases": [3]}, "video 7: field 'phrases' must be a list of strings"),
        ({"caption": 3}, "video 7: field 'caption' must be a string"),
        ({"caption": float("nan")}, "video 7: field 'caption' must be a string"),
        ({"pred_masks": "x"}, r"video 7: field 'pred_masks' must be a list"),
        ({"pred_masks": [[None]]}, r"video 7: field 'pred_masks'\[0\] must be a list of 2 RLE/null .*got 1 frames"),
        ({"pred_masks": [[None, {"size": [4, 4], "counts": 5}]]}, r"'pred_masks'\[0\]\[1\]: field 'counts' is not"),
        ({"pred_masks": [[None, {"size": [4, 4], "counts": "!!"}]]}, r"'pred_masks'\[0\]\[1\]: field 'counts' is not"),
        ({"pred_masks": [[None, {"size": [2, 2], "counts": "04"}]]}, r"'pred_masks'\[0\]\[1\]: rle size \[2, 2\]"),
        ({"pred_masks": [[None, {"size": "4x4", "counts": "04"}]]}, r"'pred_masks'\[0\]\[1\]: field 'size' must be"),
        ({"pred_masks": [[None, [[1, 0], [0, 1]]]]}, r"'pred_masks'\[0\]\[1\]: must be a mapping"),
        ({"pred_masks": None, "masks": np.zeros((1, 2, 4, 5), bool)}, r"video 7: field 'masks' must have shape"),
        ({"pred_masks": None, "masks": np.full((1, 2, 4, 4), 0.5)}, r"video 7: field 'masks' must be a binary"),
    ],
)
def test_malformed_predictions_name_video_and_field(change, match):
    videos, preds = _released_prediction(**change)
    with pytest.raises(ValueError, match=match):
        evaluate_predictions(videos, preds, text_sim="exact")


def test_missing_predictions_raise_only_when_no_video_matches(caplog):
    videos, preds = _released_prediction()
    out = evaluate_predictions(videos, {"7": preds["7"], "stray": preds["7"]}, text_sim="exact")
    assert out["n_videos"] == 3
    assert "2 of 3 videos have no prediction" in caplog.text and "1 predictions name no annotated video" in caplog.text
    # videos 1 and 3 score 0, the VidSTG video 1: the mean over videos is 1/3 (the missing ones are not dropped)
    assert out["mIoU"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="none of the 3 videos has a prediction.*'stray'"):
        evaluate_predictions(videos, {"stray": preds["7"]}, text_sim="exact")


def test_bad_rle_in_the_mask_dictionary_names_video_object_and_frame(tmp_path):
    masks = json.loads((RELEASED / "mask_dict.json").read_text())
    key = next(iter(masks))
    track = masks[key]["segmentations"] if isinstance(masks[key], dict) else masks[key]
    i = next(t for t, r in enumerate(track) if r is not None)
    track[i] = dict(track[i], counts="!!!!")
    with pytest.raises(ValueError, match=rf"mask id {key}, frame {i}: field 'counts' is not a valid COCO RLE"):
        [v.masks() for v in load_sama_bench(RELEASED / "mevis_vidstg_lvvis.json", mask_dict=masks)]


def test_short_mask_track_is_padded_with_a_warning(caplog):
    (mevis, *_) = load_sama_bench(RELEASED / "mevis_vidstg_lvvis.json")
    assert mevis.masks().shape[1] == 2
    assert "has 1 frames but the video lists 2" in caplog.text and "read as empty masks" in caplog.text


def test_load_predictions_names_the_file(tmp_path):
    p = tmp_path / "pred.json"
    for text, match in (("", "pred.json: not valid JSON"), ('{"v": 3}', "prediction of video 'v' must be an object")):
        p.write_text(text)
        with pytest.raises(ValueError, match=match):
            load_predictions(p)
