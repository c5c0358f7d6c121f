r"""The meta-algorithm of Bhawalkar et al. (NeurIPS 2025, Algorithm 1): exact robust algorithm -> noisy setting.

(a) take a base :math:`B_0`; (b) draw the smoothing set :math:`H \subset B_0`, :math:`|H| = h`, uniformly;
(c) build the surrogate :math:`\tilde F(S) = \frac1m \sum_j \tilde f(S \cup H'_j)` over ``m`` distinct
``t``-subsets of :math:`H`; (d) run a robust algorithm :math:`\mathcal A` with :math:`\tilde F` on the contracted
matroid :math:`\mathcal I_H`, giving :math:`S_H`; (e) return :math:`S_H \cup H'` for a fresh uniform ``t``-subset
:math:`H'` of :math:`H` (independent because :math:`S_H \cup H \in \mathcal I`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import jax
import numpy as np

from nips25_submodular._checks import as_key, check_int, check_real
from nips25_submodular.continuous_greedy import measured_continuous_greedy
from nips25_submodular.double_greedy import check_free, double_greedy
from nips25_submodular.greedy import check_problem, greedy
from nips25_submodular.matroids import Partition
from nips25_submodular.selection import Selection
from nips25_submodular.set_functions import SetFunction
from nips25_submodular.smoothing import SmoothedSurrogate, smoothing_factor, smoothing_subsets, theory_params

__all__ = ["INNER_ALGORITHMS", "PRACTICAL", "VOID_GUARANTEE", "MetaParams", "noisy_meta", "run_inner"]

Inner = Literal["greedy", "double_greedy", "measured_continuous_greedy"] | Callable[..., Selection]
INNER_ALGORITHMS = ("greedy", "double_greedy", "measured_continuous_greedy")
VOID_GUARANTEE = "none: practical parameters are below the theory's sample sizes, so the worst-case guarantee is void"
_GUARANTEE = {
    ("greedy", True): "1 - 1/e - O(eps) (monotone f, cardinality constraint)",
    ("measured_continuous_greedy", True): "1 - 1/e - O(eps) (monotone f, matroid)",
    ("measured_continuous_greedy", False): "1/e - O(eps) (non-monotone f, matroid)",
    ("double_greedy", False): "1/2 - O(eps) (unconstrained non-monotone f)",
    ("double_greedy", True): "1/2 - O(eps) (unconstrained)",
}


@dataclass(frozen=True)
class MetaParams:
    """Smoothing parameters of the meta-algorithm: ``h`` (smoothing set), ``t`` (subset size), ``m`` (subsets).

    Raises:
        ValueError: unless ``1 <= t < h`` and ``1 <= m <= C(h, t)``.
    """

    h: int
    t: int
    m: int

    def __post_init__(self) -> None:
        check_int(self.h, "h", low=1)
        check_int(self.t, "t", low=1)
        check_int(self.m, "m", low=1)
        if self.t >= self.h:
            raise ValueError(f"t must be < h, got h={self.h}, t={self.t}")
        if self.m > math.comb(self.h, self.t):
            raise ValueError(f"m must be <= C(h, t) = {math.comb(self.h, self.t)} (distinct subsets), got {self.m}")


PRACTICAL = MetaParams(h=8, t=3, m=56)
"""The practical preset: all :math:`\\binom{8}{3} = 56` subsets of an 8-element smoothing set (voids the
worst-case guarantee, which needs far larger ``m``, ``t`` and ``h``)."""


def run_inner(
    inner: Inner, f: SetFunction, matroid: Partition, *, key: jax.Array, monotone: bool, **kwargs: Any
) -> Selection:
    """Run an inner algorithm by name (``"greedy"``, ``"double_greedy"``, ``"measured_continuous_greedy"``) or a
    callable ``inner(f, matroid, key=..., monotone=..., **kwargs) -> Selection``.

    Args:
        inner: the name or the callable.
        f: the set function (in :func:`noisy_meta`, the smoothing surrogate), ground set size ``n``.
        matroid: the constraint, same ``n``.
        key: PRNG key of the randomised algorithms (unused by ``"greedy"``).
        monotone: whether ``f`` is monotone (``"measured_continuous_greedy"`` and callables).
        **kwargs: passed to the algorithm.

    Returns:
        The algorithm's :class:`Selection`.

    Raises:
        ValueError: if ``inner`` is neither a known name nor callable (and whatever the algorithm raises).
    """
    if callable(inner):
        return inner(f, matroid, key=key, monotone=monotone, **kwargs)
    if inner == "greedy":
        return greedy(f, matroid, **kwargs)
    if inner == "double_greedy":
        return double_greedy(f, matroid, key=key, **kwargs)
    if inner == "measured_continuous_greedy":
        return measured_continuous_greedy(f, matroid, key=key, monotone=monotone, **kwargs)
    raise ValueError(f"inner must be one of {INNER_ALGORITHMS} or a callable, got {inner!r}")


def noisy_meta(
    oracle: SetFunction,
    matroid: Partition,
    inner: Inner,
    *,
    key: jax.Array,
    monotone: bool,
    preset: Literal["practical", "theory"] | None = "practical",
    h: int | None = None,
    t: int | None = None,
    m: int | None = None,
    eps: float = 0.1,
    nu: float = 1.0,
    delta: float = 0.1,
    inner_kwargs: dict[str, Any] | None = None,
    complete: bool = False,
) -> Selection:
    r"""Maximise through a persistent noisy oracle with the smoothing meta-algorithm (Algorithm 1).

    The base :math:`B_0` is a uniformly random base of ``matroid`` (max-weight base for i.i.d. uniform weights);
    :math:`H` is a uniform ``h``-subset of it; the ``m`` subsets are drawn once per run (all of them when
    :math:`m = \binom{h}{t}`); the output adds a fresh uniform ``t``-subset of :math:`H`.

    ``preset="practical"`` uses ``h=8, t=3, m=56`` (:data:`PRACTICAL`), **which voids the worst-case
    guarantee**; ``preset="theory"`` takes ``(m, t, h)`` from :func:`theory_params` for ``eps, nu, delta`` and
    raises when the rank is too small (``r <= 2h``); ``preset=None`` needs explicit ``h, t, m``. Explicit values
    override a preset's. ``info["guarantee"]`` records which guarantee applies and ``info["smoothing_factor"]`` the
    smoothing lemma's :math:`\rho` (:func:`smoothing_factor`) at these ``(r, h, t)``: the guarantee is the inner
    algorithm's ratio times :math:`\rho`, void when :math:`\rho \le 0` (the practical preset gives
    :math:`\rho = 0.067` on a free matroid of rank 32).

    The output :math:`S_H \cup H'` has at most :math:`r - h + t` elements, never a base. With ``complete=True``
    (monotone ``f`` only) it is then completed greedily to a base of ``matroid`` with the oracle itself (extra
    queries counted): for monotone ``f`` adding elements never lowers the true value, so the guarantee is kept.

    Args:
        oracle: the noisy (or noiseless) value oracle, ground set size ``n``.
        matroid: the constraint (:class:`Free` for unconstrained problems; required by ``"double_greedy"``).
        inner: the robust exact algorithm: ``"greedy"``, ``"double_greedy"``,
            ``"measured_continuous_greedy"`` or a callable (see :func:`run_inner`).
        key: PRNG key (base, smoothing set, subsets, inner algorithm, final subset).
        monotone: whether ``f`` is monotone (passed to the inner algorithm; selects the guarantee).
        preset: ``"practical"``, ``"theory"`` or ``None``.
        h, t, m: smoothing-set size, subset size and number of subsets (``t < h``, ``m <= C(h, t)``, ``h < r``).
        eps, nu, delta: accuracy, noise parameter and failure probability for ``preset="theory"``.
        inner_kwargs: extra keyword arguments of the inner algorithm (e.g. ``delta``, ``n_samples``).
        complete: greedily complete the output to a base with ``oracle`` (requires ``monotone=True``).

    Returns:
        :class:`Selection` of :math:`S_H \cup H'` with ``queries`` (oracle queries of the inner run on the
        surrogate, plus the completion's) and ``info``: ``H``, ``subsets``, ``H_prime``, ``params``, ``preset``,
        ``guarantee``, ``smoothing_factor``, ``completed`` (elements added by the completion, ``0`` without it),
        ``inner_selection``. Shapes and meanings: ``H`` bool ``(n,)`` the smoothing set; ``subsets`` bool ``(m, n)``
        the ``t``-subsets :math:`H'_j` averaged by the surrogate; ``H_prime`` bool ``(n,)`` the subset added to the
        output; ``params`` ``{"h", "t", "m"}``; ``preset`` the ``preset`` argument; ``guarantee`` a string, the
        worst-case guarantee that applies (:data:`VOID_GUARANTEE` unless the theory preset is feasible and used
        unchanged); ``smoothing_factor`` the float :math:`\rho`; ``inner_selection`` the inner algorithm's
        :class:`Selection` of :math:`S_H` on the contracted matroid (its ``queries`` already include the factor ``m``).

    Raises:
        ValueError: if ``matroid`` is not free with ``inner="double_greedy"``, ``h >= rank``, ``t >= h``,
            ``m > C(h, t)``, a preset is unknown, the theory preset is infeasible at this rank, or ``complete`` is set
            with ``monotone=False``.

    References:
        Bhawalkar, Cai, Feng, Liaw, Lin, "A Unified Approach to Submodular Maximization Under Noise",
        NeurIPS 2025, arXiv:2510.21128, Algorithm 1 and the smoothing lemma.

    Example:
        >>> from nips25_submodular import Free, GraphCut, PersistentNoisyOracle
        >>> import networkx as nx
        >>> W = nx.to_numpy_array(nx.cycle_graph(20))
        >>> o = PersistentNoisyOracle(GraphCut(W), sigma=0.2, key=jax.random.key(0))
        >>> sel = noisy_meta(o, Free(20), "double_greedy", key=jax.random.key(1), monotone=False)
        >>> sel.info["params"], round(sel.info["smoothing_factor"], 3)
        ({'h': 8, 't': 3, 'm': 56}, -0.267)
    """
    check_problem(oracle, matroid, name="oracle")
    if complete and not monotone:
        raise ValueError("complete=True needs monotone=True (adding elements can lower a non-monotone f)")
    if inner == "double_greedy":
        check_free(matroid)
    rank = matroid.rank
    theory = None
    if preset == "practical":
        base_params = {"h": PRACTICAL.h, "t": PRACTICAL.t, "m": PRACTICAL.m}
    elif preset == "theory":
        theory = theory_params(
            oracle.n, rank, eps=check_real(eps, "eps", low=0.0, high=1.0, open_low=True), nu=nu, delta=delta,
            monotone=monotone,
        )  # fmt: skip
        if not theory.feasible:
            raise ValueError(
                f"preset='theory' needs rank r > 2h, but r={rank} and h={theory.h} (m={theory.m}, t={theory.t}); "
                "use preset='practical' (no worst-case guarantee) or a larger instance"
            )
        base_params = {"h": theory.h, "t": theory.t, "m": theory.m}
    elif preset is None:
        if h is None or t is None or m is None:
            raise ValueError("preset=None needs explicit h, t and m")
        base_params = {}
    else:
        raise ValueError(f"preset must be 'practical', 'theory' or None, got {preset!r}")
    params = MetaParams(
        h=base_params["h"] if h is None else h,
        t=base_params["t"] if t is None else t,
        m=base_params["m"] if m is None else m,
    )
    if params.h >= rank:
        raise ValueError(f"h must be < rank of the matroid ({rank}), got h={params.h}")
    k_base, k_h, k_sub, k_inner, k_out = jax.random.split(as_key(key), 5)
    base = np.asarray(matroid.random_base(k_base))
    in_base = np.flatnonzero(base)
    chosen = np.asarray(jax.random.choice(k_h, in_base.size, (params.h,), replace=False))
    H = np.zeros(oracle.n, dtype=bool)
    H[in_base[chosen]] = True
    subsets = smoothing_subsets(H, t=params.t, m=params.m, key=k_sub)
    surrogate = SmoothedSurrogate(oracle, subsets)
    inner_sel = run_inner(inner, surrogate, matroid.contract(H), key=k_inner, monotone=monotone, **(inner_kwargs or {}))
    h_prime = smoothing_subsets(H, t=params.t, m=1, key=k_out)[0]
    rho = smoothing_factor(rank, params.h, params.t, monotone=monotone)
    exact_preset = rho > 0 and theory is not None and (params.h, params.t, params.m) == (theory.h, theory.t, theory.m)
    name = inner if isinstance(inner, str) else getattr(inner, "__name__", "custom")
    guarantee = (
        _GUARANTEE.get((name, monotone), "inner algorithm's guarantee - O(eps)") if exact_preset else VOID_GUARANTEE
    )
    mask = inner_sel.mask | h_prime
    queries, added = inner_sel.queries, 0
    if complete:
        done = greedy(oracle, matroid, init=mask)
        added = int(done.mask.sum() - mask.sum())
        mask, queries = done.mask, queries + done.queries
    info = {
        "H": H,
        "subsets": subsets,
        "H_prime": h_prime,
        "params": {"h": params.h, "t": params.t, "m": params.m},
        "preset": preset,
        "guarantee": guarantee,
        "smoothing_factor": rho,
        "completed": added,
        "inner_selection": inner_sel,
    }
    return Selection(mask=mask, queries=queries, y=inner_sel.y, info=info)
