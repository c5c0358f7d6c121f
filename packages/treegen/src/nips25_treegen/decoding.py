r"""Decoding the (A, B) categorical rows into binary trees: independent, assignment (perturb-and-MAP), exact.

TreeGen's network emits one categorical distribution per row of the parametrisation (:mod:`nips25_treegen.hierarchy`):
``2N-2`` rows (N leaf rows, N-2 slot rows) over the ``S = N-1`` internal slots, slot row ``i`` restricted to slots
``j > i``. Drawing every row independently gives a *binary tree* only when each slot receives exactly two
children; with edges pointing to higher slots that is also sufficient (one root, the last slot; no cycle). So the
set of valid tables is

.. math::
    \mathcal V = \{x \in \textstyle\prod_r \{0..S-1\} : x_r > i \text{ for slot row } i,\;
    |\{r : x_r = j\}| = 2 \;\forall j\},

and the decoders here draw from (or maximise) the row product restricted to it,
:math:`q(x) \propto \prod_r p_r(x_r)\,\mathbb 1[x \in \mathcal V]`:

* ``"independent"``: per-row draws (argmax for the MAP), no constraint; the table may not be a tree.
* ``"assignment"``: the MAP of :math:`q` is a min-cost perfect matching of rows to two copies of each slot
  (cost :math:`-\log p_r(j)`; forbidden entries excluded), solved by ``scipy.optimize.linear_sum_assignment``.
  Sampling perturbs every :math:`\log p_r(j)` by an independent Gumbel draw and takes the MAP (perturb-and-MAP,
  Papandreou & Yuille 2011): always a tree, cheap (:math:`O(N^3)`), but only an approximation of :math:`q`.
* ``"exact"``: exact draws from :math:`q` (and its exact MAP) by dynamic programming over the remaining capacity
  (0, 1 or 2 children still to receive) of every slot: :math:`3^{N-1}` states, so ``N <= EXACT_MAX_LEAVES``.

The paper's own decoding rule could not be read (no code, method text unreadable); this constrained decoding is a
reconstruction (see the package README, Choices).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["DECODERS", "EXACT_MAX_LEAVES", "decode_rows", "decode_trees", "table_log_prob"]

DECODERS = ("independent", "assignment", "exact")
EXACT_MAX_LEAVES = 10
_CHUNK_ELEMENTS = 4_000_000  # batch elements x slots x states per DP chunk (about 32 MB of float64)


def _check_logits(logits: Any) -> tuple[np.ndarray, bool]:
    try:
        arr = np.asarray(logits, dtype=np.float64) if not isinstance(logits, np.ndarray) else logits
    except (TypeError, ValueError) as err:
        raise TypeError(f"logits must be a real array, could not convert it to float64 ({err})") from err
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"logits must be a real array, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    single = arr.ndim == 2
    if single:
        arr = arr[None]
    if arr.ndim != 3:
        raise ValueError(f"logits must have shape (2N-2, N-1) or (B, 2N-2, N-1), got {np.shape(logits)}")
    b, r, s = arr.shape
    if b == 0 or s < 1 or r != 2 * s:
        raise ValueError(
            f"logits must have shape (B, 2N-2, N-1) with B >= 1 and N >= 2, got {arr.shape} (rows must be 2x slots)"
        )
    if np.isnan(arr).any() or np.isposinf(arr).any():
        raise ValueError("logits must not contain NaN or +inf (use -inf for forbidden entries)")
    return arr, single


def _log_probs(logits: np.ndarray) -> np.ndarray:
    """Row-normalised log-probabilities with the structural mask (slot row i only to slots j > i) applied."""
    _, r, s = logits.shape
    n = s + 1
    allowed = np.ones((r, s), dtype=bool)
    allowed[n:] = np.arange(s)[None, :] > np.arange(n - 2)[:, None]
    lp = np.where(allowed, logits, -np.inf)
    m = lp.max(-1, keepdims=True)
    if not np.all(np.isfinite(m)):
        raise ValueError("logits leave some row with no allowed (finite) entry")
    lp = lp - m
    with np.errstate(divide="ignore"):
        return lp - np.log(np.exp(lp).sum(-1, keepdims=True))


def _rng(seed: Any) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ValueError(f"seed must be None, an int >= 0 or a numpy Generator, got {seed!r}")
    return np.random.default_rng(seed)


def _gumbel(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    return -np.log(-np.log(rng.uniform(1e-300, 1.0, size=shape)))


def _assignment(lp: np.ndarray) -> np.ndarray:
    b, r, _ = lp.shape
    out = np.empty((b, r), dtype=np.int64)
    for k in range(b):
        cost = np.repeat(-lp[k], 2, axis=1)  # column 2j and 2j+1: the two child places of slot j
        try:
            _, cols = linear_sum_assignment(cost)
        except ValueError as err:  # every perfect matching uses a forbidden entry
            raise ValueError("logits admit no binary tree (every table uses a -inf entry)") from err
        out[k] = cols // 2
    return out


def _capacity_levels(s: int) -> list[np.ndarray]:
    r"""Per level ``q`` (rows ``q..2s-1`` still to place): ``src[k, i]``, the position in level ``q+1`` of state ``i``
    of level ``q`` after slot ``k`` takes one child (``-1`` if slot ``k`` is full).

    A state is the remaining capacity (0, 1 or 2) of every slot; level ``q`` holds the states whose capacities sum to
    ``2s - q``, so every state lies in one level and the DP costs :math:`O(s\,3^s)` per table.
    """
    states = np.arange(3**s)
    powers = 3 ** np.arange(s)
    digits = (states[None, :] // powers[:, None]) % 3  # (s, 3^s)
    total = digits.sum(0)
    pos = np.empty(3**s, dtype=np.int64)
    levels = [np.flatnonzero(total == 2 * s - q) for q in range(2 * s + 1)]
    for members in levels:
        pos[members] = np.arange(members.size)
    out = []
    for q in range(2 * s):
        members = levels[q]
        d = digits[:, members]
        out.append(np.where(d >= 1, pos[members[None, :] - powers[:, None] * (d >= 1)], -1))
    return out


def _exact(lp: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
    """Exact draw (``rng``) or exact MAP (``rng=None``) of the row product restricted to binary trees."""
    b, r, s = lp.shape
    src = _capacity_levels(s)
    widest = max(x.shape[1] for x in src)
    chunk = max(1, _CHUNK_ELEMENTS // (s * widest))
    out = np.empty((b, r), dtype=np.int64)
    for start in range(0, b, chunk):
        part = lp[start : start + chunk]
        c = part.shape[0]
        # tables[q][:, i]: log-weight (sum or max) of completing rows q..r-1 from state i of level q; the extra last
        # column is a -inf sentinel that src's -1 entries point to
        tables = [np.zeros((c, 1))] * (r + 1)
        tables[r] = np.concatenate([np.zeros((c, 1)), np.full((c, 1), -np.inf)], axis=1)
        for q in range(r - 1, -1, -1):
            terms = part[:, q, :, None] + tables[q + 1][:, src[q]]  # (c, s, states of level q)
            if rng is None:
                level = terms.max(1)
            else:
                top = terms.max(1)
                safe = np.where(np.isfinite(top), top, 0.0)
                with np.errstate(divide="ignore"):
                    level = safe + np.log(np.exp(terms - safe[:, None]).sum(1))
            tables[q] = np.concatenate([level, np.full((c, 1), -np.inf)], axis=1)
        if not np.all(np.isfinite(tables[0][:, 0])):
            raise ValueError("logits admit no binary tree (every table uses a -inf entry)")
        state = np.zeros(c, dtype=np.int64)  # level 0 holds one state: every slot still needs two children
        idx = np.arange(c)
        for q in range(r):
            nxt = src[q][:, state].T  # (c, s)
            scores = part[:, q, :] + tables[q + 1][idx[:, None], nxt]
            if rng is not None:
                scores = scores + _gumbel(scores.shape, rng)
            pick = np.argmax(scores, axis=1)
            out[start + idx, q] = pick
            state = nxt[idx, pick]
    return out


def decode_rows(logits: Any, *, decoder: str = "exact", mode: str = "sample", seed: Any = None) -> np.ndarray:
    r"""Draw (or maximise) the (A, B) rows from per-row logits, restricted to binary trees unless ``independent``.

    The target is :math:`q(x) \propto \prod_r \mathrm{softmax}(\ell_r)_{x_r}\,\mathbb 1[x \in \mathcal V]` with
    :math:`\mathcal V` the tables in which every internal slot has exactly two children (module docstring).

    Args:
        logits: ``(2N-2, N-1)`` or ``(B, 2N-2, N-1)`` row logits (A rows first, then B rows); ``-inf`` marks a
            forbidden entry; the structural mask (B row ``i`` only to slots ``j > i``) is applied here.
        decoder: ``"independent"``, ``"assignment"`` (perturb-and-MAP, exact MAP) or ``"exact"``
            (``N <= EXACT_MAX_LEAVES``).
        mode: ``"sample"`` or ``"map"``.
        seed: int, numpy ``Generator`` or None (sampling only).

    Returns:
        ``(2N-2,)`` or ``(B, 2N-2)`` int64 slot indices (``decode(a, b)`` turns them into parents arrays).

    Raises:
        ValueError: for a bad shape, NaN/+inf, an unknown decoder or mode, N above the exact limit, a row with no
            allowed entry, or logits that admit no binary tree (constrained decoders). TypeError: non-real dtype.

    References:
        Reconstruction (README, Choices); perturb-and-MAP: Papandreou & Yuille, ICCV 2011.

    Example:
        >>> import numpy as np
        >>> rows = decode_rows(np.zeros((6, 3)), decoder="exact", seed=0)
        >>> sorted(np.bincount(rows, minlength=3).tolist())
        [2, 2, 2]
    """
    arr, single = _check_logits(logits)
    if decoder not in DECODERS:
        raise ValueError(f"decoder must be one of {DECODERS}, got {decoder!r}")
    if mode not in ("sample", "map"):
        raise ValueError(f"mode must be 'sample' or 'map', got {mode!r}")
    n = arr.shape[2] + 1
    if decoder == "exact" and n > EXACT_MAX_LEAVES:
        raise ValueError(
            f"decoder='exact' needs N <= EXACT_MAX_LEAVES={EXACT_MAX_LEAVES} (3^(N-1) states), got N={n}; "
            "use decoder='assignment'"
        )
    rng = _rng(seed) if mode == "sample" else None
    lp = _log_probs(arr)
    if decoder == "exact":
        out = _exact(lp, rng)
    else:
        scores = lp if rng is None else lp + _gumbel(lp.shape, rng)
        out = np.argmax(scores, axis=-1) if decoder == "independent" else _assignment(scores)
    return out[0] if single else out


def decode_trees(logits: Any, *, decoder: str = "exact", mode: str = "sample", seed: Any = None) -> np.ndarray:
    """Parents arrays ``(B, 2N-1)`` (or ``(2N-1,)``) of :func:`decode_rows`; root last, leaves ``0..N-1``.

    Arguments, decoders and errors are those of :func:`decode_rows`; leaf ``r`` (row ``r < N``) and internal node
    ``N + i`` (B row ``i``) get parent ``N + x_r``, the root ``2N-2`` gets ``-1``. Constrained decoders always give
    binary trees (:func:`nips25_treegen.hierarchy.is_binary_tree`); ``"independent"`` may not.

    Example:
        >>> import numpy as np
        >>> from nips25_treegen.hierarchy import is_binary_tree
        >>> is_binary_tree(decode_trees(np.zeros((8, 4)), decoder="assignment", seed=1), 5)
        True
    """
    rows = decode_rows(logits, decoder=decoder, mode=mode, seed=seed)
    flat = np.atleast_2d(rows)
    n = flat.shape[1] // 2 + 1
    parents = np.concatenate([flat + n, np.full((flat.shape[0], 1), -1)], axis=1)
    return parents[0] if rows.ndim == 1 else parents


def table_log_prob(logits: Any, rows: Any) -> np.ndarray:
    r"""Unconstrained row-product log-probability :math:`\sum_r \log\mathrm{softmax}(\ell_r)_{x_r}` of tables.

    Args:
        logits: ``(B, 2N-2, N-1)`` or ``(2N-2, N-1)`` row logits (as in :func:`decode_rows`).
        rows: ``(B, 2N-2)`` or ``(2N-2,)`` slot indices.

    Returns:
        ``(B,)`` float64 (``-inf`` for a forbidden entry), or a scalar array for a single table.

    Raises:
        ValueError: for mismatched shapes or out-of-range indices.
    """
    arr, single = _check_logits(logits)
    x = np.asarray(rows)
    if x.dtype.kind not in "iu":
        raise TypeError(f"rows must be an integer array, got dtype {x.dtype}")
    expected = arr.shape[1:2] if single else arr.shape[:2]
    if x.shape != expected:
        raise ValueError(f"rows must have shape {expected} to match logits, got {x.shape}")
    x2 = x[None] if single else x
    if np.any((x2 < 0) | (x2 >= arr.shape[2])):
        raise ValueError(f"rows entries must lie in [0, {arr.shape[2] - 1}]")
    lp = _log_probs(arr)
    out = np.take_along_axis(lp, x2[..., None], axis=-1)[..., 0].sum(-1)
    return out[0] if single else out
