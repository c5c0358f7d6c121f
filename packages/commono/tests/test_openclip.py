"""OpenCLIPDetector on a tiny random-init config: deterministic, identical after save/load, never online."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("open_clip")

from nips25_commono import OpenCLIPDetector, crop_boxes, evaluate  # noqa: E402


def test_crop_boxes_cover_the_image() -> None:
    boxes = crop_boxes(90, 60, grid=3, overlap=0.5)
    assert boxes[0] == (0, 0, 90, 60) and len(boxes) == 10
    assert min(b[0] for b in boxes) == 0 and max(b[2] for b in boxes) == 90
    assert max(b[3] for b in boxes) == 60
    assert crop_boxes(10, 10, grid=1) == [(0, 0, 10, 10)]


def test_tiny_detector_deterministic_and_identical_after_save_load(tiny_clip, examples, tmp_path) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    det = OpenCLIPDetector(tiny_clip, grid=2)
    ex = examples[0]
    s1, s2 = det.scores(ex), OpenCLIPDetector(tiny_clip, grid=2, model=det.model, preprocess=det.preprocess,
                                              tokenizer=det.tokenizer).scores(ex)  # fmt: skip
    np.testing.assert_array_equal(s1, s2)
    obj = list(ex.object_indices)
    assert np.all((s1[:, obj] >= 0) & (s1[:, obj] <= 1)) and np.isnan(s1[:, ex.none_index]).all()
    weights = tmp_path / "tiny.pt"
    torch.save(det.model.state_dict(), weights)
    torch.manual_seed(123)  # a different random init, overwritten by the local weights
    loaded = OpenCLIPDetector(tiny_clip, pretrained=weights, grid=2)
    np.testing.assert_allclose(loaded.scores(ex), s1, atol=1e-6)
    assert evaluate(loaded, examples[:1]).n == 1


def test_detector_refuses_downloads_and_missing_weights(tiny_clip, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="hub"):
        OpenCLIPDetector("hf-hub:laion/CLIP-ViT-B-32-laion2B-s34B-b79K")
    with pytest.raises(ValueError, match="pretrained"):
        OpenCLIPDetector(tiny_clip, pretrained=tmp_path / "missing.pt")
    with pytest.raises(FileNotFoundError, match="no directory"):
        OpenCLIPDetector(f"local-dir:{tmp_path / 'nope'}")
    with pytest.raises(ValueError, match="threshold"):
        OpenCLIPDetector(tiny_clip, threshold=1.5)
    with pytest.raises(ValueError, match="grid"):
        OpenCLIPDetector(tiny_clip, grid=0)
