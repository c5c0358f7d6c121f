"""SAMA-Bench data format: videos as frame folders, per-object COCO RLE masks per frame, multi-turn conversations;
reader, writer and the evaluator that runs every metric over a set of predictions.

The JSON layout (our reconstruction; the released benchmark is read through the same fields)::

    {"videos": [{"video_id": "v0", "frames_dir": "v0", "frames": ["00000.png", ...], "height": H, "width": W,
                 "objects": {"1": {"phrase": "the cat", "masks": [RLE | null, ...]}},
                 "conversations": [{"from": "human", "value": "What is <region1> doing?"},
                                   {"from": "gpt", "value": "<p>The cat</p> [SEG] walks right.", "objects": ["1"]}]}]}

A prediction file maps ``video_id`` to ``{"caption": str, "phrases": [str], "pred_masks": [[RLE | null per frame]]}``.
RLE is pycocotools' compressed form (``{"size": [H, W], "counts": str}``); ``null`` is an empty frame.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pycocotools import mask as mask_utils

from nips25_sama._validation import check_array
from nips25_sama.caption_metrics import caption_metrics
from nips25_sama.segmentation_metrics import jandf, miou_greedy, recall_iou_text, recall_over_videos

__all__ = [
    "BenchVideo",
    "decode_rle",
    "encode_rle",
    "evaluate_predictions",
    "load_predictions",
    "load_sama_bench",
    "write_predictions",
    "write_sama_bench",
]


def encode_rle(mask: Any) -> dict[str, Any] | None:
    """COCO compressed RLE of a ``(H, W)`` boolean mask (``None`` for an empty mask)."""
    m = check_array("mask", mask, ndim=2, dtype="bool")
    if not m.any():
        return None
    rle = mask_utils.encode(np.asfortranarray(m.astype(np.uint8)))
    return {"size": [int(s) for s in rle["size"]], "counts": rle["counts"].decode("ascii")}


def decode_rle(rle: Mapping[str, Any] | None, height: int, width: int) -> np.ndarray:
    """``(H, W)`` bool mask of a compressed or uncompressed COCO RLE (``None`` -> empty).

    Raises:
        ValueError: if the RLE's size differs from ``(height, width)``.
    """
    if rle is None:
        return np.zeros((height, width), dtype=bool)
    if not isinstance(rle, Mapping) or "size" not in rle or "counts" not in rle:
        raise ValueError(f"rle must be a mapping with 'size' and 'counts', got {rle!r:.80}")
    if [int(s) for s in rle["size"]] != [height, width]:
        raise ValueError(f"rle size {list(rle['size'])} differs from the frame size {[height, width]}")
    obj = dict(rle)
    if isinstance(obj["counts"], list):
        obj = mask_utils.frPyObjects(obj, height, width)
    elif isinstance(obj["counts"], str):
        obj["counts"] = obj["counts"].encode("ascii")
    return np.asarray(mask_utils.decode(obj), dtype=bool)


@dataclass
class BenchVideo:
    """One SAMA-Bench video: frame files, objects (id -> phrase, per-frame RLE) and the conversation turns."""

    video_id: str
    frame_paths: list[Path]
    height: int
    width: int
    objects: dict[str, dict[str, Any]]
    conversations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def object_ids(self) -> list[str]:
        """Object ids in file order."""
        return list(self.objects)

    @property
    def phrases(self) -> list[str]:
        """Ground-truth phrase of each object."""
        return [str(o.get("phrase", "")) for o in self.objects.values()]

    def masks(self) -> np.ndarray:
        """``(M, T, H, W)`` bool ground-truth volumes, decoded from RLE."""
        t = len(self.frame_paths)
        out = np.zeros((len(self.objects), t, self.height, self.width), dtype=bool)
        for i, obj in enumerate(self.objects.values()):
            for j, rle in enumerate(obj["masks"]):
                out[i, j] = decode_rle(rle, self.height, self.width)
        return out

    def frames(self) -> np.ndarray:
        """``(T, H, W, 3)`` uint8 frames read from disk."""
        from skimage import io

        return np.stack([np.asarray(io.imread(p))[..., :3] for p in self.frame_paths])

    def reference_caption(self) -> str:
        """The assistant turns joined, tags (``<p>``, ``[SEG]``, ...) removed, lower-cased: the caption reference."""
        import re

        text = " ".join(str(c["value"]) for c in self.conversations if c.get("from") == "gpt")
        return " ".join(re.sub(r"<[^>]*>|\[SEG\]", " ", text).lower().replace(".", " ").split())


def load_sama_bench(
    json_path: str | os.PathLike[str],
    *,
    frame_root: str | os.PathLike[str] | None = None,
    qa_per_item: int | None = None,
) -> list[BenchVideo]:
    """Read a SAMA-Bench JSON file.

    Args:
        json_path: the annotation file.
        frame_root: directory holding the ``frames_dir`` folders (default: the JSON file's directory).
        qa_per_item: keep at most this many question/answer pairs per video (``None``: all).

    Returns:
        The videos.

    Raises:
        FileNotFoundError: if the JSON file is missing.
        ValueError: if a required field is missing, mask counts disagree with the frames, or ``qa_per_item < 1``.
    """
    path = Path(json_path)
    if not path.is_file():
        raise FileNotFoundError(f"json_path {path} does not exist")
    if qa_per_item is not None and (not isinstance(qa_per_item, int) or qa_per_item < 1):
        raise ValueError(f"qa_per_item must be a positive int or None, got {qa_per_item!r}")
    root = Path(frame_root) if frame_root is not None else path.parent
    data = json.loads(path.read_text())
    items = data["videos"] if isinstance(data, Mapping) and "videos" in data else data
    if not isinstance(items, list):
        raise ValueError(f"{path} must hold a list of videos (or {{'videos': [...]}})")
    videos = []
    for k, item in enumerate(items):
        for key in ("video_id", "frames", "height", "width", "objects"):
            if key not in item:
                raise ValueError(f"{path}: video #{k} lacks the field {key!r}")
        frames = [root / item.get("frames_dir", "") / f for f in item["frames"]]
        objects = {str(oid): dict(obj) for oid, obj in item["objects"].items()}
        for oid, obj in objects.items():
            if len(obj.get("masks", [])) != len(frames):
                raise ValueError(f"{path}: object {oid} of {item['video_id']} has {len(obj.get('masks', []))} masks "
                                 f"for {len(frames)} frames")  # fmt: skip
        conv = list(item.get("conversations", []))
        if qa_per_item is not None:
            conv = conv[: 2 * qa_per_item]
        videos.append(BenchVideo(str(item["video_id"]), frames, int(item["height"]), int(item["width"]), objects, conv))
    return videos


def write_sama_bench(
    out_dir: str | os.PathLike[str],
    clips: Sequence[Mapping[str, Any]],
) -> Path:
    """Write clips in the SAMA-Bench layout: ``out_dir/<video_id>/<t>.png`` and ``out_dir/annotations.json``.

    Args:
        out_dir: target directory.
        clips: mappings with ``video_id``, ``frames`` ``(T, H, W, 3)`` uint8, ``masks`` ``{object_id: (T, H, W)}``,
            ``phrases`` ``{object_id: str}`` and ``conversations`` (list of turns).

    Returns:
        The path of ``annotations.json``.
    """
    from skimage import io

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    items = []
    for clip in clips:
        frames = np.asarray(clip["frames"])
        if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
            raise ValueError(f"clip {clip.get('video_id')}: frames must be (T, H, W, 3) uint8, got {frames.shape}")
        vid = str(clip["video_id"])
        (out / vid).mkdir(exist_ok=True)
        names = [f"{t:05d}.png" for t in range(frames.shape[0])]
        for name, frame in zip(names, frames, strict=True):
            io.imsave(out / vid / name, frame, check_contrast=False)
        objects = {
            str(oid): {"phrase": clip["phrases"][oid], "masks": [encode_rle(m) for m in np.asarray(vol)]}
            for oid, vol in clip["masks"].items()
        }
        items.append({"video_id": vid, "frames_dir": vid, "frames": names, "height": int(frames.shape[1]),
                      "width": int(frames.shape[2]), "objects": objects,
                      "conversations": list(clip.get("conversations", []))})  # fmt: skip
    path = out / "annotations.json"
    path.write_text(json.dumps({"videos": items}) + "\n")
    return path


def write_predictions(path: str | os.PathLike[str], predictions: Mapping[str, Mapping[str, Any]]) -> Path:
    """Write predictions ``{video_id: {"caption", "phrases", "masks": (N, T, H, W) bool}}`` as RLE JSON."""
    out = {}
    for vid, pred in predictions.items():
        vols = np.asarray(pred["masks"], dtype=bool)
        out[str(vid)] = {"caption": str(pred.get("caption", "")), "phrases": list(pred.get("phrases", [])),
                         "pred_masks": [[encode_rle(m) for m in vol] for vol in vols]}  # fmt: skip
    p = Path(path)
    p.write_text(json.dumps(out) + "\n")
    return p


def load_predictions(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """Read a prediction file (see the module docstring).

    Raises:
        FileNotFoundError: if missing. ValueError: if it is not a mapping of video ids.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"prediction file {p} does not exist")
    data = json.loads(p.read_text())
    if not isinstance(data, Mapping):
        raise ValueError(f"{p} must hold a mapping video_id -> prediction")
    return {str(k): dict(v) for k, v in data.items()}


