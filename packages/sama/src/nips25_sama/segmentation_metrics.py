r"""SAMA-Bench grounding metrics: greedy one-to-one mIoU, Recall with IoU and text-similarity thresholds, and the
DAVIS J&F of video object segmentation.

Masks are boolean volumes ``(T, H, W)``; a set of objects is ``(N, T, H, W)`` (or a sequence of volumes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.ndimage import binary_dilation
from skimage.morphology import disk

from nips25_sama._validation import check_array

__all__ = [
    "RecallCounts",
    "boundary_map",
    "iou_matrix",
    "jandf",
    "miou_greedy",
    "recall_iou_text",
    "recall_over_videos",
]


def _volumes(name: str, value: Any) -> np.ndarray:
    if isinstance(value, (list, tuple)) and len(value) == 0:
        return np.zeros((0, 1, 1, 1), dtype=bool)
    arr = check_array(name, value, ndim=(3, 4), dtype="bool")
    return arr[:, None] if arr.ndim == 3 else arr  # (N, H, W) -> (N, 1, H, W)


def iou_matrix(pred: Any, gt: Any) -> np.ndarray:
    r"""IoU of every predicted and ground-truth volume: :math:`|P_i \cap G_j| / |P_i \cup G_j|` (0 if both empty).

    Args:
        pred: ``(N, T, H, W)`` (or ``(N, H, W)``) boolean masks.
        gt: ``(M, T, H, W)`` (or ``(M, H, W)``) boolean masks, same ``(T, H, W)``.

    Returns:
        ``(N, M)`` float64.

    Raises:
        ValueError: if the volume shapes differ or masks are not binary.
    """
    p, g = _volumes("pred", pred), _volumes("gt", gt)
    if p.shape[0] and g.shape[0] and p.shape[1:] != g.shape[1:]:
        raise ValueError(f"pred volumes {p.shape[1:]} and gt volumes {g.shape[1:]} must have the same (T, H, W)")
    if p.shape[0] == 0 or g.shape[0] == 0:
        return np.zeros((p.shape[0], g.shape[0]))
    pf = p.reshape(p.shape[0], -1).astype(np.float64)
    gf = g.reshape(g.shape[0], -1).astype(np.float64)
    inter = pf @ gf.T
    union = pf.sum(1)[:, None] + gf.sum(1)[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def _greedy_pairs(scores: np.ndarray, allowed: np.ndarray | None = None) -> list[tuple[int, int]]:
    """Repeatedly take the largest remaining score (> 0 and allowed), removing its row and column."""
    s = np.where(allowed, scores, 0.0) if allowed is not None else scores.copy()
    pairs: list[tuple[int, int]] = []
    while s.size and s.max() > 0:
        i, j = np.unravel_index(int(np.argmax(s)), s.shape)
        pairs.append((int(i), int(j)))
        s[i, :] = 0.0
        s[:, j] = 0.0
    return pairs


def miou_greedy(pred: Any, gt: Any, *, strict: bool = False) -> float:
    r"""Per-video mIoU of SAMA-Bench: greedy one-to-one pairing by the largest remaining IoU.

    Pairs are taken while the largest remaining IoU is > 0. The official score averages over the matched pairs only
    (extra or missing masks are not penalised); ``strict=True`` divides the matched IoU sum by
    :math:`\max(N, M)` instead. Either side empty gives 0.

    Args:
        pred: ``(N, T, H, W)`` predicted volumes.
        gt: ``(M, T, H, W)`` ground-truth volumes.
        strict: the penalised variant.

    Returns:
        The mIoU in ``[0, 1]``.

    Example:
        >>> g = np.zeros((2, 1, 2, 2), bool); g[0, 0, 0] = True; g[1, 0, 1] = True
        >>> p = g.copy(); p[1, 0, 0, 0] = True     # one extra pixel on the second object: IoU 2/3
        >>> round(miou_greedy(p, g), 4)                # (1 + 2/3) / 2
        0.8333
    """
    ious = iou_matrix(pred, gt)
    if ious.size == 0:
        return 0.0
    pairs = _greedy_pairs(ious)
    if not pairs:
        return 0.0
    total = float(sum(ious[i, j] for i, j in pairs))
    return total / max(ious.shape) if strict else total / len(pairs)


@dataclass(frozen=True)
class RecallCounts:
    """Matched pairs and ground-truth phrases of one video (``counted=False``: left out of the denominator)."""

    matched: int
    n_gt: int
    counted: bool = True


TextSim = Callable[[Sequence[str], Sequence[str]], np.ndarray]


def recall_iou_text(
    pred: Any,
    gt: Any,
    pred_phrases: Sequence[str],
    gt_phrases: Sequence[str],
    *,
    text_sim: str | TextSim = "minilm",
    iou_thr: float = 0.5,
    text_thr: float = 0.5,
    official_compat: bool = False,
) -> RecallCounts:
    r"""Recall counts of one video: a GT object is recalled by a prediction with IoU :math:`\ge` ``iou_thr`` and
    phrase similarity :math:`\ge` ``text_thr``, one-to-one, greedy by IoU.

    The corrected rule (default) pairs greedily by IoU among the pairs that pass both thresholds, with the text
    matrix read as (pred, gt). ``official_compat=True`` reproduces the released script: its text matrix is (gt,
    pred) but is read at the (pred, gt) index of the IoU matrix after both are cropped to a common shape, the loop
    stops at the first pair that fails, and a video without predictions leaves the denominator.

    Args:
        pred: ``(N, T, H, W)`` predicted volumes, one per predicted phrase.
        gt: ``(M, T, H, W)`` ground-truth volumes, one per GT phrase.
        pred_phrases, gt_phrases: the phrases (``len == N``, ``len == M``).
        text_sim: ``"minilm"``, ``"tfidf"``, ``"exact"`` or a callable ``(a, b) -> (len(a), len(b))`` similarity.
        iou_thr, text_thr: thresholds in ``[0, 1]``.
        official_compat: the released script's pairing.

    Returns:
        :class:`RecallCounts`.

    Raises:
        ValueError: if phrase counts differ from mask counts or thresholds are out of range.
    """
    from nips25_sama.text_similarity import similarity_matrix

    for name, thr in (("iou_thr", iou_thr), ("text_thr", text_thr)):
        if not 0.0 <= float(thr) <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {thr}")
    ious = iou_matrix(pred, gt)
    n, m = ious.shape
    if len(pred_phrases) != n:
        raise ValueError(f"pred_phrases must have {n} entries (one per predicted mask), got {len(pred_phrases)}")
    if len(gt_phrases) != m:
        raise ValueError(f"gt_phrases must have {m} entries (one per GT mask), got {len(gt_phrases)}")
    if official_compat:
        if n == 0:
            return RecallCounts(matched=0, n_gt=m, counted=False)
        sims_gp = similarity_matrix(list(gt_phrases), list(pred_phrases), text_sim)  # (M, N), as released
        rows, cols = min(ious.shape[0], sims_gp.shape[0]), min(ious.shape[1], sims_gp.shape[1])
        iou_c, sim_c = ious[:rows, :cols].copy(), sims_gp[:rows, :cols].copy()
        matched = 0
        while iou_c.size:
            i, j = np.unravel_index(int(np.argmax(iou_c)), iou_c.shape)
            if iou_c[i, j] < iou_thr or sim_c[i, j] < text_thr:
                break
            matched += 1
            iou_c[i, :] = iou_c[:, j] = 0.0
            sim_c[i, :] = sim_c[:, j] = 0.0
        return RecallCounts(matched=matched, n_gt=m)
    if n == 0 or m == 0:
        return RecallCounts(matched=0, n_gt=m)
    sims = similarity_matrix(list(pred_phrases), list(gt_phrases), text_sim)  # (N, M)
    allowed = (ious >= iou_thr) & (sims >= text_thr)
    return RecallCounts(matched=len(_greedy_pairs(np.where(allowed, ious + 1e-12, 0.0))), n_gt=m)


def recall_over_videos(counts: Sequence[RecallCounts]) -> float:
    """Recall over a benchmark: ``sum(matched) / sum(n_gt)`` over the counted videos (0 if none)."""
    if not all(isinstance(c, RecallCounts) for c in counts):
        raise TypeError("counts must hold RecallCounts")
    num = sum(c.matched for c in counts if c.counted)
    den = sum(c.n_gt for c in counts if c.counted)
    return num / den if den else 0.0


def boundary_map(mask: np.ndarray) -> np.ndarray:
    """One-pixel boundary of a binary mask (DAVIS ``seg2bmap`` at the mask's own resolution).

    A pixel is on the boundary when it differs from its right, lower or lower-right neighbour.
    """
    seg = check_array("mask", mask, ndim=2, dtype="bool")
    e = np.zeros_like(seg)
    s = np.zeros_like(seg)
    se = np.zeros_like(seg)
    e[:, :-1] = seg[:, 1:]
    s[:-1, :] = seg[1:, :]
    se[:-1, :-1] = seg[1:, 1:]
    b = (seg ^ e) | (seg ^ s) | (seg ^ se)
    b[-1, :] = seg[-1, :] ^ e[-1, :]
    b[:, -1] = seg[:, -1] ^ s[:, -1]
    b[-1, -1] = False
    return b


def _f_frame(pred: np.ndarray, gt: np.ndarray, bound_th: float) -> float:
    bound_pix = bound_th if bound_th >= 1 else int(np.ceil(bound_th * np.linalg.norm(pred.shape)))
    fg, gb = boundary_map(pred), boundary_map(gt)
    footprint = disk(bound_pix)
    fg_dil = binary_dilation(fg, structure=footprint)
    gt_dil = binary_dilation(gb, structure=footprint)
    n_fg, n_gt = fg.sum(), gb.sum()
    if n_fg == 0 and n_gt > 0:
        precision, recall = 1.0, 0.0
    elif n_fg > 0 and n_gt == 0:
        precision, recall = 0.0, 1.0
    elif n_fg == 0 and n_gt == 0:
        precision, recall = 1.0, 1.0
    else:
        precision = float((fg & gt_dil).sum() / n_fg)
        recall = float((gb & fg_dil).sum() / n_gt)
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def jandf(pred: Any, gt: Any, *, bound_th: float = 0.008) -> tuple[float, float, float]:
    r"""DAVIS region similarity J, contour accuracy F and their mean for one object over a video.

    :math:`J = \frac{1}{T}\sum_t |P_t \cap G_t| / |P_t \cup G_t|` (1 when both are empty);
    :math:`F = \frac{1}{T}\sum_t 2 P_c R_c / (P_c + R_c)` with boundary precision/recall under a tolerance of
    :math:`\lceil 0.008 \cdot \text{diagonal} \rceil` pixels (Perazzi et al., CVPR 2016).

    Args:
        pred: ``(T, H, W)`` (or ``(H, W)``) boolean mask.
        gt: same shape.
        bound_th: boundary tolerance, a fraction of the diagonal (< 1) or pixels (>= 1).

    Returns:
        ``(J, F, (J + F) / 2)``.

    Raises:
        ValueError: if the shapes differ, masks are not binary, or ``bound_th`` is not a finite number > 0.

    Example:
        >>> m = np.zeros((1, 8, 8), bool); m[0, 2:6, 2:6] = True
        >>> jandf(m, m)
        (1.0, 1.0, 1.0)
    """
    p = check_array("pred", pred, ndim=(2, 3), dtype="bool")
    g = check_array("gt", gt, ndim=(2, 3), dtype="bool")
    if p.shape != g.shape:
        raise ValueError(f"pred {p.shape} and gt {g.shape} must have the same shape")
    if p.size == 0:
        raise ValueError("pred must be non-empty")
    if isinstance(bound_th, bool) or not isinstance(bound_th, (int, float)) or not 0 < bound_th < np.inf:
        raise ValueError(f"bound_th must be a finite number > 0, got {bound_th!r}")
    if p.ndim == 2:
        p, g = p[None], g[None]
    js, fs = [], []
    for pt, gt_t in zip(p, g, strict=True):
        union = (pt | gt_t).sum()
        js.append(1.0 if union == 0 else float((pt & gt_t).sum() / union))
        fs.append(_f_frame(pt, gt_t, bound_th))
    j, f = float(np.mean(js)), float(np.mean(fs))
    return j, f, (j + f) / 2
