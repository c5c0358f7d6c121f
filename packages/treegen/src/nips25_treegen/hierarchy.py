r"""Binary hierarchies over N leaves: parents arrays, leaf-set bitmasks, the (A, B) parametrisation, linkage export.

A hierarchy is a *parents array* of length :math:`2N-1`: leaves are ``0..N-1``, internal nodes ``N..2N-2``, the
root has parent ``-1``. TreeGen's parametrisation (Sec. 4) orders the :math:`N' = N-1` internal nodes by invariant
mass (parents are heavier than their children) and writes the tree as two categorical tables:

* ``A`` (leaf to parent): ``A[i] in {0..N-2}``, the internal slot holding leaf ``i``;
* ``B`` (parent to parent): ``B[i] in {i+1..N-2}`` for the non-root slots ``i = 0..N-3`` (strictly upper
  triangular, row ``i`` has :math:`K_i = N-2-i` categories).

Any (A, B) decodes to a rooted graph whose edges point to higher slots; it is a binary tree exactly when every
internal slot has two children (:func:`is_binary_tree`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "children_of",
    "clusters",
    "decode",
    "encode",
    "is_binary_tree",
    "leaf_masks",
    "parents_from_masks",
    "to_linkage",
]


def _as_parents(parents: Any, n_leaves: int) -> np.ndarray:
    if not isinstance(n_leaves, (int, np.integer)) or isinstance(n_leaves, bool) or n_leaves < 1:
        raise ValueError(f"n_leaves must be an int >= 1, got {n_leaves!r}")
    arr = np.asarray(parents)
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and arr.size and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"parents must be an integer array, got dtype {arr.dtype}")
    if arr.shape != (2 * n_leaves - 1,):
        raise ValueError(f"parents must have shape (2N-1,) = ({2 * n_leaves - 1},) for N={n_leaves}, got {arr.shape}")
    return arr.astype(np.int64)


def _structure_error(parents: np.ndarray, n_leaves: int) -> str | None:
    """Why ``parents`` is not a binary tree with leaves 0..N-1 (None if it is)."""
    n_nodes = 2 * n_leaves - 1
    if np.any((parents < -1) | (parents >= n_nodes)):
        return f"parents values must lie in [-1, {n_nodes - 1}]"
    roots = np.flatnonzero(parents == -1)
    if roots.size != 1:
        return f"parents must hold exactly one root (-1), found {roots.size}"
    if np.any(parents == np.arange(n_nodes)):
        return "parents has a self-loop"
    counts = np.bincount(parents[parents >= 0], minlength=n_nodes)
    if np.any(counts[:n_leaves] != 0):
        return "leaves 0..N-1 must have no children"
    if n_leaves > 1 and np.any(counts[n_leaves:] != 2):
        return "every internal node N..2N-2 must have exactly two children"
    if n_leaves > 1 and roots[0] < n_leaves:
        return "the root must be an internal node"
    depth_ok = np.zeros(n_nodes, dtype=bool)
    depth_ok[roots[0]] = True
    for _ in range(n_nodes):
        new = depth_ok | ((parents >= 0) & depth_ok[np.maximum(parents, 0)])
        if np.array_equal(new, depth_ok):
            break
        depth_ok = new
    if not depth_ok.all():
        return "parents has a cycle (some nodes do not reach the root)"
    return None


def is_binary_tree(parents: Any, n_leaves: int) -> bool:
    """Whether ``parents`` is a rooted binary tree whose leaves are exactly ``0..N-1``.

    Args:
        parents: ``(2N-1,)`` integer parents array.
        n_leaves: N.

    Returns:
        ``True`` for a structurally valid tree (one root, two children per internal node, no cycle).

    Raises:
        ValueError: for a wrong shape or ``n_leaves < 1``. TypeError: for a non-integer array.

    Example:
        >>> is_binary_tree([3, 3, 4, 4, -1], 3), is_binary_tree([3, 3, 3, 4, -1], 3)
        (True, False)
    """
    arr = _as_parents(parents, n_leaves)
    return _structure_error(arr, n_leaves) is None


def leaf_masks(parents: Any, n_leaves: int) -> np.ndarray:
    """Bitmask of the leaves below every node (bit ``i`` set for leaf ``i``).

    Args:
        parents: ``(2N-1,)`` parents array of a binary tree (N <= 62).
        n_leaves: N.

    Returns:
        ``(2N-1,)`` int64 bitmasks; the root's is ``2**N - 1``.

    Raises:
        ValueError: if ``parents`` is not a binary tree over the leaves, or N > 62.

    Example:
        >>> leaf_masks([3, 3, 4, 4, -1], 3).tolist()
        [1, 2, 4, 3, 7]
    """
    arr = _as_parents(parents, n_leaves)
    if n_leaves > 62:
        raise ValueError(f"n_leaves must be <= 62 for bitmasks, got {n_leaves}")
    err = _structure_error(arr, n_leaves)
    if err is not None:
        raise ValueError(err)
    masks = np.zeros(arr.shape[0], dtype=np.int64)
    masks[:n_leaves] = 1 << np.arange(n_leaves, dtype=np.int64)
    for leaf in range(n_leaves):
        node = arr[leaf]
        while node >= 0:
            masks[node] |= masks[leaf]
            node = arr[node]
    return masks


def children_of(parents: Any, n_leaves: int) -> list[list[int]]:
    """Children of every node, in increasing index order (empty for leaves)."""
    arr = _as_parents(parents, n_leaves)
    kids: list[list[int]] = [[] for _ in range(arr.shape[0])]
    for child, parent in enumerate(arr.tolist()):
        if parent >= 0:
            kids[parent].append(child)
    return kids


def clusters(parents: Any, n_leaves: int) -> frozenset[int]:
    """The tree's identity: the set of leaf-set bitmasks of its internal nodes (independent of node order).

    Example:
        >>> clusters([3, 3, 4, 4, -1], 3) == clusters([4, 4, 3, -1, 3], 3)
        True
    """
    masks = leaf_masks(parents, n_leaves)
    return frozenset(int(m) for m in masks[n_leaves:])


def parents_from_masks(masks: Any, n_leaves: int, *, keys: Any) -> np.ndarray:
    """Parents array of the tree whose internal nodes have the leaf sets ``masks``, ordered by ``keys``.

    Internal node ``N + k`` is the mask with the ``k``-th smallest key (ties by leaf count, then bitmask); every
    node's parent is its smallest strict superset among the masks. The structure knows nothing of physics: the
    package's canonical labelling (mass order) is :func:`nips25_treegen.labelling.canonical_parents`.

    Args:
        masks: N-1 distinct leaf-set bitmasks forming a binary hierarchy (the root ``2**N-1`` included).
        n_leaves: N >= 1.
        keys: one real sort key per mask (same order as ``masks``); supersets must not have smaller keys.

    Returns:
        ``(2N-1,)`` int64 parents array.

    Raises:
        ValueError: if the masks do not form a binary hierarchy over the N leaves, or ``keys`` has the wrong shape.

    Example:
        >>> parents_from_masks([3, 7], 3, keys=[1.0, 5.0]).tolist()
        [3, 3, 4, 4, -1]
    """
    n = int(n_leaves)
    if n < 1:
        raise ValueError(f"n_leaves must be an int >= 1, got {n_leaves!r}")
    arr = np.asarray(masks, dtype=np.int64).reshape(-1)
    key = np.asarray(keys, dtype=np.float64).reshape(-1)
    if key.shape != arr.shape:
        raise ValueError(f"keys must hold one value per mask ({arr.size}), got shape {np.shape(keys)}")
    full = (1 << n) - 1
    if (
        arr.size != n - 1
        or np.unique(arr).size != arr.size
        or (n > 1 and full not in arr.tolist())
        or np.any((arr <= 0) | (arr > full))
    ):
        raise ValueError(f"masks must be N-1={n - 1} distinct subsets including the root {full}")
    pop = np.array([bin(int(m)).count("1") for m in arr])
    internal = arr[np.lexsort((arr, pop, key))]
    all_masks = np.concatenate([1 << np.arange(n, dtype=np.int64), internal])
    parents = -np.ones(2 * n - 1, dtype=np.int64)
    ipop = np.array([bin(int(m)).count("1") for m in internal])
    for v, m in enumerate(all_masks):
        sup = np.flatnonzero(((internal & m) == m) & (internal != m))
        if sup.size:
            parents[v] = n + int(sup[np.argmin(ipop[sup])])
    err = _structure_error(parents, n)
    if err is not None:
        raise ValueError(f"masks do not form a binary hierarchy: {err}")
    return parents


def encode(parents: Any, n_leaves: int) -> tuple[np.ndarray, np.ndarray]:
    """TreeGen's (A, B) tables of a tree whose internal nodes are topologically ordered (parent index > child).

    Args:
        parents: ``(2N-1,)`` parents array in the package node order.
        n_leaves: N >= 2.

    Returns:
        ``A`` ``(N,)`` int64 in ``[0, N-2]`` and ``B`` ``(N-2,)`` int64 with ``B[i] > i``.

    Raises:
        ValueError: if ``parents`` is not a binary tree, the root is not last, or a parent precedes its child.

    Example:
        >>> encode([3, 3, 4, 4, -1], 3)
        (array([0, 0, 1]), array([1]))
    """
    arr = _as_parents(parents, n_leaves)
    if n_leaves < 2:
        raise ValueError(f"n_leaves must be >= 2 to encode a hierarchy, got {n_leaves}")
    leaf_masks(arr, n_leaves)  # validates
    if arr[-1] != -1:
        raise ValueError("encode needs the root last (package node order)")
    internal = arr[n_leaves:-1]
    if np.any(internal <= np.arange(n_leaves, 2 * n_leaves - 2)):
        raise ValueError("encode needs every parent to have a larger index than its child (canonical order)")
    return arr[:n_leaves] - n_leaves, internal - n_leaves


def decode(a: Any, b: Any) -> np.ndarray:
    """Parents array from (A, B) tables; the result may fail :func:`is_binary_tree` (invalid sample).

    Args:
        a: ``(N,)`` leaf-to-slot indices in ``[0, N-2]``.
        b: ``(N-2,)`` slot-to-slot indices with ``b[i] in [i+1, N-2]``.

    Returns:
        ``(2N-1,)`` int64 parents array (root last).

    Raises:
        ValueError: for wrong shapes or out-of-range entries.
    """
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    if a_arr.ndim != 1 or a_arr.shape[0] < 2:
        raise ValueError(f"a must have shape (N,) with N >= 2, got {a_arr.shape}")
    n = a_arr.shape[0]
    if b_arr.shape != (n - 2,):
        raise ValueError(f"b must have shape (N-2,) = ({n - 2},), got {b_arr.shape}")
    if a_arr.dtype.kind not in "iu" or (b_arr.size and b_arr.dtype.kind not in "iu"):
        raise TypeError("a and b must be integer arrays")
    if np.any((a_arr < 0) | (a_arr > n - 2)):
        raise ValueError(f"a entries must lie in [0, {n - 2}]")
    if np.any((b_arr <= np.arange(n - 2)) | (b_arr > n - 2)):
        raise ValueError("b[i] must lie in [i+1, N-2]")
    return np.concatenate([a_arr + n, b_arr + n, [-1]]).astype(np.int64)


def to_linkage(parents: Any, n_leaves: int, heights: Any | None = None) -> np.ndarray:
    """SciPy linkage matrix ``Z`` of a tree (for ``scipy.cluster.hierarchy.dendrogram`` and friends).

    Args:
        parents: ``(2N-1,)`` parents array with parents after their children (package node order).
        n_leaves: N >= 2.
        heights: optional ``(2N-1,)`` node heights, non-decreasing towards the root (e.g. invariant mass
            squared ``Jet.t``); default: the number of leaves below each node.

    Returns:
        ``(N-1, 4)`` float64 linkage matrix.

    Raises:
        ValueError: for an invalid tree, a non-topological order or bad heights.
    """
    arr = _as_parents(parents, n_leaves)
    masks = leaf_masks(arr, n_leaves)
    if n_leaves < 2 or np.any(arr[n_leaves:-1] <= np.arange(n_leaves, 2 * n_leaves - 2)) or arr[-1] != -1:
        raise ValueError("to_linkage needs N >= 2 and parents after their children, root last")
    sizes = np.array([bin(int(m)).count("1") for m in masks], dtype=np.float64)
    h = sizes if heights is None else np.asarray(heights, dtype=np.float64)
    if h.shape != arr.shape or not np.all(np.isfinite(h)):
        raise ValueError(f"heights must be a finite array of shape {arr.shape}")
    kids = children_of(arr, n_leaves)
    z = np.zeros((n_leaves - 1, 4))
    for k, v in enumerate(range(n_leaves, 2 * n_leaves - 1)):
        c0, c1 = kids[v]
        z[k] = [c0, c1, h[v], sizes[v]]
    if np.any(np.diff(z[:, 2]) < 0):
        raise ValueError("heights must be non-decreasing in the internal node order")
    return z
