"""SAMA-Bench format: RLE round trip, writer/loader round trip, evaluator on perfect and empty predictions."""

from __future__ import annotations

import json

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
    (video,) = load_sama_bench(path)
    assert video.phrases == ["the cat", "the horse"]
    assert np.array_equal(video.masks(), masks)
    assert np.array_equal(video.frames(), frames)
    assert video.reference_caption() == "the cat moves left the horse moves up"
    assert len(load_sama_bench(path, qa_per_item=1)[0].conversations) == 2


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
    empty = evaluate_predictions(videos, {}, text_sim="exact")
    assert empty["mIoU"] == 0.0 and empty["Recall"] == 0.0 and empty["J"] == 0.0


def test_loader_bad_inputs(tmp_path, bench):
    with pytest.raises(FileNotFoundError, match="json_path"):
        load_sama_bench(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"videos": [{"video_id": "x"}]}))
    with pytest.raises(ValueError, match="frames"):
        load_sama_bench(bad)
    with pytest.raises(ValueError, match="qa_per_item"):
        load_sama_bench(bench[0], qa_per_item=0)
    with pytest.raises(ValueError, match="videos"):
        evaluate_predictions([], {})
    with pytest.raises(FileNotFoundError, match="prediction file"):
        load_predictions(tmp_path / "none.json")
