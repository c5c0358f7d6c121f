r"""Aggregation of the m per-view conformal p-values of one class through an abstract statistic (paper, Sec. 3-4).

A symmetric statistic :math:`T` of the sorted counts, small when the views speak against the class, is calibrated
against the exact null law :math:`\mathcal{A}_{n,m}` (:class:`~nips25_conformal.null_law.NullLaw`):

.. math:: p_{agg}(y) = P_{U \sim \mathcal{A}_{n,m}}\left[T(U) \le T(K^{obs})\right],

and the class is kept in the set iff :math:`p_{agg}(y) > \alpha`. The randomised version
:math:`P[T(U) < t] + V\,P[T(U) = t]`, :math:`V \sim U(0,1)`, is exactly uniform under the null.

The null law of :math:`T` is computed exactly where a closed form exists (sum: Gaussian binomial; order
statistics: hypergeometric), by enumerating :math:`\mathcal{A}_{n,m}` when :math:`\binom{n+m}{m}` is small, and by
Monte Carlo otherwise. The Monte Carlo p-value :math:`(1 + \#\{r: T(U_r) \le t\})/(R + 1)` stays valid (the
observation is exchangeable with the R draws under the null); its error against the exact p-value has standard
deviation at most :math:`1/(2\sqrt{R})`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

from nips25_conformal.null_law import NullLaw

__all__ = [
    "AggregationStatistic",
    "AreaEnvelopeStatistic",
    "DistanceEnvelopeStatistic",
    "FisherStatistic",
    "NullDistribution",
    "OrderStatistic",
    "QuantileEnvelopeStatistic",
    "SumStatistic",
    "aggregate_pvalue",
    "get_statistic",
    "null_distribution",
]

Method = Literal["auto", "exact", "enumerate", "mc"]
METHODS = ("auto", "exact", "enumerate", "mc")
_ROUND = 10  # decimals: identical sequences must give identical floats, ties of sums of logs included


class AggregationStatistic(ABC):
    r"""Abstract symmetric score :math:`T(K_{(1)}, \dots, K_{(m)})` of the sorted counts (paper, Sec. 3).

    Small values of :math:`T` speak against the candidate class. Subclasses implement :meth:`__call__` and, when
    the paper gives the exact law of :math:`T`, :meth:`exact_null`.
    """

    name: str = "abstract"

    @abstractmethod
    def __call__(self, counts: np.ndarray, n: int) -> np.ndarray:
        """T of sorted counts ``(..., m)`` (int, non-decreasing along the last axis) of a class with n scores."""

    def exact_null(self, law: NullLaw) -> NullDistribution | None:
        """The exact law of T under ``law``, or ``None`` when no closed form is implemented."""
        return None

    def key(self) -> tuple[object, ...]:
        """Hashable identity used to cache null distributions."""
        return (self.name,)


class SumStatistic(AggregationStatistic):
    r"""Sum (equivalently mean) of the p-values: :math:`T = \sum_j K_j`, the Mann-Whitney statistic.

    Its null law is the Gaussian binomial coefficient's (exact). The p-value equals scipy's exact one-sided
    Mann-Whitney test of ``test > calibration``.
    """

    name = "sum"

    def __call__(self, counts: np.ndarray, n: int) -> np.ndarray:
        return np.asarray(counts).sum(axis=-1).astype(np.float64)

    def exact_null(self, law: NullLaw) -> NullDistribution:
        pmf = law.sum_pmf()
        return NullDistribution(values=np.arange(pmf.size, dtype=np.float64), weights=pmf.copy(), mc_size=0)


class FisherStatistic(AggregationStatistic):
    r"""Fisher's product of p-values: :math:`T = \sum_j \log p_j = \sum_j \log\frac{1+K_j}{n+1}`.

    No closed form: the law is enumerated or sampled from :math:`\mathcal{A}_{n,m}`.
    """

    name = "fisher"

    def __call__(self, counts: np.ndarray, n: int) -> np.ndarray:
        arr = np.asarray(counts, dtype=np.float64)
        return np.round(np.log1p(arr).sum(axis=-1) - arr.shape[-1] * math.log(n + 1), _ROUND)


class OrderStatistic(AggregationStatistic):
    r"""The k-th smallest count :math:`T = K_{(k)}` (exact hypergeometric law).

    ``k=1`` is the minimum of the p-values calibrated exactly (the exact version of the Bonferroni correction);
    ``k="majority"`` is the refined majority vote with :math:`k = \lceil m/2 \rceil`: the naive vote rejects when
    :math:`K_{(k)} \le \lfloor\alpha(n+1)\rfloor - 1`, the refined one when :math:`K_{(k)} \le x^*` with
    :math:`x^* = \max\{x : P(K_{(k)} \le x) \le \alpha\}`, which is what ``p_agg <= alpha`` means here.

    Args:
        k: 1-based rank, or ``"majority"`` (``ceil(m/2)``), or ``"median"`` (the same rank).
    """

    def __init__(self, k: int | Literal["majority", "median"] = "majority") -> None:
        if isinstance(k, str):
            if k not in ("majority", "median"):
                raise ValueError(f"k must be a positive int, 'majority' or 'median', got {k!r}")
        elif isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be a positive int, 'majority' or 'median', got {k!r}")
        self.k = k
        self.name = "min" if k == 1 else ("majority_refined" if isinstance(k, str) else f"order_{k}")

    def rank(self, m: int) -> int:
        """The 1-based rank used for m views."""
        if isinstance(self.k, str):
            return math.ceil(m / 2)
        if self.k > m:
            raise ValueError(f"order statistic k={self.k} needs at least k views, got m={m}")
        return int(self.k)

    def __call__(self, counts: np.ndarray, n: int) -> np.ndarray:
        counts = np.asarray(counts)
        return counts[..., self.rank(counts.shape[-1]) - 1].astype(np.float64)

    def exact_null(self, law: NullLaw) -> NullDistribution:
        cdf = law.order_stat_cdf(self.rank(law.m), np.arange(law.n + 1))
        return NullDistribution(
            values=np.arange(law.n + 1, dtype=np.float64), weights=np.diff(cdf, prepend=0.0), mc_size=0
        )

    def key(self) -> tuple[object, ...]:
        return ("order", self.k)


class QuantileEnvelopeStatistic(AggregationStatistic):
    r"""Quantile envelope: :math:`T = \min_k F_k(K_{(k)})` with :math:`F_k` the exact CDF of the k-th order statistic.

    Rejecting when :math:`T \le \beta` means "some order statistic falls below its :math:`\beta`-quantile
    envelope"; calibrating :math:`T` against :math:`\mathcal{A}_{n,m}` chooses :math:`\beta` so that the
    simultaneous exceedance probability is at most :math:`\alpha` (paper, envelope scores; form reconstructed).
    """

    name = "quantile_envelope"

    def __call__(self, counts: np.ndarray, n: int) -> np.ndarray:
        counts = np.asarray(counts)
        m = counts.shape[-1]
        table = _envelope_table(n, m)
        vals = table[np.arange(m), counts]
        return np.round(vals.min(axis=-1), _ROUND)


class AreaEnvelopeStatistic(AggregationStatistic):
    r"""Area envelope: :math:`T = \frac{1}{m}\sum_k F_k(K_{(k)})`, the mean null rank of every order statistic.

    Small when the whole sorted p-value curve lies low, not only one of its points (reconstructed form of the
    paper's "area" envelope score). Law: enumeration or Monte Carlo.
    """

    name = "area_envelope"

    def __call__(self, counts: np.ndarray, n: int) -> np.ndarray:
        counts = np.asarray(counts)
        m = counts.shape[-1]
        return np.round(_envelope_table(n, m)[np.arange(m), counts].mean(axis=-1), _ROUND)


class DistanceEnvelopeStatistic(AggregationStatistic):
    r"""Distance envelope: :math:`T = -\max_k (\mu_k - K_{(k)})/\sigma_k`, the largest standardised gap below the
    null centre, with :math:`\mu_k, \sigma_k` the exact null mean and sd of :math:`K_{(k)}` (reconstructed form of
    the paper's "distance" envelope score). Law: enumeration or Monte Carlo.
    """

    name = "distance_envelope"

    def __call__(self, counts: np.ndarray, n: int) -> np.ndarray:
        counts = np.asarray(counts)
        m = counts.shape[-1]
        pmf = np.diff(_envelope_table(n, m), axis=1, prepend=0.0)
        x = np.arange(n + 1)
        mu = pmf @ x
        sd = np.sqrt(np.maximum(pmf @ x**2 - mu**2, 1e-12))
        return np.round(-((mu - counts) / sd).max(axis=-1), _ROUND)


@lru_cache(maxsize=256)
def _envelope_table(n: int, m: int) -> np.ndarray:
    r"""``(m, n + 1)`` table of :math:`F_k(x) = P(K_{(k)} \le x)`."""
    law = NullLaw(n, m)
    table = np.stack([law.order_stat_cdf(k, np.arange(n + 1)) for k in range(1, m + 1)])
    table.setflags(write=False)
    return table


_NAMED: dict[str, AggregationStatistic] = {
    "sum": SumStatistic(),
    "mean": SumStatistic(),
    "fisher": FisherStatistic(),
    "min": OrderStatistic(1),
    "majority_refined": OrderStatistic("majority"),
    "median": OrderStatistic("median"),
    "quantile_envelope": QuantileEnvelopeStatistic(),
    "area_envelope": AreaEnvelopeStatistic(),
    "distance_envelope": DistanceEnvelopeStatistic(),
}


def get_statistic(statistic: str | AggregationStatistic) -> AggregationStatistic:
    """Resolve a statistic name (``sum``, ``mean``, ``fisher``, ``min``, ``majority_refined``, ``median``,
    ``quantile_envelope``, ``area_envelope``, ``distance_envelope``) or pass an :class:`AggregationStatistic` through.

    Raises:
        ValueError: for an unknown name. TypeError: for another type.
    """
    if isinstance(statistic, AggregationStatistic):
        return statistic
    if not isinstance(statistic, str):
        raise TypeError(f"statistic must be a name or an AggregationStatistic, got {type(statistic).__name__}")
    if statistic not in _NAMED:
        raise ValueError(f"statistic must be one of {sorted(_NAMED)}, got {statistic!r}")
    return _NAMED[statistic]


@dataclass(frozen=True)
class NullDistribution:
    """The null law of a statistic: sorted support ``values`` with probabilities (exact) or counts (Monte Carlo).

    Attributes:
        values: ``(V,)`` sorted unique support points.
        weights: ``(V,)`` probabilities (``mc_size == 0``) or numbers of draws (``mc_size == R``).
        mc_size: 0 for an exact law, else the number R of Monte Carlo draws.
    """

    values: np.ndarray
    weights: np.ndarray
    mc_size: int

    def pvalue(self, t: np.ndarray, u: np.ndarray | None = None) -> np.ndarray:
        r"""``P[T <= t]`` (or ``P[T < t] + u P[T = t]`` when ``u`` is given), Monte Carlo with the +1 correction."""
        t = np.asarray(t, dtype=np.float64)
        cum = np.concatenate([[0.0], np.cumsum(self.weights)])
        le = cum[np.searchsorted(self.values, t, side="right")]
        if u is None:
            return np.minimum((le + 1.0) / (self.mc_size + 1.0), 1.0) if self.mc_size else np.minimum(le, 1.0)
        lt = cum[np.searchsorted(self.values, t, side="left")]
        if self.mc_size:
            return (lt + u * (le - lt + 1.0)) / (self.mc_size + 1.0)
        return np.minimum(lt + u * (le - lt), 1.0)


def _from_samples(values: np.ndarray, *, weights: float, mc_size: int) -> NullDistribution:
    uniq, counts = np.unique(values, return_counts=True)
    return NullDistribution(values=uniq, weights=counts * weights, mc_size=mc_size)


def null_distribution(
    statistic: str | AggregationStatistic,
    n: int,
    m: int,
    *,
    method: Method = "auto",
    n_mc: int = 20_000,
    enumeration_limit: int = 200_000,
    rng: np.random.Generator | None = None,
) -> NullDistribution:
    r"""The law of :math:`T(U)`, :math:`U \sim \mathcal{A}_{n,m}`.

    Args:
        statistic: a name or an :class:`AggregationStatistic`.
        n: calibration scores of the class. m: number of views.
        method: ``"exact"`` (closed form, error if none), ``"enumerate"`` (all :math:`\binom{n+m}{m}` points),
            ``"mc"`` (``n_mc`` draws), or ``"auto"``: exact, else enumeration up to ``enumeration_limit``, else MC.
        n_mc: Monte Carlo draws R; the p-value's Monte Carlo error has sd at most :math:`1/(2\sqrt{R})`.
        enumeration_limit: largest :math:`\binom{n+m}{m}` enumerated by ``"auto"``.
        rng: generator for Monte Carlo (default: ``default_rng(0)``).

    Returns:
        A :class:`NullDistribution`.

    Raises:
        ValueError: for an unknown method, or ``"exact"`` for a statistic without a closed form.
    """
    stat = get_statistic(statistic)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if isinstance(n_mc, bool) or not isinstance(n_mc, (int, np.integer)) or n_mc < 1:
        raise ValueError(f"n_mc must be a positive integer, got {n_mc!r}")
    if isinstance(enumeration_limit, bool) or not isinstance(enumeration_limit, (int, np.integer)):
        raise TypeError(f"enumeration_limit must be an integer, got {type(enumeration_limit).__name__}")
    law = NullLaw(n, m)
    if method in ("auto", "exact"):
        exact = stat.exact_null(law)
        if exact is not None:
            return exact
        if method == "exact":
            raise ValueError(f"statistic {stat.name!r} has no closed-form law; use method='enumerate' or 'mc'")
    if method == "enumerate" or (method == "auto" and law.size <= enumeration_limit):
        support = law.enumerate(limit=max(int(enumeration_limit), law.size) if method == "enumerate" else law.size)
        return _from_samples(stat(support, n), weights=1.0 / law.size, mc_size=0)
    gen = rng if rng is not None else np.random.default_rng(0)
    draws = law.sample(int(n_mc), rng=gen)
    return _from_samples(stat(draws, n), weights=1.0, mc_size=int(n_mc))


def _as_counts(counts: np.ndarray, n: int) -> np.ndarray:
    arr = np.asarray(counts)
    if arr.ndim < 1 or arr.shape[-1] < 1:
        raise ValueError(f"counts must have shape (..., m) with m >= 1, got {arr.shape}")
    if arr.size == 0:
        raise ValueError("counts must not be empty")
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError("counts must be finite integers K_j = #{calibration scores >= test score}")
        arr = arr.astype(np.int64)
    if arr.min() < 0 or arr.max() > n:
        raise ValueError(f"counts must lie in [0, n={n}], got range [{arr.min()}, {arr.max()}]")
    return np.sort(arr, axis=-1)


def aggregate_pvalue(
    counts: np.ndarray,
    n: int,
    *,
    statistic: str | AggregationStatistic = "sum",
    method: Method = "auto",
    randomize: bool = False,
    n_mc: int = 20_000,
    enumeration_limit: int = 200_000,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    r"""Aggregated p-value of one class from the counts of its m views (paper, Sec. 3).

    :math:`p_{agg} = P_{U \sim \mathcal{A}_{n,m}}[T(U) \le T(K)]`, or with ``randomize``
    :math:`P[T(U) < T(K)] + V\,P[T(U) = T(K)]`.

    Args:
        counts: ``(..., m)`` integer counts :math:`K_j = \#\{i: S_i \ge S_{n+j}\}` in ``[0, n]`` (any order).
        n: number of calibration scores of the class, ``>= 1``.
        statistic: name or :class:`AggregationStatistic`.
        method, n_mc, enumeration_limit: see :func:`null_distribution`.
        randomize: draw :math:`V \sim U(0,1)` to break ties (exactly uniform p-values under the null).
        rng: generator for Monte Carlo draws and randomisation.

    Returns:
        ``(...)`` float64 p-values in ``(0, 1]``.

    Raises:
        ValueError: for counts outside ``[0, n]``, non-integer or empty counts, or bad hyper-parameters.

    Example:
        >>> round(float(aggregate_pvalue(np.array([9, 6, 2, 0]), 12, statistic="sum")), 6)
        0.223077
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    sorted_counts = _as_counts(counts, int(n))
    stat = get_statistic(statistic)
    gen = rng if rng is not None else np.random.default_rng(0)
    null = null_distribution(
        stat, int(n), sorted_counts.shape[-1], method=method, n_mc=n_mc, enumeration_limit=enumeration_limit, rng=gen
    )
    t = stat(sorted_counts, int(n))
    u = gen.random(t.shape) if randomize else None
    return null.pvalue(t, u)
