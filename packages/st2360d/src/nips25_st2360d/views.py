r"""View samplers on the sphere and the scan order of the frame sequence (ST²360D, Sec. 3: SUS and LGS).

A view set is an ``(N, 2)`` float64 array of ``(yaw, pitch)`` in degrees. Spherical-uniform sampling (SUS) puts
:math:`K` latitude rings at :math:`\varphi_k = (k + \tfrac12)\pi/K - \pi/2` with
:math:`N_k = \max(1, \operatorname{round}(N_{eq}\cos\varphi_k))` views each, so views per solid angle are roughly
constant; latitude-guided scanning (LGS) orders them from the equator towards the poles with a continuous yaw sweep
inside each ring. Lat-long, cubemap and Fibonacci view sets are the baselines and alternatives.
"""

from __future__ import annotations

import numpy as np

from nips25_st2360d._validation import check_array, check_choice, check_int, check_real
from nips25_st2360d.geometry import erp_rays, perspective_grid, view_rotation

__all__ = [
    "coverage",
    "cubemap_views",
    "fibonacci_views",
    "latlong_views",
    "lgs_order",
    "random_order",
    "sus_ring_counts",
    "sus_views",
    "view_overlap",
]


def _wrap(yaw: np.ndarray) -> np.ndarray:
    """Wrap degrees into ``[-180, 180)``."""
    return (np.asarray(yaw) + 180.0) % 360.0 - 180.0


def check_views(views: object) -> np.ndarray:
    """Validate a view set: ``(N, 2)`` finite ``(yaw, pitch)`` degrees with pitch in ``[-90, 90]``."""
    v = check_array("views", views, ndim=2, last=2).astype(np.float64)
    if np.abs(v[:, 1]).max() > 90.0:
        raise ValueError(f"views pitch (column 1) must lie in [-90, 90], got max |pitch| {np.abs(v[:, 1]).max()}")
    return v


def sus_ring_counts(*, n_eq: int = 8, n_rings: int = 5) -> tuple[np.ndarray, np.ndarray]:
    r"""Ring latitudes and view counts of spherical-uniform sampling.

    :math:`\varphi_k = (k + \tfrac12)\pi/K - \pi/2`, :math:`N_k = \max(1, \operatorname{round}(N_{eq}\cos\varphi_k))`.

    Args:
        n_eq: views on the equator ring :math:`N_{eq}`, ``>= 1``.
        n_rings: number of latitude rings :math:`K`, ``>= 1``.

    Returns:
        ``(pitch_deg (K,), counts (K,))`` from south to north.

    Example:
        >>> sus_ring_counts(n_eq=8, n_rings=5)[1].tolist()
        [2, 6, 8, 6, 2]
    """
    n_eq = check_int("n_eq", n_eq, low=1, high=1024)
    n_rings = check_int("n_rings", n_rings, low=1, high=512)
    phi = (np.arange(n_rings) + 0.5) * np.pi / n_rings - np.pi / 2.0
    counts = np.maximum(1, np.round(n_eq * np.cos(phi))).astype(np.int64)
    return np.rad2deg(phi), counts


def sus_views(*, n_eq: int = 8, n_rings: int = 5, yaw_offset: float = 0.0) -> np.ndarray:
    r"""Spherical-uniform sampling (SUS): rings with view counts proportional to :math:`\cos\varphi`.

    Ring :math:`k` holds yaws :math:`360 m / N_k` (+ half a step on odd rings, so neighbouring rings interleave),
    all shifted by ``yaw_offset``.

    Args:
        n_eq: views on the equator ring, ``>= 1`` (default 8, reconstructed).
        n_rings: latitude rings, ``>= 1`` (default 5, reconstructed; 8/5 give 24 frames).
        yaw_offset: degrees added to every yaw (rotating the panorama by ``a`` and the views by ``a`` commutes).

    Returns:
        ``(N, 2)`` ``(yaw, pitch)`` degrees, rings from south to north, yaws in ``[-180, 180)``.

    Raises:
        ValueError: on out-of-range counts or a non-finite offset.

    References:
        Cao et al., "ST²360D", NeurIPS 2025, Sec. 3 (spherical-uniform sampling).

    Example:
        >>> sus_views().shape
        (24, 2)
    """
    yaw_offset = check_real("yaw_offset", yaw_offset)
    pitch, counts = sus_ring_counts(n_eq=n_eq, n_rings=n_rings)
    out = []
    for k, (p, n) in enumerate(zip(pitch, counts)):
        step = 360.0 / n
        yaws = step * np.arange(n) + (0.5 * step if k % 2 == 1 else 0.0) + yaw_offset
        out.append(np.stack([_wrap(yaws), np.full(n, p)], axis=1))
    return np.concatenate(out)