def evaluate_predictions(
    videos: Sequence[BenchVideo],
    predictions: Mapping[str, Mapping[str, Any]],
    *,
    text_sim: Any = "minilm",
    official_compat: bool = False,
    with_meteor: bool = False,
) -> dict[str, Any]:
    """All SAMA-Bench metrics of a prediction set: mIoU (official and strict), Recall, J&F, caption metrics.

    A video without a prediction counts as an empty prediction. J&F pairs every GT object with the predicted
    volume of the same index (``phrases`` order), empty if missing.

    Args:
        videos: from :func:`load_sama_bench`.
        predictions: ``{video_id: {"caption", "phrases", "pred_masks"}}`` (RLE) or ``"masks"`` (arrays).
        text_sim: Recall's phrase similarity (see :func:`~nips25_sama.segmentation_metrics.recall_iou_text`).
        official_compat: the released script's Recall pairing.
        with_meteor: run METEOR (Java).

    Returns:
        ``{"mIoU", "mIoU_strict", "Recall", "text_sim", "J", "F", "J&F", "captions": {...}, "n_videos"}``.

    Raises:
        ValueError: if ``videos`` is empty.
    """
    if not videos:
        raise ValueError("videos must be non-empty")
    mious, strict, counts, js, fs = [], [], [], [], []
    refs, hyps = {}, {}
    for v in videos:
        gt = v.masks()
        pred = predictions.get(v.video_id, {})
        if "masks" in pred:
            pm = np.asarray(pred["masks"], dtype=bool).reshape(-1, *gt.shape[1:])
        elif pred.get("pred_masks"):
            pm = np.stack([np.stack([decode_rle(r, v.height, v.width) for r in vol]) for vol in pred["pred_masks"]])
        else:
            pm = np.zeros((0, *gt.shape[1:]), dtype=bool)
        phrases = list(pred.get("phrases", []))
        if len(phrases) < len(pm):
            phrases += [""] * (len(pm) - len(phrases))
        mious.append(miou_greedy(pm, gt))
        strict.append(miou_greedy(pm, gt, strict=True))
        counts.append(recall_iou_text(pm, gt, phrases[: len(pm)], v.phrases, text_sim=text_sim,
                                      official_compat=official_compat))  # fmt: skip
        for i in range(gt.shape[0]):
            j, f, _ = jandf(pm[i] if i < len(pm) else np.zeros_like(gt[i]), gt[i])
            js.append(j)
            fs.append(f)
        refs[v.video_id] = [v.reference_caption() or "empty"]
        hyps[v.video_id] = " ".join(str(pred.get("caption", "")).lower().replace(".", " ").split())
    j, f = float(np.mean(js)) if js else 0.0, float(np.mean(fs)) if fs else 0.0
    return {
        "mIoU": float(np.mean(mious)),
        "mIoU_strict": float(np.mean(strict)),
        "Recall": recall_over_videos(counts),
        "text_sim": text_sim if isinstance(text_sim, str) else getattr(text_sim, "__name__", "callable"),
        "J": j,
        "F": f,
        "J&F": (j + f) / 2,
        "captions": caption_metrics(refs, hyps, with_meteor=with_meteor),
        "n_videos": len(videos),
    }
