r"""Ground-truth panorama depth as released: 2D-3D-S (Stanford2D3D) 16-bit PNGs, or float ``.npy`` maps.

2D-3D-S stores each panorama's depth (``area_N/pano/depth/*_depth.png``) as a single-channel 16-bit PNG in units
of 1/512 m (at most 128 m), with :math:`2^{16} - 1 = 65535` marking pixels without a return. UniFuse, PanDA and
Depth Anywhere read it the same way (value / 512, 65535 invalid). A ``.npy`` file holds depth in metres as floats,
with NaN, inf or a value <= 0 marking missing pixels (Pano3D's Matterport3D depth marks them with inf).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["STANFORD2D3D_DEPTH_SCALE", "STANFORD2D3D_MISSING", "load_gt_depth"]

STANFORD2D3D_DEPTH_SCALE = 512.0  # PNG units per metre
STANFORD2D3D_MISSING = 65535


def load_gt_depth(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    r"""Read a released ground-truth depth panorama and its mask of valid pixels.

    ``.png``: a 2D-3D-S depth image, :math:`d = v / 512` m, :math:`v = 65535` missing (other 16-bit depth PNGs
    with the same encoding read the same). ``.npy``: float depth in metres, missing where not finite or <= 0.

    Args:
        path: a ``.png`` (single channel, 16-bit) or ``.npy`` (2-D float) file.

    Returns:
        ``(depth (H, W) float64 metres with NaN at missing pixels, valid (H, W) bool)``.

    Raises:
        ValueError: naming the file, if it does not exist, cannot be read, is not 2-D, is an 8-bit or colour PNG
            (not a depth encoding), or has no valid pixel; or on another suffix.

    References:
        Armeni et al., "Joint 2D-3D-Semantic Data for Indoor Scene Understanding", arXiv:1702.01105 (2D-3D-S).

    Example:
        >>> import tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), "gt.npy")
        >>> np.save(f, np.array([[1.0, np.inf], [2.0, 0.0]]))
        >>> depth, valid = load_gt_depth(f)
        >>> valid.tolist(), float(np.nanmax(depth))
        ([[True, False], [True, False]], 2.0)
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"ground-truth depth: no such file: {path}")
    suffix = path.suffix.lower()
    if suffix == ".png":
        from skimage.io import imread

        try:
            raw = np.asarray(imread(str(path)))
        except Exception as err:
            raise ValueError(f"ground-truth depth: cannot read {path} as a PNG ({err})") from err
        if raw.ndim != 2:
            raise ValueError(f"ground-truth depth {path}: expected a single-channel depth PNG, got shape {raw.shape}")
        if raw.dtype != np.uint16:
            raise ValueError(f"ground-truth depth {path}: expected a 16-bit PNG (2D-3D-S: 1/512 m per unit, "
                             f"65535 missing), got dtype {raw.dtype}")  # fmt: skip
        valid = (raw != STANFORD2D3D_MISSING) & (raw > 0)
        depth = raw.astype(np.float64) / STANFORD2D3D_DEPTH_SCALE
    elif suffix == ".npy":
        try:
            raw = np.load(path, allow_pickle=False)
        except Exception as err:
            raise ValueError(f"ground-truth depth: cannot read {path} as a .npy array ({err})") from err
        if raw.ndim != 2 or not np.issubdtype(raw.dtype, np.number) or raw.dtype == np.bool_:
            raise ValueError(f"ground-truth depth {path}: expected a 2-D numeric array, got {raw.dtype} {raw.shape}")
        depth = raw.astype(np.float64)
        valid = np.isfinite(depth) & (depth > 0)
    else:
        raise ValueError(f"ground-truth depth {path}: expected a .png (2D-3D-S) or .npy file, got {suffix!r}")
    if not valid.any():
        raise ValueError(f"ground-truth depth {path}: no valid pixel")
    depth[~valid] = np.nan
    return depth, valid
