r"""Equirectangular (ERP) and perspective geometry in py360convert's convention (ST²360D, Sec. 3, "ERP to video").

Conventions (the same as ``py360convert``):

* ERP pixel ``(i, j)`` of an ``H x W`` panorama has longitude :math:`u = ((j + 0.5)/W - 0.5) 2\pi` (left to right)
  and latitude :math:`v = (0.5 - (i + 0.5)/H)\pi` (top to bottom); its unit ray is
  :math:`(\cos v \sin u, \sin v, \cos v \cos u)` (``y`` up, ``z`` forward).
* A view ``(yaw, pitch, fov, size)`` has camera rays :math:`R_y(\mathrm{yaw}) R_x(\mathrm{pitch}) (x_n, y_n, 1)^T`
  with :math:`x_n, y_n \in [-\tan(f/2), \tan(f/2)]` sampled at ``size`` points (endpoints are pixel centres), ``x_n``
  to the right and ``y_n`` up. Positive yaw looks right, positive pitch looks up.
* Depth is either planar *z-depth* (what a perspective model predicts) or *ray distance*
  :math:`\rho = z \lVert (x_n, y_n, 1) \rVert` (what an ERP depth map holds).

Everything is vectorised over pixels; sampling uses :func:`scipy.ndimage.map_coordinates` with horizontal wrap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import map_coordinates

from nips25_st2360d._validation import check_array, check_choice, check_int, check_real

__all__ = [
    "SamplingMap",
    "check_erp_size",
    "distance_to_z",
    "e2p",
    "e2p_map",
    "erp_rays",
    "frame_ray_norm",
    "p2e",
    "p2e_map",
    "perspective_grid",
    "rays_to_erp_coords",
    "view_rotation",
    "z_to_distance",
]

MAX_ERP_WIDTH = 8192


def _check_view(yaw: float, pitch: float, fov: float) -> tuple[float, float, float]:
    yaw = check_real("yaw", yaw)
    pitch = check_real("pitch", pitch, low=-90.0, high=90.0)
    fov = check_real("fov", fov, low=0.0, high=180.0, open_low=True, open_high=True)
    return yaw, pitch, fov


def erp_rays(h: int, w: int) -> np.ndarray:
    r"""Unit rays of every pixel centre of an ``h x w`` equirectangular image.

    :math:`r_{ij} = (\cos v_i \sin u_j, \sin v_i, \cos v_i \cos u_j)` with
    :math:`u_j = ((j + 0.5)/w - 0.5) 2\pi`, :math:`v_i = (0.5 - (i + 0.5)/h)\pi`.

    Args:
        h: panorama height in pixels, ``>= 2``.
        w: panorama width in pixels, ``>= 4``.

    Returns:
        ``(h, w, 3)`` float32 unit vectors.

    Raises:
        ValueError: if ``h`` or ``w`` is out of range.

    Example:
        >>> erp_rays(2, 4).shape
        (2, 4, 3)
    """
    h = check_int("h", h, low=2, high=MAX_ERP_WIDTH)
    w = check_int("w", w, low=4, high=MAX_ERP_WIDTH)
    u = ((np.arange(w) + 0.5) / w - 0.5) * 2.0 * np.pi
    v = (0.5 - (np.arange(h) + 0.5) / h) * np.pi
    cv = np.cos(v)[:, None]
    out = np.empty((h, w, 3), dtype=np.float32)
    out[..., 0] = cv * np.sin(u)[None, :]
    out[..., 1] = np.sin(v)[:, None]
    out[..., 2] = cv * np.cos(u)[None, :]
    return out


def rays_to_erp_coords(rays: np.ndarray, h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Fractional ERP pixel coordinates ``(row, col)`` of rays (inverse of :func:`erp_rays`).

    :math:`u = \operatorname{atan2}(x, z)`, :math:`v = \operatorname{atan2}(y, \sqrt{x^2 + z^2})`,
    ``col = (u / 2pi + 0.5) w - 0.5``, ``row = (0.5 - v / pi) h - 0.5``.

    Args:
        rays: ``(..., 3)`` direction vectors (any non-zero length).
        h, w: panorama size.

    Returns:
        ``(row, col)``, each of shape ``rays.shape[:-1]``; ``col`` in ``[-0.5, w - 0.5]``.
    """
    rays = check_array("rays", rays, ndim=(1, 2, 3, 4), last=3)
    h = check_int("h", h, low=2, high=MAX_ERP_WIDTH)
    w = check_int("w", w, low=4, high=MAX_ERP_WIDTH)
    x, y, z = rays[..., 0], rays[..., 1], rays[..., 2]
    u = np.arctan2(x, z)
    v = np.arctan2(y, np.hypot(x, z))
    return (0.5 - v / np.pi) * h - 0.5, (u / (2.0 * np.pi) + 0.5) * w - 0.5


