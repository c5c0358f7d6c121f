r"""RGB-D panoramas with exact depth: ray-cast box rooms textured with scikit-image's real images.

A room is an axis-aligned box around the camera (at the origin) holding axis-aligned boxes standing on the floor and
spheres. Walls carry scikit-image's ``brick`` texture and a photo "poster" (``astronaut``, ``coffee``, ``chelsea``),
the floor ``gravel``, the ceiling ``grass``. Every ray's hit distance is computed in closed form (slab test for boxes,
quadratic for spheres), so the ERP depth is exact ray distance in metres and any view's depth can be ray-cast
exactly, which is what the simulated depth models use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from nips25_st2360d._validation import check_array, check_int, check_real
from nips25_st2360d.geometry import MAX_ERP_WIDTH, erp_rays

__all__ = ["Box", "RoomScene", "Sphere", "render_room"]

_LIGHT = np.array([0.3, 0.8, -0.5]) / np.linalg.norm([0.3, 0.8, -0.5])
_TILE_M = 1.2  # metres per texture tile


@lru_cache(maxsize=1)
def _textures() -> dict[str, np.ndarray]:
    """scikit-image's bundled images as float32 in [0, 1] (gray textures and RGB posters)."""
    from skimage import data

    out: dict[str, np.ndarray] = {}
    for name in ("brick", "grass", "gravel", "astronaut", "coffee", "chelsea"):
        out[name] = np.asarray(getattr(data, name)(), dtype=np.float32) / 255.0
    return out


def _vec3(name: str, value: object) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64) if isinstance(value, (tuple, list, np.ndarray)) else None
    if arr is None or arr.shape != (3,) or not np.isfinite(arr).all():
        raise ValueError(f"{name} must be 3 finite numbers, got {value!r}")
    return arr


@dataclass(frozen=True)
class Box:
    """Axis-aligned box ``lo <= p <= hi`` (metres) with an RGB tint in [0, 1]."""

    lo: tuple[float, float, float]
    hi: tuple[float, float, float]
    tint: tuple[float, float, float] = (0.6, 0.6, 0.6)

    def __post_init__(self) -> None:
        lo, hi = _vec3("lo", self.lo), _vec3("hi", self.hi)
        _vec3("tint", self.tint)
        if not (lo < hi).all():
            raise ValueError(f"lo must be < hi on every axis, got lo={self.lo}, hi={self.hi}")


@dataclass(frozen=True)
class Sphere:
    """Sphere of ``radius`` (metres) around ``center`` with an RGB tint."""

    center: tuple[float, float, float]
    radius: float
    tint: tuple[float, float, float] = (0.6, 0.6, 0.6)

    def __post_init__(self) -> None:
        _vec3("center", self.center)
        _vec3("tint", self.tint)
        check_real("radius", self.radius, low=0.0, open_low=True)


