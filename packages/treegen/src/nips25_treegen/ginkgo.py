r"""Ginkgo, the toy parton-shower simulator of jets, and its split likelihood (Cranmer et al., arXiv:2105.10512).

A jet is a binary tree whose nodes are four-momenta ``[E, px, py, pz]`` (float64). A node with invariant mass
squared :math:`t = E^2 - |p|^2` above :math:`t_{cut}` splits in two; below it, it is a leaf (a final-state particle).

Node order used everywhere in this package (a *parents array*): leaves ``0..N-1``, internal nodes ``N..2N-2``
sorted by ascending :math:`t` (ties by leaf count), so the root is ``2N-2`` and every parent has a larger index
than its children.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nips25_shared import get_logger
from nips25_treegen.hierarchy import children_of, leaf_masks

__all__ = [
    "GinkgoConfig",
    "Jet",
    "child_log_density",
    "invariant_mass2",
    "simulate",
    "split_log_lik",
    "tree_log_lik",
]

_LOG = get_logger(__name__)
U_MAX = 1.0 - 1e-3  # u_L, u_R < 1 - 1e-3 (Ginkgo's "min fraction" guard)
_JET_TYPES = {"QCD": (30.0, 1.5), "W": (80.0, 3.0)}  # root mass M, lambda_root


@dataclass(frozen=True)
class GinkgoConfig:
    r"""Physics parameters of Ginkgo. Defaults are the published QCD-jet settings.

    Attributes:
        jet_type: ``"QCD"`` (root mass 30, ``lam_root = 1.5``) or ``"W"`` (root mass 80, ``lam_root = 3``).
        t_cut: mass-squared cut below which a node is a leaf (GeV², > 0).
        lam: decay rate :math:`\lambda` of the exponential split fractions (> 0).
        lam_root: rate at the root; ``None`` takes the jet type's value.
        p_root: magnitude of the root's 3-momentum (GeV), along :math:`(1,1,1)/\sqrt3`.
    """

    jet_type: str = "QCD"
    t_cut: float = 16.0
    lam: float = 1.5
    lam_root: float | None = None
    p_root: float = 400.0

    def __post_init__(self) -> None:
        if self.jet_type not in _JET_TYPES:
            raise ValueError(f"jet_type must be one of {sorted(_JET_TYPES)}, got {self.jet_type!r}")
        for name in ("t_cut", "lam", "p_root"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        if self.lam_root is not None and not (math.isfinite(self.lam_root) and self.lam_root > 0):
            raise ValueError(f"lam_root must be a finite number > 0 or None, got {self.lam_root!r}")

    @property
    def root_mass(self) -> float:
        """Invariant mass of the root (GeV)."""
        return _JET_TYPES[self.jet_type][0]

    @property
    def root_rate(self) -> float:
        """The rate used at the root split."""
        return self.lam_root if self.lam_root is not None else _JET_TYPES[self.jet_type][1]


@dataclass(frozen=True)
class Jet:
    """One simulated jet.

    Attributes:
        leaves: ``(N, 4)`` float64 four-momenta ``[E, px, py, pz]`` of the leaves.
        content: ``(2N-1, 4)`` four-momenta of every node (package node order, root last).
        parents: ``(2N-1,)`` int64 parent index of every node, ``-1`` at the root.
        t: ``(2N-1,)`` mass squared of every node as sampled by the shower.
        log_lik: Ginkgo log-likelihood of the truth tree.
    """

    leaves: np.ndarray
    content: np.ndarray
    parents: np.ndarray
    t: np.ndarray
    log_lik: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def n_leaves(self) -> int:
        """Number of leaves N."""
        return int(self.leaves.shape[0])

    def to_ginkgo_dict(self) -> dict[str, Any]:
        """The jet in Ginkgo's dictionary layout (``root_id`` 0, ``tree`` of ``[left, right]``, ``-1`` at leaves)."""
        n_nodes = self.parents.shape[0]
        order = list(range(n_nodes - 1, -1, -1))  # root first, as Ginkgo stores it
        new = {old: i for i, old in enumerate(order)}
        tree = -np.ones((n_nodes, 2), dtype=np.int64)
        for child, parent in enumerate(self.parents):
            if parent >= 0:
                row = tree[new[int(parent)]]
                row[0 if row[0] < 0 else 1] = new[child]
        return {
            "root_id": 0,
            "tree": tree,
            "content": self.content[order],
            "leaves": self.leaves.copy(),
            "logLH": self.log_lik,
            "M_Hard": math.sqrt(max(float(self.t[-1]), 0.0)),
        }


