r"""Standard monocular depth metrics (UniFuse / PanDA / Depth Anywhere evaluation protocol).

On the valid pixels :math:`V = \{ d_{min} < g \le d_{max} \} \cap M` with the prediction :math:`p` aligned (see
:mod:`nips25_st2360d.alignment`) and clipped to :math:`[d_{min}, d_{max}]`:

.. math::
    \mathrm{AbsRel} = \overline{|p - g| / g},\quad \mathrm{SqRel} = \overline{(p - g)^2 / g},\quad
    \mathrm{RMSE} = \sqrt{\overline{(p - g)^2}},\quad \mathrm{RMSE_{log}} = \sqrt{\overline{(\log p - \log g)^2}},
    \quad \delta_k = \overline{[\max(p/g, g/p) < 1.25^k]}.
"""

from __future__ import annotations

import numpy as np

from nips25_st2360d._validation import check_real
from nips25_st2360d.alignment import _inputs, align

__all__ = ["METRIC_NAMES", "depth_metrics"]

METRIC_NAMES = ("abs_rel", "sq_rel", "rmse", "rmse_log", "delta1", "delta2", "delta3")


def depth_metrics(
    pred: np.ndarray,
    gt: np.ndarray,
    *,
    mask: np.ndarray | None = None,
    align_mode: str = "none",
    max_depth: float = 10.0,
    min_depth: float = 1e-3,
    clip_pred: bool = True,
) -> dict[str, float]:
    """AbsRel, SqRel, RMSE, RMSE-log and the three delta accuracies of a depth prediction.

    Args:
        pred: predicted depth (or disparity for ``align_mode="disparity_affine"``), any shape, finite.
        gt: ground-truth depth in metres, same shape; pixels outside ``(min_depth, max_depth]`` are ignored.
            NaN or inf (missing returns, sky) are accepted at pixels ``mask`` excludes.
        mask: extra bool mask of pixels to evaluate (e.g. drop the tripod at the bottom of a panorama, or the
            pixels without ground truth).
        align_mode: global alignment before scoring, one of ``none``, ``median``, ``lsq_scale``, ``lsq_affine``,
            ``disparity_affine``; fitted on the valid pixels.
        max_depth: depth cap in metres (10 for indoor sets, the UniFuse convention).
        min_depth: lower bound in metres, ``0 < min_depth < max_depth``.
        clip_pred: clip the aligned prediction to ``[min_depth, max_depth]`` (standard).

    Returns:
        ``{"abs_rel", "sq_rel", "rmse", "rmse_log", "delta1", "delta2", "delta3", "n_valid"}``.

    Raises:
        ValueError: on shape mismatch, NaN/inf in ``pred`` or in ``gt`` inside ``mask``, bad caps, no valid pixel,
            or a non-positive prediction.
        TypeError: if ``mask`` is not a bool array.

    Example:
        >>> gt = np.array([1.0, 2.0, 4.0])
        >>> depth_metrics(1.3 * gt, gt, align_mode="median")["abs_rel"]
        0.0
        >>> holes = np.array([1.0, 2.0, np.inf])  # no return at the last pixel
        >>> depth_metrics(np.array([1.0, 2.0, 5.0]), holes, mask=np.isfinite(holes))["n_valid"]
        2
    """
    max_depth = check_real("max_depth", max_depth, low=0.0, open_low=True)
    min_depth = check_real("min_depth", min_depth, low=0.0, high=max_depth, open_low=True, open_high=True)
    p, g, m = _inputs(pred, gt, mask)
    valid = m & (g > min_depth) & (g <= max_depth)
    if not valid.any():
        raise ValueError(f"no valid pixel: gt must lie in ({min_depth}, {max_depth}] somewhere inside mask")
    if align_mode in ("none", "median", "lsq_scale") and (p[valid] <= 0).any():
        raise ValueError("pred must be positive depth on the valid pixels")
    p = align(p, g, mask=valid, mode=align_mode, min_depth=min_depth)[valid]
    g = g[valid]
    if clip_pred:
        p = np.clip(p, min_depth, max_depth)
    err = p - g
    ratio = np.maximum(p / g, g / p)
    return {
        "abs_rel": float(np.mean(np.abs(err) / g)),
        "sq_rel": float(np.mean(err**2 / g)),
        "rmse": float(np.sqrt(np.mean(err**2))),
        "rmse_log": float(np.sqrt(np.mean((np.log(p) - np.log(g)) ** 2))),
        "delta1": float(np.mean(ratio < 1.25)),
        "delta2": float(np.mean(ratio < 1.25**2)),
        "delta3": float(np.mean(ratio < 1.25**3)),
        "n_valid": int(valid.sum()),
    }
