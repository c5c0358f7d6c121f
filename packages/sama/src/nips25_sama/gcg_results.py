"""SAMA-Bench-G results in the official per-video ``res.json`` layout: reader and evaluator.

The layout the official evaluator reads (``sunye23/SAMA``, ``projects/llava_sam2/evaluation/
eval_gcg_metrics_demo.py``, ``main``/``evaluate_all_metrics``; field names and rules only)::

    <root>/<dataset_name>/000000/res.json     {"gt_text", "pred_text", "gt_text_cleaned", "pred_text_cleaned",
                                               "gt_phrases": [str], "pred_phrases": [str]}
                                 img_frames/   the video's frames, *.jpg, ordered by the first integer in the name
                                 gt_masks_<k>/mask_<t>.png     object k < len(gt_phrases), frame t
                                 pred_masks_<k>/mask_<t>.png   object k < len(pred_phrases), frame t

Official rules kept: a folder without ``res.json`` or without ``img_frames/`` is skipped (and counted in
:attr:`GcgResults.skipped`); the number of frames is the number of ``.jpg`` files; a missing ``mask_<t>.png`` is an
empty frame; a mask pixel is foreground when non-zero. Per-video mIoU is the greedy one-to-one IoU of
:func:`~nips25_sama.segmentation_metrics.miou_greedy`, averaged over videos; Recall counts every video's
``gt_phrases``; the caption metrics compare ``pred_text_cleaned`` with ``gt_text_cleaned`` (each cut to 2,000
characters) over the whole set as one corpus. Where the official script is silent or silently wrong, this reader
raises instead: a ``res.json`` lacking a field or with a mistyped one (official: the video is dropped), and a
missing ``gt_masks_<k>``/``pred_masks_<k>`` folder (official: the object is dropped, which shifts the pairing of
phrases and masks).
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nips25_sama._validation import main_process

logger = logging.getLogger(__name__)

__all__ = ["GcgResult", "GcgResults", "evaluate_gcg_results", "load_gcg_results", "write_gcg_results"]

RES_FIELDS = ("gt_text", "pred_text", "gt_text_cleaned", "pred_text_cleaned", "gt_phrases", "pred_phrases")
MAX_CAPTION_CHARS = 2000


@dataclass
class GcgResult:
    """One video's ``res.json`` folder: texts, phrases and ``(K, T, H, W)`` bool mask volumes."""

    name: str
    gt_text: str
    pred_text: str
    gt_text_cleaned: str
    pred_text_cleaned: str
    gt_phrases: list[str]
    pred_phrases: list[str]
    gt_masks: np.ndarray
    pred_masks: np.ndarray


@dataclass
class GcgResults:
    """The videos of a ``res.json`` tree, in folder order, and the folder names the official rules skip."""

    videos: list[GcgResult]
    skipped: list[str] = field(default_factory=list)


def _first_int(name: str) -> int:
    m = re.search(r"\d+", name)
    if m is None:
        raise ValueError(f"frame file {name!r} has no number in its name (the official order needs one)")
    return int(m.group())


def _read_image(path: Path, what: str) -> np.ndarray:
    """The pixels of one image file; a file no image reader can open raises naming it."""
    from skimage import io

    try:
        return np.asarray(io.imread(path))
    except (OSError, ValueError, SyntaxError) as exc:  # imageio: OSError/ValueError; PIL: SyntaxError on bad headers
        first_line = (str(exc).splitlines() or [""])[0]
        raise ValueError(
            f"{path}: cannot be read as a {what} image ({type(exc).__name__}: {first_line[:120]})"
        ) from exc


def _volumes(folder: Path, prefix: str, n_obj: int, n_frames: int, hw: tuple[int, int]) -> np.ndarray:

    out = np.zeros((n_obj, n_frames, *hw), dtype=bool)
    for k in range(n_obj):
        obj = folder / f"{prefix}_{k}"
        if not obj.is_dir():
            raise ValueError(f"{folder / 'res.json'}: {len(range(n_obj))} phrases but no folder {obj.name}/ "
                             f"(one {prefix}_<k>/ per phrase is expected)")  # fmt: skip
        for t in range(n_frames):
            path = obj / f"mask_{t}.png"
            if not path.is_file():
                continue
            raw = _read_image(path, "mask")
            m = np.asarray(raw.any(axis=-1) if raw.ndim == 3 else raw)
            if m.shape != hw:
                raise ValueError(f"{path}: mask of shape {m.shape} differs from the frame size {hw}")
            out[k, t] = m != 0
    return out


