"""Short referring-video clips made from real photographs (scikit-image) with exact ground-truth masks.

Objects are the horse silhouette (``skimage.data.horse``) and elliptical cut-outs of ``chelsea`` (cat), ``rocket``,
``coffee`` and ``astronaut``; backgrounds are the ``brick``, ``grass`` and ``gravel`` textures. Objects move along a
straight line; the mask of each object in each frame is exactly the set of pixels it covers (later objects occlude
earlier ones).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
from skimage import data
from skimage.transform import resize

from nips25_sama._validation import check_int

__all__ = ["BACKGROUNDS", "MOTIONS", "OBJECTS", "make_clip", "make_scene", "object_pixels", "scene_conversation"]

OBJECTS = ("cat", "rocket", "coffee", "astronaut", "horse")
BACKGROUNDS = ("brick", "grass", "gravel")
MOTIONS = ("left", "right", "up", "down")
_STEP = {"left": (0, -1), "right": (0, 1), "up": (-1, 0), "down": (1, 0)}
# Crops (rows, cols) of the photographs that hold the object.
_CROPS = {
    "cat": ("chelsea", (20, 290), (90, 360)),
    "rocket": ("rocket", (40, 420), (250, 400)),
    "coffee": ("coffee", (20, 330), (90, 500)),
    "astronaut": ("astronaut", (0, 260), (130, 360)),
}


@functools.lru_cache(maxsize=16)
def _sprite(obj: str, side: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rgb (side, side, 3) float, mask (side, side) bool)`` of one object."""
    if obj == "horse":
        sil = ~data.horse()
        rows, cols = np.nonzero(sil)
        sil = sil[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1]
        mask = resize(sil.astype(float), (side, side), order=0, anti_aliasing=False) > 0.5
        tex = resize(data.coffee()[100:300, 150:350] / 255.0, (side, side, 3), anti_aliasing=True)
        rgb = 0.5 * tex + 0.5 * np.array([0.45, 0.28, 0.12])
        return rgb, mask
    name, (r0, r1), (c0, c1) = _CROPS[obj]
    img = getattr(data, name)()[r0:r1, c0:c1] / 255.0
    rgb = resize(img, (side, side, 3), anti_aliasing=True)
    yy, xx = np.mgrid[:side, :side]
    c = (side - 1) / 2
    mask = ((yy - c) / (side / 2)) ** 2 + ((xx - c) / (side / 2)) ** 2 <= 1.0
    return rgb, mask


def object_pixels(obj: str, *, side: int = 40) -> np.ndarray:
    """``(K, 3)`` uint8 colours of the object's sprite as drawn by :func:`make_scene` (the demo's name templates).

    Raises:
        ValueError: for an object not in :data:`OBJECTS`.
    """
    if obj not in OBJECTS:
        raise ValueError(f"obj must be one of {OBJECTS}, got {obj!r}")
    rgb, mask = _sprite(obj, check_int("side", side, minimum=2))
    return np.round(rgb[mask] * 255).astype(np.uint8)


@functools.lru_cache(maxsize=8)
def _background(name: str, size: int, tint: tuple[float, float, float]) -> np.ndarray:
    tex = getattr(data, name)() / 255.0
    tex = resize(tex, (size, size), anti_aliasing=True)
    return np.clip(tex[..., None] * np.array(tint)[None, None], 0, 1)


