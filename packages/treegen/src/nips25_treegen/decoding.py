r"""Decoding the (A, B) categorical rows into trees: physically valid (exact or sequential), binary, independent.

TreeGen's network emits one categorical distribution per row of the parametrisation (:mod:`nips25_treegen.hierarchy`):
``2N-2`` rows (N leaf rows, N-2 slot rows) over the ``S = N-1`` internal slots, slot row ``i`` restricted to slots
``j > i``. Drawing every row independently gives a *binary tree* only when each slot receives exactly two
children; with edges pointing to higher slots that is also sufficient (one root, the last slot; no cycle). So the
set of valid tables is

.. math::
    \mathcal V = \{x \in \textstyle\prod_r \{0..S-1\} : x_r > i \text{ for slot row } i,\;
    |\{r : x_r = j\}| = 2 \;\forall j\},

and the *binary* decoders here draw from (or maximise) the row product restricted to it,
:math:`q(x) \propto \prod_r p_r(x_r)\,\mathbb 1[x \in \mathcal V]`. That set still holds every labelling of a
tree's internal nodes, while training uses one (the mass-sorted labelling, :mod:`nips25_treegen.labelling`), and
it ignores physics. The *physical* decoders (the default) restrict the product to the canonical tables of the
physically valid trees (finite Ginkgo likelihood: every internal leaf set has :math:`t(S) > t_{cut}` and
admissible children),

.. math::
    q_{\mathrm{phys}}(T) \propto \prod_r p_r(x_r(T))\,\mathbb 1[\psi_v(T) > -\infty\ \forall v],

with :math:`x(T)` the canonical table of tree :math:`T`:

* ``"valid"``: exact draws (and exact MAP) of :math:`q_{\mathrm{phys}}` by scoring every valid tree, enumerated
  through the trellis's finite splits (:meth:`nips25_treegen.trellis.Trellis.valid_trees`);
  ``N <= VALID_MAX_LEAVES``.
* ``"merge"``: for larger N, a bottom-up merge decoder in the canonical order: slot ``k`` (the ``k``-th lightest
  internal node) merges two free nodes ``a, b`` with probability :math:`\propto p_a(k)\,p_b(k)` among the merges
  that are physically admissible and heavier than slot ``k-1``; ``particles`` such proposals per draw are
  importance-weighted by :math:`\prod_k Z_k` (the target over the proposal) and one is resampled
  (sampling-importance-resampling: consistent as ``particles`` grows, and every draw is a valid tree).

The older decoders stay for comparison:

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

__all__ = ["DECODERS", "EXACT_MAX_LEAVES", "VALID_MAX_LEAVES", "decode_rows", "decode_trees", "table_log_prob"]

DECODERS = ("valid", "merge", "exact", "assignment", "independent")
PHYSICAL_DECODERS = ("valid", "merge")
EXACT_MAX_LEAVES = 10
VALID_MAX_LEAVES = 8  # (2N-3)!! = 135,135 trees at N = 8, of which the valid ones are scored
MERGE_FALLBACK_MAX_LEAVES = 12  # the trellis's limit: uniform valid proposals when every merge particle dead-ends
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


def _gather_scores(lp: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """``(B, T)`` row-product log-scores of the tables ``(T, R)`` under every ``lp[b]`` ``(R, S)``."""
    out = np.zeros((lp.shape[0], tables.shape[0]))
    for r in range(tables.shape[1]):
        out += lp[:, r, :][:, tables[:, r]]
    return out


def _pick(scores: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
    """Per row of ``scores`` ``(B, T)``: a draw from softmax (``rng``) or the argmax (``None``)."""
    if rng is None:
        return np.argmax(scores, axis=1)
    return np.argmax(scores + _gumbel(scores.shape, rng), axis=1)


def _valid(lp: np.ndarray, leaves: np.ndarray, t_cut: float, rng: np.random.Generator | None) -> np.ndarray:
    """Exact draw or MAP of the row product restricted to the canonical tables of the physically valid trees."""
    from nips25_treegen.labelling import canonical_rows
    from nips25_treegen.trellis import Trellis

    trellis = Trellis(leaves, t_cut=t_cut)
    if trellis.n_valid_trees() == 0:
        raise ValueError("leaves admit no physically valid tree (every tree has Ginkgo likelihood 0)")
    tables = canonical_rows(leaves, trellis.valid_trees(max_trees=10**6))
    out = np.empty((lp.shape[0], lp.shape[1]), dtype=np.int64)
    chunk = max(1, _CHUNK_ELEMENTS // tables.shape[0])
    for start in range(0, lp.shape[0], chunk):
        scores = _gather_scores(lp[start : start + chunk], tables)
        if not np.all(np.isfinite(scores.max(1))):
            raise ValueError("logits admit no physically valid tree (every valid tree uses a -inf entry)")
        out[start : start + chunk] = tables[_pick(scores, rng)]
    return out


def _order_keys(leaves: np.ndarray) -> tuple[Any, bool]:
    """A function mapping bitmasks to canonical-order keys, and whether they compare lexicographically (N > 16)."""
    from nips25_treegen.labelling import _order_rank, subset_mass2

    n = leaves.shape[0]
    if n <= 16:
        rank = _order_rank(leaves).astype(np.float64)
        return (lambda m: rank[m]), False

    # beyond 16 leaves: t, then leaf count, then mask, compared lexicographically
    def keys(m: np.ndarray) -> np.ndarray:
        pop = np.zeros_like(m)
        for i in range(n):
            pop += (m >> i) & 1
        return np.stack([subset_mass2(leaves, m), pop.astype(np.float64), m.astype(np.float64)], axis=-1)

    return keys, True


def _greater(a: np.ndarray, b: np.ndarray, lex: bool) -> np.ndarray:
    """``a > b`` for rank keys, or lexicographically over the last axis of ``(t, count, mask)`` keys."""
    if lex:
        return (a[..., 0] > b[..., 0]) | (
            (a[..., 0] == b[..., 0]) & ((a[..., 1] > b[..., 1]) | ((a[..., 1] == b[..., 1]) & (a[..., 2] > b[..., 2])))
        )
    return a > b


def _merge(
    lp: np.ndarray, leaves: np.ndarray, t_cut: float, rng: np.random.Generator | None, particles: int
) -> np.ndarray:
    """Sequential bottom-up merges in the canonical order, importance-resampled (module docstring)."""
    from nips25_treegen.ginkgo import split_log_lik

    b_n, r_n, s_n = lp.shape
    n = s_n + 1
    keys, lex = _order_keys(leaves)
    prop = rng if rng is not None else np.random.default_rng(0)
    q = b_n * particles
    owner = np.repeat(np.arange(b_n), particles)
    free = np.tile(1 << np.arange(n, dtype=np.int64), (q, 1))  # (Q, n) masks of the free nodes (first f columns)
    row = np.tile(np.arange(n, dtype=np.int64), (q, 1))  # their row ids (leaf i: row i; slot i: row N + i)
    mom = np.tile(leaves, (q, 1, 1))
    prev = keys(np.zeros(q, dtype=np.int64))
    log_w = np.zeros(q)
    log_target = np.zeros(q)
    out = np.zeros((q, r_n), dtype=np.int64)
    every = np.arange(q)
    for k in range(n - 1):
        f = n - k
        ii, jj = np.triu_indices(f, 1)
        new = free[:, ii] | free[:, jj]
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(split_log_lik(mom[:, ii], mom[:, jj], t_cut=t_cut))
        ok &= _greater(keys(new), prev[:, None], lex)
        score = lp[owner[:, None], row[:, ii], k] + lp[owner[:, None], row[:, jj], k]
        score = np.where(ok, score, -np.inf)
        top = score.max(1)
        alive = np.isfinite(top)
        safe = np.where(alive, top, 0.0)
        with np.errstate(divide="ignore"):
            log_z = safe + np.log(np.exp(score - safe[:, None]).sum(1))
        log_w += np.where(alive, log_z, -np.inf)
        choice = np.argmax(np.where(alive[:, None], score, 0.0) + _gumbel(score.shape, prop), axis=1)
        a, b = ii[choice], jj[choice]
        log_target += np.where(alive, score[every, choice], -np.inf)
        out[every, row[every, a]] = k
        out[every, row[every, b]] = k
        merged_mask, merged_mom = new[every, choice], mom[every, a] + mom[every, b]
        last = f - 1
        for arr, value in ((free, merged_mask), (row, n + k), (mom, merged_mom)):
            moved = arr[every, last].copy()
            arr[every, b] = moved  # the last free node fills b's place (b > a, so a stays put)
            arr[every, a] = value
        prev = keys(merged_mask)
    out = out.reshape(b_n, particles, r_n)
    log_w = log_w.reshape(b_n, particles)
    log_target = log_target.reshape(b_n, particles)
    picks = np.empty((b_n, r_n), dtype=np.int64)
    for b in range(b_n):
        if not np.isfinite(log_w[b].max()):
            picks[b] = _merge_fallback(lp[b], leaves, t_cut, rng, particles)
            continue
        weights = log_target[b] if rng is None else log_w[b]
        picks[b] = out[b, int(_pick(weights[None], rng)[0])]
    return picks


def _merge_fallback(
    lp: np.ndarray, leaves: np.ndarray, t_cut: float, rng: np.random.Generator | None, particles: int
) -> np.ndarray:
    """Every merge particle dead-ended: importance-resample trellis-uniform valid trees instead (N <= 12)."""
    from nips25_treegen.labelling import canonical_rows
    from nips25_treegen.trellis import Trellis

    n = leaves.shape[0]
    if n > MERGE_FALLBACK_MAX_LEAVES:
        raise ValueError(
            f"decoder='merge': every one of {particles} particles dead-ended and N={n} is above the trellis limit "
            f"{MERGE_FALLBACK_MAX_LEAVES}; raise particles"
        )
    trellis = Trellis(leaves, t_cut=t_cut)
    if trellis.n_valid_trees() == 0:
        raise ValueError("leaves admit no physically valid tree (every tree has Ginkgo likelihood 0)")
    seed = rng if rng is not None else 0
    tables = canonical_rows(leaves, np.stack(trellis.sample(particles * 4, seed=seed, uniform=True)))
    scores = _gather_scores(lp[None], tables)  # uniform proposal: the weight is the target
    if not np.isfinite(scores.max()):
        raise ValueError("logits admit no physically valid tree among the fallback proposals")
    return tables[int(_pick(scores, rng)[0])]


def decode_rows(
    logits: Any,
    *,
    decoder: str = "valid",
    mode: str = "sample",
    seed: Any = None,
    leaves: Any = None,
    t_cut: float = 16.0,
    particles: int = 64,
) -> np.ndarray:
    r"""Draw (or maximise) the (A, B) rows from per-row logits under one of the decoders of this module.

    ``"valid"`` and ``"merge"`` target :math:`q_{\mathrm{phys}}(T) \propto \prod_r \mathrm{softmax}(\ell_r)_{x_r(T)}`
    over the physically valid trees in the canonical labelling (they need ``leaves``); ``"exact"`` and
    ``"assignment"`` target :math:`q(x) \propto \prod_r \mathrm{softmax}(\ell_r)_{x_r}\,\mathbb 1[x \in \mathcal V]`
    over binary tables in any labelling; ``"independent"`` draws rows alone (module docstring).

    Args:
        logits: ``(2N-2, N-1)`` or ``(B, 2N-2, N-1)`` row logits (A rows first, then B rows); ``-inf`` marks a
            forbidden entry; the structural mask (B row ``i`` only to slots ``j > i``) is applied here.
        decoder: ``"valid"`` (exact, ``N <= VALID_MAX_LEAVES``), ``"merge"`` (sequential, any N), ``"exact"``
            (``N <= EXACT_MAX_LEAVES``), ``"assignment"`` or ``"independent"``.
        mode: ``"sample"`` or ``"map"`` (``"merge"``: the best of its ``particles`` proposals, approximate).
        seed: int, numpy ``Generator`` or None (sampling only).
        leaves: ``(N, 4)`` leaf four-momenta of the jet (physical decoders only).
        t_cut: mass-squared cut of the physical validity (GeV², > 0).
        particles: proposals per draw of ``"merge"`` (>= 1).

    Returns:
        ``(2N-2,)`` or ``(B, 2N-2)`` int64 slot indices (``decode(a, b)`` turns them into parents arrays); for the
        physical decoders every table is the canonical table of a physically valid tree.

    Raises:
        ValueError: for a bad shape, NaN/+inf, an unknown decoder or mode, N above a decoder's limit, a row with no
            allowed entry, missing or mismatched ``leaves``, or logits/leaves that admit no valid tree.
        TypeError: non-real dtype.

    References:
        TreeGen (canonical mass-sorted labelling); perturb-and-MAP: Papandreou & Yuille, ICCV 2011;
        sampling-importance-resampling: Rubin 1988.

    Example:
        >>> import numpy as np
        >>> from nips25_treegen.ginkgo import simulate, tree_log_lik
        >>> from nips25_treegen.hierarchy import decode
        >>> jet = simulate(1, n_leaves=(5, 5), seed=0)[0]
        >>> rows = decode_rows(np.zeros((3, 8, 4)), leaves=jet.leaves, seed=0)
        >>> all(np.isfinite(tree_log_lik(jet.leaves, decode(r[:5], r[5:]))) for r in rows)
        True
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
    if decoder == "valid" and n > VALID_MAX_LEAVES:
        raise ValueError(
            f"decoder='valid' needs N <= VALID_MAX_LEAVES={VALID_MAX_LEAVES} (it scores every valid tree), got N={n}; "
            "use decoder='merge'"
        )
    if decoder in PHYSICAL_DECODERS:
        from nips25_treegen.ginkgo import _check_leaves

        if leaves is None:
            raise ValueError(f"decoder={decoder!r} needs the jet's leaves (leaves=(N, 4))")
        leaves = _check_leaves(leaves)
        if leaves.shape[0] != n:
            raise ValueError(f"leaves must have shape (N, 4) = ({n}, 4) to match logits, got {leaves.shape}")
        if not (isinstance(t_cut, (int, float)) and np.isfinite(t_cut) and t_cut > 0):
            raise ValueError(f"t_cut must be a finite number > 0, got {t_cut!r}")
        if isinstance(particles, bool) or not isinstance(particles, (int, np.integer)) or particles < 1:
            raise ValueError(f"particles must be an int >= 1, got {particles!r}")
    rng = _rng(seed) if mode == "sample" else None
    lp = _log_probs(arr)
    if decoder == "valid":
        out = _valid(lp, leaves, float(t_cut), rng)
    elif decoder == "merge":
        out = _merge(lp, leaves, float(t_cut), rng, int(particles))
    elif decoder == "exact":
        out = _exact(lp, rng)
    else:
        scores = lp if rng is None else lp + _gumbel(lp.shape, rng)
        out = np.argmax(scores, axis=-1) if decoder == "independent" else _assignment(scores)
    return out[0] if single else out


def decode_trees(
    logits: Any,
    *,
    decoder: str = "valid",
    mode: str = "sample",
    seed: Any = None,
    leaves: Any = None,
    t_cut: float = 16.0,
    particles: int = 64,
) -> np.ndarray:
    """Parents arrays ``(B, 2N-1)`` (or ``(2N-1,)``) of :func:`decode_rows`; root last, leaves ``0..N-1``.

    Arguments, decoders and errors are those of :func:`decode_rows`; leaf ``r`` (row ``r < N``) and internal node
    ``N + i`` (B row ``i``) get parent ``N + x_r``, the root ``2N-2`` gets ``-1``. Constrained decoders always give
    binary trees (:func:`nips25_treegen.hierarchy.is_binary_tree`), the physical ones physically valid trees;
    ``"independent"`` may give neither.

    Example:
        >>> import numpy as np
        >>> from nips25_treegen.hierarchy import is_binary_tree
        >>> is_binary_tree(decode_trees(np.zeros((8, 4)), decoder="assignment", seed=1), 5)
        True
    """
    rows = decode_rows(logits, decoder=decoder, mode=mode, seed=seed, leaves=leaves, t_cut=t_cut, particles=particles)
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