def load_gcg_results(root: str | os.PathLike[str], *, dataset_name: str | None = "video_gcg") -> GcgResults:
    """Read a tree of per-video ``res.json`` folders (the layout in the module docstring).

    Args:
        root: the official ``--vis_save_path``.
        dataset_name: the sub-folder holding the video folders (``"video_gcg"`` as released); ``None`` when
            ``root`` itself holds them.

    Returns:
        :class:`GcgResults` over the six-digit video folders, in numeric order.

    Raises:
        FileNotFoundError: if the folder of video folders does not exist.
        ValueError: naming the file and field, for invalid JSON, a missing or mistyped ``res.json`` field, a missing
            mask folder, or a mask whose size differs from the frames.

    Example:
        >>> import json, tempfile, pathlib
        >>> import numpy as np
        >>> from skimage import io
        >>> d = pathlib.Path(tempfile.mkdtemp()) / "video_gcg" / "000000"
        >>> for sub in ("img_frames", "gt_masks_0", "pred_masks_0"):
        ...     (d / sub).mkdir(parents=True)
        >>> io.imsave(d / "img_frames" / "0.jpg", np.zeros((4, 4, 3), np.uint8), check_contrast=False)
        >>> m = np.zeros((4, 4), np.uint8); m[:2] = 255
        >>> io.imsave(d / "gt_masks_0" / "mask_0.png", m, check_contrast=False)
        >>> io.imsave(d / "pred_masks_0" / "mask_0.png", m, check_contrast=False)
        >>> res = {"gt_text": "", "pred_text": "", "gt_text_cleaned": "a cat", "pred_text_cleaned": "a cat",
        ...        "gt_phrases": ["a cat"], "pred_phrases": ["a cat"]}
        >>> _ = (d / "res.json").write_text(json.dumps(res))
        >>> r = load_gcg_results(d.parent.parent)
        >>> r.videos[0].gt_masks.shape, int(r.videos[0].pred_masks.sum()), r.skipped
        ((1, 1, 4, 4), 8, [])
    """

    base = Path(root) / dataset_name if dataset_name else Path(root)
    if not base.is_dir():
        raise FileNotFoundError(f"root: {base} is not a directory of per-video res.json folders")
    folders = sorted((p for p in base.iterdir() if p.is_dir() and re.fullmatch(r"\d{6}", p.name)),
                     key=lambda p: int(p.name))  # fmt: skip
    videos, skipped = [], []
    for folder in folders:
        res_path, frames_dir = folder / "res.json", folder / "img_frames"
        if not res_path.is_file() or not frames_dir.is_dir():
            logger.warning("%s: no res.json or img_frames/; skipped as the official evaluator does", folder)
            skipped.append(folder.name)
            continue
        try:
            res = json.loads(res_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{res_path}: not valid JSON ({exc})") from exc
        if not isinstance(res, dict):
            raise ValueError(f"{res_path}: must hold a JSON object with the fields {RES_FIELDS}")
        for key in RES_FIELDS:
            if key not in res:
                raise ValueError(f"{res_path}: lacks the field {key!r}")
            want_list = key.endswith("phrases")
            ok = (isinstance(res[key], list) and all(isinstance(s, str) for s in res[key])) if want_list else (
                isinstance(res[key], str))  # fmt: skip
            if not ok:
                kind = "a list of strings" if want_list else "a string"
                raise ValueError(f"{res_path}: field {key!r} must be {kind}, got {res[key]!r:.60}")
        frames = sorted((f for f in os.listdir(frames_dir) if f.endswith(".jpg")), key=_first_int)
        hw = tuple(_read_image(frames_dir / frames[0], "frame").shape[:2]) if frames else (1, 1)
        videos.append(GcgResult(
            name=folder.name, **{k: res[k] for k in RES_FIELDS},
            gt_masks=_volumes(folder, "gt_masks", len(res["gt_phrases"]), len(frames), hw),
            pred_masks=_volumes(folder, "pred_masks", len(res["pred_phrases"]), len(frames), hw),
        ))  # fmt: skip
    return GcgResults(videos=videos, skipped=skipped)


def write_gcg_results(
    root: str | os.PathLike[str],
    videos: list[dict[str, Any]],
    *,
    dataset_name: str = "video_gcg",
    is_main_process: bool | None = None,
) -> Path:
    """Write videos in the ``res.json`` layout (frames as ``img_frames/<t>.jpg``, masks as 0/255 PNG).

    Args:
        root: the target ``vis_save_path``.
        videos: mappings with the six :data:`RES_FIELDS`, ``frames`` ``(T, H, W, 3)`` uint8, ``gt_masks``
            ``(M, T, H, W)`` and ``pred_masks`` ``(N, T, H, W)`` bool (one volume per phrase).
        dataset_name: the sub-folder of the video folders.
        is_main_process: whether this process writes (default: rank 0 of a launch only, see
            :func:`~nips25_sama.aggregator.SpatioTemporalAggregator.save_pretrained`); other processes write nothing.

    Returns:
        The folder holding the video folders.

    Raises:
        ValueError: naming the video, if frames or masks have the wrong shape or count.
    """
    from skimage import io

    base = Path(root) / dataset_name
    if not main_process(is_main_process):
        return base
    for idx, v in enumerate(videos):
        folder = base / f"{idx:06d}"
        frames = np.asarray(v["frames"])
        if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
            raise ValueError(f"videos[{idx}]: frames must be (T, H, W, 3) uint8, got {frames.shape}")
        (folder / "img_frames").mkdir(parents=True, exist_ok=True)
        for t, frame in enumerate(frames):
            io.imsave(folder / "img_frames" / f"{t}.jpg", frame, check_contrast=False)
        for prefix, phrases in (("gt_masks", "gt_phrases"), ("pred_masks", "pred_phrases")):
            vols = np.asarray(v[prefix], dtype=bool).reshape(-1, *frames.shape[:3])
            if len(vols) != len(v[phrases]):
                raise ValueError(f"videos[{idx}]: {len(vols)} {prefix} volumes for {len(v[phrases])} {phrases}")
            for k, vol in enumerate(vols):
                (folder / f"{prefix}_{k}").mkdir(exist_ok=True)
                for t, m in enumerate(vol):
                    io.imsave(folder / f"{prefix}_{k}" / f"mask_{t}.png", m.astype(np.uint8) * 255,
                              check_contrast=False)  # fmt: skip
        res = {k: v[k] if k.endswith("phrases") else str(v[k]) for k in RES_FIELDS}
        res["gt_phrases"], res["pred_phrases"] = list(res["gt_phrases"]), list(res["pred_phrases"])
        (folder / "res.json").write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    return base


def evaluate_gcg_results(
    results: GcgResults,
    *,
    text_sim: Any = "minilm",
    official_compat: bool = False,
    with_meteor: bool = False,
    caption_backend: str = "auto",
) -> dict[str, Any]:
    r"""SAMA-Bench-G metrics of a ``res.json`` tree: mIoU (official and strict), Recall, J&F and caption metrics.

    mIoU is the mean over videos of the greedy per-video mIoU (0 for a video with no predicted or no GT mask);
    Recall is :math:`\sum_v \mathrm{matched}_v / \sum_v |\mathrm{gt\_phrases}_v|` over every read video (the
    corrected one-to-one rule, or the released pairing with ``official_compat=True``); J&F pairs GT object
    :math:`k` with predicted object :math:`k` (an empty volume when missing). Captions: ``pred_text_cleaned``
    against ``gt_text_cleaned``, each cut to 2,000 characters, PTB-tokenised, one corpus
    (:func:`~nips25_sama.caption_metrics.caption_metrics`).

    Args:
        results: from :func:`load_gcg_results`.
        text_sim: Recall's phrase similarity (the paper: bert-base-uncased; see
            :func:`~nips25_sama.segmentation_metrics.recall_iou_text`).
        official_compat: the released script's Recall pairing.
        with_meteor: run METEOR (Java).
        caption_backend: ``"auto"``, ``"pycocoevalcap"`` or ``"ours"`` (see ``caption_metrics``).

    Returns:
        ``{"mIoU", "mIoU_strict", "Recall", "text_sim", "J", "F", "J&F", "captions": {...}, "n_videos",
        "skipped"}``.

    Raises:
        ValueError: if ``results`` holds no video.
    """
    from nips25_sama.caption_metrics import ptb_tokenize
    from nips25_sama.sama_bench import VideoScoreInput, score_videos

    if not results.videos:
        raise ValueError("results must hold at least one video (all folders were skipped or none exist)")
    refs = ptb_tokenize({v.name: [v.gt_text_cleaned[:MAX_CAPTION_CHARS]] for v in results.videos})
    hyps = ptb_tokenize({v.name: [v.pred_text_cleaned[:MAX_CAPTION_CHARS]] for v in results.videos})
    entries = [VideoScoreInput(v.name, v.pred_masks, v.gt_masks, v.pred_phrases, v.gt_phrases, refs[v.name][0],
                               hyps[v.name][0]) for v in results.videos]  # fmt: skip
    out = score_videos(entries, text_sim=text_sim, official_compat=official_compat, count_all_videos=True,
                       with_meteor=with_meteor, caption_backend=caption_backend)  # fmt: skip
    out["skipped"] = list(results.skipped)
    return out
