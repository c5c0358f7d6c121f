"""Object libraries: the pictures a generated scene is made of, their names, and which of them look alike.

Two libraries ship: :class:`EmojiLibrary` renders real colour glyphs from the Debian ``fonts-noto-color-emoji``
font (or any colour bitmap font given by path) and names them with their Unicode names; :class:`ProceduralLibrary`
draws dependency-free shapes (shape x colour x pattern) for unit tests and for machines without the font.

Similarity is visual: two objects are *similar* when one is among the ``n_similar`` nearest neighbours of the
other in a thumbnail space (RGB on mid-grey, 16 x 16 pixels, Euclidean distance). This is the relation the paper's
"similar objects present" analysis needs (e.g. red apple, tomato, cherries).
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from nips25_shared import cached, get_logger

__all__ = ["DEFAULT_EMOJI_FONT", "EmojiLibrary", "ObjectLibrary", "ProceduralLibrary"]

DEFAULT_EMOJI_FONT = Path("/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf")
_EMOJI_PIXEL_SIZE = 109  # the only size the Noto colour bitmap font renders at (CBDT strikes)
_THUMB = 16
# Unicode-name words that mark a glyph as not a physical object (faces, people, signs, flags, modifiers, symbols).
_EXCLUDED_WORDS = frozenset({
        "FACE", "FACES", "REGIONAL", "INDICATOR", "SKIN", "TONE", "KEYCAP", "ARROW", "ARROWS", "BUTTON", "SQUARED",
        "CIRCLED", "SIGN", "SYMBOL", "MARK", "PERSON", "MAN", "WOMAN", "MEN", "WOMEN", "BOY", "GIRL", "BABY", "CHILD",
        "ADULT", "HAND", "HANDS", "FINGER", "FINGERS", "CLOCK", "OCLOCK", "FLAG", "SELECTOR", "VARIATION", "JOINER",
        "COMBINING", "LETTER", "DIGIT", "NUMBER", "ZODIAC", "HEART", "HEARTS", "CAT", "GESTURE", "GESTURING",
        "SQUARE", "CIRCLE", "TRIANGLE", "DIAMOND", "BLACK", "WHITE", "LARGE", "MEDIUM", "SMALL", "PEOPLE", "FAMILY",
        "COUPLE", "KISS", "HOLDING", "RAISED", "RAISING", "BOWING",
})  # fmt: skip
log = get_logger("nips25_commono.library")


class ObjectLibrary:
    """A set of named RGBA object pictures with a visual-similarity relation.

    Args:
        names: one human-readable, lower-case name per object (the option text), unique.
        glyphs: ``(K, S, S, 4)`` uint8 RGBA pictures, the object on a transparent background.
        n_similar: number of visual nearest neighbours that count as similar to each object, ``>= 1``.
        source: a short description of where the pictures come from.

    Raises:
        ValueError: if names are empty, duplicated or not matched one-to-one with ``glyphs``, if ``glyphs`` has the
            wrong shape, dtype or an empty alpha channel, or if ``n_similar`` is out of range.

    Example:
        >>> lib = ProceduralLibrary()
        >>> len(lib) > 10 and lib.glyphs.shape[1:] == (48, 48, 4)
        True
    """

    def __init__(self, names: Sequence[str], glyphs: np.ndarray, *, n_similar: int = 3, source: str = "") -> None:
        names = tuple(names)
        if len(names) < 2:
            raise ValueError(f"names must hold at least 2 objects, got {len(names)}")
        if any(not isinstance(n, str) or not n.strip() for n in names):
            raise ValueError("names must be non-empty strings")
        if len(set(names)) != len(names):
            raise ValueError("names must be unique")
        glyphs = np.asarray(glyphs)
        if glyphs.ndim != 4 or glyphs.shape[-1] != 4 or glyphs.shape[1] != glyphs.shape[2]:
            raise ValueError(f"glyphs must have shape (K, S, S, 4), got {glyphs.shape}")
        if glyphs.dtype != np.uint8:
            raise ValueError(f"glyphs must be uint8 RGBA, got dtype {glyphs.dtype}")
        if glyphs.shape[0] != len(names):
            raise ValueError(f"glyphs holds {glyphs.shape[0]} pictures for {len(names)} names")
        if (glyphs[..., 3].reshape(len(names), -1).max(axis=1) == 0).any():
            raise ValueError("glyphs has a picture with an empty alpha channel")
        if not isinstance(n_similar, int) or not 1 <= n_similar < len(names):
            raise ValueError(f"n_similar must be an int in [1, {len(names) - 1}], got {n_similar!r}")
        self.names = names
        self.glyphs = glyphs
        self.n_similar = n_similar
        self.source = source
        self.features = _thumbnails(glyphs)
        self._index = {n: i for i, n in enumerate(names)}
        sq = (self.features**2).sum(1)
        d2 = sq[:, None] + sq[None, :] - 2.0 * self.features @ self.features.T  # (K, K), no (K, K, D) temporary
        np.fill_diagonal(d2, np.inf)
        knn = np.argsort(d2, axis=1)[:, :n_similar]
        sim = np.zeros((len(names), len(names)), dtype=bool)
        sim[np.arange(len(names))[:, None], knn] = True
        self.similarity = sim | sim.T
        self.similarity.setflags(write=False)

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} objects, {self.glyph_size} px, n_similar={self.n_similar})"

    @property
    def glyph_size(self) -> int:
        """Side length ``S`` of the stored pictures, in pixels."""
        return int(self.glyphs.shape[1])

    def index(self, name: str) -> int:
        """The index of the object called ``name``.

        Raises:
            KeyError: if no object has that name.
        """
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"name {name!r} is not in this library") from None

    def similar(self, i: int) -> np.ndarray:
        """Indices of the objects visually similar to object ``i`` (sorted, never ``i`` itself)."""
        if not isinstance(i, (int, np.integer)) or not 0 <= i < len(self):
            raise ValueError(f"i must be an object index in [0, {len(self)}), got {i!r}")
        return np.flatnonzero(self.similarity[i])

    def picture(self, i: int, size: int) -> np.ndarray:
        """Object ``i`` resized to ``(size, size, 4)`` uint8 RGBA (Lanczos)."""
        if not isinstance(size, (int, np.integer)) or size < 4:
            raise ValueError(f"size must be an int >= 4, got {size!r}")
        if not isinstance(i, (int, np.integer)) or not 0 <= i < len(self):
            raise ValueError(f"i must be an object index in [0, {len(self)}), got {i!r}")
        if size == self.glyph_size:
            return self.glyphs[i]
        img = Image.fromarray(self.glyphs[i], mode="RGBA").resize((int(size), int(size)), Image.Resampling.LANCZOS)
        return np.asarray(img)


def _thumbnails(glyphs: np.ndarray) -> np.ndarray:
    """``(K, 16*16*3)`` float features: each picture on mid-grey, 16 x 16, RGB in [0, 1]."""
    out = np.empty((glyphs.shape[0], _THUMB * _THUMB * 3))
    for k, g in enumerate(glyphs):
        alpha = g[..., 3:4].astype(float) / 255.0
        rgb = g[..., :3].astype(float) * alpha + 128.0 * (1.0 - alpha)
        img = Image.fromarray(rgb.round().astype(np.uint8)).resize((_THUMB, _THUMB), Image.Resampling.BOX)
        out[k] = np.asarray(img, dtype=float).ravel() / 255.0
    return out


def _square_rgba(img: Image.Image, size: int) -> np.ndarray:
    """Crop ``img`` to its alpha bounding box, centre it on a transparent square and resize to ``size``."""
    box = img.getbbox()
    if box is None:
        raise ValueError("empty picture")
    img = img.crop(box)
    side = max(img.size)
    canvas = Image.new("RGBA", (side, side), (0, 0, 0, 0))
    canvas.paste(img, ((side - img.size[0]) // 2, (side - img.size[1]) // 2))
    return np.asarray(canvas.resize((size, size), Image.Resampling.LANCZOS))


def _emoji_codepoints(font_path: Path) -> list[int]:
    from fontTools.ttLib import TTFont

    with TTFont(str(font_path), lazy=True) as font:
        cmap = font.getBestCmap() or {}
    keep = []
    for cp in sorted(cmap):
        if cp < 0x2000:
            continue
        name = unicodedata.name(chr(cp), "")
        if name and not (set(name.replace("-", " ").split()) & _EXCLUDED_WORDS):
            keep.append(cp)
    return keep


def _render_emoji(font_path: Path, size: int, include: frozenset[str] | None) -> dict[str, np.ndarray]:
    font = ImageFont.truetype(str(font_path), _EMOJI_PIXEL_SIZE)
    codepoints, glyphs = [], []
    for cp in _emoji_codepoints(font_path):
        if include is not None and unicodedata.name(chr(cp)).lower() not in include:
            continue
        canvas = Image.new("RGBA", (160, 160), (0, 0, 0, 0))
        ImageDraw.Draw(canvas).text((8, 8), chr(cp), font=font, embedded_color=True)
        arr = np.asarray(canvas)
        if arr[..., 3].max() == 0 or np.ptp(arr[..., :3][arr[..., 3] > 0]) == 0:
            continue  # no glyph, or a flat single-colour glyph
        codepoints.append(cp)
        glyphs.append(_square_rgba(canvas, size))
    stacked = np.stack(glyphs) if glyphs else np.zeros((0, size, size, 4), dtype=np.uint8)
    return {"codepoints": np.asarray(codepoints, dtype=np.int64), "glyphs": stacked}


class EmojiLibrary(ObjectLibrary):
    """Real colour pictures of everyday objects: the emoji of a colour bitmap font, named by Unicode name.

    Faces, people, hands, signs, flags, symbols and geometric shapes are left out by name; what remains is food,
    animals, plants, tools, vehicles, clothing and household objects (about 800 pictures in Noto Color Emoji
    2.042). The rendering is cached on disk through :func:`nips25_shared.cached`.

    Args:
        font_path: a colour bitmap emoji font; defaults to Debian's ``fonts-noto-color-emoji``
            (:data:`DEFAULT_EMOJI_FONT`).
        size: side length of the stored pictures in pixels, ``>= 8``.
        n_similar: visual nearest neighbours counted as similar.
        max_objects: keep only the first ``max_objects`` pictures in codepoint order (``None`` keeps all).
        include: keep only the emoji with these (lower-case Unicode) names, e.g. ``["red apple", "tomato"]``.

    Raises:
        FileNotFoundError: if the font file does not exist (install ``fonts-noto-color-emoji`` or pass a path;
            :class:`ProceduralLibrary` needs no font).
        ValueError: if a size is out of range or the font yields fewer than two usable pictures.

    Example:
        >>> lib = EmojiLibrary()  # doctest: +SKIP
        >>> lib.names[lib.index("red apple")]  # doctest: +SKIP
        'red apple'
    """

    def __init__(
        self,
        font_path: str | Path | None = None,
        *,
        size: int = 64,
        n_similar: int = 3,
        max_objects: int | None = None,
        include: Sequence[str] | None = None,
    ) -> None:
        path = Path(font_path) if font_path is not None else DEFAULT_EMOJI_FONT
        if not path.is_file():
            raise FileNotFoundError(
                f"font_path: no emoji font at {path}; install Debian's fonts-noto-color-emoji "
                "(apt-get install fonts-noto-color-emoji) or pass a colour emoji font file, or use ProceduralLibrary()"
            )
        if not isinstance(size, int) or size < 8:
            raise ValueError(f"size must be an int >= 8, got {size!r}")
        if max_objects is not None and (not isinstance(max_objects, int) or max_objects < 2):
            raise ValueError(f"max_objects must be None or an int >= 2, got {max_objects!r}")
        wanted = None
        if include is not None:
            if isinstance(include, str) or not all(isinstance(n, str) for n in include):
                raise TypeError("include must be a sequence of emoji names")
            wanted = frozenset(n.strip().lower() for n in include)
        stat = path.stat()
        ident = f"{path.resolve()}|{stat.st_size}|{int(stat.st_mtime)}|{sorted(wanted) if wanted else None}"
        tag = hashlib.sha256(ident.encode()).hexdigest()[:16]
        data = cached(f"commono/emoji-{tag}-{size}-v1", lambda: _render_emoji(path, size, wanted), kind="npz")
        if data["codepoints"].size < 2:
            raise ValueError(f"the font {path} yields {data['codepoints'].size} usable pictures; need at least 2")
        codepoints, glyphs = data["codepoints"], data["glyphs"]
        if max_objects is not None:
            codepoints, glyphs = codepoints[:max_objects], glyphs[:max_objects]
        names = [unicodedata.name(chr(int(cp))).lower() for cp in codepoints]
        log.debug("emoji library: %d pictures from %s", len(names), path)
        super().__init__(names, glyphs, n_similar=n_similar, source=f"emoji font {path.name}")
        self.codepoints = codepoints


_SHAPES = ("disc", "square", "triangle", "diamond", "ring", "cross")
_COLOURS = {
    "red": (220, 40, 40),
    "dark red": (150, 20, 30),
    "green": (40, 170, 60),
    "olive": (120, 140, 40),
    "blue": (40, 80, 220),
    "navy": (30, 40, 120),
    "yellow": (240, 210, 40),
    "orange": (245, 140, 30),
}
_PATTERNS = ("plain", "striped")


def _draw_shape(shape: str, colour: tuple[int, int, int], pattern: str, size: int) -> np.ndarray:
    img = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    m, s = 2, size - 3
    fill = (*colour, 255)
    if shape == "disc":
        d.ellipse((m, m, s, s), fill=fill)
    elif shape == "square":
        d.rectangle((m + 2, m + 2, s - 2, s - 2), fill=fill)
    elif shape == "triangle":
        d.polygon([(size // 2, m), (s, s), (m, s)], fill=fill)
    elif shape == "diamond":
        d.polygon([(size // 2, m), (s, size // 2), (size // 2, s), (m, size // 2)], fill=fill)
    elif shape == "ring":
        d.ellipse((m, m, s, s), fill=fill)
        q = size // 4
        d.ellipse((m + q, m + q, s - q, s - q), fill=(0, 0, 0, 0))
    else:
        t = size // 3
        d.rectangle((t, m, size - t, s), fill=fill)
        d.rectangle((m, t, s, size - t), fill=fill)
    arr = np.asarray(img).copy()
    if pattern == "striped":
        stripe = (np.arange(size) // max(2, size // 8)) % 2 == 1
        mask = (arr[..., 3] > 0) & stripe[:, None]
        arr[mask, :3] = (255, 255, 255)
    return arr


class ProceduralLibrary(ObjectLibrary):
    """Dependency-free drawn objects: shape x colour x pattern (96 objects), named e.g. ``"striped red disc"``.

    Similar objects differ in one attribute (a red and a dark-red disc), so the similarity analysis works here too.

    Args:
        size: side length of the pictures in pixels, ``>= 8``.
        n_similar: visual nearest neighbours counted as similar.

    Raises:
        ValueError: if ``size`` or ``n_similar`` is out of range.
    """

    def __init__(self, *, size: int = 48, n_similar: int = 3) -> None:
        if not isinstance(size, int) or size < 8:
            raise ValueError(f"size must be an int >= 8, got {size!r}")
        names, glyphs = [], []
        for shape in _SHAPES:
            for colour, rgb in _COLOURS.items():
                for pattern in _PATTERNS:
                    names.append(f"{colour} {shape}" if pattern == "plain" else f"{pattern} {colour} {shape}")
                    glyphs.append(_draw_shape(shape, rgb, pattern, size))
        super().__init__(names, np.stack(glyphs), n_similar=n_similar, source="procedural shapes")