def make_scene(
    objects: Sequence[str],
    motions: Sequence[str],
    background: str = "gravel",
    *,
    n_frames: int = 8,
    size: int = 128,
    object_size: int = 40,
    speed: float | Sequence[float] = 3.0,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """A clip with several moving objects.

    Args:
        objects: object names from :data:`OBJECTS`.
        motions: one direction from :data:`MOTIONS` per object.
        background: a name from :data:`BACKGROUNDS`.
        n_frames: ``T``.
        size: frame side in pixels.
        object_size: sprite side in pixels.
        speed: pixels per frame, one for all objects or one per object (0 keeps an object still).
        seed: start positions and background tint.

    Returns:
        ``(frames (T, size, size, 3) uint8, masks (R, T, size, size) bool)``.

    Raises:
        ValueError: on unknown names, mismatched lengths or a path that leaves the frame.
    """
    check_int("n_frames", n_frames, minimum=1)
    check_int("size", size, minimum=8)
    check_int("object_size", object_size, minimum=4)
    if len(objects) == 0 or len(objects) != len(motions):
        raise ValueError(
            f"objects and motions must be non-empty and of equal length, got {len(objects)}, {len(motions)}"
        )
    for o in objects:
        if o not in OBJECTS:
            raise ValueError(f"objects must be in {OBJECTS}, got {o!r}")
    for m in motions:
        if m not in MOTIONS:
            raise ValueError(f"motions must be in {MOTIONS}, got {m!r}")
    if background not in BACKGROUNDS:
        raise ValueError(f"background must be in {BACKGROUNDS}, got {background!r}")
    per_object = isinstance(speed, (Sequence, np.ndarray)) and np.ndim(speed) == 1
    speeds = [float(v) for v in speed] if per_object else [float(speed)] * len(objects)  # type: ignore[union-attr, arg-type]
    if len(speeds) != len(objects):
        raise ValueError(f"speed must be one number or one per object ({len(objects)}), got {len(speeds)}")
    for v in speeds:
        if not v >= 0:
            raise ValueError(f"speed must be >= 0, got {v}")
        travel = int(np.ceil(v * (n_frames - 1)))
        if object_size + travel > size:
            raise ValueError(f"object_size + speed*(n_frames-1) = {object_size + travel} exceeds size={size}")
    rng = np.random.default_rng(seed)
    tint = tuple(float(x) for x in rng.uniform(0.6, 1.0, 3))
    bg = _background(background, size, tint)  # type: ignore[arg-type]
    frames = np.repeat(bg[None], n_frames, axis=0).copy()
    masks = np.zeros((len(objects), n_frames, size, size), dtype=bool)
    for k, (obj, motion, v) in enumerate(zip(objects, motions, speeds, strict=True)):
        travel = int(np.ceil(v * (n_frames - 1)))
        rgb, sprite_mask = _sprite(obj, object_size)
        dy, dx = _STEP[motion]
        lo_y = travel if dy < 0 else 0
        hi_y = size - object_size - (travel if dy > 0 else 0)
        lo_x = travel if dx < 0 else 0
        hi_x = size - object_size - (travel if dx > 0 else 0)
        y0, x0 = int(rng.integers(lo_y, hi_y + 1)), int(rng.integers(lo_x, hi_x + 1))
        for t in range(n_frames):
            y = round(y0 + dy * v * t)
            x = round(x0 + dx * v * t)
            region = frames[t, y : y + object_size, x : x + object_size]
            region[sprite_mask] = rgb[sprite_mask]
            masks[:, t, y : y + object_size, x : x + object_size][:, sprite_mask] = False  # occluded by object k
            masks[k, t, y : y + object_size, x : x + object_size] = sprite_mask
    return (np.clip(frames, 0, 1) * 255).round().astype(np.uint8), masks


def make_clip(
    obj: str,
    background: str,
    *,
    n_frames: int = 24,
    size: int = 128,
    motion: str = "right",
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """A single-object clip: ``(frames (T, H, W, 3) uint8, masks (T, H, W) bool)`` (see :func:`make_scene`).

    Example:
        >>> frames, masks = make_clip("cat", "grass", n_frames=4, size=64, motion="left")
        >>> frames.shape, masks.shape, bool(masks[0].any())
        ((4, 64, 64, 3), (4, 64, 64), True)
    """
    check_int("size", size, minimum=8)
    object_size = max(4, size // 4)
    speed = min(3.0, (size - object_size) / max(1, n_frames - 1))
    frames, masks = make_scene([obj], [motion], background, n_frames=n_frames, size=size, object_size=object_size,
                               speed=speed, seed=seed)  # fmt: skip
    return frames, masks[0]


def scene_conversation(objects: Sequence[str], motions: Sequence[str]) -> list[dict[str, Any]]:
    """A two-turn grounded conversation about a scene: one ``<p>phrase</p> [SEG]`` per object."""
    answer = " ".join(f"<p>The {o}</p> [SEG] moves {m}." for o, m in zip(objects, motions, strict=True))
    return [
        {"from": "human", "value": "<video>\nDescribe the moving objects and segment them."},
        {"from": "gpt", "value": answer, "objects": [str(i + 1) for i in range(len(objects))]},
    ]
