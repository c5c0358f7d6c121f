"""A weight-free tracking baseline for the evaluator demo: the first-frame mask propagated by colour-histogram
back-projection (Swain & Ballard, 1991) inside a search window around the previous mask."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import ndimage

from nips25_sama._validation import check_array, check_int

__all__ = ["track_backprojection"]


def _hist(pixels: np.ndarray, bins: int) -> np.ndarray:
    idx = (pixels.astype(np.int64) * bins // 256) @ np.array([bins * bins, bins, 1])
    h = np.bincount(idx, minlength=bins**3).astype(np.float64) + 1.0  # Laplace smoothing
    return h / h.sum()


def track_backprojection(frames: Any, first_mask: Any, *, bins: int = 8, margin: int = 8) -> np.ndarray:
    r"""Propagate ``first_mask`` through ``frames`` by histogram back-projection.

    Object and background colour histograms :math:`h_o, h_b` come from frame 0; in frame :math:`t` a pixel is object
    when :math:`h_o(c)/(h_o(c)+h_b(c)) > 1/2` inside the previous mask's box grown by ``margin``; the largest
    connected component is kept (the previous mask when nothing survives).

    Args:
        frames: ``(T, H, W, 3)`` uint8 video.
        first_mask: ``(H, W)`` bool mask of the object in frame 0.
        bins: histogram bins per channel.
        margin: search-window growth in pixels.

    Returns:
        ``(T, H, W)`` bool masks (frame 0 is ``first_mask``).

    Raises:
        ValueError: on shape mismatches, an empty ``first_mask`` or out-of-range hyper-parameters.
    """
    f = check_array("frames", frames, ndim=4, dtype="float")
    if f.shape[-1] != 3 or f.min() < 0 or f.max() > 255:
        raise ValueError(f"frames must be (T, H, W, 3) with values in [0, 255], got shape {f.shape}")
    m0 = check_array("first_mask", first_mask, ndim=2, dtype="bool")
    if m0.shape != f.shape[1:3]:
        raise ValueError(f"first_mask must have shape {f.shape[1:3]}, got {m0.shape}")
    if not m0.any():
        raise ValueError("first_mask must be non-empty")
    check_int("bins", bins, minimum=2)
    check_int("margin", margin, minimum=0)
    video = f.astype(np.uint8)
    h_obj = _hist(video[0][m0], bins)
    h_bg = _hist(video[0][~m0], bins)
    ratio = h_obj / (h_obj + h_bg)
    out = np.zeros(f.shape[:3], dtype=bool)
    out[0] = m0
    for t in range(1, f.shape[0]):
        prev = out[t - 1]
        rows, cols = np.nonzero(prev)
        r0, r1 = max(0, rows.min() - margin), min(f.shape[1], rows.max() + margin + 1)
        c0, c1 = max(0, cols.min() - margin), min(f.shape[2], cols.max() + margin + 1)
        win = video[t, r0:r1, c0:c1].reshape(-1, 3).astype(np.int64)
        idx = (win * bins // 256) @ np.array([bins * bins, bins, 1])
        fg = (ratio[idx] > 0.5).reshape(r1 - r0, c1 - c0)
        fg = ndimage.binary_opening(fg, iterations=1)
        labels, n = ndimage.label(fg)
        if n == 0:
            out[t] = prev
            continue
        sizes = ndimage.sum(fg, labels, index=np.arange(1, n + 1))
        keep = labels == (int(np.argmax(sizes)) + 1)
        out[t, r0:r1, c0:c1] = ndimage.binary_fill_holes(keep)
    return out