@dataclass(frozen=True)
class RoomScene:
    """A box room around the camera at the origin with boxes and spheres inside.

    Attributes:
        room: the room as a :class:`Box` containing the origin (rays hit its inside).
        boxes: obstacles (the camera is outside each).
        spheres: obstacles (the camera is outside each).
        posters: per vertical wall ``(-x, +x, -z, +z)`` a poster ``(image name, centre b, centre y, width, height)``.
    """

    room: Box
    boxes: tuple[Box, ...] = ()
    spheres: tuple[Sphere, ...] = ()
    posters: tuple[tuple[str, float, float, float, float], ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not isinstance(self.room, Box):
            raise TypeError(f"room must be a Box, got {type(self.room).__name__}")
        lo, hi = np.asarray(self.room.lo), np.asarray(self.room.hi)
        if not ((lo < 0) & (hi > 0)).all():
            raise ValueError(f"room must contain the camera at the origin, got lo={self.room.lo}, hi={self.room.hi}")
        for b in self.boxes:
            if (np.asarray(b.lo) < 0).all() and (np.asarray(b.hi) > 0).all():
                raise ValueError(f"boxes must not contain the camera, got {b}")
        for s in self.spheres:
            if s.radius <= 0 or np.linalg.norm(s.center) <= s.radius:
                raise ValueError(f"spheres must have a positive radius and not contain the camera, got {s}")

    @classmethod
    def random(cls, seed: int, *, n_boxes: int = 3, n_spheres: int = 2) -> RoomScene:
        """A random room (2-4.5 m to each wall, 1.2-1.7 m above the floor) with boxes and spheres.

        Args:
            seed: seed of ``numpy.random.default_rng``.
            n_boxes, n_spheres: numbers of obstacles, ``>= 0``.
        """
        seed = check_int("seed", seed, low=0)
        n_boxes = check_int("n_boxes", n_boxes, low=0, high=32)
        n_spheres = check_int("n_spheres", n_spheres, low=0, high=32)
        rng = np.random.default_rng(seed)
        x0, x1, z0, z1 = rng.uniform(2.0, 4.5, size=4)
        floor, ceil = rng.uniform(1.2, 1.7), rng.uniform(1.0, 1.6)
        room = Box((-x0, -floor, -z0), (x1, ceil, z1))
        boxes: list[Box] = []
        while len(boxes) < n_boxes:
            sx, sz = rng.uniform(0.4, 1.2, size=2)
            cx, cz = rng.uniform(-x0 + sx, x1 - sx), rng.uniform(-z0 + sz, z1 - sz)
            if np.hypot(cx, cz) - np.hypot(sx, sz) < 0.6:
                continue
            top = -floor + rng.uniform(0.4, 1.5)
            boxes.append(Box((cx - sx / 2, -floor, cz - sz / 2), (cx + sx / 2, top, cz + sz / 2),
                             tuple(rng.uniform(0.3, 0.9, size=3))))  # fmt: skip
        spheres: list[Sphere] = []
        while len(spheres) < n_spheres:
            r = rng.uniform(0.3, 0.6)
            c = rng.uniform([-x0 + r, -floor + r, -z0 + r], [x1 - r, ceil - r, z1 - r])
            if np.linalg.norm(c) - r < 0.8:
                continue
            spheres.append(Sphere(tuple(c), float(r), tuple(rng.uniform(0.3, 0.9, size=3))))
        names = ("astronaut", "coffee", "chelsea")
        posters = tuple(
            (names[int(rng.integers(3))], float(rng.uniform(-0.8, 0.8)), float(rng.uniform(-0.2, 0.4)),
             float(rng.uniform(0.9, 1.4)), float(rng.uniform(0.7, 1.0)))
            for _ in range(4)
        )  # fmt: skip
        return cls(room, tuple(boxes), tuple(spheres), posters)

    def intersect(self, rays: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First hit of every ray from the origin.

        Args:
            rays: ``(N, 3)`` unit directions.

        Returns:
            ``(t (N,) float64 distances, surface (N,) int64)``: surfaces 0-5 are the room's faces
            ``(-x, +x, -y, +y, -z, +z)``, then the boxes, then the spheres.
        """
        d = check_array("rays", rays, ndim=2, last=3).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = 1.0 / d
            lo, hi = np.asarray(self.room.lo), np.asarray(self.room.hi)
            exit_t = np.where(d > 0, hi * inv, np.where(d < 0, lo * inv, np.inf))
            axis = np.argmin(exit_t, axis=1)
            t = exit_t[np.arange(len(d)), axis]
            surface = 2 * axis + (d[np.arange(len(d)), axis] > 0)
            for k, box in enumerate(self.boxes):
                t1, t2 = np.asarray(box.lo) * inv, np.asarray(box.hi) * inv
                near = np.nanmax(np.minimum(t1, t2), axis=1)
                far = np.nanmin(np.maximum(t1, t2), axis=1)
                hit = (near <= far) & (near > 0) & (near < t)
                t = np.where(hit, near, t)
                surface = np.where(hit, 6 + k, surface)
        for k, sph in enumerate(self.spheres):
            c = np.asarray(sph.center)
            b = d @ c
            disc = b * b - (c @ c - sph.radius**2)
            root = b - np.sqrt(np.maximum(disc, 0.0))
            hit = (disc > 0) & (root > 0) & (root < t)
            t = np.where(hit, root, t)
            surface = np.where(hit, 6 + len(self.boxes) + k, surface)
        return t, surface.astype(np.int64)

    def ray_distance(self, rays: np.ndarray) -> np.ndarray:
        """Exact distance (metres) from the camera to the first surface along ``(N, 3)`` unit rays."""
        return self.intersect(rays)[0]

    def shade(self, rays: np.ndarray) -> np.ndarray:
        """RGB colour in [0, 1] of the first hit along ``(N, 3)`` unit rays (textures, posters, simple shading)."""
        tex = _textures()
        t, surf = self.intersect(rays)
        p = rays * t[:, None]
        rgb = np.zeros((len(rays), 3))
        normal = np.zeros((len(rays), 3))
        nb = len(self.boxes)
        for s in np.unique(surf):
            m = surf == s
            if s < 6 + nb:
                if s >= 6:
                    box = self.boxes[s - 6]
                    dist = np.minimum(np.abs(p[m] - np.asarray(box.lo)), np.abs(p[m] - np.asarray(box.hi)))
                    axes = np.argmin(dist, axis=1)
                else:
                    axes = np.full(int(m.sum()), s // 2)
                b_ax, c_ax = (axes + 1) % 3, (axes + 2) % 3
                rows = np.arange(int(m.sum()))
                u = p[m][rows, b_ax] / _TILE_M
                v = p[m][rows, c_ax] / _TILE_M
                if s < 6:
                    name = ("brick", "brick", "gravel", "grass", "brick", "brick")[s]
                    tint = np.array([(0.85, 0.55, 0.45), (0.85, 0.55, 0.45), (0.6, 0.55, 0.5), (0.7, 0.8, 0.7),
                                     (0.8, 0.6, 0.5), (0.8, 0.6, 0.5)][s])  # fmt: skip
                else:
                    name, tint = "gravel", np.asarray(self.boxes[s - 6].tint)
                img = tex[name]
                iy = ((v % 1.0) * (img.shape[0] - 1)).astype(np.int64)
                ix = ((u % 1.0) * (img.shape[1] - 1)).astype(np.int64)
                rgb[m] = img[iy, ix][:, None] * tint[None, :]
                nrm = np.zeros((int(m.sum()), 3))
                nrm[rows, axes] = 1.0
                normal[m] = nrm
                if s in (0, 1, 4, 5) and self.posters:
                    self._poster(rgb, m, p, s, tex)
            else:
                sph = self.spheres[s - 6 - nb]
                nrm = (p[m] - np.asarray(sph.center)) / sph.radius
                img = tex["chelsea"]
                iy = ((np.arccos(np.clip(nrm[:, 1], -1, 1)) / np.pi) * (img.shape[0] - 1)).astype(np.int64)
                ix = (((np.arctan2(nrm[:, 0], nrm[:, 2]) / (2 * np.pi)) % 1.0) * (img.shape[1] - 1)).astype(np.int64)
                rgb[m] = 0.5 * img[iy, ix] + 0.5 * np.asarray(sph.tint)
                normal[m] = nrm
        light = 0.6 + 0.4 * np.abs(normal @ _LIGHT)
        return np.clip(rgb * light[:, None], 0.0, 1.0)

    def _poster(self, rgb: np.ndarray, m: np.ndarray, p: np.ndarray, s: int, tex: dict[str, np.ndarray]) -> None:
        wall = {0: 0, 1: 1, 4: 2, 5: 3}[s]
        name, cb, cy, pw, ph = self.posters[wall]
        b_ax = 2 if s < 2 else 0
        q = p[m]
        u = (q[:, b_ax] - cb) / pw + 0.5
        v = (cy - q[:, 1]) / ph + 0.5
        inside = (u >= 0) & (u < 1) & (v >= 0) & (v < 1)
        img = tex[name]
        iy = (v[inside] * (img.shape[0] - 1)).astype(np.int64)
        ix = (u[inside] * (img.shape[1] - 1)).astype(np.int64)
        idx = np.flatnonzero(m)[inside]
        rgb[idx] = img[iy, ix]

    def render(self, h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
        """Equirectangular RGB-D panorama: ``((h, w, 3) uint8 RGB, (h, w) float32 ray distance in metres)``."""
        h = check_int("h", h, low=2, high=MAX_ERP_WIDTH)
        w = check_int("w", w, low=4, high=MAX_ERP_WIDTH)
        if w != 2 * h:
            raise ValueError(f"w: an equirectangular panorama has w = 2 h, got h = {h}, w = {w}")
        rays = erp_rays(h, w).reshape(-1, 3).astype(np.float64)
        depth = self.ray_distance(rays).reshape(h, w).astype(np.float32)
        rgb = (self.shade(rays) * 255.0 + 0.5).astype(np.uint8).reshape(h, w, 3)
        return rgb, depth


def render_room(seed: int = 0, *, h: int = 512, w: int = 1024) -> tuple[np.ndarray, np.ndarray, RoomScene]:
    """A random textured room rendered as an RGB-D panorama with exact depth.

    Args:
        seed: room seed (layout, obstacles, posters).
        h, w: panorama size; ``w`` must equal ``2 h`` (a full sphere).

    Raises:
        ValueError: ``seed < 0``, ``h < 2``, sizes above the cap, or ``w != 2 h``.

    Returns:
        ``(rgb (h, w, 3) uint8, depth (h, w) float32 ray distance in metres, scene)``.

    Example:
        >>> rgb, depth, scene = render_room(0, h=32, w=64)
        >>> rgb.shape, depth.shape, bool(depth.max() < 10)
        ((32, 64, 3), (32, 64), True)
    """
    scene = RoomScene.random(seed)
    rgb, depth = scene.render(h, w)
    return rgb, depth, scene
