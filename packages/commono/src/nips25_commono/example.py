"""One Common-O question: two scenes (or one, for the single-image control task), lettered options and the answer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from PIL import Image

__all__ = ["CONTROL_NONE_OPTION", "MAX_OPTIONS", "NONE_OPTION", "Example", "as_image"]

NONE_OPTION = "No objects are in common"
CONTROL_NONE_OPTION = "None of these objects are in the image"
MAX_OPTIONS = 26  # one letter A-Z per option
_NONE_TEXTS = frozenset({NONE_OPTION.lower(), CONTROL_NONE_OPTION.lower(), "none", "none of the above"})


def as_image(image: Any, *, name: str = "image") -> Image.Image:
    """Return ``image`` as an RGB PIL image; accepts a PIL image or an ``(H, W, 3)`` / ``(H, W)`` array.

    Float arrays must be finite and lie in ``[0, 1]``; integer arrays in ``[0, 255]``.

    Raises:
        TypeError: if ``image`` is neither a PIL image nor a numpy array.
        ValueError: if the array has the wrong shape, is empty, holds NaN/inf or values out of range.
    """
    if isinstance(image, Image.Image):
        if image.size[0] == 0 or image.size[1] == 0:
            raise ValueError(f"{name} is empty")
        return image if image.mode == "RGB" else image.convert("RGB")
    if not isinstance(image, np.ndarray):
        raise TypeError(f"{name} must be a PIL image or a numpy array, got {type(image).__name__}")
    if image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[2] != 3) or 0 in image.shape:
        raise ValueError(f"{name} must have shape (H, W, 3) or (H, W) with H, W > 0, got {image.shape}")
    if np.issubdtype(image.dtype, np.floating):
        if not np.isfinite(image).all():
            raise ValueError(f"{name} holds NaN or inf")
        if image.min() < 0 or image.max() > 1:
            raise ValueError(f"{name}: float pixels must lie in [0, 1]")
        image = (image * 255).round().astype(np.uint8)
    elif np.issubdtype(image.dtype, np.integer):
        if image.min() < 0 or image.max() > 255:
            raise ValueError(f"{name}: integer pixels must lie in [0, 255]")
        image = image.astype(np.uint8)
    else:
        raise TypeError(f"{name} must hold float or integer pixels, got dtype {image.dtype}")
    return Image.fromarray(image).convert("RGB")


@dataclass(frozen=True)
class Example:
    """A Common-O question (paper, Sec. 3): which of the options appear in both images?

    The options are shown lettered A, B, C, ...; exactly one of them is the "None" option
    (:data:`NONE_OPTION`, or :data:`CONTROL_NONE_OPTION` for the single-image control task). The answer is the set of
    option indices of the objects in common, or ``{none_index}`` when there are none.

    Args:
        images: two RGB PIL images for ``task="common"``, one for ``task="control"``.
        options: option texts, at most 26, unique, exactly one of them a None option.
        answer: the ground-truth option indices, non-empty; ``{none_index}`` alone or object options only.
        meta: free metadata (``n_objects``, ``similar_present``, ``subset``, the scenes' object ids, ...).
        uid: an identifier, kept in exports.
        task: ``"common"`` (two scenes) or ``"control"`` (one image: which options are in it?).

    Raises:
        ValueError: on a wrong number of images, empty/duplicate/too many options, a missing or repeated None
            option, an answer index out of range, or "None" mixed with objects in the answer.
        TypeError: if an image is not a PIL image or an array.

    Example:
        >>> from PIL import Image
        >>> im = Image.new("RGB", (8, 8))
        >>> ex = Example(images=(im, im), options=("apple", NONE_OPTION), answer=frozenset({1}))
        >>> ex.none_index, ex.letters
        (1, ('A', 'B'))
    """

    images: tuple[Image.Image, ...]
    options: tuple[str, ...]
    answer: frozenset[int]
    meta: Mapping[str, Any] = field(default_factory=dict)
    uid: str = ""
    task: Literal["common", "control"] = "common"

    def __post_init__(self) -> None:
        if self.task not in ("common", "control"):
            raise ValueError(f"task must be 'common' or 'control', got {self.task!r}")
        images = tuple(as_image(im, name=f"images[{i}]") for i, im in enumerate(self.images))
        expected = 2 if self.task == "common" else 1
        if len(images) != expected:
            raise ValueError(f"images must hold {expected} image(s) for task={self.task!r}, got {len(images)}")
        options = tuple(self.options)
        if not options:
            raise ValueError("options must not be empty")
        if len(options) > MAX_OPTIONS:
            raise ValueError(f"options must hold at most {MAX_OPTIONS} entries (letters A-Z), got {len(options)}")
        if any(not isinstance(o, str) or not o.strip() for o in options):
            raise ValueError("options must be non-empty strings")
        if len({o.strip().lower() for o in options}) != len(options):
            raise ValueError("options must be unique (case-insensitive)")
        nones = [i for i, o in enumerate(options) if o.strip().lower() in _NONE_TEXTS]
        if len(nones) != 1:
            raise ValueError(f"options must hold exactly one None option (e.g. {NONE_OPTION!r}), got {len(nones)}")
        answer = frozenset(int(a) for a in self.answer)
        if not answer:
            raise ValueError("answer must not be empty: use {none_index} when no object is in common")
        if min(answer) < 0 or max(answer) >= len(options):
            raise ValueError(f"answer indices must lie in [0, {len(options)}), got {sorted(answer)}")
        if nones[0] in answer and len(answer) > 1:
            raise ValueError("answer must not mix the None option with objects")
        object.__setattr__(self, "images", images)
        object.__setattr__(self, "options", options)
        object.__setattr__(self, "answer", answer)
        object.__setattr__(self, "meta", dict(self.meta))
        object.__setattr__(self, "_none", nones[0])

    @property
    def none_index(self) -> int:
        """Index of the None option."""
        return int(self.__dict__["_none"])

    @property
    def letters(self) -> tuple[str, ...]:
        """The option letters ``('A', 'B', ...)``."""
        return tuple(chr(ord("A") + i) for i in range(len(self.options)))

    @property
    def object_indices(self) -> tuple[int, ...]:
        """Indices of the object options (every option but None)."""
        return tuple(i for i in range(len(self.options)) if i != self.none_index)

    @property
    def common(self) -> frozenset[int]:
        """Ground-truth object options (empty when the answer is None)."""
        return self.answer - {self.none_index}

    def with_options_permuted(self, order: Sequence[int]) -> Example:
        """The same question with the options shown in ``order`` (``new[i] = old[order[i]]``).

        Raises:
            ValueError: if ``order`` is not a permutation of the option indices.
        """
        order = [int(o) for o in order]
        if sorted(order) != list(range(len(self.options))):
            raise ValueError(f"order must be a permutation of range({len(self.options)}), got {order}")
        inverse = {old: new for new, old in enumerate(order)}
        meta = dict(self.meta)
        if "option_objects" in meta:
            meta["option_objects"] = [meta["option_objects"][o] for o in order]
        return Example(
            images=self.images,
            options=tuple(self.options[o] for o in order),
            answer=frozenset(inverse[a] for a in self.answer),
            meta=meta,
            uid=self.uid,
            task=self.task,
        )
