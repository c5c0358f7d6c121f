"""Per-image detectors as Common-O models, and the weight-free perception baseline ``TemplateMatcher``.

A per-image detector scores the presence of every option's object in each image separately, thresholds the
scores, and answers the intersection across the two images (or the None option when it is empty). Its cross-scene
accuracy is therefore bounded by its per-image accuracy on both images: a model that perceives but does not reason
(the paper's single-image control task against the common-object task).
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np
from PIL import Image

from nips25_commono.example import Example, as_image
from nips25_commono.library import ObjectLibrary
from nips25_commono.prompt import format_answer

__all__ = ["PerImageDetector", "TemplateMatcher", "normalized_cross_correlation"]

_MAX_CACHE = 500_000


class PerImageDetector(ABC):
    """Base of the detectors: per-image presence scores, a threshold, and the cross-scene intersection.

    Subclasses implement :meth:`presence`. Scores are cached per (image content, option text), so calibrating the
    threshold and scoring the control task reuse them.

    Args:
        threshold: presence score at or above which an object counts as present.
    """

    def __init__(self, *, threshold: float) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not np.isfinite(threshold):
            raise ValueError(f"threshold must be a finite number, got {threshold!r}")
        self.threshold = float(threshold)
        self._scores: dict[tuple[bytes, str], float] = {}

    @abstractmethod
    def presence(self, image: Image.Image, names: Sequence[str]) -> np.ndarray:
        """``(len(names),)`` presence scores of the named objects in ``image`` (higher: more likely present)."""

    def scores(self, example: Example) -> np.ndarray:
        """``(n_images, n_options)`` presence scores of every object option (``nan`` for the None option)."""
        if not isinstance(example, Example):
            raise TypeError(f"example must be an Example, got {type(example).__name__}")
        out = np.full((len(example.images), len(example.options)), np.nan)
        idx = list(example.object_indices)
        for k, image in enumerate(example.images):
            digest = hashlib.blake2b(image.tobytes() + repr(image.size).encode(), digest_size=16).digest()
            todo = [i for i in idx if (digest, example.options[i]) not in self._scores]
            if todo:
                values = self.presence(image, [example.options[i] for i in todo])
                if len(self._scores) > _MAX_CACHE:
                    self._scores.clear()
                for i, v in zip(todo, values):
                    self._scores[(digest, example.options[i])] = float(v)
            for i in idx:
                out[k, i] = self._scores[(digest, example.options[i])]
        return out

    def select(self, example: Example, *, threshold: float | None = None) -> frozenset[int]:
        """The option indices present in every image of ``example``, or ``{none_index}`` when there are none."""
        t = self.threshold if threshold is None else float(threshold)
        s = self.scores(example)
        present = np.all(np.nan_to_num(s, nan=-np.inf) >= t, axis=0)
        picked = frozenset(int(i) for i in np.flatnonzero(present))
        return picked or frozenset({example.none_index})

    def answer(self, example: Example) -> str:
        """``Answer: ...`` with the options detected in every image (see :meth:`select`)."""
        return format_answer(self.select(example))

    def calibrate(self, examples: Sequence[Example], *, grid: Sequence[float] | None = None) -> float:
        """Set :attr:`threshold` to the grid value with the best exact-set accuracy on ``examples``.

        Use a split generated separately from the evaluation questions (we calibrate on single-image control
        questions, so that the threshold is a perception setting, not tuned on the cross-scene task).

        Args:
            examples: calibration questions (any task).
            grid: candidate thresholds; defaults to 41 quantiles of the observed scores.

        Returns:
            The chosen threshold (ties go to the lowest candidate).

        Raises:
            ValueError: if ``examples`` or ``grid`` is empty or ``grid`` holds a non-finite value.
        """
        if not isinstance(examples, Sequence) or len(examples) == 0:
            raise ValueError("examples must be a non-empty sequence of Example")
        all_scores = [self.scores(ex) for ex in examples]
        if grid is None:
            flat = np.concatenate([s[np.isfinite(s)] for s in all_scores])
            candidates = np.unique(np.quantile(flat, np.linspace(0.0, 1.0, 41))) if flat.size else np.array([0.0])
        else:
            candidates = np.array([float(g) for g in grid])
        if candidates.size == 0 or not np.isfinite(candidates).all():
            raise ValueError("grid must be a non-empty sequence of finite thresholds")
        accuracy = [np.mean([self.select(ex, threshold=float(t)) == ex.answer for ex in examples]) for t in candidates]
        self.threshold = float(candidates[int(np.argmax(accuracy))])
        return self.threshold


def normalized_cross_correlation(image: np.ndarray, templates: np.ndarray) -> np.ndarray:
    r"""Zero-mean normalised cross-correlation of each template over every valid position of ``image``.

    .. math:: \mathrm{NCC}(y, x) = \frac{\sum (P_{yx} - \bar P_{yx})(T - \bar T)}
              {\sqrt{\sum (P_{yx} - \bar P_{yx})^2 \sum (T - \bar T)^2}}

    with the sums over the template's pixels and channels and :math:`P_{yx}` the image patch at ``(y, x)``; the
    same quantity as ``skimage.feature.match_template`` (``pad_input=False``) for one template, computed for a batch
    with one FFT of the image. Flat patches (zero variance) score 0.

    Args:
        image: ``(H, W, C)`` float image.
        templates: ``(T, h, w, C)`` float templates with ``h <= H`` and ``w <= W``.

    Returns:
        ``(T, H - h + 1, W - w + 1)`` scores in ``[-1, 1]``.

    Raises:
        ValueError: on wrong ranks, mismatched channels, templates larger than the image, or NaN/inf values.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> img = rng.random((20, 20, 3))
        >>> float(normalized_cross_correlation(img, img[None, 5:11, 7:13]).max().round(6))
        1.0
    """
    image = np.asarray(image, dtype=float)
    templates = np.asarray(templates, dtype=float)
    if image.ndim != 3 or templates.ndim != 4:
        raise ValueError(f"image must be (H, W, C) and templates (T, h, w, C), got {image.shape}, {templates.shape}")
    if templates.shape[-1] != image.shape[-1]:
        raise ValueError(f"templates have {templates.shape[-1]} channels, image has {image.shape[-1]}")
    h, w = templates.shape[1:3]
    big_h, big_w = image.shape[:2]
    if templates.shape[0] == 0 or h < 1 or w < 1 or h > big_h or w > big_w:
        raise ValueError(f"templates {templates.shape[1:3]} must be non-empty and fit in the image {image.shape[:2]}")
    if not (np.isfinite(image).all() and np.isfinite(templates).all()):
        raise ValueError("image and templates must be finite")
    n_pix = h * w * image.shape[-1]
    t_zero = templates - templates.mean(axis=(1, 2, 3), keepdims=True)
    t_norm = np.sqrt((t_zero**2).sum(axis=(1, 2, 3)))
    f_img = np.fft.rfft2(image, axes=(0, 1))  # (H, W//2+1, C)
    f_tpl = np.fft.rfft2(t_zero, s=(big_h, big_w), axes=(1, 2))  # (T, H, W//2+1, C)
    corr = np.fft.irfft2((f_img[None] * np.conj(f_tpl)).sum(axis=-1), s=(big_h, big_w), axes=(1, 2))
    num = corr[:, : big_h - h + 1, : big_w - w + 1]
    integral = np.zeros((big_h + 1, big_w + 1, 2))
    integral[1:, 1:, 0] = image.sum(axis=-1).cumsum(0).cumsum(1)
    integral[1:, 1:, 1] = (image**2).sum(axis=-1).cumsum(0).cumsum(1)
    window = integral[h:, w:] - integral[:-h, w:] - integral[h:, :-w] + integral[:-h, :-w]
    var = np.maximum(window[..., 1] - window[..., 0] ** 2 / n_pix, 0.0)
    den = np.sqrt(var)[None] * t_norm[:, None, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(den > 1e-8 * n_pix, num / den, 0.0)
    return np.clip(out, -1.0, 1.0)


class TemplateMatcher(PerImageDetector):
    """Weight-free perception baseline: colour normalised cross-correlation against the object library.

    The presence score of an object is the maximum NCC (:func:`normalized_cross_correlation`) of its picture,
    composited on a uniform grey, over all positions and the given sizes, on the image downsampled by
    ``downsample``. Errors come from perception: objects with similar colours and shapes (red apple, tomato) score
    high for each other, which is how similar objects cause hallucinations.

    Args:
        library: the object pictures; options whose text is not a library name score ``-1`` (never present).
        sizes: object sizes to try, in pixels of the full-resolution image (use the generator's
            ``SceneConfig.size_range_px``).
        threshold: NCC at or above which an object counts as present, in ``[-1, 1]``; calibrate with
            :meth:`calibrate`.
        downsample: integer factor by which image and templates are shrunk before matching (speed).
        template_background: grey level in ``[0, 1]`` the transparent parts of a picture are filled with.

    Raises:
        TypeError: if ``library`` is not an :class:`ObjectLibrary`.
        ValueError: if a size, the threshold, the downsample factor or the grey level is out of range.

    Example:
        >>> from nips25_commono.library import ProceduralLibrary
        >>> from nips25_commono.scene import SceneGenerator
        >>> lib = ProceduralLibrary()
        >>> gen = SceneGenerator(lib, n_objects=(3, 3), canvas=120, background="plain", brightness=0.0)
        >>> matcher = TemplateMatcher(lib, sizes=gen.config.size_range_px, threshold=0.9)
        >>> ex = gen.example(0)
        >>> matcher.scores(ex).shape == (2, len(ex.options))
        True
    """

    def __init__(
        self,
        library: ObjectLibrary,
        *,
        sizes: Sequence[int] = (36, 43),
        threshold: float = 0.7,
        downsample: int = 2,
        template_background: float = 0.65,
    ) -> None:
        if not isinstance(library, ObjectLibrary):
            raise TypeError(f"library must be an ObjectLibrary, got {type(library).__name__}")
        sizes = tuple(int(s) for s in sizes)
        if not isinstance(downsample, int) or downsample < 1:
            raise ValueError(f"downsample must be an int >= 1, got {downsample!r}")
        if not sizes or min(sizes) < 4 * downsample:
            raise ValueError(f"sizes must be non-empty with every size >= {4 * downsample} pixels, got {sizes}")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not -1.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be an NCC value in [-1, 1], got {threshold!r}")
        if not 0.0 <= template_background <= 1.0:
            raise ValueError(f"template_background must be in [0, 1], got {template_background}")
        super().__init__(threshold=threshold)
        self.library = library
        self.sizes = tuple(sorted(set(sizes)))
        self.downsample = downsample
        self.template_background = float(template_background)
        self._templates: dict[tuple[int, int], np.ndarray] = {}

    def _template(self, obj: int, size: int) -> np.ndarray:
        key = (obj, size)
        if key not in self._templates:
            pic = self.library.picture(obj, size).astype(float) / 255.0
            alpha = pic[..., 3:4]
            self._templates[key] = pic[..., :3] * alpha + self.template_background * (1.0 - alpha)
        return self._templates[key]

    def presence(self, image: Image.Image, names: Sequence[str]) -> np.ndarray:
        """Max NCC of each named object over positions and sizes; ``-1`` for names not in the library.

        Args:
            image: the scene (PIL image or ``(H, W, 3)`` array).
            names: option texts.

        Returns:
            ``(len(names),)`` scores in ``[-1, 1]``.
        """
        img = as_image(image)
        if self.downsample > 1:
            img = img.resize(
                (max(1, img.size[0] // self.downsample), max(1, img.size[1] // self.downsample)),
                Image.Resampling.BOX,
            )
        arr = np.asarray(img, dtype=float) / 255.0
        out = np.full(len(names), -1.0)
        known = [(k, self.library.index(n)) for k, n in enumerate(names) if n in self.library._index]
        if not known:
            return out
        for size in self.sizes:
            s = max(2, round(size / self.downsample))
            if s > min(arr.shape[:2]):
                continue
            batch = np.stack([self._template(obj, s) for _, obj in known])
            best = normalized_cross_correlation(arr, batch).reshape(len(known), -1).max(axis=1)
            for (k, _), v in zip(known, best):
                out[k] = max(out[k], float(v))
        return out
