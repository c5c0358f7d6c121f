r"""Multi-window inference of a clip-based video depth model over a sequence longer than its window.

Video Depth Anything (VDA) predicts a clip of at most 32 frames jointly. A longer sequence is cut into windows of
``window`` frames that advance by ``window - overlap`` frames, ``overlap = len(anchors) + n_interp``. Window
:math:`j > 0` is fed

* the frames the previous window held at the positions ``anchors`` (VDA: 0 and 12; the first is therefore always
  frame 0 of the sequence), used to align window :math:`j` to the sequence's scale;
* then the next ``window - len(anchors)`` frames of the sequence, whose first ``n_interp`` (VDA: 8) repeat the last
  ``n_interp`` frames of window :math:`j - 1`.

Window :math:`j`'s outputs are mapped by the scale and shift :math:`(s_j, t_j)` minimising
:math:`\sum (s_j \hat d_j + t_j - d_{ref})^2` over the pixels of its anchor frames, against their aligned outputs
from the window that first produced them (the shift is 0 with ``align="scale"``; nothing is fitted with ``"none"``,
for metric models). The ``n_interp`` repeated frames are blended linearly from the previous window's values to the
new ones (weights :math:`k / (n_{interp} - 1)`); the sequence is padded with its last frame to fill the last window.
Facts from VDA's ``video_depth_anything/video_depth.py`` (``INFER_LEN = 32``, ``OVERLAP = 10``,
``KEYFRAMES = [0, 12, 24..31]``, ``INTERP_LEN = 8``); the code here is our own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from nips25_st2360d._validation import check_array, check_choice, check_int

__all__ = [
    "VDA_ANCHORS",
    "VDA_INTERP",
    "VDA_WINDOW",
    "WINDOW_ALIGNMENTS",
    "window_plan",
    "windowed_inference",
]

VDA_WINDOW = 32
VDA_ANCHORS = (0, 12)
VDA_INTERP = 8
WINDOW_ALIGNMENTS = ("affine", "scale", "none")


def _check_plan_args(window: int, anchors: Sequence[int], n_interp: int) -> tuple[int, tuple[int, ...], int]:
    window = check_int("window", window, low=2)
    n_interp = check_int("n_interp", n_interp, low=2)
    a = tuple(check_int("anchors", v, low=0) for v in anchors)
    if not a or list(a) != sorted(set(a)):
        raise ValueError(f"anchors must be a non-empty, strictly increasing sequence of positions, got {anchors}")
    if a[-1] >= window - n_interp:
        raise ValueError(f"anchors must lie before the window's last n_interp={n_interp} positions "
                         f"(< {window - n_interp}), got {a}")  # fmt: skip
    if len(a) + n_interp >= window:
        raise ValueError(f"len(anchors) + n_interp must be < window={window}, got {len(a)} + {n_interp}")
    return window, a, n_interp


def window_plan(
    n_frames: int, *, window: int = VDA_WINDOW, anchors: Sequence[int] = VDA_ANCHORS, n_interp: int = VDA_INTERP
) -> list[list[int]]:
    """Sequence positions fed to each window (positions ``>= n_frames`` are padding copies of the last frame).

    Args:
        n_frames: sequence length ``T >= 1``.
        window: frames per window (VDA: 32).
        anchors: positions of a window re-fed to the next one for alignment (VDA: ``(0, 12)``).
        n_interp: frames shared by consecutive windows and blended (VDA: 8).

    Returns:
        One list of ``window`` positions per window (a single list of ``T`` positions when ``T <= window``).

    Raises:
        ValueError: on out-of-range arguments.

    Example:
        >>> [len(p) for p in window_plan(60)], window_plan(60)[1][:4]
        ([32, 32, 32], [0, 12, 24, 25])
    """
    n = check_int("n_frames", n_frames, low=1)
    window, a, n_interp = _check_plan_args(window, anchors, n_interp)
    if n <= window:
        return [list(range(n))]
    step = window - len(a) - n_interp
    plans = [list(range(window))]
    start = 0
    while plans[-1][-1] < n - 1:
        start += step
        prev = plans[-1]
        plans.append([prev[p] for p in a] + list(range(start + len(a), start + window)))
    return plans


def windowed_inference(
    run_window: Callable[[np.ndarray], np.ndarray],
    frames: np.ndarray,
    *,
    window: int = VDA_WINDOW,
    anchors: Sequence[int] = VDA_ANCHORS,
    n_interp: int = VDA_INTERP,
    align: str = "affine",
) -> np.ndarray:
    r"""Run a clip model over a sequence of any length, window by window, aligned to the first window's scale.

    Args:
        run_window: maps a clip ``(t, ...)`` of at most ``window`` frames to ``(t, h, w)`` predictions.
        frames: ``(T, ...)`` the sequence (e.g. ``(T, s, s, 3)`` uint8 frames).
        window, anchors, n_interp: see :func:`window_plan` (defaults: VDA's).
        align: ``"affine"`` (scale and shift: relative disparity, VDA), ``"scale"`` or ``"none"`` (metric models).

    Returns:
        ``(T, h, w)`` float32 predictions in the scale (and shift) of the first window; affine outputs are floored
        at :math:`10^{-6}` times their maximum to stay positive.

    Raises:
        ValueError: on bad arguments, or a ``run_window`` output of the wrong shape or with NaN/inf.
        TypeError: if ``run_window`` is not callable.

    Example:
        >>> seq = np.arange(1.0, 41.0)[:, None, None] * np.ones((40, 2, 2))
        >>> jumps = iter([(1.0, 0.0), (3.0, 2.0)])  # each window has its own scale and shift
        >>> def clip(x):
        ...     s, t = next(jumps)
        ...     return s * x + t
        >>> bool(np.allclose(windowed_inference(clip, seq), seq))
        True
    """
    if not callable(run_window):
        raise TypeError(f"run_window must be callable, got {type(run_window).__name__}")
    if not isinstance(frames, np.ndarray) or frames.ndim < 1 or len(frames) == 0:
        raise ValueError(f"frames must be a non-empty numpy array (T, ...), got {getattr(frames, 'shape', frames)}")
    check_choice("align", align, WINDOW_ALIGNMENTS)
    plans = window_plan(len(frames), window=window, anchors=anchors, n_interp=n_interp)
    n, n_anchor = len(frames), len(tuple(anchors))
    ref: dict[int, np.ndarray] = {}
    out: dict[int, np.ndarray] = {}
    shape: tuple[int, ...] | None = None
    for j, plan in enumerate(plans):
        clip = frames[np.minimum(plan, n - 1)]
        raw = check_array("run_window output", np.asarray(run_window(clip)), ndim=3).astype(np.float64)
        if len(raw) != len(plan) or (shape is not None and raw.shape[1:] != shape):
            raise ValueError(f"run_window output must have shape ({len(plan)}, h, w), got {raw.shape}")
        shape = raw.shape[1:]
        aligned = raw if j == 0 else _align(raw, np.stack([ref[p] for p in plan[:n_anchor]]), n_anchor, align)
        for k, p in enumerate(plan):
            if j > 0 and k < n_anchor:
                continue
            ref.setdefault(p, aligned[k])
            if j > 0 and k < n_anchor + n_interp:
                w = (k - n_anchor) / (n_interp - 1)
                out[p] = (1.0 - w) * out[p] + w * aligned[k]
            else:
                out[p] = aligned[k]
    return np.stack([out[p] for p in range(n)]).astype(np.float32)


def _align(raw: np.ndarray, target: np.ndarray, n_anchor: int, align: str) -> np.ndarray:
    """``raw`` mapped by the least-squares scale (and shift) taking its anchor frames onto ``target``."""
    if align == "none":
        return raw
    p, g = raw[:n_anchor].ravel(), target.ravel()
    if align == "scale":
        s, t = float(np.dot(p, g) / max(float(np.dot(p, p)), 1e-300)), 0.0
    else:
        (s, t), *_ = np.linalg.lstsq(np.stack([p, np.ones_like(p)], axis=1), g, rcond=None)
    aligned = s * raw + t
    if align == "affine":
        aligned = np.maximum(aligned, 1e-6 * max(float(aligned.max()), 1e-300))
    return aligned