def view_rotation(yaw: float, pitch: float) -> np.ndarray:
    r"""Camera-to-world rotation :math:`R = R_y(\mathrm{yaw}) R_x(\mathrm{pitch})` (angles in degrees).

    The optical axis ``(0, 0, 1)`` maps to :math:`(\cos p \sin y, \sin p, \cos p \cos y)`.

    Args:
        yaw: degrees, positive to the right (any real).
        pitch: degrees in ``[-90, 90]``, positive up.

    Returns:
        ``(3, 3)`` float64 rotation matrix.

    Example:
        >>> np.allclose(view_rotation(90.0, 0.0) @ [0, 0, 1], [1, 0, 0])
        True
    """
    yaw = check_real("yaw", yaw)
    pitch = check_real("pitch", pitch, low=-90.0, high=90.0)
    a, b = np.deg2rad(yaw), np.deg2rad(pitch)
    ry = np.array([[np.cos(a), 0.0, np.sin(a)], [0.0, 1.0, 0.0], [-np.sin(a), 0.0, np.cos(a)]])
    rx = np.array([[1.0, 0.0, 0.0], [0.0, np.cos(b), np.sin(b)], [0.0, -np.sin(b), np.cos(b)]])
    return ry @ rx


def perspective_grid(fov: float, size: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Normalised image-plane coordinates :math:`(x_n, y_n)` of a square perspective frame.

    :math:`x_n` runs from :math:`-\tan(f/2)` (left column) to :math:`\tan(f/2)` (right column), :math:`y_n` from
    :math:`\tan(f/2)` (top row) to :math:`-\tan(f/2)` (bottom row), as ``py360convert.e2p``.

    Args:
        fov: field of view in degrees, in ``(0, 180)``.
        size: frame side in pixels, ``>= 2``.

    Returns:
        ``(x_n, y_n)``, each ``(size, size)`` float64.
    """
    fov = check_real("fov", fov, low=0.0, high=180.0, open_low=True, open_high=True)
    size = check_int("size", size, low=2, high=MAX_ERP_WIDTH)
    t = np.tan(np.deg2rad(fov) / 2.0)
    rng = np.linspace(-t, t, size)
    return np.meshgrid(rng, -rng)


def frame_ray_norm(fov: float, size: int) -> np.ndarray:
    r""":math:`\lVert (x_n, y_n, 1) \rVert` per frame pixel, the factor from z-depth to ray distance.

    Returns:
        ``(size, size)`` float64, ``>= 1``, equal to 1 on the optical axis.
    """
    xn, yn = perspective_grid(fov, size)
    return np.sqrt(xn * xn + yn * yn + 1.0)


def z_to_distance(z: np.ndarray, *, fov: float) -> np.ndarray:
    r"""Planar z-depth frames to ray distance, :math:`\rho = z \lVert (x_n, y_n, 1) \rVert` (Sec. 3, merge).

    Args:
        z: ``(s, s)`` or ``(T, s, s)`` z-depth, finite.
        fov: field of view of the frames in degrees.

    Returns:
        Ray distance, same shape as ``z``, float32.

    Raises:
        ValueError: on a non-square frame, NaN/inf, a negative depth (0 may mark a missing pixel), or a bad ``fov``.

    Example:
        >>> round(float(z_to_distance(np.ones((3, 3)), fov=90.0)[0, 0]), 6)  # corner ray (1, 1, 1): sqrt(3)
        1.732051
    """
    z = check_array("z", z, ndim=(2, 3))
    if z.shape[-1] != z.shape[-2]:
        raise ValueError(f"z must hold square frames (..., s, s), got shape {z.shape}")
    if (z < 0).any():
        raise ValueError("z must be a depth >= 0 (0 for a missing pixel), got negative values")
    return (z * frame_ray_norm(fov, z.shape[-1])).astype(np.float32)


def distance_to_z(rho: np.ndarray, *, fov: float) -> np.ndarray:
    r"""Inverse of :func:`z_to_distance`: :math:`z = \rho / \lVert (x_n, y_n, 1) \rVert`.

    Args:
        rho: ``(s, s)`` or ``(T, s, s)`` ray distance.
        fov: field of view in degrees.

    Returns:
        z-depth, same shape, float32.

    Raises:
        ValueError: on a non-square frame, NaN/inf, a negative distance, or a bad ``fov``.
    """
    rho = check_array("rho", rho, ndim=(2, 3))
    if rho.shape[-1] != rho.shape[-2]:
        raise ValueError(f"rho must hold square frames (..., s, s), got shape {rho.shape}")
    if (rho < 0).any():
        raise ValueError("rho must be a distance >= 0 (0 for a missing pixel), got negative values")
    return (rho / frame_ray_norm(fov, rho.shape[-1])).astype(np.float32)


def _pad_erp(erp: np.ndarray) -> np.ndarray:
    """Pad one pixel on every side: columns wrap around, rows continue over the pole (rolled by half a turn)."""
    w = erp.shape[1]
    cols = np.concatenate([erp[:, -1:], erp, erp[:, :1]], axis=1)
    top = np.roll(cols[:1], w // 2, axis=1)
    bottom = np.roll(cols[-1:], w // 2, axis=1)
    return np.concatenate([top, cols, bottom], axis=0)


def _sample(img: np.ndarray, row: np.ndarray, col: np.ndarray, order: int) -> np.ndarray:
    """Sample ``img`` (h, w, C) at fractional coordinates with ``order`` interpolation; returns (N, C) float32."""
    out = np.empty((row.size, img.shape[2]), dtype=np.float32)
    coords = np.stack([row.ravel(), col.ravel()])
    for c in range(img.shape[2]):
        out[:, c] = map_coordinates(img[..., c].astype(np.float32, copy=False), coords, order=order, mode="nearest")
    return out


def check_erp_size(h: int, w: int, *, name: str = "erp") -> tuple[int, int]:
    """Check that ``(h, w)`` is an equirectangular size: ``w == 2 h``, ``2 <= h``, ``w <= 8192``.

    Raises:
        ValueError: naming ``name`` when the aspect is not 2:1 or the size is out of range.

    Example:
        >>> check_erp_size(512, 1024)
        (512, 1024)
    """
    h = check_int(f"{name} height", h, low=2, high=MAX_ERP_WIDTH // 2)
    w = check_int(f"{name} width", w, low=4, high=MAX_ERP_WIDTH)
    if w != 2 * h:
        raise ValueError(f"{name} must be an equirectangular panorama with width = 2 x height, got {h} x {w} (H x W)")
    return h, w


@dataclass(frozen=True, eq=False)
class SamplingMap:
    r"""Bilinear (or nearest) sampling of a source image at fixed fractional pixel coordinates, precomputed once.

    The maps of :func:`e2p_map` and :func:`p2e_map` depend only on the view and the image sizes, never on the
    pixel values, so a pipeline builds them once per panorama size and view set and reuses them for every
    panorama and every channel.

    Attributes:
        index: ``(N,)`` int32 flat indices of the target pixels that are sampled (for :func:`p2e_map` the view's
            footprint on the ERP grid; for :func:`e2p_map` every frame pixel).
        base: ``(N,)`` int32 flat index of the top-left tap in the source, at most one pixel before its last row
            and column (so the four taps are in range).
        frac: ``(N, 2)`` float32 fractional offsets ``(row, col)`` in ``[0, 1]`` from the top-left tap.
        source_shape: ``(rows, cols)`` of the source image.
        target_shape: ``(rows, cols)`` of the target image.
    """

    index: np.ndarray
    base: np.ndarray
    frac: np.ndarray
    source_shape: tuple[int, int]
    target_shape: tuple[int, int]

    @classmethod
    def from_coords(cls, index: np.ndarray, row: np.ndarray, col: np.ndarray, *, source_shape: tuple[int, int],
                    target_shape: tuple[int, int], order: int = 1) -> SamplingMap:  # fmt: skip
        """Build the map of fractional source coordinates ``row, col`` (inside the source) for target ``index``."""
        rows, cols = source_shape
        row = np.clip(np.asarray(row, dtype=np.float64).ravel(), 0.0, rows - 1.0)
        col = np.clip(np.asarray(col, dtype=np.float64).ravel(), 0.0, cols - 1.0)
        if order == 0:
            row, col = np.floor(row + 0.5), np.floor(col + 0.5)
        # top-left tap, kept one pixel inside the last row/column (fraction 1 there): the four taps stay in range
        r0 = np.minimum(np.floor(row), rows - 2) if rows > 1 else np.zeros_like(row)
        c0 = np.minimum(np.floor(col), cols - 2) if cols > 1 else np.zeros_like(col)
        base = (r0.astype(np.int64) * cols + c0.astype(np.int64)).astype(np.int32)
        frac = np.stack([row - r0, col - c0], axis=1).astype(np.float32)
        return cls(np.asarray(index).ravel().astype(np.int32), base, frac, (rows, cols), target_shape)

    def sample(self, img: np.ndarray) -> np.ndarray:
        """Sample ``img`` (``source_shape`` or ``source_shape + (C,)``); returns ``(N,)`` or ``(N, C)`` float32."""
        if img.shape[:2] != self.source_shape:
            raise ValueError(f"img must have shape {self.source_shape}[+ (C,)], got {img.shape}")
        flat = img.reshape(self.source_shape[0] * self.source_shape[1], -1).astype(np.float32, copy=False)
        fr, fc = self.frac[:, 0:1], self.frac[:, 1:2]
        step = self.source_shape[1] if self.source_shape[0] > 1 else 0
        right = 1 if self.source_shape[1] > 1 else 0
        top = flat[self.base]
        top += (flat[self.base + right] - top) * fc
        bottom = flat[self.base + step]
        bottom += (flat[self.base + step + right] - bottom) * fc
        top += (bottom - top) * fr
        return top[:, 0] if img.ndim == 2 else top

    def scatter(self, values: np.ndarray) -> np.ndarray:
        """Place ``(N,)`` or ``(N, C)`` sampled values on the target grid (0 elsewhere), float32."""
        shape = self.target_shape + values.shape[1:]
        out = np.zeros((shape[0] * shape[1], *values.shape[1:]), dtype=np.float32)
        out[self.index] = values
        return out.reshape(shape)

    def mask(self) -> np.ndarray:
        """``target_shape`` bool mask of the sampled target pixels."""
        out = np.zeros(self.target_shape[0] * self.target_shape[1], dtype=bool)
        out[self.index] = True
        return out.reshape(self.target_shape)

    @property
    def nbytes(self) -> int:
        """Memory held by the map in bytes."""
        return int(self.index.nbytes + self.base.nbytes + self.frac.nbytes)


_ORDERS = {"nearest": 0, "bilinear": 1}


def e2p_map(h: int, w: int, *, yaw: float, pitch: float, fov: float, size: int, mode: str = "bilinear"
            ) -> SamplingMap:  # fmt: skip
    r"""The sampling map of :func:`e2p`: where each frame pixel reads an ``h x w`` panorama (padded by one pixel).

    Frame pixel :math:`(x_n, y_n)` reads the ERP at the coordinates of its world ray :math:`R (x_n, y_n, 1)^T`
    (:func:`rays_to_erp_coords`), on the panorama padded by one pixel on every side (horizontal wrap, pole
    continuation), so the map is seam-free.

    Args:
        h, w: panorama size (any, ``h >= 2``, ``w >= 4``).
        yaw, pitch, fov: the view in degrees.
        size: frame side in pixels.
        mode: ``"bilinear"`` or ``"nearest"``.

    Returns:
        A :class:`SamplingMap` from the ``(h + 2, w + 2)`` padded panorama to the ``(size, size)`` frame.

    Example:
        >>> m = e2p_map(32, 64, yaw=0.0, pitch=0.0, fov=90.0, size=8)
        >>> m.index.shape, m.source_shape, m.target_shape
        ((64,), (34, 66), (8, 8))
    """
    yaw, pitch, fov = _check_view(yaw, pitch, fov)
    h = check_int("h", h, low=2, high=MAX_ERP_WIDTH)
    w = check_int("w", w, low=4, high=MAX_ERP_WIDTH)
    size = check_int("size", size, low=2, high=MAX_ERP_WIDTH)
    order = _ORDERS[check_choice("mode", mode, tuple(_ORDERS))]
    xn, yn = perspective_grid(fov, size)
    cam = np.stack([xn, yn, np.ones_like(xn)], axis=-1)
    row, col = rays_to_erp_coords(cam @ view_rotation(yaw, pitch).T, h, w)
    return SamplingMap.from_coords(np.arange(size * size), row + 1.0, col + 1.0, source_shape=(h + 2, w + 2),
                                   target_shape=(size, size), order=order)  # fmt: skip


def e2p(erp: np.ndarray, *, yaw: float, pitch: float, fov: float, size: int, mode: str = "bilinear",
        sampling: SamplingMap | None = None) -> np.ndarray:  # fmt: skip
    r"""Render a perspective frame from an equirectangular image (the forward map of the frame sequence).

    Each frame pixel's world ray :math:`R (x_n, y_n, 1)^T` is converted to ERP coordinates and sampled with
    horizontal wrap (no seam at :math:`\pm 180^\circ`) and pole continuation.

    Args:
        erp: ``(H, W)`` or ``(H, W, C)`` panorama, any real dtype, ``W`` up to 8192 (8K).
        yaw: view yaw in degrees (positive right).
        pitch: view pitch in degrees in ``[-90, 90]`` (positive up).
        fov: field of view in degrees in ``(0, 180)``.
        size: output frame side in pixels.
        mode: ``"bilinear"`` or ``"nearest"``.
        sampling: optional precomputed :func:`e2p_map` of this view and size (reused across panoramas).

    Returns:
        ``(size, size)`` or ``(size, size, C)`` float32 frame.

    Raises:
        ValueError: on wrong ndim, empty input, NaN/inf, out-of-range angles or sizes, a ``sampling`` map of
            other sizes.
        TypeError: on a non-array input.

    References:
        Cao et al., "ST²360D", NeurIPS 2025, Sec. 3 (panorama to perspective video); py360convert ``e2p``.

    Example:
        >>> frame = e2p(np.zeros((64, 128, 3)), yaw=0.0, pitch=0.0, fov=90.0, size=32)
        >>> frame.shape
        (32, 32, 3)
    """
    erp = check_array("erp", erp, ndim=(2, 3))
    h, w = erp.shape[:2]
    if h < 2 or w < 4:
        raise ValueError(f"erp must be at least 2 x 4 pixels, got shape {erp.shape}")
    if sampling is None:
        sampling = e2p_map(h, w, yaw=yaw, pitch=pitch, fov=fov, size=size, mode=mode)
    elif sampling.source_shape != (h + 2, w + 2) or sampling.target_shape != (size, size):
        raise ValueError(f"sampling must be e2p_map({h}, {w}, ..., size={size}), got a map from "
                         f"{sampling.source_shape} to {sampling.target_shape}")  # fmt: skip
    img = erp[..., None] if erp.ndim == 2 else erp
    out = sampling.sample(_pad_erp(img)).reshape(size, size, img.shape[2])
    return out[..., 0] if erp.ndim == 2 else out


def p2e_map(h: int, w: int, *, yaw: float, pitch: float, fov: float, size: int, mode: str = "bilinear",
            rays: np.ndarray | None = None) -> SamplingMap:  # fmt: skip
    r"""The sampling map of :func:`p2e`: the view's footprint on the ERP grid and where each of its pixels reads.

    Every ERP ray :math:`r` is rotated into the camera, :math:`c = R^T r`; it is inside the view when
    :math:`c_z > 0` and :math:`|c_x / c_z|, |c_y / c_z| \le \tan(f/2)`, and then reads the frame at
    :math:`(x_n, y_n) = (c_x / c_z, c_y / c_z)`. Only ERP rows within the view's angular radius
    :math:`\arctan(\sqrt 2 \tan(f/2))` of its centre latitude are tested, and only the footprint is stored, so
    applying the map costs time proportional to the footprint, not to the panorama.

    Args:
        h, w: panorama size, ``w = 2 h``.
        yaw, pitch, fov: the view in degrees.
        size: frame side in pixels.
        mode: ``"bilinear"`` or ``"nearest"``.
        rays: optional precomputed ``erp_rays(h, w)``.

    Returns:
        A :class:`SamplingMap` from the ``(size, size)`` frame to the ``(h, w)`` panorama.

    Raises:
        ValueError: on a non-2:1 size, out-of-range angles or sizes, or a wrong ``rays`` shape.

    Example:
        >>> m = p2e_map(64, 128, yaw=0.0, pitch=0.0, fov=90.0, size=32)
        >>> m.index.size, m.target_shape
        (956, (64, 128))
    """
    yaw, pitch, fov = _check_view(yaw, pitch, fov)
    h, w = check_erp_size(h, w, name="panorama (h, w)")
    size = check_int("size", size, low=2, high=MAX_ERP_WIDTH)
    order = _ORDERS[check_choice("mode", mode, tuple(_ORDERS))]
    if rays is None:
        rays = erp_rays(h, w)
    elif not isinstance(rays, np.ndarray) or rays.shape != (h, w, 3):
        raise ValueError(f"rays must be erp_rays(h, w) of shape {(h, w, 3)}, got {getattr(rays, 'shape', rays)}")
    t = np.tan(np.deg2rad(fov) / 2.0)
    radius = np.rad2deg(np.arctan(np.sqrt(2.0) * t)) + 180.0 / h
    lat_top, lat_bottom = min(90.0, pitch + radius), max(-90.0, pitch - radius)
    r0 = int(np.clip(np.floor((0.5 - lat_top / 180.0) * h - 0.5), 0, h))
    r1 = int(np.clip(np.ceil((0.5 - lat_bottom / 180.0) * h + 0.5), r0, h))
    band = rays[r0:r1].reshape(-1, 3)
    rot = view_rotation(yaw, pitch).astype(np.float32)
    cx, cy, cz = (band[:, 0] * rot[0, k] + band[:, 1] * rot[1, k] + band[:, 2] * rot[2, k] for k in range(3))  # R^T r
    lim = (t + 1e-6 * t) * cz
    idx = np.flatnonzero((cz > 0) & (np.abs(cx) <= lim) & (np.abs(cy) <= lim))
    xn, yn = cx[idx] / cz[idx], cy[idx] / cz[idx]
    col = (xn / t + 1.0) * 0.5 * (size - 1)
    row = (1.0 - yn / t) * 0.5 * (size - 1)
    return SamplingMap.from_coords(idx + r0 * w, row, col, source_shape=(size, size), target_shape=(h, w),
                                   order=order)  # fmt: skip


def p2e(
    frame: np.ndarray,
    *,
    yaw: float,
    pitch: float,
    fov: float,
    h: int,
    w: int,
    mode: str = "bilinear",
    rays: np.ndarray | None = None,
    sampling: SamplingMap | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Project a perspective frame back onto the equirectangular grid (inverse of :func:`e2p`).

    Every ERP ray :math:`r` is rotated into the camera, :math:`c = R^T r`; it is inside the view when
    :math:`c_z > 0` and :math:`|c_x / c_z|, |c_y / c_z| \le \tan(f/2)`, and then sampled at
    :math:`(x_n, y_n) = (c_x / c_z, c_y / c_z)` (see :func:`p2e_map`).

    Args:
        frame: ``(s, s)`` or ``(s, s, C)`` perspective frame, finite.
        yaw, pitch, fov: the view (degrees), as for :func:`e2p`.
        h, w: output panorama size, ``w = 2 h``.
        mode: ``"bilinear"`` or ``"nearest"``.
        rays: optional precomputed ``erp_rays(h, w)`` to reuse across frames.
        sampling: optional precomputed :func:`p2e_map` of this view and sizes (reused across panoramas).

    Returns:
        ``(values, valid)``: ``(h, w)`` or ``(h, w, C)`` float32 (0 outside the view) and the ``(h, w)`` bool mask
        of ERP pixels the view covers.

    Raises:
        ValueError: on a non-square or empty frame, NaN/inf, out-of-range angles or sizes, a non-2:1 ``(h, w)``,
            a wrong ``rays`` shape or a ``sampling`` map of other sizes.

    Example:
        >>> vals, valid = p2e(np.ones((32, 32)), yaw=0.0, pitch=0.0, fov=90.0, h=64, w=128)
        >>> round(float(valid.mean()), 2)  # 1/6 of the sphere, but ERP pixels oversample the poles
        0.12
    """
    frame = check_array("frame", frame, ndim=(2, 3))
    if frame.shape[0] != frame.shape[1]:
        raise ValueError(f"frame must be square (s, s[, C]), got shape {frame.shape}")
    if frame.shape[0] < 2:
        raise ValueError(f"frame must be at least 2 x 2 pixels, got shape {frame.shape}")
    size = frame.shape[0]
    if sampling is None:
        sampling = p2e_map(h, w, yaw=yaw, pitch=pitch, fov=fov, size=size, mode=mode, rays=rays)
    elif sampling.source_shape != (size, size) or sampling.target_shape != (h, w):
        raise ValueError(f"sampling must be p2e_map({h}, {w}, ..., size={size}), got a map from "
                         f"{sampling.source_shape} to {sampling.target_shape}")  # fmt: skip
    return sampling.scatter(sampling.sample(frame)), sampling.mask()
