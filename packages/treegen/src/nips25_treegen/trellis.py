r"""The exact hierarchical cluster trellis (Greenberg et al., arXiv:2002.11661): partition function, MAP, samples.

Over the N leaves, every subset :math:`S` (a bitmask) gets

.. math::
    \log Z(S) = \operatorname{logsumexp}_{L \ni s^*,\, L \subsetneq S}
        \big[\psi(L, S \setminus L) + \log Z(L) + \log Z(S \setminus L)\big], \qquad \log Z(\{x\}) = 0,

with :math:`s^*` the lowest leaf of :math:`S` (so each unordered split appears once). ``max`` instead of
``logsumexp`` gives the MAP tree; a top-down softmax over the split terms draws exact posterior samples. The cost
is :math:`(3^N - 2^{N+1} + 1)/2` split evaluations against :math:`(2N-3)!!` trees for enumeration.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from nips25_treegen.ginkgo import _check_leaves, _check_rate, split_log_lik
from nips25_treegen.hierarchy import children_of, leaf_masks
from nips25_treegen.labelling import canonical_parents

__all__ = [
    "MAX_EXACT_LEAVES",
    "Trellis",
    "brute_force",
    "enumerate_trees",
    "n_split_evaluations",
    "n_trees",
    "total_variation",
]

MAX_EXACT_LEAVES = 12


def n_split_evaluations(n_leaves: int) -> int:
    r"""Number of (subset, split) pairs the trellis evaluates: :math:`(3^N - 2^{N+1} + 1)/2`."""
    if not isinstance(n_leaves, (int, np.integer)) or n_leaves < 1:
        raise ValueError(f"n_leaves must be an int >= 1, got {n_leaves!r}")
    return (3**n_leaves - 2 ** (n_leaves + 1) + 1) // 2


def n_trees(n_leaves: int) -> int:
    r"""Number of rooted binary trees over N labelled leaves: :math:`(2N-3)!!`."""
    if not isinstance(n_leaves, (int, np.integer)) or n_leaves < 1:
        raise ValueError(f"n_leaves must be an int >= 1, got {n_leaves!r}")
    out = 1
    for k in range(3, 2 * n_leaves - 2, 2):
        out *= k
    return out


def _submasks(mask: int) -> np.ndarray:
    """All submasks of ``mask`` (including 0 and ``mask``), vectorised bit deposit."""
    bits = [b for b in range(mask.bit_length()) if mask >> b & 1]
    idx = np.arange(1 << len(bits), dtype=np.int64)
    out = np.zeros_like(idx)
    for j, b in enumerate(bits):
        out |= ((idx >> j) & 1) << b
    return out


def _segment_logsumexp(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    peak = np.maximum.reduceat(values, starts)
    safe = np.where(np.isfinite(peak), peak, 0.0)
    seg = np.repeat(np.arange(starts.size), np.diff(np.append(starts, values.size)))
    with np.errstate(divide="ignore"):
        return np.log(np.add.reduceat(np.exp(values - safe[seg]), starts)) + safe


class Trellis:
    r"""Exact posterior over binary trees of a jet's leaves under the Ginkgo likelihood.

    Args:
        leaves: ``(N, 4)`` leaf four-momenta ``[E, px, py, pz]``, ``2 <= N <= max_leaves``.
        t_cut: mass-squared cut (> 0).
        lam: decay rate of non-root splits (> 0).
        lam_root: decay rate of the root split (``None``: ``lam``).
        max_leaves: refuse larger N (the cost grows as :math:`3^N`); at most 16.

    Raises:
        ValueError: for bad leaves, N above ``max_leaves``, or bad rates.

    References:
        Greenberg, Macaluso, Monath, et al., "Data Structures & Algorithms for Exact Inference in Hierarchical
        Clustering", AISTATS 2021, arXiv:2002.11661; TreeGen, Sec. 5 (reference posterior).

    Example:
        >>> from nips25_treegen.ginkgo import simulate
        >>> jet = simulate(1, n_leaves=(5, 5), seed=0)[0]
        >>> tr = Trellis(jet.leaves)
        >>> tr.n_split_evaluations, tr.log_posterior(tr.map_tree()) <= 0
        (90, True)
    """

    def __init__(
        self,
        leaves: Any,
        *,
        t_cut: float = 16.0,
        lam: float = 1.5,
        lam_root: float | None = None,
        max_leaves: int = MAX_EXACT_LEAVES,
    ) -> None:
        if not isinstance(max_leaves, int) or not 2 <= max_leaves <= 16:
            raise ValueError(f"max_leaves must be an int in [2, 16], got {max_leaves!r}")
        self.leaves = _check_leaves(leaves, min_leaves=2, max_leaves=max_leaves)
        self.t_cut, self.lam = float(t_cut), float(lam)
        self.lam_root = self.lam if lam_root is None else float(lam_root)
        _check_rate(self.lam, "lam")
        _check_rate(self.lam_root, "lam_root")
        n = self.n_leaves = self.leaves.shape[0]
        full = (1 << n) - 1
        momenta = np.zeros((1 << n, 4))
        for i in range(n):
            momenta[1 << i : 1 << (i + 1)] = momenta[: 1 << i] + self.leaves[i]
        lefts, rights = [], []
        for s in range(1, full + 1):
            if s & (s - 1) == 0:
                continue
            low = s & -s
            sub = _submasks(s ^ low)[:-1]  # drop the submask equal to S \ {low} (L = S)
            lefts.append(sub | low)
            rights.append(s ^ (sub | low))
        left = np.concatenate(lefts)
        right = np.concatenate(rights)
        parent = left | right
        pop = np.array([bin(m).count("1") for m in range(full + 1)])
        order = np.lexsort((parent, pop[parent]))
        self._left, self._right, self._parent = left[order], right[order], parent[order]
        rates = np.where(self._parent == full, self.lam_root, self.lam)
        self._psi = split_log_lik(momenta[self._left], momenta[self._right], t_cut=self.t_cut, lam=rates)
        self.n_split_evaluations = int(self._psi.size)
        self._starts = np.flatnonzero(np.r_[True, self._parent[1:] != self._parent[:-1]])
        self._ends = np.r_[self._starts[1:], self._psi.size]
        self._segment_of = {int(self._parent[s]): (int(s), int(e)) for s, e in zip(self._starts, self._ends)}
        self._log_z = np.zeros(full + 1)
        self._log_max = np.zeros(full + 1)
        self._arg_max = np.zeros(full + 1, dtype=np.int64)
        self._count = np.zeros(full + 1, dtype=np.int64)
        self._count[1 << np.arange(n)] = 1
        self._uniform_log_count = np.zeros(full + 1)
        finite = np.isfinite(self._psi)
        seg_pop = pop[self._parent[self._starts]]
        for k in range(2, n + 1):
            segs = np.flatnonzero(seg_pop == k)
            lo, hi = self._starts[segs[0]], self._ends[segs[-1]]
            sl = slice(lo, hi)
            lft, rgt, par = self._left[sl], self._right[sl], self._parent[sl]
            starts = self._starts[segs] - lo
            term = self._psi[sl] + self._log_z[lft] + self._log_z[rgt]
            self._log_z[par[starts]] = _segment_logsumexp(term, starts)
            mterm = self._psi[sl] + self._log_max[lft] + self._log_max[rgt]
            self._log_max[par[starts]] = np.maximum.reduceat(mterm, starts)
            seg_id = np.repeat(np.arange(starts.size), np.diff(np.append(starts, hi - lo)))
            best = np.lexsort((-mterm, seg_id))  # within each segment, the largest term first
            first = np.r_[True, seg_id[best][1:] != seg_id[best][:-1]]
            self._arg_max[par[starts]] = lo + best[first]
            cnt = np.where(finite[sl], self._count[lft] * self._count[rgt], 0)
            self._count[par[starts]] = np.add.reduceat(cnt, starts)
        self._full = full

    def log_partition(self) -> float:
        r"""Log partition function :math:`\log Z = \log \sum_{\text{trees}} \prod_{v} e^{\psi_v}`."""
        return float(self._log_z[self._full])

    def map_log_lik(self) -> float:
        """Log-likelihood of the MAP tree."""
        return float(self._log_max[self._full])

    def n_valid_trees(self) -> int:
        """Number of trees with a finite likelihood (physically admissible)."""
        return int(self._count[self._full])

    def _masks_top_down(self, pick: Any) -> list[int]:
        masks, stack = [], [self._full]
        while stack:
            s = stack.pop()
            if s & (s - 1) == 0:
                continue
            masks.append(s)
            j = pick(s)
            stack += [int(self._left[j]), int(self._right[j])]
        return masks

    def map_tree(self) -> np.ndarray:
        """Parents array (package node order) of the maximum-likelihood tree.

        Raises:
            ValueError: if no tree has a finite likelihood.
        """
        if not np.isfinite(self.map_log_lik()):
            raise ValueError("no physically valid tree over these leaves (every tree has likelihood 0)")
        return canonical_parents(self.leaves, self._masks_top_down(lambda s: int(self._arg_max[s])))

    def sample(self, k: int, *, seed: int | np.random.Generator = 0, uniform: bool = False) -> list[np.ndarray]:
        r"""Exact samples from the posterior :math:`p(\text{tree}) \propto \prod_v e^{\psi_v}` (top-down softmax).

        Args:
            k: number of trees (>= 1).
            seed: seed or numpy Generator.
            uniform: draw uniformly over the physically valid trees instead (the ``uniform_valid`` baseline).

        Returns:
            ``k`` parents arrays in the package node order.

        Raises:
            ValueError: if ``k < 1`` or no valid tree exists.
        """
        if not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be an int >= 1, got {k!r}")
        if self.n_valid_trees() == 0:
            raise ValueError("no physically valid tree over these leaves (every tree has likelihood 0)")
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        cache: dict[int, np.ndarray] = {}

        def probs(s: int) -> np.ndarray:
            if s not in cache:
                lo, hi = self._segment_of[s]
                lft, rgt = self._left[lo:hi], self._right[lo:hi]
                if uniform:
                    w = np.where(np.isfinite(self._psi[lo:hi]), self._count[lft] * self._count[rgt], 0).astype(float)
                    cache[s] = np.cumsum(w / w.sum())
                else:
                    term = self._psi[lo:hi] + self._log_z[lft] + self._log_z[rgt] - self._log_z[s]
                    cache[s] = np.cumsum(np.exp(term))
            return cache[s]

        def pick(s: int) -> int:
            c = probs(s)
            return self._segment_of[s][0] + min(int(np.searchsorted(c, rng.uniform() * c[-1])), c.size - 1)

        return [canonical_parents(self.leaves, self._masks_top_down(pick)) for _ in range(int(k))]

    def valid_trees(self, *, max_trees: int = 250_000) -> np.ndarray:
        r"""Every physically valid tree (finite Ginkgo likelihood), as its internal-node bitmasks.

        Enumerated top-down through the trellis's finite splits only, so the cost is the number of valid trees
        (:meth:`n_valid_trees`), not :math:`(2N-3)!!`. Used by the exact constrained decoder
        (:func:`nips25_treegen.decoding.decode_rows` with ``decoder="valid"``).

        Args:
            max_trees: refuse to enumerate more trees than this (memory guard).

        Returns:
            ``(T, N-1)`` int64 bitmasks, one row per valid tree (root last within a row), ``T = n_valid_trees()``.

        Raises:
            ValueError: if there are more than ``max_trees`` valid trees, or none.

        Example:
            >>> from nips25_treegen.ginkgo import simulate
            >>> tr = Trellis(simulate(1, n_leaves=(5, 5), seed=0)[0].leaves)
            >>> tr.valid_trees().shape == (tr.n_valid_trees(), 4)
            True
        """
        count = self.n_valid_trees()
        if not isinstance(max_trees, (int, np.integer)) or max_trees < 1:
            raise ValueError(f"max_trees must be an int >= 1, got {max_trees!r}")
        if count == 0:
            raise ValueError("no physically valid tree over these leaves (every tree has likelihood 0)")
        if count > max_trees:
            raise ValueError(f"{count} valid trees exceed max_trees={max_trees}; use a sequential decoder instead")
        memo: dict[int, np.ndarray] = {}

        def below(s: int) -> np.ndarray:  # (count(s), popcount(s) - 1) internal masks of s's valid subtrees
            if s & (s - 1) == 0:
                return np.zeros((1, 0), dtype=np.int64)
            if s not in memo:
                lo, hi = self._segment_of[s]
                parts = []
                for j in range(lo, hi):
                    if not np.isfinite(self._psi[j]) or self._count[self._left[j]] * self._count[self._right[j]] == 0:
                        continue
                    a, b = below(int(self._left[j])), below(int(self._right[j]))
                    ia, ib = np.repeat(np.arange(a.shape[0]), b.shape[0]), np.tile(np.arange(b.shape[0]), a.shape[0])
                    parts.append(np.concatenate([a[ia], b[ib], np.full((ia.size, 1), s, dtype=np.int64)], axis=1))
                memo[s] = np.concatenate(parts) if parts else np.zeros((0, bin(s).count("1") - 1), dtype=np.int64)
            return memo[s]

        return below(self._full)

    def log_posterior(self, parents: Any) -> float:
        r"""Exact log posterior :math:`\sum_v \psi_v - \log Z` of one tree (``-inf`` if inadmissible).

        Raises:
            ValueError: if ``parents`` is not a binary tree over the N leaves.
        """
        masks = leaf_masks(parents, self.n_leaves)
        total = 0.0
        for kid_a, kid_b in (k for k in children_of(parents, self.n_leaves) if k):
            ma, mb = int(masks[kid_a]), int(masks[kid_b])
            s = ma | mb
            left = ma if ma & (s & -s) else mb
            lo, hi = self._segment_of[s]
            total += float(self._psi[lo + int(np.flatnonzero(self._left[lo:hi] == left)[0])])
        return total - self.log_partition()


def _enumerate_splits(s: int) -> Iterator[tuple[tuple[int, int], ...]]:
    """Every tree over the leaves of ``s`` as a tuple of ``(subset, left part)`` splits."""
    if s & (s - 1) == 0:
        yield ()
        return
    low = s & -s
    for sub in _submasks(s ^ low)[:-1].tolist():
        left = sub | low
        for tl in _enumerate_splits(left):
            for tr in _enumerate_splits(s ^ left):
                yield ((s, left), *tl, *tr)


def enumerate_trees(n_leaves: int) -> Iterator[frozenset[int]]:
    """Every rooted binary tree over N leaves, as its set of internal-node bitmasks ((2N-3)!! of them).

    Raises:
        ValueError: if N is not in [1, 9] (enumeration beyond is impractical).
    """
    if not isinstance(n_leaves, (int, np.integer)) or not 1 <= n_leaves <= 9:
        raise ValueError(f"n_leaves must be an int in [1, 9] for enumeration, got {n_leaves!r}")
    for splits in _enumerate_splits((1 << n_leaves) - 1):
        yield frozenset(s for s, _ in splits)


def brute_force(
    leaves: Any, *, t_cut: float = 16.0, lam: float = 1.5, lam_root: float | None = None
) -> tuple[float, float, frozenset[int]]:
    """Log Z, MAP log-likelihood and MAP tree (as internal bitmasks) by enumerating every tree (N <= 9).

    Each split's likelihood is computed once and cached; the enumeration itself visits all (2N-3)!! trees.

    Raises:
        ValueError: for bad leaves or N > 9.
    """
    leaves = _check_leaves(leaves, min_leaves=2, max_leaves=9)
    n = leaves.shape[0]
    lam_root = lam if lam_root is None else lam_root
    full = (1 << n) - 1
    psi: dict[tuple[int, int], float] = {}
    logs, trees = [], []
    for splits in _enumerate_splits(full):
        total = 0.0
        for s, left in splits:
            if (s, left) not in psi:
                p_l = leaves[[i for i in range(n) if left >> i & 1]].sum(axis=0)
                p_r = leaves[[i for i in range(n) if (s ^ left) >> i & 1]].sum(axis=0)
                rate = lam_root if s == full else lam
                psi[(s, left)] = float(split_log_lik(p_l, p_r, t_cut=t_cut, lam=rate))
            total += psi[(s, left)]
        logs.append(total)
        trees.append(frozenset(s for s, _ in splits))
    arr = np.array(logs)
    best = int(np.argmax(arr))
    peak = arr[best]
    log_z = float(peak + np.log(np.sum(np.exp(arr - peak)))) if np.isfinite(peak) else -np.inf
    return log_z, float(peak), trees[best]


def total_variation(trellis: Trellis, samples: Any) -> float:
    r"""Total variation between the empirical distribution of ``samples`` and the trellis's exact posterior.

    With :math:`\hat p` the sample frequencies (structurally invalid samples count as mass on no tree),
    :math:`TV = \tfrac12\big(\sum_{x \in \mathrm{supp}\,\hat p} |\hat p(x) - p(x)| + 1 - \sum_{x \in
    \mathrm{supp}\,\hat p} p(x)\big)`, exact without enumerating the :math:`(2N-3)!!` trees.

    Args:
        trellis: the jet's :class:`Trellis`.
        samples: ``(M, 2N-1)`` parents arrays (any internal-node order; invalid ones allowed).

    Returns:
        TV in [0, 1].

    Raises:
        ValueError: for an empty sample set or wrong shapes.
    """
    from collections import Counter

    from nips25_treegen.hierarchy import clusters, is_binary_tree

    arr = np.asarray(samples)
    n = trellis.n_leaves
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] != 2 * n - 1:
        raise ValueError(f"samples must have shape (M >= 1, 2N-1 = {2 * n - 1}), got {arr.shape}")
    counts: Counter = Counter()
    first: dict[Any, np.ndarray] = {}
    invalid = 0
    for p in arr:
        if not is_binary_tree(p, n):
            invalid += 1
            continue
        key = clusters(p, n)
        counts[key] += 1
        first.setdefault(key, p)
    m = arr.shape[0]
    dev, covered = invalid / m, 0.0
    for key, c in counts.items():
        prob = math.exp(trellis.log_posterior(first[key]))
        dev += abs(c / m - prob)
        covered += prob
    return float(0.5 * (dev + max(0.0, 1.0 - covered)))
