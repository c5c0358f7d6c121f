"""Count-encoded PSI items: learning a partner's (capped) multiplicities through a plain set intersection.

A PSI reveals set membership only. To let the querier learn how many copies the answerer holds, every copy gets
its own item: the answerer inserts :math:`t \\| x` for :math:`t = 1..\\min(c_j(x), T)`, the querier inserts
:math:`t \\| x` for :math:`t = 1..T` for each of its distinct :math:`x`. The querier's matches on :math:`x` then
number exactly :math:`\\hat c_j(x) = \\min(c_j(x), T)` (FedRW brief, PPMPR step 3 [reconstructed]).

The copy index :math:`t` is a 4-byte big-endian prefix, so that :math:`t \\| x` is unambiguous for any bytes
:math:`x`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["MAX_COUNT_CAP", "answerer_items", "capped_counts", "querier_items"]

MAX_COUNT_CAP = 1 << 16


def check_count_cap(count_cap: object) -> int:
    """``count_cap`` as an int in ``[1, MAX_COUNT_CAP]``; TypeError/ValueError naming ``count_cap`` otherwise."""
    if isinstance(count_cap, bool) or not isinstance(count_cap, int | np.integer):
        raise TypeError(f"count_cap must be an int in [1, {MAX_COUNT_CAP}] or None, got {type(count_cap).__name__}")
    if not 1 <= int(count_cap) <= MAX_COUNT_CAP:
        raise ValueError(f"count_cap must be an int in [1, {MAX_COUNT_CAP}] or None, got {count_cap}")
    return int(count_cap)


def _check(items: Sequence[bytes]) -> list[bytes]:
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        raise TypeError(f"items must be a sequence of bytes, got {type(items).__name__}")
    out = list(items)
    if not all(isinstance(x, bytes) for x in out):
        raise TypeError("items must hold bytes (canonical samples)")
    if len(set(out)) != len(out):  # a PSI works on sets: a repeated item would silently merge its copies' counts
        raise ValueError("items must be distinct (pass each canonical item once, with its count)")
    return out


def _tag(t: int, x: bytes) -> bytes:
    return t.to_bytes(4, "big") + x


def querier_items(items: Sequence[bytes], *, count_cap: int) -> list[bytes]:
    r"""The querier's PSI set: :math:`t \| x` for every distinct ``x`` and :math:`t = 1..T`.

    Args:
        items: ``n`` distinct canonical items.
        count_cap: the cap :math:`T \ge 1`.

    Returns:
        ``n * T`` items; entry ``i * T + (t - 1)`` encodes copy ``t`` of ``items[i]``.

    Raises:
        TypeError, ValueError: for non-bytes or repeated items or a bad ``count_cap``.

    Example:
        >>> [q[:4] for q in querier_items([b"a"], count_cap=2)]
        [b'\x00\x00\x00\x01', b'\x00\x00\x00\x02']
    """
    cap = check_count_cap(count_cap)
    return [_tag(t, x) for x in _check(items) for t in range(1, cap + 1)]


def answerer_items(items: Sequence[bytes], counts: np.ndarray, *, count_cap: int) -> list[bytes]:
    r"""The answerer's PSI set: :math:`t \| x` for :math:`t = 1..\min(c(x), T)`.

    Args:
        items: ``n`` distinct canonical items.
        counts: int ``(n,)``, local counts ``>= 1``.
        count_cap: the cap :math:`T \ge 1`.

    Returns:
        :math:`\sum_x \min(c(x), T)` items.

    Raises:
        TypeError, ValueError: for non-bytes or repeated items, counts of the wrong shape or below 1, or a bad
            ``count_cap``.

    Example:
        >>> len(answerer_items([b"a", b"b"], np.array([5, 1]), count_cap=3))
        4
    """
    cap = check_count_cap(count_cap)
    its = _check(items)
    c = np.asarray(counts)
    if c.shape != (len(its),) or not np.issubdtype(c.dtype, np.integer):
        raise ValueError(f"counts must be an integer array of shape ({len(its)},), got {c.dtype} {c.shape}")
    if c.size and c.min() < 1:
        raise ValueError("counts must be >= 1")
    return [_tag(t, x) for x, n in zip(its, c.tolist()) for t in range(1, min(int(n), cap) + 1)]


def capped_counts(indices: np.ndarray, n_items: int, *, count_cap: int) -> np.ndarray:
    r"""Decode a PSI result on :func:`querier_items` into :math:`\hat c(x) = \min(c_{\text{answerer}}(x), T)`.

    Args:
        indices: distinct int indices into the querier's ``n_items * T`` encoded items that the answerer holds.
        n_items: the querier's number of distinct items ``n >= 0``.
        count_cap: the cap :math:`T`.

    Returns:
        int64 ``(n_items,)``, entries in ``[0, T]``.

    Raises:
        TypeError: if ``indices`` is not an integer array or ``n_items`` not an int.
        ValueError: if an index is out of range or repeated, or ``n_items < 0``.

    Example:
        >>> capped_counts(np.array([0, 1, 4]), 2, count_cap=3).tolist()
        [2, 1]
    """
    cap = check_count_cap(count_cap)
    if isinstance(n_items, bool) or not isinstance(n_items, int | np.integer) or n_items < 0:
        raise (ValueError if isinstance(n_items, int | np.integer) else TypeError)(
            f"n_items must be an int >= 0, got {n_items!r}"
        )
    raw = np.asarray(indices)
    if raw.size and not np.issubdtype(raw.dtype, np.integer):
        raise TypeError(f"indices must be an integer array, got dtype {raw.dtype}")
    idx = raw.astype(np.int64).reshape(-1)
    if idx.size and (idx.min() < 0 or idx.max() >= n_items * cap):
        raise ValueError(f"indices must lie in [0, {n_items * cap})")
    if np.unique(idx).size != idx.size:
        raise ValueError("indices must be distinct (a PSI output names each matched item once)")
    return np.bincount(idx // cap, minlength=n_items).astype(np.int64)
