"""Ties broken at random: the argmax every router and baseline uses (never the lowest index, never list order)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["TIE_RTOL", "argmax_random_ties"]

TIE_RTOL = 1e-12  # scores within this relative distance of the row's best are tied (float64 summation noise)


def argmax_random_ties(scores: Any, rng: np.random.Generator, *, rtol: float = TIE_RTOL) -> np.ndarray:
    r"""Row-wise argmax of ``scores`` with ties broken uniformly at random.

    Entry ``(j, i)`` is tied with the row's best when :math:`s_{ji} \ge \max_{i'} s_{ji'} - r\,|\max_{i'} s_{ji'}|`
    (``r = rtol``; exact ties when the best is 0). Among the tied entries of a row one is drawn uniformly, so the
    decisions do not depend on the order in which the models are listed. ``numpy.argmax`` would send every tie to
    the lowest index: with graded-but-coarse estimates (means of ``k`` 0/1 outcomes) that silently turns a
    quality-only router into one that prefers whichever model is listed first.

    Args:
        scores: ``(B, M)`` finite scores.
        rng: the generator that draws among tied entries (one uniform per entry, always, so the number of draws
            does not depend on the data).
        rtol: relative tolerance of a tie, ``>= 0``.

    Returns:
        ``(B,)`` int64 column indices.

    Raises:
        ValueError: if ``scores`` is not a non-empty 2-D array or ``rtol < 0``.

    Example:
        >>> import numpy as np
        >>> picks = argmax_random_ties(np.array([[1.0, 1.0, 0.0]] * 1000), np.random.default_rng(0))
        >>> sorted(set(picks.tolist())), bool(abs((picks == 0).mean() - 0.5) < 0.05)
        ([0, 1], True)
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 2 or s.shape[0] == 0 or s.shape[1] == 0:
        raise ValueError(f"scores must be a non-empty 2-D array, got shape {s.shape}")
    if not rtol >= 0:
        raise ValueError(f"rtol must be >= 0, got {rtol}")
    best = s.max(axis=1, keepdims=True)
    tied = s >= best - rtol * np.abs(best)
    draw = rng.random(s.shape)
    draw[~tied] = -1.0
    return np.asarray(draw.argmax(axis=1), dtype=np.int64)