def invariant_mass2(p: np.ndarray) -> np.ndarray:
    r"""Invariant mass squared :math:`t = E^2 - p_x^2 - p_y^2 - p_z^2` of ``(..., 4)`` four-momenta."""
    p = np.asarray(p, dtype=np.float64)
    return p[..., 0] ** 2 - p[..., 1] ** 2 - p[..., 2] ** 2 - p[..., 3] ** 2


def _check_four_vectors(p: Any, name: str) -> np.ndarray:
    arr = np.asarray(p, dtype=np.float64) if not isinstance(p, np.ndarray) else p.astype(np.float64, copy=False)
    if arr.ndim < 1 or arr.shape[-1] != 4:
        raise ValueError(f"{name} must have shape (..., 4) of [E, px, py, pz], got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN/inf)")
    return arr


def _check_rate(value: Any, name: str) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return arr


def child_log_density(t_par: Any, t: Any, *, t_cut: float = 16.0, lam: Any = 1.5) -> np.ndarray:
    r"""Ginkgo's per-child split density: the log-density of a child's mass squared ``t`` given ``t_par``.

    With :math:`u = t / t_{par} \sim \mathrm{Exp}(\lambda)` truncated to :math:`u < 1 - 10^{-3}`
    (:math:`Z = 1 - e^{-(1-10^{-3})\lambda}`), a child heavier than the cut is internal and has the density

    .. math::
        f(t_{par}, t) = -\log Z + \log\lambda - \log t_{par} - \lambda t / t_{par} \qquad (t > t_{cut}),

    a child at or below the cut is a leaf, with the probability of falling below it,
    :math:`f(t_{par}, t) = -\log Z + \log(1 - e^{-\lambda \min(t_{par}, t_{cut})/t_{par}})`. So
    :math:`e^{f_{leaf}} + \int_{t_{cut}}^{(1-10^{-3}) t_{par}} e^{f(t_{par}, t)}\,dt = 1` for
    :math:`t_{par} > t_{cut}` (tested by quadrature). :func:`split_log_lik` combines two of these terms.

    Args:
        t_par: ``(...)`` mass squared of the parent (GeV², > 0; ``-inf`` is returned where it is not).
        t: ``(...)`` mass squared of the child (GeV²), broadcast against ``t_par``.
        t_cut: mass-squared cut (> 0).
        lam: decay rate :math:`\lambda`, scalar or broadcast array (> 0).

    Returns:
        ``(...)`` float64 log-densities (per GeV² for internal children, a log-probability for leaves).

    Raises:
        ValueError: for non-finite ``t_par``/``t`` (NaN; ``inf`` masses are not masses) or bad ``t_cut``/``lam``.

    References:
        Ginkgo ``split_logLH_with_stop_nonstop_prob`` (Cranmer et al., arXiv:2105.10512).

    Example:
        >>> import math
        >>> leaf = float(np.exp(child_log_density(40.0, 1.0)))  # P(child is a leaf | t_par = 40)
        >>> round(leaf, 4), round(float(child_log_density(40.0, 20.0)), 4)
        (0.581, -3.7805)
    """
    tp = np.asarray(t_par, dtype=np.float64)
    tc = np.asarray(t, dtype=np.float64)
    if not (np.all(np.isfinite(tp)) and np.all(np.isfinite(tc))):
        raise ValueError("t_par and t must be finite")
    if not (isinstance(t_cut, (int, float)) and math.isfinite(t_cut) and t_cut > 0):
        raise ValueError(f"t_cut must be a finite number > 0, got {t_cut!r}")
    return _f_child(tp, tc, float(t_cut), _check_rate(lam, "lam"))


