r"""Baselines for jet clustering: likelihood-based greedy, beam search and stochastic greedy agglomeration,
generalised-kT clustering and a uniform sampler over the physically valid trees.

All return parents arrays in the package node order (internal nodes sorted by invariant mass, root last).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nips25_treegen.ginkgo import _check_leaves, _check_rate, split_log_lik
from nips25_treegen.labelling import canonical_parents
from nips25_treegen.trellis import MAX_EXACT_LEAVES, Trellis

__all__ = ["beam", "greedy", "kt_cluster", "stochastic_greedy", "uniform_valid"]


def _pair_scores(
    momenta: np.ndarray, t_cut: float, lam: float, lam_root: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split log-likelihood of merging every pair (i < j) of the current clusters."""
    i, j = np.triu_indices(momenta.shape[0], k=1)
    rate = lam_root if momenta.shape[0] == 2 else lam
    return i, j, split_log_lik(momenta[i], momenta[j], t_cut=t_cut, lam=rate)


def _agglomerate(
    leaves: np.ndarray, choose: Callable[[np.ndarray, np.ndarray], tuple[int, int]]
) -> tuple[np.ndarray, list[frozenset[int]]]:
    """Merge pairs picked by ``choose(masks, momenta)`` until one cluster is left; parents and partition history."""
    n = leaves.shape[0]
    masks = [1 << k for k in range(n)]
    momenta = leaves.copy()
    history = [frozenset(masks)]
    merged = []
    while len(masks) > 1:
        a, b = choose(np.array(masks), momenta)
        new_mask, new_p = masks[a] | masks[b], momenta[a] + momenta[b]
        keep = [k for k in range(len(masks)) if k not in (a, b)]
        masks = [masks[k] for k in keep] + [new_mask]
        momenta = np.vstack([momenta[keep], new_p[None]])
        merged.append(new_mask)
        history.append(frozenset(masks))
    return canonical_parents(leaves, merged), history


def _rates(lam: float, lam_root: float | None, t_cut: float) -> tuple[float, float]:
    _check_rate(lam, "lam")
    lam_root = lam if lam_root is None else lam_root
    _check_rate(lam_root, "lam_root")
    if not (math.isfinite(t_cut) and t_cut > 0):
        raise ValueError(f"t_cut must be finite and > 0, got {t_cut!r}")
    return float(lam), float(lam_root)


def greedy(leaves: Any, *, t_cut: float = 16.0, lam: float = 1.5, lam_root: float | None = None) -> np.ndarray:
    r"""Greedy likelihood clustering: repeatedly merge the pair with the highest split likelihood :math:`\psi`.

    Args:
        leaves: ``(N, 4)`` leaf four-momenta, N >= 2.
        t_cut, lam, lam_root: Ginkgo parameters.

    Returns:
        ``(2N-1,)`` parents array (possibly physically invalid if no admissible pair is left at some step).

    Raises:
        ValueError: for bad leaves or parameters.

    References:
        Cranmer et al., arXiv:2105.10512, Sec. 4 (greedy and beam search baselines).
    """
    leaves = _check_leaves(leaves, min_leaves=2)
    lam, lam_root = _rates(lam, lam_root, t_cut)

    def choose(masks: np.ndarray, momenta: np.ndarray) -> tuple[int, int]:
        i, j, s = _pair_scores(momenta, t_cut, lam, lam_root)
        k = int(np.argmax(s))
        return int(i[k]), int(j[k])

    return _agglomerate(leaves, choose)[0]