def latlong_views(*, n_per_ring: int = 8, n_rings: int = 5, yaw_offset: float = 0.0) -> np.ndarray:
    """Lat-long grid: the same number of views on every ring (oversamples the poles); the SUS ablation.

    Args:
        n_per_ring: views per ring, ``>= 1``.
        n_rings: rings at the same latitudes as :func:`sus_views`.
        yaw_offset: degrees added to every yaw.

    Returns:
        ``(n_rings * n_per_ring, 2)`` ``(yaw, pitch)`` degrees.
    """
    n_per_ring = check_int("n_per_ring", n_per_ring, low=1, high=1024)
    yaw_offset = check_real("yaw_offset", yaw_offset)
    pitch, _ = sus_ring_counts(n_eq=1, n_rings=n_rings)
    yaws = _wrap(360.0 / n_per_ring * np.arange(n_per_ring) + yaw_offset)
    return np.array([[y, p] for p in pitch for y in yaws], dtype=np.float64)


def cubemap_views(*, yaw_offset: float = 0.0) -> np.ndarray:
    """The six 90-degree cube faces: front, right, back, left (equator), then up and down.

    Returns:
        ``(6, 2)`` ``(yaw, pitch)`` degrees.
    """
    yaw_offset = check_real("yaw_offset", yaw_offset)
    v = np.array([[0.0, 0.0], [90.0, 0.0], [180.0, 0.0], [-90.0, 0.0], [0.0, 90.0], [0.0, -90.0]])
    v[:, 0] = _wrap(v[:, 0] + yaw_offset)
    return v


def fibonacci_views(*, n: int = 24, yaw_offset: float = 0.0) -> np.ndarray:
    r"""Fibonacci lattice: :math:`\sin\varphi_i = 1 - (2i + 1)/n`, yaw :math:`i \cdot 180(3 - \sqrt5)` degrees.

    Args:
        n: number of views, ``>= 1``.
        yaw_offset: degrees added to every yaw.

    Returns:
        ``(n, 2)`` ``(yaw, pitch)`` degrees, from north to south.
    """
    n = check_int("n", n, low=1, high=100_000)
    yaw_offset = check_real("yaw_offset", yaw_offset)
    i = np.arange(n)
    pitch = np.rad2deg(np.arcsin(1.0 - (2.0 * i + 1.0) / n))
    yaw = _wrap(i * 180.0 * (3.0 - np.sqrt(5.0)) + yaw_offset)
    return np.stack([yaw, pitch], axis=1)


def lgs_order(
    views: np.ndarray, *, start_yaw: float = 0.0, hemispheres: str = "interleave", direction: str = "alternate"
) -> np.ndarray:
    r"""Latitude-guided scanning (LGS): equator ring first, then rings by increasing :math:`|\varphi|`.

    Rings are the groups of equal pitch. Within a ring the yaw sweeps continuously, starting from the view whose
    yaw is nearest the previous frame's (``start_yaw`` for the first ring), so consecutive frames overlap.

    Args:
        views: ``(N, 2)`` ``(yaw, pitch)`` degrees.
        start_yaw: yaw the scan starts from (degrees).
        hemispheres: ``"interleave"`` (north ring, then the south ring of equal :math:`|\varphi|`; keeps
            :math:`|\varphi|` non-decreasing) or ``"north_first"`` (all northern rings, then all southern rings).
        direction: ``"alternate"`` (serpentine: each ring reverses the sweep) or ``"same"`` (always eastward).

    Returns:
        ``(N,)`` int64 permutation: ``views[order]`` is the frame sequence.

    Raises:
        ValueError: on a malformed view set or an unknown option.

    References:
        Cao et al., "ST²360D", NeurIPS 2025, Sec. 3 (latitude-guided scanning).

    Example:
        >>> order = lgs_order(sus_views())
        >>> sus_views()[order[0]].tolist()
        [0.0, 0.0]
    """
    v = check_views(views)
    start_yaw = check_real("start_yaw", start_yaw)
    check_choice("hemispheres", hemispheres, ("interleave", "north_first"))
    check_choice("direction", direction, ("alternate", "same"))
    pitch_key = np.round(v[:, 1], 6)
    unique = [float(p) for p in np.unique(pitch_key)]
    if hemispheres == "interleave":
        rings = sorted(unique, key=lambda p: (abs(p), -p))
    else:
        rings = sorted((p for p in unique if p >= 0), key=abs) + sorted((p for p in unique if p < 0), key=abs)
    order: list[int] = []
    prev_yaw = start_yaw
    sign = 1.0
    for p in rings:
        idx = np.flatnonzero(pitch_key == p)
        yaws = v[idx, 0]
        start = int(np.argmin(np.abs(_wrap(yaws - prev_yaw))))
        rel = (sign * _wrap(yaws - yaws[start])) % 360.0
        ring_order = idx[np.argsort(rel, kind="stable")]
        order.extend(int(i) for i in ring_order)
        prev_yaw = float(v[ring_order[-1], 0])
        if direction == "alternate":
            sign = -sign
    return np.asarray(order, dtype=np.int64)


