"""SAMA-Bench as released: annotation list, mask dictionary, frame folders; reader, writer and evaluator.

The released layout (read from the official repository, ``sunye23/SAMA``, ``projects/llava_sam2/evaluation/
video_gcg_eval_video_wise.py`` and ``video_region_cap_eval_video_wise.py``; field names and rules only)::

    annotations.json: [{"video": "mevis/valid/JPEGImages/0a2c0bfe6909", "video_id": 17,   # video_id optional
                        "height": H, "width": W, "frames": ["00000", "00005", ...],       # names without extension
                        "anno_map": [1001, 1002],                                        # mask ids of this video
                        "conversation": [{"from": "human", "value": "...<mask>...", "question_id": 3},
                                         {"from": "gpt", "value": "<p>The cat</p> [SEG] walks right."}, ...],
                        "obj_masks": [[1001], ...],          # per QA round: the mask ids of the <mask> prompts
                        "groundtruth": [[[1002]], ...]}]     # per QA round, per [SEG]: mask ids (their union)
    mask_dict.json:   {"1001": [RLE | null per frame], ...}  # LV-VIS form {"1001": {"segmentations": [...]}} too

Frames are ``frame_root/<video>/<frame><frame_ext>`` (``.jpg`` in the release; an LV-VIS numeric folder name is
zero-padded to 5 digits, a VidSTG frame may be ``{"raw_filename": ...}``). A QA round is kept, as the official
loader does, only if the human turn comes first, ``<mask>`` occurs ``len(obj_masks[r])`` times and ``[SEG]`` occurs
as often as ``groundtruth[r]`` has non-empty entries; dropped rounds are counted in
:attr:`BenchVideo.skipped_rounds` and logged. The ground-truth objects of a video are the ``[SEG]`` targets of its
kept rounds, each paired with the ``<p>...</p>`` phrase of the same index, lower-cased.

A prediction file maps ``video_id`` to ``{"caption": str, "phrases": [str], "pred_masks": [[RLE | null per frame]]}``:
one phrase per predicted track, one RLE or ``null`` per frame of the video in each track (checked; a malformed
entry raises naming the video and field). RLE is pycocotools' compressed form (``{"size": [H, W], "counts": str}``);
``null`` is an empty frame.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pycocotools import mask as mask_utils

from nips25_sama._validation import check_array, main_process
from nips25_sama.caption_metrics import caption_metrics
from nips25_sama.segmentation_metrics import jandf, miou_greedy, recall_iou_text, recall_over_videos

logger = logging.getLogger(__name__)

__all__ = [
    "BenchVideo",
    "VideoScoreInput",
    "decode_rle",
    "encode_rle",
    "evaluate_predictions",
    "load_predictions",
    "load_sama_bench",
    "score_videos",
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


def decode_rle(rle: Mapping[str, Any] | None, height: int, width: int, *, where: str = "rle") -> np.ndarray:
    """``(H, W)`` bool mask of a compressed or uncompressed COCO RLE (``None`` -> empty).

    Args:
        rle: ``{"size": [H, W], "counts": str | bytes | [int]}`` or ``None``.
        height, width: the frame size the RLE must have.
        where: the location named in the error messages (file, video, object, frame).

    Raises:
        ValueError: naming ``where``, if the RLE is not such a mapping, its size differs from ``(height, width)``,
            or pycocotools cannot decode its ``counts``.
    """
    if rle is None:
        return np.zeros((height, width), dtype=bool)
    if not isinstance(rle, Mapping) or "size" not in rle or "counts" not in rle:
        raise ValueError(f"{where}: must be a mapping with 'size' and 'counts' (COCO RLE) or null, got {rle!r:.80}")
    size = rle["size"]
    if not isinstance(size, list | tuple) or len(size) != 2 or not all(isinstance(v, int) for v in size):
        raise ValueError(f"{where}: field 'size' must be [height, width] ints, got {size!r:.60}")
    if [int(s) for s in size] != [height, width]:
        raise ValueError(f"{where}: rle size {list(size)} differs from the frame size {[height, width]}")
    obj = dict(rle)
    counts = obj["counts"]
    try:
        if isinstance(counts, list) and all(isinstance(v, int) and v >= 0 for v in counts):
            obj = mask_utils.frPyObjects(obj, height, width)
        elif isinstance(counts, str):
            obj["counts"] = counts.encode("ascii")
        elif not isinstance(counts, bytes):
            raise TypeError(f"got {counts!r:.60}")
        return np.asarray(mask_utils.decode(obj), dtype=bool)
    except (TypeError, ValueError, UnicodeEncodeError) as exc:
        raise ValueError(f"{where}: field 'counts' is not a valid COCO RLE (compressed string or list of "
                         f"non-negative run lengths; {exc})") from exc  # fmt: skip


@dataclass
class BenchVideo:
    """One SAMA-Bench video: frame files, ground-truth objects and the kept conversation turns.

    ``objects`` maps an object key (``"<question_id>:<k>"``, the ``k``-th ``[SEG]`` of that round) to
    ``{"phrase": str, "mask_ids": [int], "masks": [[RLE | None per mask id] per frame]}``; a frame's mask is the
    union of its RLEs.
    """

    video_id: str
    frame_paths: list[Path]
    height: int
    width: int
    objects: dict[str, dict[str, Any]]
    conversations: list[dict[str, Any]] = field(default_factory=list)
    video: str = ""
    skipped_rounds: int = 0

    @property
    def object_ids(self) -> list[str]:
        """Object keys in file order."""
        return list(self.objects)

    @property
    def phrases(self) -> list[str]:
        """Ground-truth phrase of each object."""
        return [str(o.get("phrase", "")) for o in self.objects.values()]

    def masks(self) -> np.ndarray:
        """``(M, T, H, W)`` bool ground-truth volumes, decoded from RLE (union over an object's mask ids)."""
        t = len(self.frame_paths)
        out = np.zeros((len(self.objects), t, self.height, self.width), dtype=bool)
        for i, (key, obj) in enumerate(self.objects.items()):
            for j, rles in enumerate(obj["masks"]):
                for mid, rle in zip(obj["mask_ids"], rles, strict=True):
                    where = f"video {self.video_id}: object {key}, mask id {mid}, frame {j}"
                    out[i, j] |= decode_rle(rle, self.height, self.width, where=where)
        return out

    def frames(self) -> np.ndarray:
        """``(T, H, W, 3)`` uint8 frames read from disk.

        Raises:
            FileNotFoundError: naming the first missing frame file (check ``frame_root`` and ``frame_ext``).
        """
        from skimage import io

        for p in self.frame_paths:
            if not p.is_file():
                raise FileNotFoundError(f"video {self.video_id}: frame file {p} does not exist "
                                        "(check frame_root and frame_ext)")  # fmt: skip
        return np.stack([np.asarray(io.imread(p))[..., :3] for p in self.frame_paths])

    def reference_caption(self) -> str:
        """The assistant turns joined, tags (``<p>``, ``[SEG]``, ...) removed, lower-cased: the caption reference."""
        import re

        text = " ".join(str(c["value"]) for c in self.conversations if c.get("from") == "gpt")
        return " ".join(re.sub(r"<[^>]*>|\[SEG\]", " ", text).lower().replace(".", " ").split())


_REQUIRED = ("video", "height", "width", "frames", "anno_map")


def _read_json(path: Path, what: str) -> Any:
    if not path.is_file():
        raise FileNotFoundError(f"{what} {path} does not exist")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc


def _frame_names(item: Mapping[str, Any], where: str) -> list[str]:
    names = []
    for t, f in enumerate(item["frames"]):
        if isinstance(f, Mapping) and "raw_filename" in f:
            f = f["raw_filename"]
        if not isinstance(f, str):
            raise ValueError(f"{where}: field 'frames'[{t}] must be a string or {{'raw_filename': str}}, got {f!r:.60}")
        names.append(os.path.splitext(f)[0] if "VidSTG" in str(item["video"]) else f)
    return names


def _mask_track(masks: Mapping[str, Any], mid: Any, n_frames: int, where: str) -> list[Any]:
    key = str(mid)
    if key not in masks:
        raise ValueError(f"{where}: mask id {mid!r} (field 'anno_map'/'groundtruth') is not in the mask dictionary")
    track = masks[key]
    if isinstance(track, Mapping):
        track = track.get("segmentations", [])
    if not isinstance(track, list):
        raise ValueError(f"{where}: mask dictionary entry {key!r} must be a list of RLE/null per frame")
    if len(track) < n_frames:
        logger.warning(
            "%s: mask dictionary entry %r has %d frames but the video lists %d in field 'frames'; the "
            "missing last frames are read as empty masks",
            where,
            key,
            len(track),
            n_frames,
        )
    return [track[t] if t < len(track) else None for t in range(n_frames)]


def _phrases(answer: str) -> list[str]:
    import re

    return [m.strip().lower() for m in re.findall(r"<p>(.*?)</p>", answer, flags=re.DOTALL)]


def load_sama_bench(
    json_path: str | os.PathLike[str],
    *,
    mask_dict: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    frame_root: str | os.PathLike[str] | None = None,
    frame_ext: str = ".jpg",
    qa_per_item: int | None = None,
) -> list[BenchVideo]:
    """Read a released SAMA-Bench annotation file (the layout in the module docstring).

    Args:
        json_path: the annotation file (a JSON list of videos, e.g. ``benchmark_split/mevis.json``).
        mask_dict: the mask dictionary (path or loaded mapping ``{mask_id: [RLE | None per frame]}``; default
            ``mask_dict.json`` beside ``json_path``).
        frame_root: directory holding the ``video`` folders (default: the JSON file's directory).
        frame_ext: extension appended to each frame name (``.jpg`` as released).
        qa_per_item: keep at most this many kept QA rounds per video (``None``: all).

    Returns:
        The videos that have a ``conversation`` (the official loader skips the others).

    Raises:
        FileNotFoundError: if the annotation or mask file is missing.
        ValueError: naming the file, video and field, if the file is not a list of videos, a required field is
            missing or mistyped, ``obj_masks``/``groundtruth`` are shorter than the rounds, a mask id is not in the
            mask dictionary, or ``qa_per_item < 1``.

    Example:
        >>> import json, tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> rle = {"size": [2, 2], "counts": "04"}  # all-ones 2x2 mask
        >>> _ = (d / "mask_dict.json").write_text(json.dumps({"7": [rle]}))
        >>> video = {"video": "v", "height": 2, "width": 2, "frames": ["00000"], "anno_map": [7],
        ...          "conversation": [{"from": "human", "value": "Segment the cat.", "question_id": 0},
        ...                           {"from": "gpt", "value": "<p>The cat</p> [SEG]."}],
        ...          "obj_masks": [[]], "groundtruth": [[[7]]]}
        >>> _ = (d / "bench.json").write_text(json.dumps([video]))
        >>> (v,) = load_sama_bench(d / "bench.json")
        >>> v.phrases, v.masks().shape, int(v.masks().sum())
        (['the cat'], (1, 1, 2, 2), 4)
    """
    path = Path(json_path)
    if qa_per_item is not None and (not isinstance(qa_per_item, int) or qa_per_item < 1):
        raise ValueError(f"qa_per_item must be a positive int or None, got {qa_per_item!r}")
    if not path.is_file():
        raise FileNotFoundError(f"json_path {path} does not exist")
    root = Path(frame_root) if frame_root is not None else path.parent
    if isinstance(mask_dict, Mapping):
        masks, mask_src = mask_dict, "mask_dict"
    else:
        mask_path = Path(mask_dict) if mask_dict is not None else path.parent / "mask_dict.json"
        masks, mask_src = _read_json(mask_path, "mask_dict"), str(mask_path)
        if not isinstance(masks, Mapping):
            raise ValueError(f"{mask_src} must hold a mapping mask_id -> per-frame RLE list")
    items = _read_json(path, "json_path")
    if not isinstance(items, list):
        raise ValueError(f"{path} must hold a JSON list of videos (the released layout), got {type(items).__name__}")
    videos = []
    for k, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ValueError(f"{path}: video #{k} must be an object, got {type(item).__name__}")
        for key in _REQUIRED:
            if key not in item:
                raise ValueError(f"{path}: video #{k} lacks the field {key!r}")
        vid = str(item["video_id"]) if item.get("video_id") is not None else str(item["video"])
        where = f"{path}: video #{k} ({item['video']})"
        for key in ("height", "width"):
            if not isinstance(item[key], int) or item[key] < 1:
                raise ValueError(f"{where}: field {key!r} must be a positive int, got {item[key]!r}")
        if not isinstance(item["frames"], list) or not item["frames"]:
            raise ValueError(f"{where}: field 'frames' must be a non-empty list")
        if not isinstance(item["anno_map"], list):
            raise ValueError(f"{where}: field 'anno_map' must be a list of mask ids")
        conv = item.get("conversation")
        if conv is None:
            logger.warning("%s has no 'conversation'; skipped as the official loader does", where)
            continue
        if not isinstance(conv, list):
            raise ValueError(f"{where}: field 'conversation' must be a list of turns")
        conv = conv[: len(conv) - len(conv) % 2]
        n_rounds = len(conv) // 2
        for key in ("obj_masks", "groundtruth"):
            if not isinstance(item.get(key), list) or len(item[key]) < n_rounds:
                raise ValueError(f"{where}: field {key!r} must be a list with one entry per QA round ({n_rounds})")
        names = _frame_names(item, where)
        folder = str(item["video"])
        if "lvvis" in folder:
            head, tail = os.path.split(folder)
            folder = os.path.join(head, tail.zfill(5) if tail.isdigit() else tail)
        frames = [root / folder / f"{n}{frame_ext}" for n in names]
        tracks = {str(m): _mask_track(masks, m, len(frames), f"{where} [{mask_src}]")
                  for m in item["anno_map"] if m != -1}  # fmt: skip
        kept: list[dict[str, Any]] = []
        objects: dict[str, dict[str, Any]] = {}
        skipped = 0
        for r in range(n_rounds):
            q, a = conv[2 * r], conv[2 * r + 1]
            if not (isinstance(q, Mapping) and isinstance(a, Mapping)):
                raise ValueError(f"{where}: field 'conversation'[{2 * r}] and [{2 * r + 1}] must be turn objects")
            if q.get("from") != "human" or a.get("from") != "gpt" or "value" not in q or "value" not in a:
                skipped += 1
                continue
            prompts, targets = item["obj_masks"][r], item["groundtruth"][r]
            valid = [list(t) for t in targets if len(t) != 0]
            if str(q["value"]).count("<mask>") != len(prompts) or str(a["value"]).count("[SEG]") != len(valid):
                skipped += 1
                continue
            if qa_per_item is not None and len(kept) // 2 >= qa_per_item:
                break
            kept += [dict(q), dict(a)]
            phrases = _phrases(str(a["value"]))
            for s, ids in enumerate(valid):
                for m in ids:
                    if str(m) not in tracks:
                        tracks[str(m)] = _mask_track(masks, m, len(frames), f"{where} [{mask_src}]")
                objects[f"{q.get('question_id', r)}:{s}"] = {
                    "phrase": phrases[s] if s < len(phrases) else "",
                    "mask_ids": ids,
                    "masks": [[tracks[str(m)][t] for m in ids] for t in range(len(frames))],
                }
        if skipped:
            logger.warning("%s: %d QA round(s) dropped by the official consistency rules", where, skipped)
        videos.append(BenchVideo(vid, frames, int(item["height"]), int(item["width"]), objects, kept,
                                 video=str(item["video"]), skipped_rounds=skipped))  # fmt: skip
    return videos


def write_sama_bench(
    out_dir: str | os.PathLike[str],
    clips: Sequence[Mapping[str, Any]],
    *,
    frame_ext: str = ".png",
    is_main_process: bool | None = None,
) -> Path:
    """Write clips in the released SAMA-Bench layout: ``annotations.json``, ``mask_dict.json``, ``<video_id>/``.

    Each clip becomes one video whose QA rounds are its conversation's (human, gpt) pairs; a gpt turn's
    ``objects`` (object ids of ``masks``) become that round's ``groundtruth`` (one ``[SEG]`` target each). Mask ids
    are numbered across all clips from 1. Frames are lossless PNG by default (pass ``frame_ext=".png"`` to
    :func:`load_sama_bench`); the release uses ``.jpg``.

    Args:
        out_dir: target directory.
        clips: mappings with ``video_id``, ``frames`` ``(T, H, W, 3)`` uint8, ``masks`` ``{object_id: (T, H, W)}``,
            ``phrases`` ``{object_id: str}`` and ``conversations`` (list of turns).
        frame_ext: frame file extension (``.png`` or ``.jpg``).
        is_main_process: whether this process writes (default: rank 0 of a launch only); other processes write
            nothing and return the same path.

    Returns:
        The path of ``annotations.json``.

    Raises:
        ValueError: naming the clip, if frames are not ``(T, H, W, 3)`` uint8 or a turn names an unknown object.
    """
    from skimage import io

    out = Path(out_dir)
    if not main_process(is_main_process):
        return out / "annotations.json"
    out.mkdir(parents=True, exist_ok=True)
    items, mask_dict, next_id = [], {}, 1
    for clip in clips:
        frames = np.asarray(clip["frames"])
        if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
            raise ValueError(f"clip {clip.get('video_id')}: frames must be (T, H, W, 3) uint8, got {frames.shape}")
        vid = str(clip["video_id"])
        (out / vid).mkdir(exist_ok=True)
        names = [f"{t:05d}" for t in range(frames.shape[0])]
        for name, frame in zip(names, frames, strict=True):
            io.imsave(out / vid / f"{name}{frame_ext}", frame, check_contrast=False)
        ids = {}
        for oid, vol in clip["masks"].items():
            ids[str(oid)] = next_id
            mask_dict[str(next_id)] = [encode_rle(m) for m in np.asarray(vol, dtype=bool)]
            next_id += 1
        turns = list(clip.get("conversations", []))
        conv: list[dict[str, Any]] = []
        obj_masks: list[list[int]] = []
        groundtruth: list[list[list[int]]] = []
        for r in range(len(turns) // 2):
            q, a = dict(turns[2 * r]), dict(turns[2 * r + 1])
            targets = [str(o) for o in a.pop("objects", [])]
            unknown = [o for o in targets if o not in ids]
            if unknown:
                raise ValueError(f"clip {vid}: turn {2 * r + 1} names unknown objects {unknown}")
            q.setdefault("question_id", len(conv) // 2)
            conv += [q, a]
            obj_masks.append([])
            groundtruth.append([[ids[o]] for o in targets])
        items.append({"video": vid, "video_id": vid, "height": int(frames.shape[1]), "width": int(frames.shape[2]),
                      "frames": names, "anno_map": list(ids.values()), "conversation": conv,
                      "obj_masks": obj_masks, "groundtruth": groundtruth})  # fmt: skip
    (out / "mask_dict.json").write_text(json.dumps(mask_dict) + "\n")
    path = out / "annotations.json"
    path.write_text(json.dumps(items) + "\n")
    return path


def write_predictions(
    path: str | os.PathLike[str], predictions: Mapping[str, Mapping[str, Any]], *, is_main_process: bool | None = None
) -> Path:
    """Write predictions ``{video_id: {"caption", "phrases", "masks": (N, T, H, W) bool}}`` as RLE JSON.

    ``is_main_process``: whether this process writes (default: rank 0 of a launch only); other processes write
    nothing and return ``path``.
    """
    if not main_process(is_main_process):
        return Path(path)
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
    data = _read_json(p, "prediction file")
    if not isinstance(data, Mapping):
        raise ValueError(f"{p} must hold a mapping video_id -> prediction")
    for k, v in data.items():
        if not isinstance(v, Mapping):
            raise ValueError(f"{p}: prediction of video {k!r} must be an object, got {type(v).__name__}")
    return {str(k): dict(v) for k, v in data.items()}


def _prediction_arrays(
    v: BenchVideo, pred: Mapping[str, Any], gt_shape: tuple[int, ...]
) -> tuple[np.ndarray, list[str], str]:
    """Checked ``(masks (N, T, H, W), phrases, caption)`` of one video's prediction."""
    where = f"prediction of video {v.video_id}"
    if not isinstance(pred, Mapping):
        raise ValueError(f"{where}: must be an object, got {type(pred).__name__}")
    caption = pred.get("caption", "")
    if not isinstance(caption, str):
        raise ValueError(f"{where}: field 'caption' must be a string, got {caption!r:.60}")
    t = gt_shape[0]
    if "masks" in pred:
        pm = check_array(f"{where}: field 'masks'", pred["masks"], ndim=(3, 4), dtype="bool")
        if pm.ndim == 3:
            pm = pm[None]
        if pm.shape[1:] != tuple(gt_shape):
            raise ValueError(f"{where}: field 'masks' must have shape (N, {', '.join(map(str, gt_shape))}), "
                             f"got {pm.shape}")  # fmt: skip
    elif pred.get("pred_masks"):
        tracks = pred["pred_masks"]
        if not isinstance(tracks, list):
            raise ValueError(f"{where}: field 'pred_masks' must be a list of per-frame RLE lists, got {tracks!r:.60}")
        vols = []
        for k, track in enumerate(tracks):
            if not isinstance(track, list) or len(track) != t:
                got = f"{len(track)} frames" if isinstance(track, list) else repr(track)[:60]
                raise ValueError(f"{where}: field 'pred_masks'[{k}] must be a list of {t} RLE/null (one per frame of "
                                 f"the video), got {got}")  # fmt: skip
            vols.append(np.stack([decode_rle(r, v.height, v.width, where=f"{where}: field 'pred_masks'[{k}][{j}]")
                                  for j, r in enumerate(track)]))  # fmt: skip
        pm = np.stack(vols)
    else:
        pm = np.zeros((0, *gt_shape), dtype=bool)
    if len(pm) and "phrases" not in pred:
        raise ValueError(f"{where}: lacks the field 'phrases' (one phrase per predicted mask, used by Recall)")
    phrases = pred.get("phrases", [])
    if not isinstance(phrases, list) or not all(isinstance(x, str) for x in phrases):
        raise ValueError(f"{where}: field 'phrases' must be a list of strings, got {phrases!r:.60}")
    if len(phrases) != len(pm):
        raise ValueError(f"{where}: field 'phrases' has {len(phrases)} entries but there are {len(pm)} predicted "
                         "masks (one phrase per mask)")  # fmt: skip
    return pm, list(phrases), caption


def evaluate_predictions(
    videos: Sequence[BenchVideo],
    predictions: Mapping[str, Mapping[str, Any]],
    *,
    text_sim: Any = "minilm",
    official_compat: bool = False,
    with_meteor: bool = False,
    caption_backend: str = "auto",
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
        caption_backend: ``"auto"``, ``"pycocoevalcap"`` or ``"ours"`` (see
            :func:`~nips25_sama.caption_metrics.caption_metrics`).

    Returns:
        ``{"mIoU", "mIoU_strict", "Recall", "text_sim", "J", "F", "J&F", "captions": {...}, "n_videos"}``.

    Raises:
        ValueError: if ``videos`` is empty, no video has a prediction (mismatched ids), or a prediction is malformed
            (naming the video and field: a non-string ``caption``, a ``pred_masks`` track whose length is not the
            video's frame count, an undecodable RLE, ``phrases`` missing or not one per mask).
    """
    if not videos:
        raise ValueError("videos must be non-empty")
    ids = [v.video_id for v in videos]
    missing = [i for i in ids if i not in predictions]
    if len(missing) == len(ids):
        raise ValueError(f"predictions: none of the {len(ids)} videos has a prediction (video ids {ids[:3]}..., "
                         f"prediction keys {list(predictions)[:3]}...); the keys must be the annotations' 'video_id' "
                         "(or 'video' where it has none)")  # fmt: skip
    if missing:
        logger.warning("%d of %d videos have no prediction (scored as empty): %s", len(missing), len(ids), missing[:5])
    extra = sorted(set(predictions) - set(ids))
    if extra:
        logger.warning("%d predictions name no annotated video and are ignored: %s", len(extra), extra[:5])
    entries = []
    for v in videos:
        gt = v.masks()
        pm, phrases, caption = _prediction_arrays(v, predictions.get(v.video_id, {}), gt.shape[1:])
        hyp = " ".join(caption.lower().replace(".", " ").split())
        entries.append(VideoScoreInput(v.video_id, pm, gt, phrases, v.phrases,
                                       v.reference_caption() or "empty", hyp))  # fmt: skip
    return score_videos(entries, text_sim=text_sim, official_compat=official_compat, with_meteor=with_meteor,
                        caption_backend=caption_backend)  # fmt: skip


@dataclass(frozen=True)
class VideoScoreInput:
    """One video for :func:`score_videos`: ``pred (N, T, H, W)``, ``gt (M, T, H, W)`` bool, phrases, captions."""

    name: str
    pred: np.ndarray
    gt: np.ndarray
    pred_phrases: list[str]
    gt_phrases: list[str]
    reference: str
    hypothesis: str


def score_videos(
    entries: Sequence[VideoScoreInput],
    *,
    text_sim: Any = "minilm",
    official_compat: bool = False,
    count_all_videos: bool = False,
    with_meteor: bool = False,
    caption_backend: str = "auto",
) -> dict[str, Any]:
    """The SAMA-Bench metrics over videos (shared by both evaluators; the inputs already tokenised for captions).

    Args:
        entries: one :class:`VideoScoreInput` per video.
        text_sim, official_compat: Recall's similarity and pairing.
        count_all_videos: every video in Recall's denominator even under ``official_compat`` (the ``res.json``
            evaluator does so; the per-annotation script drops videos without predictions).
        with_meteor, caption_backend: see :func:`~nips25_sama.caption_metrics.caption_metrics`.

    Returns:
        ``{"mIoU", "mIoU_strict", "Recall", "text_sim", "J", "F", "J&F", "captions", "n_videos"}``.
    """
    import dataclasses

    mious, strict, counts, js, fs = [], [], [], [], []
    refs, hyps = {}, {}
    for e in entries:
        mious.append(miou_greedy(e.pred, e.gt))
        strict.append(miou_greedy(e.pred, e.gt, strict=True))
        c = recall_iou_text(e.pred, e.gt, e.pred_phrases, e.gt_phrases, text_sim=text_sim,
                            official_compat=official_compat)  # fmt: skip
        counts.append(dataclasses.replace(c, counted=True) if count_all_videos else c)
        for i in range(e.gt.shape[0]):
            j, f, _ = jandf(e.pred[i] if i < len(e.pred) else np.zeros_like(e.gt[i]), e.gt[i])
            js.append(j)
            fs.append(f)
        refs[e.name] = [e.reference]
        hyps[e.name] = e.hypothesis
    j, f = float(np.mean(js)) if js else 0.0, float(np.mean(fs)) if fs else 0.0
    return {
        "mIoU": float(np.mean(mious)),
        "mIoU_strict": float(np.mean(strict)),
        "Recall": recall_over_videos(counts),
        "text_sim": text_sim if isinstance(text_sim, str) else getattr(text_sim, "__name__", "callable"),
        "J": j,
        "F": f,
        "J&F": (j + f) / 2,
        "captions": caption_metrics(refs, hyps, with_meteor=with_meteor, backend=caption_backend),
        "n_videos": len(entries),
    }