def _f_child(t_par: np.ndarray, t: np.ndarray, t_cut: float, lam: np.ndarray) -> np.ndarray:
    """Unchecked :func:`child_log_density` (internal child above ``t_cut``, leaf child below)."""
    log_z = np.log1p(-np.exp(-U_MAX * lam))
    with np.errstate(divide="ignore", invalid="ignore"):
        t_par_safe = np.where(t_par > 0, t_par, np.nan)
        internal = np.log(lam) - np.log(t_par_safe) - lam * t / t_par_safe
        leaf = np.log1p(-np.exp(-lam * np.minimum(t_par_safe, t_cut) / t_par_safe))
        out = np.where(t > t_cut, internal, leaf) - log_z
    return np.where(np.isnan(out), -np.inf, out)


def split_log_lik(p_l: Any, p_r: Any, *, t_cut: float = 16.0, lam: Any = 1.5) -> np.ndarray:
    r"""Ginkgo log-likelihood :math:`\psi(L, R)` of a parent splitting into children ``p_l`` and ``p_r``.

    With :math:`t` the mass squared of each child, the parent :math:`P = L + R` and
    :math:`Z = 1 - e^{-(1-10^{-3})\lambda}`, the per-child term is
    :math:`f(t_{par}, t) = -\log Z + \log\lambda - \log t_{par} - \lambda t / t_{par}` for an internal child
    (:math:`t > t_{cut}`) and :math:`-\log Z + \log(1 - e^{-\lambda \min(t_{par}, t_{cut})/t_{par}})` for a leaf;

    .. math::
        \psi = \log \tfrac{1}{4\pi} + \mathrm{logsumexp}\big(\log\tfrac12 + f(t_P, t_L)
              + f((\sqrt{t_P}-\sqrt{t_L})^2, t_R),\ \text{same with } L \leftrightarrow R\big),

    and :math:`-\infty` when :math:`t_P \le t_{cut}`, either :math:`t \ge (1-10^{-3}) t_P`, or
    :math:`\sqrt{t_L} + \sqrt{t_R} > \sqrt{t_P}`. The result is symmetric in L and R.

    Args:
        p_l: ``(..., 4)`` four-momenta of the left children, float64.
        p_r: ``(..., 4)`` four-momenta of the right children (broadcast against ``p_l``).
        t_cut: mass-squared cut (> 0).
        lam: decay rate, a scalar or an array broadcast against the batch shape (> 0).

    Returns:
        ``(...)`` log-likelihoods, ``-inf`` for physically inadmissible splits.

    Raises:
        ValueError: for a last axis other than 4, non-finite momenta, or ``t_cut``/``lam`` not > 0.

    References:
        Ginkgo ``split_logLH_with_stop_nonstop_prob`` (Cranmer et al., arXiv:2105.10512); TreeGen, Sec. 5.

    Example:
        >>> import numpy as np
        >>> a, b = np.array([10.0, 0, 0, 9.0]), np.array([10.0, 0, 0, -9.0])
        >>> bool(np.isfinite(split_log_lik(a, b)))
        True
    """
    p_l = _check_four_vectors(p_l, "p_l")
    p_r = _check_four_vectors(p_r, "p_r")
    if not (math.isfinite(t_cut) and t_cut > 0):
        raise ValueError(f"t_cut must be a finite number > 0, got {t_cut!r}")
    lam_arr = _check_rate(lam, "lam")
    t_l = invariant_mass2(p_l)
    t_r = invariant_mass2(p_r)
    t_p = invariant_mass2(p_l + p_r)
    with np.errstate(invalid="ignore"):
        s_l, s_r, s_p = (np.sqrt(np.maximum(x, 0.0)) for x in (t_l, t_r, t_p))
        bad = (t_p <= t_cut) | (t_l >= U_MAX * t_p) | (t_r >= U_MAX * t_p) | (s_l + s_r > s_p)
        first = _f_child(t_p, t_l, t_cut, lam_arr) + _f_child((s_p - s_l) ** 2, t_r, t_cut, lam_arr)
        second = _f_child(t_p, t_r, t_cut, lam_arr) + _f_child((s_p - s_r) ** 2, t_l, t_cut, lam_arr)
        psi = np.logaddexp(first, second) + math.log(0.5) - math.log(4 * math.pi)
    return np.where(bad | np.isnan(psi), -np.inf, psi)


