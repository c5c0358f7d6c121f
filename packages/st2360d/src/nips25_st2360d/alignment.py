r"""Aligning a relative (scale- or affine-invariant) prediction to ground truth before evaluation.

Zero-shot 360° depth is evaluated after one global alignment (UniFuse / PanDA / Depth Anywhere convention):

* ``"none"``: the prediction as is;
* ``"median"``: :math:`s = \operatorname{med}(g) / \operatorname{med}(p)`;
* ``"lsq_scale"``: :math:`s = \sum p g / \sum p^2`;
* ``"lsq_affine"``: :math:`(s, t) = \arg\min \sum (s p + t - g)^2`;
* ``"disparity_affine"``: ``pred`` is a disparity; :math:`(s, t) = \arg\min \sum (s p + t - 1/g)^2` and the
  aligned depth is :math:`1 / (s p + t)` (clipped to ``min_depth``).
"""

from __future__ import annotations

import numpy as np

from nips25_st2360d._validation import check_array, check_choice, check_real

__all__ = ["ALIGN_MODES", "align", "fit_alignment"]

ALIGN_MODES = ("none", "median", "lsq_scale", "lsq_affine", "disparity_affine")


def _inputs(pred: np.ndarray, gt: np.ndarray, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate ``pred``, ``gt`` and ``mask``; ``gt`` may hold NaN/inf only where ``mask`` is False."""
    pred = check_array("pred", pred, ndim=(1, 2, 3))
    gt = check_array("gt", gt, ndim=(1, 2, 3), finite=False)
    if pred.shape != gt.shape:
        raise ValueError(f"pred and gt must have the same shape, got {pred.shape} and {gt.shape}")
    if mask is None:
        m = np.ones(gt.shape, dtype=bool)
    else:
        if not isinstance(mask, np.ndarray) or mask.shape != gt.shape:
            raise ValueError(f"mask must be a bool array of shape {gt.shape}, got {getattr(mask, 'shape', mask)}")
        if mask.dtype != np.bool_:  # a numeric map cast to bool would keep every non-zero pixel (0.5, NaN, ...)
            raise TypeError(f"mask must be a bool array, got dtype {mask.dtype} (pass e.g. `mask > 0` explicitly)")
        m = mask
    g = gt.astype(np.float64)
    bad = ~np.isfinite(g)
    if (bad & m).any():
        where = "inside mask" if mask is not None else "(pass a mask that excludes them)"
        raise ValueError(f"gt holds NaN or inf at {int((bad & m).sum())} pixels {where}")
    g[bad] = 0.0  # never read: outside the mask
    return pred.astype(np.float64), g, m


def fit_alignment(pred: np.ndarray, gt: np.ndarray, *, mask: np.ndarray | None = None, mode: str = "median"
                  ) -> tuple[float, float]:  # fmt: skip
    r"""Fit the global scale :math:`s` and shift :math:`t` of an alignment mode (see the module docstring).

    Args:
        pred: prediction (depth, or disparity for ``"disparity_affine"``), any shape, finite.
        gt: ground-truth depth, same shape, positive where ``mask`` is set; NaN/inf allowed where it is not
            (e.g. sky or missing returns marked inf in released ground truth).
        mask: bool array of pixels used for the fit (default: all).
        mode: one of :data:`ALIGN_MODES`.

    Returns:
        ``(scale, shift)``; the shift is 0 for scale-only modes.

    Raises:
        ValueError: on shape mismatch, NaN/inf, an empty mask, non-positive gt or prediction where needed.
        TypeError: if ``mask`` is not a bool array.

    Example:
        >>> gt = np.array([1.0, 2.0, 4.0])
        >>> [round(v, 6) for v in fit_alignment((gt - 0.5) / 2.0, gt, mode="lsq_affine")]
        [2.0, 0.5]
    """
    check_choice("mode", mode, ALIGN_MODES)
    p, g, m = _inputs(pred, gt, mask)
    if mode == "none":
        return 1.0, 0.0
    if not m.any():
        raise ValueError("mask selects no pixel to fit the alignment on")
    p, g = p[m], g[m]
    if (g <= 0).any():
        raise ValueError("gt must be positive on the masked pixels")
    if mode == "median":
        med = float(np.median(p))
        if med <= 0:
            raise ValueError("pred must have a positive median on the masked pixels for median alignment")
        return float(np.median(g)) / med, 0.0
    if mode == "lsq_scale":
        den = float(np.dot(p, p))
        if den == 0:
            raise ValueError("pred is zero on every masked pixel")
        return float(np.dot(p, g)) / den, 0.0
    target = g if mode == "lsq_affine" else 1.0 / g
    design = np.stack([p, np.ones_like(p)], axis=1)
    (s, t), *_ = np.linalg.lstsq(design, target, rcond=None)
    return float(s), float(t)


def align(
    pred: np.ndarray,
    gt: np.ndarray,
    *,
    mask: np.ndarray | None = None,
    mode: str = "median",
    min_depth: float = 1e-3,
) -> np.ndarray:
    """Globally align ``pred`` to ``gt`` and return depth (see the module docstring for the modes).

    Args:
        pred: prediction, any shape; a disparity for ``mode="disparity_affine"``, else a depth.
        gt: ground-truth depth, same shape.
        mask: bool pixels used for the fit (default: all); the output covers every pixel.
        mode: one of :data:`ALIGN_MODES`.
        min_depth: lower clip of the aligned depth (positive).

    Returns:
        Aligned depth, float64, same shape as ``pred``.

    Raises:
        ValueError: as :func:`fit_alignment`, or on a non-positive ``min_depth``.
        TypeError: if ``mask`` is not a bool array.

    Example:
        >>> gt = np.array([1.0, 2.0, 3.0])
        >>> align(1.3 * gt, gt, mode="median").tolist()
        [1.0, 2.0, 3.0]
    """
    min_depth = check_real("min_depth", min_depth, low=0.0, open_low=True)
    s, t = fit_alignment(pred, gt, mask=mask, mode=mode)
    p = np.asarray(pred, dtype=np.float64)
    out = 1.0 / np.clip(s * p + t, 1e-12, None) if mode == "disparity_affine" else s * p + t
    return np.maximum(out, min_depth)
