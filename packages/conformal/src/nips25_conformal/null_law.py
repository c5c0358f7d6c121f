r"""The exact joint law of the m conformal counts of one class under exchangeability (paper, Sec. 3).

For a candidate class :math:`y` with :math:`n` calibration scores :math:`S_1..S_n` and :math:`m` test views with
scores :math:`S_{n+1}..S_{n+m}`, the per-view count is :math:`K_j = \#\{i \le n : S_i \ge S_{n+j}\}` and the per-view
conformal p-value is :math:`p_j = (1 + K_j)/(n + 1)`. When the :math:`n + m` scores are exchangeable and have no
ties, the sorted vector :math:`K_{(1)} \le \dots \le K_{(m)}` is uniform over the :math:`\binom{n+m}{m}`
non-decreasing sequences in :math:`\{0, \dots, n\}^m` (the law :math:`\mathcal{A}_{n,m}`), whatever the law of
the scores.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats

__all__ = ["NullLaw"]


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


@dataclass(frozen=True)
class NullLaw:
    r"""The law :math:`\mathcal{A}_{n,m}` of the sorted counts of m exchangeable test views (paper, Sec. 3).

    Args:
        n: number of calibration scores of the class, ``n >= 1``.
        m: number of test views, ``m >= 1``.

    Raises:
        TypeError: if ``n`` or ``m`` is not an integer.
        ValueError: if ``n < 1`` or ``m < 1``.

    References:
        Fermanian, Hebiri, Salmon, "Class conditional conformal prediction for multiple inputs by p-value
        aggregation", NeurIPS 2025, arXiv:2507.07150, Sec. 3.

    Example:
        >>> law = NullLaw(20, 5)
        >>> round(float(law.order_stat_cdf(1, 0)), 6)  # P(K_(1) = 0) = m / (n + m)
        0.2
    """

    n: int
    m: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", _check_int("n", self.n, 1))
        object.__setattr__(self, "m", _check_int("m", self.m, 1))

    @property
    def size(self) -> int:
        r"""Number of support points, :math:`\binom{n+m}{m}`."""
        return math.comb(self.n + self.m, self.m)

    def sample(self, size: int, *, rng: np.random.Generator) -> np.ndarray:
        r"""Draw ``size`` sorted count vectors from :math:`\mathcal{A}_{n,m}`.

        A uniform m-subset :math:`pos_0 < \dots < pos_{m-1}` of :math:`\{0..n+m-1\}` gives
        :math:`K_{(i)} = pos_i - i` (0-based :math:`i`): the test views' positions among the n + m ranks.

        Args:
            size: number of draws ``R >= 1``.
            rng: numpy random generator.

        Returns:
            ``(R, m)`` int64 array, each row non-decreasing in ``{0..n}``.
        """
        size = _check_int("size", size, 1)
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        keys = rng.random((size, self.n + self.m))
        if self.m == self.n + self.m:
            pos = np.tile(np.arange(self.m), (size, 1))
        else:
            pos = np.sort(np.argpartition(keys, self.m - 1, axis=1)[:, : self.m], axis=1)
        return (pos - np.arange(self.m)).astype(np.int64)

    def enumerate(self, *, limit: int = 1_000_000) -> np.ndarray:
        r"""Every support point of :math:`\mathcal{A}_{n,m}` (each has probability :math:`1/\binom{n+m}{m}`).

        Args:
            limit: refuse to enumerate more than this many points.

        Returns:
            ``(C(n+m, m), m)`` int64 array of non-decreasing sequences.

        Raises:
            ValueError: if :math:`\binom{n+m}{m}` exceeds ``limit``.
        """
        if self.size > limit:
            raise ValueError(f"C(n+m, m) = {self.size} exceeds limit={limit}; use sampling instead")
        return _enumerate(self.n, self.m)

    def order_stat_cdf(self, k: int, x: np.ndarray | int) -> np.ndarray:
        r"""Exact CDF of the k-th smallest count, :math:`P(K_{(k)} \le x) = P(H \ge k)`.

        :math:`H \sim \mathrm{Hypergeom}(N = n + m, K = m, \text{draws} = x + k)`: the k-th test position lies in
        the first :math:`x + k` ranks.

        Args:
            k: 1-based rank of the order statistic, ``1 <= k <= m``.
            x: count value(s), any integer shape.

        Returns:
            array of the shape of ``x``: :math:`P(K_{(k)} \le x)` (0 below 0, 1 from n on).
        """
        k = _check_int("k", k, 1)
        if k > self.m:
            raise ValueError(f"k must be <= m={self.m}, got {k}")
        x = np.asarray(x)
        draws = np.clip(x + k, 0, self.n + self.m)
        out = stats.hypergeom.sf(k - 1, self.n + self.m, self.m, draws)
        return np.where(x < 0, 0.0, np.where(x >= self.n, 1.0, out))

    def sum_pmf(self) -> np.ndarray:
        r"""Exact pmf of :math:`\sum_j K_j` on ``0..n*m``.

        The number of support points with sum s is the coefficient of :math:`q^s` in the Gaussian binomial
        :math:`\binom{n+m}{m}_q = \prod_{i=1}^{m} (1 - q^{n+i}) / (1 - q^i)` (partitions in an m x n box); this is
        the null law of the Mann-Whitney statistic.

        Returns:
            ``(n*m + 1,)`` float64 array summing to one.
        """
        return _sum_pmf(self.n, self.m)


@lru_cache(maxsize=64)
def _enumerate(n: int, m: int) -> np.ndarray:
    combos = np.fromiter(
        itertools.chain.from_iterable(itertools.combinations(range(n + m), m)), dtype=np.int64
    ).reshape(-1, m)
    out = combos - np.arange(m)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=256)
def _sum_pmf(n: int, m: int) -> np.ndarray:
    # Exact integer arithmetic (Python ints) avoids cancellation; the polynomial has n*m + 1 coefficients.
    size = n * m + 1
    coef = [0] * (size + n + m + 1)
    coef[0] = 1
    for i in range(1, m + 1):
        shift = n + i
        for s in range(len(coef) - 1, shift - 1, -1):  # multiply by (1 - q^{n+i})
            coef[s] -= coef[s - shift]
        for s in range(i, len(coef)):  # divide by (1 - q^i): running sum with stride i
            coef[s] += coef[s - i]
    total = math.comb(n + m, m)
    pmf = np.array([c / total for c in coef[:size]], dtype=np.float64)
    pmf.setflags(write=False)
    return pmf
