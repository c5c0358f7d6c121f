"""Real inputs shipped by registry packages: max-cut on networkx's social graphs, facility location on digits.

* Max-cut: ``davis`` (Davis Southern Women, 32 nodes, 89 edges, bipartite so max-cut = 89), ``florentine``
  (Florentine families, 15 nodes, 20 edges, max-cut 17), ``karate`` (Zachary's karate club, 34 nodes, 78 weighted
  edges, max-cut 179) and ``les_mis`` (Les Misérables co-occurrence, 77 nodes, 254 weighted edges, max-cut 535).
  Every optimum is exact, certified by :func:`exact_max_cut` (scipy's HiGHS MILP, relative gap 0). Nodes are taken in
  networkx's insertion order.
* Facility location: scikit-learn's bundled ``load_digits`` (1797 8x8 images of 10 digits), a stratified
  subsample, an RBF similarity and a partition matroid with a per-class capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from nips25_submodular._checks import check_int, check_real
from nips25_submodular.matroids import Partition
from nips25_submodular.set_functions import FacilityLocation, GraphCut

__all__ = [
    "MAX_CUT_GRAPHS",
    "DigitsInstance",
    "MaxCutInstance",
    "digits_facility_location",
    "exact_max_cut",
    "max_cut_graph",
    "read_edgelist",
]

MAX_CUT_GRAPHS: dict[str, tuple[str, float]] = {
    "davis": ("davis_southern_women_graph", 89.0),
    "florentine": ("florentine_families_graph", 17.0),
    "karate": ("karate_club_graph", 179.0),
    "les_mis": ("les_miserables_graph", 535.0),
}
"""``name -> (networkx generator, exact max-cut value)``; each value is :func:`exact_max_cut`'s certified optimum
(HiGHS MILP with relative gap 0: davis, florentine and karate in under a second, les_mis in about a minute; the
test suite re-solves all but les_mis)."""


def exact_max_cut(W: Any, *, time_limit: float = 600.0) -> tuple[float, np.ndarray]:
    r"""The exact maximum cut of a weighted undirected graph, by mixed-integer linear programming (scipy HiGHS).

    Solves :math:`\max \sum_{(i,j) \in E} W_{ij} z_{ij}` over :math:`x \in \{0,1\}^n`, :math:`z \in [0,1]^E` with
    :math:`z_{ij} \le x_i + x_j` and :math:`z_{ij} \le 2 - x_i - x_j` (so :math:`z_{ij} \le [x_i \ne x_j]` at any
    integral :math:`x`) and :math:`x_0 = 0` (the cut's symmetry), with relative MIP gap 0: the returned value is a
    certified optimum, not a bound.

    Args:
        W: symmetric non-negative weights ``(n, n)``; the diagonal is ignored.
        time_limit: seconds HiGHS may run.

    Returns:
        ``(value, side)``: the max-cut weight and a boolean ``(n,)`` side attaining it.

    Raises:
        ValueError: if ``W`` is not square, symmetric, non-negative and finite.
        RuntimeError: if HiGHS does not prove optimality within ``time_limit``.

    Example:
        >>> value, side = exact_max_cut(nx.to_numpy_array(nx.cycle_graph(5)))
        >>> value
        4.0
    """
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_matrix

    GraphCut(W)  # validates shape, symmetry, sign and finiteness
    w = np.array(W, dtype=np.float64)
    np.fill_diagonal(w, 0.0)
    time_limit = check_real(time_limit, "time_limit", low=0.0, open_low=True)
    n = w.shape[0]
    i, j = np.triu_indices(n, 1)
    keep = w[i, j] > 0
    i, j, we = i[keep], j[keep], w[i[keep], j[keep]]
    e = we.size
    if e == 0:
        return 0.0, np.zeros(n, dtype=bool)
    rows = np.tile(np.arange(e), 3)
    cols = np.concatenate([n + np.arange(e), i, j])
    upper = csr_matrix((np.concatenate([np.ones(e), -np.ones(2 * e)]), (rows, cols)), shape=(e, n + e))
    lower = csr_matrix((np.ones(3 * e), (rows, cols)), shape=(e, n + e))
    ub = np.ones(n + e)
    ub[0] = 0.0
    res = milp(
        np.concatenate([np.zeros(n), -we]),
        constraints=[LinearConstraint(upper, -np.inf, 0.0), LinearConstraint(lower, -np.inf, 2.0)],
        integrality=np.concatenate([np.ones(n), np.zeros(e)]),
        bounds=Bounds(np.zeros(n + e), ub),
        options={"mip_rel_gap": 0.0, "time_limit": time_limit},
    )
    if res.status != 0:
        raise RuntimeError(f"exact_max_cut: HiGHS did not prove optimality ({res.message})")
    side = res.x[:n] > 0.5
    value = float(we[side[i] != side[j]].sum())
    return value, side


@dataclass(frozen=True)
class MaxCutInstance:
    """A max-cut instance: the cut function, node names, the exact optimum (``None`` if not solved) and the total
    edge weight."""

    name: str
    f: GraphCut
    nodes: tuple[str, ...]
    opt: float | None
    total_weight: float


def max_cut_graph(name: str) -> MaxCutInstance:
    """Load one of :data:`MAX_CUT_GRAPHS` as a :class:`GraphCut` (edge attribute ``weight``, default 1).

    Args:
        name: ``"davis"``, ``"florentine"``, ``"karate"`` or ``"les_mis"``.

    Returns:
        :class:`MaxCutInstance`.

    Raises:
        ValueError: if ``name`` is unknown.

    Example:
        >>> inst = max_cut_graph("davis")
        >>> inst.f.n, inst.opt
        (32, 89.0)
    """
    if name not in MAX_CUT_GRAPHS:
        raise ValueError(f"name must be one of {sorted(MAX_CUT_GRAPHS)}, got {name!r}")
    generator, opt = MAX_CUT_GRAPHS[name]
    graph = getattr(nx, generator)()
    nodes = list(graph.nodes())
    W = nx.to_numpy_array(graph, nodelist=nodes, weight="weight", nonedge=0.0)
    return MaxCutInstance(
        name=name,
        f=GraphCut(W),
        nodes=tuple(str(v) for v in nodes),
        opt=opt,
        total_weight=float(np.triu(W, 1).sum()),
    )


def read_edgelist(path: str | Path, *, exact_opt: bool = False, time_limit: float = 60.0) -> MaxCutInstance:
    """Read the user's own weighted undirected graph from an edge-list text file as a max-cut instance.

    One edge per line, ``u v`` or ``u v weight`` (whitespace- or comma-separated; weight 1 when absent); node
    names are strings, in order of first appearance; blank lines and lines starting with ``#`` are skipped.
    Self-loops are skipped (a loop is never cut, so the cut function is unchanged); a repeated edge is an error
    (summing or overwriting it silently would change the graph).

    Args:
        path: the edge-list file.
        exact_opt: also solve the max cut exactly with :func:`exact_max_cut` (a MILP: seconds for tens of nodes,
            possibly far longer for hundreds); otherwise ``opt`` is ``None``.
        time_limit: seconds the exact solve may take.

    Returns:
        :class:`MaxCutInstance` named after the file.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: naming the file and line, for a line that is not ``u v [weight]``, a weight that is not a finite
            non-negative number, a repeated edge, or a file with no edges between two distinct nodes.
        RuntimeError: if ``exact_opt`` and HiGHS does not prove optimality within ``time_limit``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"edge list {str(path)!r} does not exist or is not a file")
    index: dict[str, int] = {}
    edges: dict[tuple[int, int], float] = {}
    with path.open(encoding="utf-8") as handle:
        for lineno, raw in enumerate(handle, start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.replace(",", " ").split()
            if len(fields) not in (2, 3):
                raise ValueError(f"{path} line {lineno}: expected 'u v' or 'u v weight', got {line!r}")
            try:
                weight = float(fields[2]) if len(fields) == 3 else 1.0
            except ValueError:
                raise ValueError(f"{path} line {lineno}: weight must be a number, got {fields[2]!r}") from None
            if not math.isfinite(weight) or weight < 0:
                raise ValueError(f"{path} line {lineno}: weight must be finite and non-negative, got {fields[2]}")
            u, v = (index.setdefault(name, len(index)) for name in fields[:2])
            if u == v:
                continue
            edge = (min(u, v), max(u, v))
            if edge in edges:
                raise ValueError(f"{path} line {lineno}: edge {fields[0]} {fields[1]} is repeated")
            edges[edge] = weight
    if not edges:
        raise ValueError(f"{path}: no edges between two distinct nodes")
    W = np.zeros((len(index), len(index)))
    for (u, v), weight in edges.items():
        W[u, v] = W[v, u] = weight
    opt = exact_max_cut(W, time_limit=time_limit)[0] if exact_opt else None
    return MaxCutInstance(
        name=path.name, f=GraphCut(W), nodes=tuple(index), opt=opt, total_weight=float(sum(edges.values()))
    )


@dataclass(frozen=True)
class DigitsInstance:
    """Facility location on a digits subsample under a partition matroid (one class per digit)."""

    f: FacilityLocation
    matroid: Partition
    labels: np.ndarray
    indices: np.ndarray


def digits_facility_location(
    *, n_per_class: int = 20, cap: int = 4, gamma_scale: float = 4.0, seed: int = 0
) -> DigitsInstance:
    r"""Facility location on a stratified subsample of scikit-learn's digits, with per-class capacities.

    Pixels are scaled to :math:`[0, 1]`; the similarity is :math:`s_{ji} = \exp(-\gamma \|x_j - x_i\|^2)` with
    :math:`\gamma = \text{gamma\_scale} / \mathrm{median}_{j \ne i} \|x_j - x_i\|^2`; the ground set and the
    represented points are the same subsample; the matroid allows ``cap`` exemplars per digit.

    Args:
        n_per_class: images drawn per digit (without replacement), in ``[1, 174]``.
        cap: exemplars allowed per digit, in ``[1, n_per_class]``.
        gamma_scale: kernel sharpness relative to the median squared distance, ``> 0``.
        seed: seed of the subsample.

    Returns:
        :class:`DigitsInstance` with ``n = 10 * n_per_class`` and rank ``10 * cap``.

    Raises:
        ValueError: if an argument is out of range.

    Example:
        >>> inst = digits_facility_location(n_per_class=5, cap=2)
        >>> inst.f.n, inst.matroid.rank
        (50, 20)
    """
    from sklearn.datasets import load_digits

    n_per_class = check_int(n_per_class, "n_per_class", low=1, high=174)
    cap = check_int(cap, "cap", low=1, high=n_per_class)
    gamma_scale = check_real(gamma_scale, "gamma_scale", low=0.0, open_low=True)
    seed = check_int(seed, "seed", low=0)
    data = load_digits()
    rng = np.random.default_rng(seed)
    idx = np.concatenate(
        [np.sort(rng.choice(np.flatnonzero(data.target == c), n_per_class, replace=False)) for c in range(10)]
    )
    x = data.data[idx] / 16.0
    d2 = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    gamma = gamma_scale / np.median(d2[~np.eye(len(idx), dtype=bool)])
    labels = data.target[idx].astype(np.int64)
    return DigitsInstance(
        f=FacilityLocation(np.exp(-gamma * d2)),
        matroid=Partition(labels, np.full(10, cap)),
        labels=labels,
        indices=idx,
    )
