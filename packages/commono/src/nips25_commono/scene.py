"""A generator of Common-O-like questions from an object library, with exact ground truth and several views.

Each question draws two scenes' object sets ``A`` and ``B`` of ``n`` objects each with a controlled common part
``C = A & B``; the options are ``C``, distractors present in only one scene, optionally absent objects similar to a
present one, and the None option, shuffled and lettered. A scene is rendered from a *view*: the object positions
(cells of a 5 x 5 grid with jitter), sizes, brightness and the crop of a real background texture change between
views, the object set does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from PIL import Image

from nips25_commono.example import CONTROL_NONE_OPTION, MAX_OPTIONS, NONE_OPTION, Example
from nips25_commono.library import ObjectLibrary

__all__ = ["GRID", "SUBSET_OBJECTS", "Placement", "Scene", "SceneConfig", "SceneGenerator", "control_example"]

GRID = 5  # scenes place objects in the cells of a GRID x GRID layout, so at most 25 objects per scene
BACKGROUNDS = ("grass", "gravel", "brick", "plain")
#: Objects per scene of each released subset, as the dataset card of ``facebook/Common-O`` states them:
#: "Common-O (3 - 8 objects) and Common-O Complex (8 - 16 objects)" (a secondary summary of the paper says 3-7).
SUBSET_OBJECTS: dict[str, tuple[int, int]] = {"main": (3, 8), "complex": (8, 16)}


@dataclass(frozen=True)
class SceneConfig:
    """Hyper-parameters of :class:`SceneGenerator` (our reconstruction; the paper renders with Unreal Engine).

    Attributes:
        n_objects: inclusive range of objects per scene; both scenes of a question get the same count.
            ``(3, 8)`` is Common-O, ``(8, 16)`` Common-O Complex (:data:`SUBSET_OBJECTS`, the dataset card).
        n_common: inclusive range of the number of objects in common; the upper end is capped by the count.
            ``None`` as the upper end means "up to the count".
        n_distractors: objects present in only one scene that are added to the options (fewer if the 26-letter
            limit is reached).
        similar_distractor_rate: probability that one absent object similar to a present one joins the options.
        canvas: side of the square images in pixels.
        object_size: inclusive range of object sizes as a fraction of the grid cell.
        background: ``"texture"`` (scikit-image brick/grass/gravel crops and plain) or ``"plain"``.
        brightness: half-width of the per-view brightness gain (``0.1`` gives gains in ``[0.9, 1.1]``).
    """

    n_objects: tuple[int, int] = SUBSET_OBJECTS["main"]
    n_common: tuple[int, int | None] = (0, None)
    n_distractors: int = 4
    similar_distractor_rate: float = 0.5
    canvas: int = 224
    object_size: tuple[float, float] = (0.8, 0.95)
    background: str = "texture"
    brightness: float = 0.1

    def __post_init__(self) -> None:
        lo, hi = self.n_objects
        if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi <= GRID * GRID):
            raise ValueError(f"n_objects must be ints with 1 <= low <= high <= {GRID * GRID}, got {self.n_objects}")
        c_lo, c_hi = self.n_common
        if not isinstance(c_lo, int) or c_lo < 0 or c_lo > lo:
            raise ValueError(f"n_common low end must be an int in [0, n_objects low={lo}], got {c_lo!r}")
        if c_hi is not None and (not isinstance(c_hi, int) or c_hi < c_lo):
            raise ValueError(f"n_common high end must be None or an int >= {c_lo}, got {c_hi!r}")
        if not isinstance(self.n_distractors, int) or self.n_distractors < 0:
            raise ValueError(f"n_distractors must be an int >= 0, got {self.n_distractors!r}")
        if not 0.0 <= self.similar_distractor_rate <= 1.0:
            raise ValueError(f"similar_distractor_rate must be in [0, 1], got {self.similar_distractor_rate}")
        if not isinstance(self.canvas, int) or self.canvas < 8 * GRID:
            raise ValueError(f"canvas must be an int >= {8 * GRID}, got {self.canvas!r}")
        s_lo, s_hi = self.object_size
        if not 0.1 <= s_lo <= s_hi <= 1.0:
            raise ValueError(f"object_size must satisfy 0.1 <= low <= high <= 1, got {self.object_size}")
        if self.background not in ("texture", "plain"):
            raise ValueError(f"background must be 'texture' or 'plain', got {self.background!r}")
        if not 0.0 <= self.brightness < 0.5:
            raise ValueError(f"brightness must be in [0, 0.5), got {self.brightness}")

    @property
    def size_range_px(self) -> tuple[int, int]:
        """Object sizes in pixels ``(low, high)``."""
        cell = self.canvas / GRID
        return max(4, round(cell * self.object_size[0])), max(4, round(cell * self.object_size[1]))


@dataclass(frozen=True)
class Placement:
    """Where one object sits in a rendered scene: library index and top-left corner / side in pixels."""

    obj: int
    x: int
    y: int
    size: int


@dataclass(frozen=True)
class Scene:
    """A rendered view of an object set: the RGB image and the exact placements (the ground truth)."""

    objects: tuple[int, ...]
    image: Image.Image
    placements: tuple[Placement, ...]


@cache
def _texture(name: str) -> np.ndarray:
    """A background texture as float RGB in [0, 1], contrast reduced so that objects stand out."""
    if name == "plain":
        return np.full((256, 256, 3), 0.85)
    import skimage.data

    gray = np.asarray(getattr(skimage.data, name)(), dtype=float) / 255.0
    tint = {"grass": (0.75, 0.9, 0.7), "gravel": (0.85, 0.85, 0.85), "brick": (0.95, 0.75, 0.7)}[name]
    return (0.45 + 0.35 * gray)[..., None] * np.asarray(tint)


class SceneGenerator:
    """Generate Common-O-like questions over an object library.

    Args:
        library: the object pictures and their similarity relation.
        config: a :class:`SceneConfig`; the keyword arguments below override its fields.
        seed: seed of the question stream; question ``i`` depends only on ``(seed, i)``.
        **overrides: fields of :class:`SceneConfig` (``n_objects=(8, 16)``, ``canvas=160``, ...).

    Raises:
        TypeError: if ``library`` is not an :class:`~nips25_commono.library.ObjectLibrary`.
        ValueError: if a field is out of range or the library is too small for two disjoint scenes.

    Example:
        >>> from nips25_commono.library import ProceduralLibrary
        >>> gen = SceneGenerator(ProceduralLibrary(), n_objects=(3, 4), canvas=80, seed=0)
        >>> ex = gen.example(0)
        >>> ex.answer == frozenset(i for i, o in enumerate(ex.meta["option_objects"]) if o in ex.meta["common"]) \\
        ...     or ex.answer == {ex.none_index}
        True
    """

    def __init__(
        self, library: ObjectLibrary, config: SceneConfig | None = None, *, seed: int = 0, **overrides: object
    ) -> None:
        if not isinstance(library, ObjectLibrary):
            raise TypeError(f"library must be an ObjectLibrary, got {type(library).__name__}")
        base = config if config is not None else SceneConfig()
        if not isinstance(base, SceneConfig):
            raise TypeError(f"config must be a SceneConfig, got {type(base).__name__}")
        unknown = set(overrides) - set(SceneConfig.__dataclass_fields__)
        if unknown:
            raise TypeError(f"unknown SceneConfig fields: {sorted(unknown)}")
        fields = {**base.__dict__, **overrides}
        self.config = SceneConfig(**fields)  # type: ignore[arg-type]
        if len(library) < 2 * self.config.n_objects[1] + 1:
            raise ValueError(
                f"library has {len(library)} objects; n_objects up to {self.config.n_objects[1]} needs at least "
                f"{2 * self.config.n_objects[1] + 1}"
            )
        if not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be an int >= 0, got {seed!r}")
        self.library = library
        self.seed = int(seed)
        self._cache: dict[tuple[int, int], np.ndarray] = {}

    def _picture(self, obj: int, size: int) -> np.ndarray:
        key = (obj, size)
        if key not in self._cache:
            self._cache[key] = self.library.picture(obj, size).astype(np.float32) / 255.0
        return self._cache[key]

    def render(self, objects: Sequence[int], *, rng: np.random.Generator) -> Scene:
        """Render one view of the object set ``objects``.

        Args:
            objects: distinct library indices, at most ``GRID**2``.
            rng: the generator drawing the view (cells, jitter, sizes, background crop, brightness).

        Returns:
            The :class:`Scene`.

        Raises:
            ValueError: if ``objects`` is empty, too long, repeats an object or holds an unknown index.
        """
        objs = [int(o) for o in objects]
        if not objs or len(objs) > GRID * GRID or len(set(objs)) != len(objs):
            raise ValueError(f"objects must be 1 to {GRID * GRID} distinct indices, got {objs}")
        if min(objs) < 0 or max(objs) >= len(self.library):
            raise ValueError(f"objects must be library indices in [0, {len(self.library)})")
        cfg = self.config
        n = cfg.canvas
        names = BACKGROUNDS if cfg.background == "texture" else ("plain",)
        tex = _texture(names[int(rng.integers(len(names)))])
        y0 = int(rng.integers(0, tex.shape[0] - min(n, tex.shape[0]) + 1))
        x0 = int(rng.integers(0, tex.shape[1] - min(n, tex.shape[1]) + 1))
        bg = tex[y0 : y0 + n, x0 : x0 + n]
        if bg.shape[:2] != (n, n):
            bg = np.asarray(Image.fromarray((bg * 255).astype(np.uint8)).resize((n, n)), dtype=float) / 255.0
        img = bg.astype(np.float32).copy()
        cells = rng.choice(GRID * GRID, size=len(objs), replace=False)
        cell = n / GRID
        s_lo, s_hi = cfg.size_range_px
        placements = []
        for obj, c in zip(objs, cells):
            size = int(rng.integers(s_lo, s_hi + 1))
            slack = max(0, int(cell) - size)
            x = round((c % GRID) * cell) + int(rng.integers(0, slack + 1))
            y = round((c // GRID) * cell) + int(rng.integers(0, slack + 1))
            x, y = min(x, n - size), min(y, n - size)
            pic = self._picture(obj, size)
            alpha = pic[..., 3:4]
            img[y : y + size, x : x + size] = pic[..., :3] * alpha + img[y : y + size, x : x + size] * (1 - alpha)
            placements.append(Placement(obj=obj, x=x, y=y, size=size))
        gain = 1.0 + float(rng.uniform(-cfg.brightness, cfg.brightness))
        out = Image.fromarray(np.clip(img * gain * 255.0 + 0.5, 0, 255).astype(np.uint8))
        return Scene(objects=tuple(objs), image=out, placements=tuple(placements))

    def _rng(self, index: int, stream: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, int(index), stream])

    def object_sets(self, index: int) -> dict[str, object]:
        """The object sets and options of question ``index``, without rendering (exact ground truth).

        Returns:
            ``{"a", "b", "common", "option_objects", "similar_added"}``: the two scenes' library indices, their
            intersection, the library index behind each option (``-1`` for None) and whether an absent similar
            object was added.
        """
        if not isinstance(index, (int, np.integer)) or index < 0:
            raise ValueError(f"index must be an int >= 0, got {index!r}")
        cfg = self.config
        rng = self._rng(index, 0)
        n = int(rng.integers(cfg.n_objects[0], cfg.n_objects[1] + 1))
        c_hi = n if cfg.n_common[1] is None else min(n, cfg.n_common[1])
        c = int(rng.integers(min(cfg.n_common[0], c_hi), c_hi + 1))
        pool = rng.permutation(len(self.library))
        a = [int(o) for o in pool[:n]]
        b = a[:c] + [int(o) for o in pool[n : 2 * n - c]]
        common = set(a[:c])
        only = a[c:] + b[c:]
        rng.shuffle(only)
        n_dis = min(cfg.n_distractors, len(only), MAX_OPTIONS - 1 - c)
        option_objects = sorted(common) + only[:n_dis]
        similar_added = False
        present = set(a) | set(b)
        if rng.random() < cfg.similar_distractor_rate and len(option_objects) < MAX_OPTIONS - 1:
            candidates = sorted(
                {int(s) for o in sorted(present) for s in self.library.similar(o)} - present - set(option_objects)
            )
            if candidates:
                option_objects.append(candidates[int(rng.integers(len(candidates)))])
                similar_added = True
        option_objects.append(-1)
        order = rng.permutation(len(option_objects))
        option_objects = [option_objects[i] for i in order]
        return {
            "a": tuple(a),
            "b": tuple(b),
            "common": tuple(sorted(common)),
            "option_objects": option_objects,
            "similar_added": similar_added,
        }

    def example(self, index: int, *, subset: str = "generated") -> Example:
        """Question ``index`` of this generator's stream: two rendered scenes, options and exact ground truth.

        The ground truth is ``{i : option_objects[i] in A & B}``, or ``{none_index}`` when that is empty.
        ``meta["similar_present"]`` is true when a wrong option shows an object visually similar to an object in
        either scene (the paper's "similar objects present" condition).
        """
        sets = self.object_sets(index)
        a, b = sets["a"], sets["b"]
        assert isinstance(a, tuple) and isinstance(b, tuple)
        option_objects: list[int] = list(sets["option_objects"])  # type: ignore[call-overload]
        common = set(a) & set(b)
        present = set(a) | set(b)
        view_rng = self._rng(index, 1)
        scenes = (self.render(a, rng=view_rng), self.render(b, rng=view_rng))
        options = tuple(NONE_OPTION if o < 0 else self.library.names[o] for o in option_objects)
        answer = frozenset(i for i, o in enumerate(option_objects) if o in common) or frozenset(
            {option_objects.index(-1)}
        )
        similar_present = any(
            o >= 0 and o not in common and bool(set(self.library.similar(o).tolist()) & (present - {o}))
            for o in option_objects
        )
        meta = {
            "subset": subset,
            "n_objects": len(a),
            "n_common": len(common),
            "similar_present": similar_present,
            "similar_added": sets["similar_added"],
            "scene_objects": [list(a), list(b)],
            "common": sorted(common),
            "option_objects": option_objects,
            "placements": [[(p.obj, p.x, p.y, p.size) for p in s.placements] for s in scenes],
        }
        return Example(
            images=(scenes[0].image, scenes[1].image),
            options=options,
            answer=answer,
            meta=meta,
            uid=f"{subset}-{self.seed}-{index}",
        )

    def examples(self, n: int, *, start: int = 0, subset: str = "generated") -> list[Example]:
        """Questions ``start, ..., start + n - 1`` (see :meth:`example`).

        Raises:
            ValueError: if ``n < 1`` or ``start < 0``.
        """
        if not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n must be an int >= 1, got {n!r}")
        if not isinstance(start, (int, np.integer)) or start < 0:
            raise ValueError(f"start must be an int >= 0, got {start!r}")
        return [self.example(start + i, subset=subset) for i in range(int(n))]


def control_example(example: Example, *, which: int = 0) -> Example:
    """The single-image control question (paper, Sec. 4): which of the same options are in image ``which``?

    The options are the common question's, with the None option reworded to :data:`CONTROL_NONE_OPTION`; the answer
    is every option whose object is in that scene.

    Args:
        example: a generated two-scene question (its ``meta`` must hold ``scene_objects`` and ``option_objects``).
        which: ``0`` or ``1``, the image to ask about.

    Raises:
        ValueError: if ``which`` is not 0 or 1, the example is not a two-scene question or lacks the metadata.
    """
    if which not in (0, 1):
        raise ValueError(f"which must be 0 or 1, got {which!r}")
    if not isinstance(example, Example) or example.task != "common":
        raise ValueError("example must be a two-scene Example")
    if "scene_objects" not in example.meta or "option_objects" not in example.meta:
        raise ValueError("example.meta must hold 'scene_objects' and 'option_objects' (a generated example)")
    scene = set(example.meta["scene_objects"][which])
    option_objects = list(example.meta["option_objects"])
    options = tuple(CONTROL_NONE_OPTION if o < 0 else t for o, t in zip(option_objects, example.options))
    answer = frozenset(i for i, o in enumerate(option_objects) if o in scene) or frozenset({option_objects.index(-1)})
    meta = {**example.meta, "control_of": which}
    return Example(
        images=(example.images[which],),
        options=options,
        answer=answer,
        meta=meta,
        uid=f"{example.uid}-control{which}",
        task="control",
    )