def tree_log_lik(
    leaves: Any, parents: Any, *, t_cut: float = 16.0, lam: float = 1.5, lam_root: float | None = None
) -> float:
    r"""Ginkgo log-likelihood of a whole tree: :math:`\sum_{\text{internal } v} \psi(L_v, R_v)`.

    Internal nodes take their four-momentum as the sum of their leaves; the root split uses ``lam_root``.

    Args:
        leaves: ``(N, 4)`` leaf four-momenta.
        parents: ``(2N-1,)`` parents array of a binary tree (any order of the internal nodes).
        t_cut: mass-squared cut.
        lam: decay rate of non-root splits.
        lam_root: decay rate of the root split (``None``: ``lam``).

    Returns:
        The log-likelihood (``-inf`` if some split is physically inadmissible).

    Raises:
        ValueError: for bad leaves, a parents array that is not a binary tree over the leaves, or bad rates.

    References:
        TreeGen, Sec. 5 (the trellis convention: the posterior is this likelihood normalised over trees).

    Example:
        >>> jet = simulate(1, n_leaves=(4, 4), seed=0)[0]
        >>> bool(abs(tree_log_lik(jet.leaves, jet.parents) - jet.log_lik) < 1e-9)
        True
    """
    leaves = _check_leaves(leaves)
    n = leaves.shape[0]
    masks = leaf_masks(parents, n)  # validates the tree
    kids = children_of(parents, n)
    content = _mask_momenta(leaves, masks)
    lam_root = lam if lam_root is None else lam_root
    _check_rate(lam, "lam")
    _check_rate(lam_root, "lam_root")
    root = int(np.flatnonzero(np.asarray(parents) < 0)[0])
    internal = [v for v in range(len(masks)) if kids[v]]
    if not internal:
        return 0.0
    left = np.stack([content[kids[v][0]] for v in internal])
    right = np.stack([content[kids[v][1]] for v in internal])
    rates = np.array([lam_root if v == root else lam for v in internal])
    return float(np.sum(split_log_lik(left, right, t_cut=t_cut, lam=rates)))


def _mask_momenta(leaves: np.ndarray, masks: np.ndarray) -> np.ndarray:
    bits = (masks[:, None] >> np.arange(leaves.shape[0])[None, :]) & 1
    return bits.astype(np.float64) @ leaves


LEAF_MASS2_RTOL = 1e-6
"""Leaves may be spacelike by at most ``LEAF_MASS2_RTOL * E^2`` in ``m^2 = E^2 - |p|^2`` (float rounding of
massless leaves after boosts); beyond that they are refused."""


def _check_leaves(leaves: Any, *, min_leaves: int = 1, max_leaves: int | None = None) -> np.ndarray:
    arr = _check_four_vectors(leaves, "leaves")
    if arr.ndim != 2:
        raise ValueError(f"leaves must have shape (N, 4), got {arr.shape}")
    if arr.shape[0] < min_leaves:
        raise ValueError(f"leaves must hold at least {min_leaves} particle(s), got {arr.shape[0]}")
    if max_leaves is not None and arr.shape[0] > max_leaves:
        raise ValueError(f"leaves holds {arr.shape[0]} particles; at most {max_leaves} are supported here")
    energy, p2 = arr[:, 0], np.einsum("ij,ij->i", arr[:, 1:], arr[:, 1:])
    if (energy < 0).any():
        row = int(np.flatnonzero(energy < 0)[0])
        raise ValueError(f"leaves row {row} has energy {energy[row]:g} < 0; expected (E, px, py, pz) with E >= 0")
    spacelike = p2 - energy**2 > LEAF_MASS2_RTOL * np.maximum(energy**2, np.finfo(np.float64).tiny)
    if spacelike.any():  # m^2 = E^2 - |p|^2 < 0 beyond float rounding: not a particle (or columns out of order)
        row = int(np.flatnonzero(spacelike)[0])
        raise ValueError(
            f"leaves row {row} has |p| = {np.sqrt(p2[row]):g} > E = {energy[row]:g} (negative invariant mass); "
            "expected physical four-momenta (E, px, py, pz), energy first"
        )
    return arr


