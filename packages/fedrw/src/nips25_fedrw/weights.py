"""Frequency-aware sample weights: soft deduplication by down-weighting frequent samples (FedRW, Sec. 3)."""

from __future__ import annotations

import numpy as np

__all__ = ["WEIGHT_KINDS", "sample_weights"]

WEIGHT_KINDS = ("log", "inv", "pow")


def sample_weights(freq: np.ndarray, *, kind: str = "log", beta: float = 0.5, normalize: bool = False) -> np.ndarray:
    r"""Weight of each sample from its global frequency :math:`F \ge 1`.

    * ``"log"``: :math:`w = 1 / (1 + \ln F)` (default);
    * ``"inv"``: :math:`w = 1 / F` (every distinct sample then weighs 1 in total, i.e. exact soft deduplication);
    * ``"pow"``: :math:`w = F^{-\beta}`.

    Every kind gives :math:`w = 1` at :math:`F = 1`. With ``normalize`` the weights are rescaled to mean 1.

    Args:
        freq: global frequencies, integer or float array of any shape, every entry finite and ``>= 1``.
        kind: one of ``"log"``, ``"inv"``, ``"pow"``.
        beta: exponent of ``"pow"``, ``0 < beta <= 4``.
        normalize: rescale so that the mean weight is 1.

    Returns:
        float64 array of the shape of ``freq``, entries in ``(0, 1]`` unless normalised.

    Raises:
        ValueError: for an empty ``freq``, entries ``< 1``, NaN/inf, unknown ``kind`` or ``beta`` out of range.
        TypeError: if ``freq`` is not numeric.

    References:
        Ye et al., "FedRW", NeurIPS 2025, arXiv:2511.07505, Sec. 3 (weights as inverse/logarithmic functions of
        global frequency; the exact formulas here are our reconstruction).

    Example:
        >>> sample_weights(np.array([1, 2, 4]), kind="inv").tolist()
        [1.0, 0.5, 0.25]
    """
    arr = np.asarray(freq)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"freq must be a numeric array, got dtype {arr.dtype}")
    if arr.size == 0:
        raise ValueError("freq must be non-empty")
    f = arr.astype(np.float64)
    if not np.all(np.isfinite(f)):
        raise ValueError("freq holds NaN or inf values")
    if f.min() < 1.0:
        raise ValueError(f"freq must be >= 1 everywhere (a sample counts itself), got min {f.min()}")
    if kind not in WEIGHT_KINDS:
        raise ValueError(f"kind must be one of {WEIGHT_KINDS}, got {kind!r}")
    if not isinstance(beta, float | int) or not 0.0 < float(beta) <= 4.0:
        raise ValueError(f"beta must be in (0, 4], got {beta!r}")
    if kind == "log":
        w = 1.0 / (1.0 + np.log(f))
    elif kind == "inv":
        w = 1.0 / f
    else:
        w = f ** (-float(beta))
    if normalize:
        w = w / w.mean()
    return w