def random_order(n: int, *, seed: int = 0) -> np.ndarray:
    """A random permutation of ``n`` frames (the LGS ablation).

    Args:
        n: number of views, ``>= 1``.
        seed: seed of ``numpy.random.default_rng``.

    Returns:
        ``(n,)`` int64 permutation.
    """
    n = check_int("n", n, low=1, high=1_000_000)
    seed = check_int("seed", seed, low=0)
    return np.random.default_rng(seed).permutation(n).astype(np.int64)


def view_overlap(view_a: np.ndarray, view_b: np.ndarray, *, fov: float, samples: int = 33) -> float:
    r"""Fraction of view ``b``'s frame that view ``a`` also sees (both with field of view ``fov``).

    A grid of ``samples x samples`` rays of ``b`` is rotated into ``a``'s camera and tested against its frustum
    :math:`c_z > 0, |c_x/c_z|, |c_y/c_z| \le \tan(f/2)`.

    Args:
        view_a, view_b: ``(2,)`` ``(yaw, pitch)`` degrees.
        fov: field of view in degrees.
        samples: rays per side, ``>= 2``.

    Returns:
        Overlap fraction in ``[0, 1]`` (1 for identical views).
    """
    a = check_array("view_a", np.asarray(view_a, dtype=np.float64), ndim=1, last=2)
    b = check_array("view_b", np.asarray(view_b, dtype=np.float64), ndim=1, last=2)
    samples = check_int("samples", samples, low=2, high=4096)
    xn, yn = perspective_grid(fov, samples)
    t = np.tan(np.deg2rad(fov) / 2.0)
    rays = np.stack([xn, yn, np.ones_like(xn)], axis=-1).reshape(-1, 3)
    rel = view_rotation(float(a[0]), float(a[1])).T @ view_rotation(float(b[0]), float(b[1]))
    cam = rays @ rel.T
    cz = cam[:, 2]
    ok = cz > 1e-9
    inside = np.zeros(len(cam), dtype=bool)
    tol = 1e-9 + t * 1e-9
    inside[ok] = (np.abs(cam[ok, 0] / cz[ok]) <= t + tol) & (np.abs(cam[ok, 1] / cz[ok]) <= t + tol)
    return float(inside.mean())


def coverage(views: np.ndarray, *, fov: float, h: int = 64, w: int = 128) -> np.ndarray:
    """How many views see each ERP pixel (0 means a hole in the panorama).

    Args:
        views: ``(N, 2)`` ``(yaw, pitch)`` degrees.
        fov: field of view in degrees.
        h, w: ERP grid on which coverage is counted.

    Returns:
        ``(h, w)`` int64 counts.
    """
    v = check_views(views)
    fov = check_real("fov", fov, low=0.0, high=180.0, open_low=True, open_high=True)
    rays = erp_rays(h, w).reshape(-1, 3).astype(np.float64)
    t = np.tan(np.deg2rad(fov) / 2.0)
    count = np.zeros(len(rays), dtype=np.int64)
    for yaw, pitch in v:
        cam = rays @ view_rotation(float(yaw), float(pitch))
        cz = cam[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = (cz > 0) & (np.abs(cam[:, 0] / cz) <= t * (1 + 1e-9)) & (np.abs(cam[:, 1] / cz) <= t * (1 + 1e-9))
        count += inside
    return count.reshape(h, w)