def stochastic_greedy(
    leaves: Any,
    *,
    n_samples: int = 1,
    temperature: float = 1.0,
    t_cut: float = 16.0,
    lam: float = 1.5,
    lam_root: float | None = None,
    seed: int | np.random.Generator = 0,
) -> list[np.ndarray]:
    r"""Stochastic greedy clustering: merge pair :math:`(i, j)` with probability :math:`\propto e^{\psi_{ij}/T}`.

    Args:
        leaves: ``(N, 4)`` leaf four-momenta.
        n_samples: trees to draw (>= 1).
        temperature: :math:`T > 0`.
        t_cut, lam, lam_root: Ginkgo parameters.
        seed: seed or numpy Generator.

    Returns:
        ``n_samples`` parents arrays.

    Raises:
        ValueError: for bad leaves or parameters.
    """
    leaves = _check_leaves(leaves, min_leaves=2)
    lam, lam_root = _rates(lam, lam_root, t_cut)
    if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be finite and > 0, got {temperature!r}")
    if not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise ValueError(f"n_samples must be an int >= 1, got {n_samples!r}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    def choose(masks: np.ndarray, momenta: np.ndarray) -> tuple[int, int]:
        i, j, s = _pair_scores(momenta, t_cut, lam, lam_root)
        if not np.any(np.isfinite(s)):
            k = int(rng.integers(s.size))
        else:
            w = np.exp((s - s.max()) / temperature)
            k = int(rng.choice(s.size, p=w / w.sum()))
        return int(i[k]), int(j[k])

    return [_agglomerate(leaves, choose)[0] for _ in range(int(n_samples))]


def beam(
    leaves: Any, *, beam_width: int = 10, t_cut: float = 16.0, lam: float = 1.5, lam_root: float | None = None
) -> np.ndarray:
    r"""Beam search over agglomerations, keeping the ``beam_width`` best partial trees by summed :math:`\psi`.

    Args:
        leaves: ``(N, 4)`` leaf four-momenta.
        beam_width: beam size b >= 1 (b = 1 is greedy).
        t_cut, lam, lam_root: Ginkgo parameters.

    Returns:
        ``(2N-1,)`` parents array of the best complete tree found.

    Raises:
        ValueError: for bad leaves or parameters.
    """
    leaves = _check_leaves(leaves, min_leaves=2)
    lam, lam_root = _rates(lam, lam_root, t_cut)
    if not isinstance(beam_width, (int, np.integer)) or beam_width < 1:
        raise ValueError(f"beam_width must be an int >= 1, got {beam_width!r}")
    n = leaves.shape[0]
    states: list[tuple[float, tuple[int, ...], tuple[int, ...]]] = [(0.0, tuple(1 << k for k in range(n)), ())]
    bits = np.arange(n)
    for _ in range(n - 1):
        candidates: dict[tuple[int, ...], tuple[float, tuple[int, ...]]] = {}
        for score, masks, merged in states:
            arr = np.array(masks, dtype=np.int64)
            momenta = ((arr[:, None] >> bits[None, :]) & 1).astype(np.float64) @ leaves
            i, j, s = _pair_scores(momenta, t_cut, lam, lam_root)
            for a, b, v in zip(i.tolist(), j.tolist(), s.tolist()):
                new = masks[a] | masks[b]
                key = tuple(sorted([m for k, m in enumerate(masks) if k not in (a, b)] + [new]))
                total = score + v
                if key not in candidates or total > candidates[key][0]:
                    candidates[key] = (total, (*merged, new))
        ranked = sorted(candidates.items(), key=lambda kv: -kv[1][0])[: int(beam_width)]
        states = [(v[0], key, v[1]) for key, v in ranked]
    return canonical_parents(leaves, states[0][2])


def kt_cluster(
    leaves: Any, *, p: float = 1.0, distance: str = "ginkgo", return_history: bool = False
) -> np.ndarray | tuple[np.ndarray, list[frozenset[int]]]:
    r"""Generalised-kT clustering with pairwise merges only.

    ``distance="ginkgo"``: :math:`d_{ij} = \min(p_{T,i}^{2p}, p_{T,j}^{2p})\,\theta_{ij}^2` (Ginkgo's code;
    :math:`p_T` from :math:`(p_x, p_y)`, :math:`\theta` the 3-momentum angle). ``distance="ee"``: fastjet's
    ``ee_genkt_algorithm`` with :math:`R = \pi`, :math:`d_{ij} = \min(E_i^{2p}, E_j^{2p})(1 - \cos\theta_{ij})/2`.
    ``p = 1`` is kT, ``0`` Cambridge/Aachen, ``-1`` anti-kT. Recombination is the four-vector sum (E scheme).

    Args:
        leaves: ``(N, 4)`` leaf four-momenta.
        p: the generalised-kT exponent (finite).
        distance: ``"ginkgo"`` or ``"ee"``.
        return_history: also return the partition after every merge (N, N-1, ..., 1 clusters).

    Returns:
        ``(2N-1,)`` parents array, and the partitions as sets of leaf bitmasks when ``return_history``.

    Raises:
        ValueError: for bad leaves, a non-finite ``p`` or an unknown ``distance``.
    """
    leaves = _check_leaves(leaves, min_leaves=2)
    if not (isinstance(p, (int, float)) and math.isfinite(p)):
        raise ValueError(f"p must be a finite number, got {p!r}")
    if distance not in ("ginkgo", "ee"):
        raise ValueError(f"distance must be 'ginkgo' or 'ee', got {distance!r}")

    def choose(masks: np.ndarray, momenta: np.ndarray) -> tuple[int, int]:
        i, j = np.triu_indices(momenta.shape[0], k=1)
        three = momenta[:, 1:]
        norm = np.linalg.norm(three, axis=1)
        cos = np.clip(np.sum(three[i] * three[j], axis=1) / (norm[i] * norm[j]), -1.0, 1.0)
        scale = np.hypot(momenta[:, 1], momenta[:, 2]) if distance == "ginkgo" else momenta[:, 0]
        weight = np.minimum(scale[i] ** (2 * p), scale[j] ** (2 * p))
        d = weight * (np.arccos(cos) ** 2 if distance == "ginkgo" else (1.0 - cos) / 2.0)
        k = int(np.argmin(d))
        return int(i[k]), int(j[k])

    parents, history = _agglomerate(leaves, choose)
    return (parents, history) if return_history else parents


def uniform_valid(
    leaves: Any,
    n_samples: int,
    *,
    t_cut: float = 16.0,
    lam: float = 1.5,
    lam_root: float | None = None,
    seed: int | np.random.Generator = 0,
) -> list[np.ndarray]:
    """Uniform samples over the physically valid trees (finite Ginkgo likelihood), exact via trellis counting.

    Raises:
        ValueError: for bad leaves, N > 12, or no valid tree.
    """
    leaves = _check_leaves(leaves, min_leaves=2, max_leaves=MAX_EXACT_LEAVES)
    trellis = Trellis(leaves, t_cut=t_cut, lam=lam, lam_root=lam_root)
    return trellis.sample(n_samples, seed=seed, uniform=True)
