"""Real multi-observation inputs shipped by registry packages: JapaneseVowels (sktime) and digits (scikit-learn).

* JapaneseVowels (UCI; bundled as ``.ts`` text files in the sktime wheel): 640 utterances of 9 male speakers,
  12 LPC coefficients per frame, 7-29 frames. The class is the speaker; several utterances of one speaker are
  several observations of one object (exchangeable given the class).
* digits (scikit-learn, 1797 8x8 images): each view is a real geometric transformation (rotation, shift) of an
  image; :func:`transform_digits` makes them.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
from scipy import ndimage

from nips25_shared import cached

__all__ = ["japanese_vowels_features", "load_japanese_vowels", "transform_digits"]


def _sktime_data_dir() -> Path:
    spec = importlib.util.find_spec("sktime")  # locates the wheel's files without importing sktime
    if spec is None or spec.origin is None:
        raise ImportError(
            "JapaneseVowels is read from the files bundled with sktime: pip install 'nips25-conformal[data]' "
            "(or pass path= to a folder holding JapaneseVowels_TRAIN.ts and JapaneseVowels_TEST.ts)"
        )
    return Path(spec.origin).parent / "datasets" / "data" / "JapaneseVowels"


def _parse_ts(path: Path) -> tuple[list[np.ndarray], np.ndarray]:
    series, labels = [], []
    in_data = False
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.lower() == "@data":
            in_data = True
            continue
        if not in_data:
            continue
        *dims, label = line.split(":")
        series.append(np.array([[float(v) for v in d.split(",")] for d in dims]).T)  # (frames, 12)
        labels.append(int(label))
    return series, np.array(labels, dtype=np.int64)


def load_japanese_vowels(path: str | Path | None = None) -> tuple[list[np.ndarray], np.ndarray]:
    """Read the 640 JapaneseVowels utterances (train and test files pooled).

    Args:
        path: folder with ``JapaneseVowels_TRAIN.ts`` and ``JapaneseVowels_TEST.ts`` (default: sktime's copy).

    Returns:
        ``(series, y)``: a list of 640 ``(frames, 12)`` float arrays and ``(640,)`` speaker labels 1..9.

    Raises:
        ImportError: sktime is not installed and no path is given. FileNotFoundError: a file is missing.
    """
    folder = _sktime_data_dir() if path is None else Path(path)
    series: list[np.ndarray] = []
    labels = []
    for split in ("TRAIN", "TEST"):
        file = folder / f"JapaneseVowels_{split}.ts"
        if not file.is_file():
            raise FileNotFoundError(f"path: expected {file} (JapaneseVowels .ts file)")
        s, y = _parse_ts(file)
        series += s
        labels.append(y)
    return series, np.concatenate(labels)


def japanese_vowels_features(path: str | Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-utterance features: the mean, std, first and last frame of each of the 12 LPC coefficients.

    Cached through :func:`nips25_shared.cached` (key ``conformal/japanese_vowels_v1``) when read from sktime.

    Returns:
        ``(X, y)``: ``(640, 48)`` float64 features and ``(640,)`` int speaker labels 1..9.
    """

    def build() -> dict[str, np.ndarray]:
        series, y = load_japanese_vowels(path)
        feats = np.stack([np.concatenate([s.mean(0), s.std(0), s[0], s[-1]]) for s in series])
        return {"X": feats, "y": y}

    data = cached("conformal/japanese_vowels_v1", build) if path is None else build()
    return np.asarray(data["X"], dtype=np.float64), np.asarray(data["y"], dtype=np.int64)


def transform_digits(
    images: np.ndarray, *, rng: np.random.Generator, max_angle: float = 15.0, max_shift: float = 1.0
) -> np.ndarray:
    r"""One random rigid transformation per image: rotation in :math:`[-\theta, \theta]` degrees, then a shift.

    Args:
        images: ``(N, 8, 8)`` grey levels in ``[0, 16]`` (scikit-learn's digits).
        rng: generator of the angles and shifts.
        max_angle: largest absolute rotation in degrees, ``>= 0``.
        max_shift: largest absolute shift in pixels along each axis, ``>= 0``.

    Returns:
        ``(N, 64)`` transformed images, flattened.

    Raises:
        ValueError: for a wrong shape, non-finite pixels or negative ranges.
    """
    imgs = np.asarray(images, dtype=np.float64)
    if imgs.ndim != 3 or imgs.shape[0] == 0:
        raise ValueError(f"images must be a non-empty (N, H, W) array, got shape {imgs.shape}")
    if not np.all(np.isfinite(imgs)):
        raise ValueError("images must be finite")
    if max_angle < 0 or max_shift < 0:
        raise ValueError(f"max_angle and max_shift must be >= 0, got {max_angle}, {max_shift}")
    angles = np.asarray(rng.uniform(-max_angle, max_angle, size=imgs.shape[0]))
    shifts = np.asarray(rng.uniform(-max_shift, max_shift, size=(imgs.shape[0], 2)))
    out = np.empty_like(imgs)
    for i, img in enumerate(imgs):
        rotated = ndimage.rotate(img, angles[i], reshape=False, order=1, mode="constant")
        out[i] = ndimage.shift(rotated, shifts[i], order=1, mode="constant")
    return out.reshape(imgs.shape[0], -1)
