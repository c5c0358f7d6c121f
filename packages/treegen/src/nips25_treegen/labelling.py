r"""The canonical (mass-sorted) labelling of a tree's internal nodes: one (A, B) table per tree.

A binary tree over N leaves has :math:`(N-1)!` labellings of its internal nodes, but TreeGen trains on one: the
internal nodes sorted by the invariant mass squared :math:`t(S) = (\sum_{i \in S} p_i)^2` of their leaf sets
(ties: leaf count, then bitmask). Parents are heavier than their children (a sum of future-pointing four-vectors
is at least as massive as each part), so with this order every parent has a larger slot index and the tree is
one (A, B) table (:func:`nips25_treegen.hierarchy.encode`). Training targets and constrained decoding both go
through this module, so a row means the same slot in both.

The module sits above :mod:`nips25_treegen.hierarchy` (structure) and :mod:`nips25_treegen.ginkgo` (physics).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nips25_treegen.ginkgo import _check_leaves, invariant_mass2
from nips25_treegen.hierarchy import clusters, parents_from_masks

__all__ = ["canonical_parents", "canonical_rows", "subset_mass2"]


def subset_mass2(leaves: Any, masks: Any) -> np.ndarray:
    r"""Invariant mass squared :math:`t(S)` of the summed leaves of every bitmask ``S``.

    The sum runs over the leaves in index order with the same arithmetic for every call, so equal masks always get
    bit-identical values (the tie-breaking of the canonical order depends on it).

    Args:
        leaves: ``(N, 4)`` float64 four-momenta ``[E, px, py, pz]``.
        masks: integer bitmasks of any shape (bit ``i`` = leaf ``i``).

    Returns:
        float64 array of ``masks``' shape (GeV²).

    Raises:
        ValueError: for bad leaves.

    Example:
        >>> import numpy as np
        >>> leaves = np.array([[5.0, 0, 0, 4.0], [5.0, 0, 0, -4.0]])
        >>> subset_mass2(leaves, [1, 2, 3]).tolist()
        [9.0, 9.0, 100.0]
    """
    leaves = _check_leaves(leaves)
    m = np.asarray(masks, dtype=np.int64)
    mom = np.zeros((*m.shape, 4))
    for i in range(leaves.shape[0]):
        mom = mom + ((m >> i) & 1)[..., None] * leaves[i]
    return invariant_mass2(mom)


def _order_rank(leaves: np.ndarray) -> np.ndarray:
    """Rank of every subset bitmask ``0..2^N-1`` in the canonical order (t, then leaf count, then bitmask)."""
    n = leaves.shape[0]
    every = np.arange(1 << n, dtype=np.int64)
    pop = np.zeros_like(every)
    for i in range(n):
        pop += (every >> i) & 1
    order = np.lexsort((every, pop, subset_mass2(leaves, every)))
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank


def canonical_parents(leaves: Any, masks: Any) -> np.ndarray:
    """Parents array of the tree with internal leaf sets ``masks`` in the canonical (mass-sorted) labelling.

    Args:
        leaves: ``(N, 4)`` leaf four-momenta ``[E, px, py, pz]``.
        masks: N-1 distinct leaf-set bitmasks forming a binary hierarchy (the root ``2**N-1`` included).

    Returns:
        ``(2N-1,)`` int64 parents array; internal nodes sorted by :func:`subset_mass2` (ties: leaf count, bitmask).

    Raises:
        ValueError: for bad leaves or masks that do not form a binary hierarchy over the N leaves.

    Example:
        >>> from nips25_treegen.ginkgo import simulate
        >>> from nips25_treegen.hierarchy import clusters
        >>> jet = simulate(1, n_leaves=(5, 5), seed=0)[0]
        >>> bool((canonical_parents(jet.leaves, clusters(jet.parents, 5)) == jet.parents).all())
        True
    """
    leaves = _check_leaves(leaves)
    ms = sorted({int(m) for m in masks})
    return parents_from_masks(ms, leaves.shape[0], keys=subset_mass2(leaves, ms))


def canonical_rows(leaves: Any, trees: Any) -> np.ndarray:
    r"""The (A, B) rows of many trees in the canonical labelling: the targets TreeGen is trained on.

    Row ``r < N`` is leaf ``r``'s parent slot, row ``N + i`` the parent slot of slot ``i`` (slots are the internal
    nodes in the canonical order, the root last). Vectorised over trees.

    Args:
        leaves: ``(N, 4)`` leaf four-momenta, ``N <= 30``.
        trees: ``(T, N-1)`` int64 internal-node bitmasks per tree (any order within a row), or one ``(N-1,)``
            tree, or a ``(2N-1,)`` / ``(T, 2N-1)`` parents array (any internal order).

    Returns:
        ``(T, 2N-2)`` (or ``(2N-2,)``) int64 slot indices in ``[0, N-2]``.

    Raises:
        ValueError: for bad leaves, a wrong shape or masks that are not a binary hierarchy.

    Example:
        >>> from nips25_treegen.ginkgo import simulate
        >>> from nips25_treegen.hierarchy import encode
        >>> jet = simulate(1, n_leaves=(5, 5), seed=0)[0]
        >>> rows = canonical_rows(jet.leaves, jet.parents)
        >>> bool((rows == np.concatenate(encode(jet.parents, 5))).all())
        True
    """
    leaves = _check_leaves(leaves, min_leaves=2, max_leaves=30)
    n = leaves.shape[0]
    arr = np.asarray(trees)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"trees must be an integer array, got dtype {arr.dtype}")
    single = arr.ndim == 1
    arr = np.atleast_2d(arr).astype(np.int64)
    if arr.ndim != 2 or arr.shape[1] not in (n - 1, 2 * n - 1):
        raise ValueError(f"trees must have shape (T, N-1) of masks or (T, 2N-1) of parents for N={n}, got {arr.shape}")
    if arr.shape[1] == 2 * n - 1:
        arr = np.array([sorted(clusters(p, n)) for p in arr], dtype=np.int64).reshape(-1, n - 1)
    full = (1 << n) - 1
    if np.any((arr <= 0) | (arr > full)):
        raise ValueError(f"trees masks must lie in [1, {full}]")
    if n <= 16:
        key = _order_rank(leaves)[arr].astype(np.float64)
    else:
        pop = np.zeros_like(arr)
        for i in range(n):
            pop += (arr >> i) & 1
        key = np.lexsort((arr.ravel(), pop.ravel(), subset_mass2(leaves, arr).ravel())).argsort().reshape(arr.shape)
    srt = np.take_along_axis(arr, np.argsort(key, axis=1, kind="stable"), axis=1)  # (T, S), slot order
    if not np.all(srt[:, -1] == full):
        raise ValueError("every tree must contain the root (all leaves)")
    bits = (srt[:, None, :] >> np.arange(n)[None, :, None]) & 1  # (T, N, S): leaf i in slot j
    if not np.all(bits.sum(-1) >= 1):
        raise ValueError("trees masks do not form a binary hierarchy")
    a = np.argmax(bits.astype(bool), axis=-1)  # first (lightest) slot holding the leaf: its parent
    sub = srt[:, :-1, None]
    sup = srt[:, None, :]
    contains = ((sup & sub) == sub) & (sup != sub)
    contains &= np.arange(n - 1)[None, None, :] > np.arange(n - 2)[None, :, None]
    b = np.argmax(contains, axis=-1)
    if not np.all(contains.any(-1)):
        raise ValueError("trees masks do not form a binary hierarchy (a slot has no heavier superset)")
    rows = np.concatenate([a, b], axis=1).astype(np.int64)
    children = np.zeros((rows.shape[0], n - 1), dtype=np.int64)
    np.add.at(children, (np.repeat(np.arange(rows.shape[0]), rows.shape[1]), rows.ravel()), 1)
    if not np.all(children == 2):
        raise ValueError("trees masks do not form a binary hierarchy (a slot without exactly two children)")
    return rows[0] if single else rows
