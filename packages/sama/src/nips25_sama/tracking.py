"""A weight-free tracking baseline for the evaluator demo: the first-frame mask propagated by colour-histogram
back-projection (Swain & Ballard, 1991) inside a search window around the previous mask."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import ndimage

from nips25_sama._validation import check_array, check_int

__all__ = ["describe_motion", "name_by_colour", "track_backprojection"]


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


def name_by_colour(frame: Any, mask: Any, templates: dict[str, Any], *, bins: int = 8) -> str:
    r"""Name the object under ``mask`` by the nearest colour histogram (histogram intersection, Swain & Ballard).

    :math:`\arg\max_n \sum_c \min(h(c), h_n(c))` over the named templates, with the 3-D RGB histograms of
    :func:`track_backprojection` (``bins`` per channel, Laplace-smoothed).

    Args:
        frame: ``(H, W, 3)`` uint8 image.
        mask: ``(H, W)`` bool, non-empty: the object's pixels.
        templates: ``{name: (K, 3) uint8 pixels}`` of each candidate object, non-empty.
        bins: histogram bins per channel, ``>= 2``.

    Returns:
        The best template's name (the first in ``templates`` order on an exact tie).

    Raises:
        ValueError: for an empty mask or ``templates``, or mismatched shapes.

    Example:
        >>> img = np.zeros((4, 4, 3), np.uint8); img[:2] = (250, 10, 10)
        >>> m = np.zeros((4, 4), bool); m[:2] = True
        >>> red, blue = np.array([[240, 0, 0]], np.uint8), np.array([[0, 0, 240]], np.uint8)
        >>> name_by_colour(img, m, {"red": red, "blue": blue})
        'red'
    """
    f = check_array("frame", frame, ndim=3, dtype="uint8")
    m = check_array("mask", mask, ndim=2, dtype="bool")
    bins = check_int("bins", bins, minimum=2)
    if f.shape[:2] != m.shape or f.shape[2] != 3:
        raise ValueError(f"frame must be (H, W, 3) and mask (H, W) of the same size, got {f.shape} and {m.shape}")
    if not m.any():
        raise ValueError("mask must select at least one pixel")
    if not templates:
        raise ValueError("templates must name at least one object")
    h = _hist(f[m], bins)
    scores = {n: float(np.minimum(h, _hist(np.asarray(px, dtype=np.uint8).reshape(-1, 3), bins)).sum())
              for n, px in templates.items()}  # fmt: skip
    return max(scores, key=lambda n: scores[n])


def describe_motion(volume: Any) -> str:
    """``"moves left|right|up|down"`` from the centroid shift of a ``(T, H, W)`` mask volume, first to last frame.

    The larger of the vertical and horizontal shifts names the direction; ``"stays"`` when both are under half a
    pixel or the first or last frame is empty.

    Example:
        >>> v = np.zeros((2, 4, 4), bool); v[0, 0, 0] = v[1, 0, 3] = True
        >>> describe_motion(v)
        'moves right'
    """
    vol = check_array("volume", volume, ndim=3, dtype="bool")
    ys, xs = np.nonzero(vol[0])
    ye, xe = np.nonzero(vol[-1])
    if not len(ys) or not len(ye):
        return "stays"
    dy, dx = ye.mean() - ys.mean(), xe.mean() - xs.mean()
    if max(abs(dy), abs(dx)) < 0.5:
        return "stays"
    return "moves " + (("down" if dy > 0 else "up") if abs(dy) > abs(dx) else ("right" if dx > 0 else "left"))