def _boost(p_rest: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Lorentz-boost ``p_rest`` from the parent's rest frame to the lab (parent four-momentum ``parent``)."""
    mass = math.sqrt(max(float(invariant_mass2(parent)), 0.0))
    beta = parent[1:] / parent[0]
    gamma = parent[0] / mass
    b2 = float(beta @ beta)
    bp = float(beta @ p_rest[1:])
    energy = gamma * (p_rest[0] + bp)
    coef = ((gamma - 1.0) * bp / b2 if b2 > 0 else 0.0) + gamma * p_rest[0]
    return np.concatenate([[energy], p_rest[1:] + coef * beta])


def _draw_u(rng: np.random.Generator, rate: float) -> float:
    while True:
        u = rng.exponential(1.0 / rate)
        if u < U_MAX:
            return float(u)


def _shower(rng: np.random.Generator, cfg: GinkgoConfig, max_leaves: int) -> tuple[list, list, list] | None:
    """One shower: lists of node momenta, parents and sampled t (Ginkgo's recursive order); None if too many leaves."""
    m = cfg.root_mass
    root = np.array([math.hypot(cfg.p_root, m), *([cfg.p_root / math.sqrt(3.0)] * 3)])
    content, parents, ts = [root], [-1], [m * m]
    stack = [(0, cfg.root_rate)]
    n_leaves = 0
    while stack:
        node, rate = stack.pop()
        t_p = ts[node]
        if t_p <= cfg.t_cut:
            n_leaves += 1
            if n_leaves > max_leaves:
                return None
            continue
        t_l = t_p * _draw_u(rng, rate)
        t_r = (math.sqrt(t_p) - math.sqrt(t_l)) ** 2 * _draw_u(rng, rate)
        sqrt_tp = math.sqrt(t_p)
        e_l = sqrt_tp / 2 * (1 + t_l / t_p - t_r / t_p)
        e_r = sqrt_tp / 2 * (1 + t_r / t_p - t_l / t_p)
        arg = 1 - 2 * (t_l + t_r) / t_p + (t_l - t_r) ** 2 / t_p**2
        p_abs = sqrt_tp / 2 * math.sqrt(max(float(arg), 0.0))
        cos_th = rng.uniform(-1.0, 1.0)
        phi = rng.uniform(0.0, 2 * math.pi)
        sin_th = math.sqrt(max(1 - cos_th**2, 0.0))
        direction = np.array([sin_th * math.cos(phi), sin_th * math.sin(phi), cos_th])
        kids = [
            _boost(np.concatenate([[e_l], p_abs * direction]), content[node]),
            _boost(np.concatenate([[e_r], -p_abs * direction]), content[node]),
        ]
        kid_t = [t_l, t_r]
        if rng.uniform() < 0.5:
            kids.reverse()
            kid_t.reverse()
        for p4, tk in zip(kids, kid_t):
            content.append(p4)
            parents.append(node)
            ts.append(tk)
            stack.append((len(content) - 1, cfg.lam))
    return content, parents, ts


def simulate(
    n_jets: int,
    *,
    jet_type: str = "QCD",
    n_leaves: tuple[int, int] = (2, 12),
    t_cut: float = 16.0,
    lam: float = 1.5,
    lam_root: float | None = None,
    seed: int = 0,
    max_tries: int | None = None,
) -> list[Jet]:
    r"""Simulate Ginkgo jets whose leaf count lies in ``n_leaves`` (rejection sampling).

    The root has :math:`|p| = 400` along :math:`(1,1,1)/\sqrt3` and mass 30 (QCD) or 80 (W). A node with
    :math:`t_P > t_{cut}` splits with :math:`t_L = t_P u_L`, :math:`t_R = (\sqrt{t_P}-\sqrt{t_L})^2 u_R`,
    :math:`u \sim \mathrm{Exp}(\lambda)` redrawn until :math:`u < 1 - 10^{-3}`; the two-body decay is isotropic in
    the parent's rest frame and boosted to the lab; the children are swapped with probability 1/2.

    Args:
        n_jets: number of jets to return (>= 1).
        jet_type: ``"QCD"`` or ``"W"``.
        n_leaves: inclusive ``(lo, hi)`` range of accepted leaf counts, ``1 <= lo <= hi``.
        t_cut: mass-squared cut (GeV², > 0).
        lam: decay rate of non-root splits (> 0).
        lam_root: decay rate of the root split (``None``: 1.5 for QCD, 3 for W).
        seed: random seed of a local numpy ``default_rng`` (global state is left alone).
        max_tries: cap on showers drawn (default ``2000 * n_jets``); the acceptance rate is logged.

    Returns:
        ``n_jets`` :class:`Jet` objects in the package node order.

    Raises:
        ValueError: for out-of-range arguments.
        RuntimeError: when ``max_tries`` showers yield fewer than ``n_jets`` accepted jets.

    References:
        Cranmer, Drnevich, Macaluso, Pappadopulo, "Reframing Jet Physics with New Computational Methods",
        arXiv:2105.10512 (Ginkgo).

    Example:
        >>> jets = simulate(2, n_leaves=(5, 5), seed=1)
        >>> [j.n_leaves for j in jets]
        [5, 5]
    """
    if not isinstance(n_jets, (int, np.integer)) or isinstance(n_jets, bool) or n_jets < 1:
        raise ValueError(f"n_jets must be an int >= 1, got {n_jets!r}")
    lo, hi = _check_leaf_range(n_leaves)
    cfg = GinkgoConfig(jet_type=jet_type, t_cut=t_cut, lam=lam, lam_root=lam_root)
    if max_tries is None:
        max_tries = 2000 * int(n_jets)
    if not isinstance(max_tries, int) or max_tries < 1:
        raise ValueError(f"max_tries must be an int >= 1, got {max_tries!r}")
    rng = np.random.default_rng(seed)
    jets: list[Jet] = []
    tries = 0
    while len(jets) < n_jets and tries < max_tries:
        tries += 1
        shower = _shower(rng, cfg, hi)
        if shower is None:
            continue
        content, parents, ts = shower
        is_leaf = [True] * len(content)
        for p in parents:
            if p >= 0:
                is_leaf[p] = False
        if not lo <= sum(is_leaf) <= hi:
            continue
        jets.append(_canonical_jet(np.array(content), np.array(parents), np.array(ts), np.array(is_leaf), cfg))
    if len(jets) < n_jets:
        raise RuntimeError(
            f"simulate: only {len(jets)} of {n_jets} jets with {lo}..{hi} leaves after {tries} showers "
            f"(acceptance {len(jets) / tries:.2%}); raise max_tries or widen n_leaves"
        )
    _LOG.debug("simulate: %d jets from %d showers (acceptance %.1f%%)", n_jets, tries, 100 * n_jets / tries)
    return jets


def _check_leaf_range(n_leaves: Any) -> tuple[int, int]:
    try:
        lo, hi = (int(v) for v in n_leaves)
    except (TypeError, ValueError) as err:
        raise ValueError(f"n_leaves must be a (lo, hi) pair of ints, got {n_leaves!r}") from err
    if not 1 <= lo <= hi:
        raise ValueError(f"n_leaves must satisfy 1 <= lo <= hi, got {n_leaves!r}")
    return lo, hi


def _canonical_jet(
    content: np.ndarray, parents: np.ndarray, ts: np.ndarray, is_leaf: np.ndarray, cfg: GinkgoConfig
) -> Jet:
    """Reorder a shower's nodes: leaves first (shower order), then internal nodes by ascending sampled t."""
    leaf_ids = np.flatnonzero(is_leaf)
    internal_ids = np.flatnonzero(~is_leaf)
    internal_ids = internal_ids[np.argsort(ts[internal_ids], kind="stable")]
    order = np.concatenate([leaf_ids, internal_ids])
    new_index = np.empty(len(order), dtype=np.int64)
    new_index[order] = np.arange(len(order))
    new_parents = np.array([new_index[parents[o]] if parents[o] >= 0 else -1 for o in order], dtype=np.int64)
    leaves = content[leaf_ids]
    log_lik = tree_log_lik(leaves, new_parents, t_cut=cfg.t_cut, lam=cfg.lam, lam_root=cfg.root_rate)
    return Jet(leaves=leaves, content=content[order], parents=new_parents, t=ts[order], log_lik=log_lik)
