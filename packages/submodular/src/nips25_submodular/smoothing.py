r"""The smoothing surrogate of Bhawalkar et al. (NeurIPS 2025, Algorithm 1, step (c)) and its theory parameters.

Given a smoothing set :math:`H` (``h`` elements of a base) and ``t < h``, the surrogate is
:math:`F^{H,t}(S) = \binom{h}{t}^{-1} \sum_{H' \subseteq H, |H'| = t} f(S \cup H')`. It is estimated from the
persistent noisy oracle by :math:`\tilde F(S) = \frac1m \sum_{j=1}^m \tilde f(S \cup H'_j)` over ``m`` *distinct*
``t``-subsets :math:`H'_j`: the sets :math:`S \cup H'_j` are distinct, so their noises are independent and the
average concentrates, although every single value is persistent.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nips25_submodular._checks import as_key, as_mask, check_int, check_real
from nips25_submodular.set_functions import SetFunction, require_set_function

__all__ = ["SmoothedSurrogate", "TheoryParams", "smoothing_factor", "smoothing_subsets", "theory_params"]

_ENUMERATE_LIMIT = 200_000


def smoothing_subsets(H: Any, *, t: int, m: int, key: jax.Array) -> np.ndarray:
    r"""``m`` distinct ``t``-subsets of ``H``, drawn uniformly without replacement.

    When :math:`\binom{h}{t} \le 200\,000` the subsets are enumerated and ``m`` of them chosen without
    replacement (all of them, in lexicographic order, when :math:`m = \binom{h}{t}`); above that, random
    ``t``-subsets are drawn and duplicates rejected.

    Args:
        H: boolean mask ``(n,)`` of the smoothing set, ``h = H.sum()``.
        t: subset size, ``1 <= t < h``.
        m: number of subsets, ``1 <= m <= C(h, t)``.
        key: PRNG key.

    Returns:
        Boolean ``(m, n)``: row ``j`` is :math:`H'_j`.

    Raises:
        ValueError: if ``t < 1``, ``t >= h``, ``m > C(h, t)`` or ``m < 1``.

    References:
        Bhawalkar, Cai, Feng, Liaw, Lin, NeurIPS 2025, arXiv:2510.21128, Algorithm 1 step (c) (distinct
        ``t``-subsets of ``H``, so the noises averaged are independent).

    Example:
        >>> smoothing_subsets([True, True, True, False], t=2, m=3, key=jax.random.key(0)).sum(axis=1).tolist()
        [2, 2, 2]
    """
    h_mask = np.asarray(H)
    if h_mask.ndim != 1:
        raise ValueError(f"H must be a boolean mask of shape (n,), got shape {h_mask.shape}")
    h_mask = as_mask(h_mask, "H", n=h_mask.shape[0])
    elems = np.flatnonzero(h_mask)
    h = elems.size
    t = check_int(t, "t", low=1)
    if t >= h:
        raise ValueError(f"t must be < h = |H| = {h}, got t={t}")
    total = math.comb(h, t)
    m = check_int(m, "m", low=1)
    if m > total:
        raise ValueError(f"m must be <= C(h, t) = C({h}, {t}) = {total} (the subsets must be distinct), got {m}")
    rng = np.random.default_rng(np.asarray(jax.random.key_data(as_key(key))).astype(np.uint64).tolist())
    if total <= _ENUMERATE_LIMIT:
        combos = list(itertools.combinations(range(h), t))
        picks = range(total) if m == total else sorted(rng.choice(total, size=m, replace=False))
        chosen = [combos[p] for p in picks]
    else:
        seen: set[tuple[int, ...]] = set()
        while len(seen) < m:
            seen.add(tuple(sorted(rng.choice(h, size=t, replace=False).tolist())))
        chosen = sorted(seen)
    out = np.zeros((m, h_mask.shape[0]), dtype=bool)
    for j, combo in enumerate(chosen):
        out[j, elems[list(combo)]] = True
    return out


class SmoothedSurrogate(SetFunction):
    r"""The estimated smoothing surrogate :math:`\tilde F(S) = \frac1m \sum_{j} \tilde f(S \cup H'_j)`.

    One evaluation costs ``m`` oracle queries (``queries_per_eval = m``). Its gains are averages of the oracle's
    gains, :math:`\tilde F(S+i) - \tilde F(S) = \frac1m \sum_j [\tilde f(S \cup H'_j + i) - \tilde f(S \cup H'_j)]`.

    Args:
        oracle: the (noisy) value oracle, ground set size ``n``.
        subsets: boolean ``(m, n)``, the distinct ``t``-subsets :math:`H'_j` of :math:`H`.

    Raises:
        ValueError: if ``subsets`` has the wrong shape or repeats a subset.

    References:
        Bhawalkar et al., "A Unified Approach to Submodular Maximization Under Noise", NeurIPS 2025, Algorithm 1.

    Example:
        >>> from nips25_submodular import Modular
        >>> F = SmoothedSurrogate(Modular([1.0, 2.0, 4.0]), [[False, True, False], [False, False, True]])
        >>> float(F([True, False, False]))
        4.0
    """

    _leaves = ("oracle", "subsets")

    def __init__(self, oracle: SetFunction, subsets: Any) -> None:
        require_set_function(oracle, "oracle")
        sub = np.asarray(subsets)
        if sub.ndim != 2 or sub.shape[1] != oracle.n or sub.shape[0] < 1:
            raise ValueError(f"subsets must be a boolean (m, {oracle.n}) array with m >= 1, got shape {sub.shape}")
        if sub.dtype != np.bool_:
            raise TypeError(f"subsets must be boolean, got dtype {sub.dtype}")
        if np.unique(sub, axis=0).shape[0] != sub.shape[0]:
            raise ValueError("subsets must be distinct (their noises must be independent)")
        self.oracle = oracle
        self.subsets = jnp.asarray(sub)

    @property
    def n(self) -> int:
        return self.oracle.n

    @property
    def queries_per_eval(self) -> int:
        return int(self.subsets.shape[0]) * self.oracle.queries_per_eval

    def value(self, mask: jax.Array) -> jax.Array:
        mask = jnp.asarray(mask, dtype=bool)
        return jax.vmap(lambda s: self.oracle.value(mask | s))(self.subsets).mean()

    def gains(self, mask: jax.Array) -> jax.Array:
        mask = jnp.asarray(mask, dtype=bool)
        return jax.vmap(lambda s: self.oracle.gains(mask | s))(self.subsets).mean(axis=0)


def smoothing_factor(r: int, h: int, t: int, *, monotone: bool) -> float:
    r"""The smoothing lemma's factor :math:`\rho = 1 - h/(r-h) - t/(h-t)` (monotone :math:`f`: :math:`1 - h/(r-h)`).

    :math:`\mathbb E_H[\max_{S \in \mathcal I_H} F^{H,t}(S)] \ge \rho \, f(O^*)`, so the meta-algorithm with an
    :math:`\alpha`-approximate inner algorithm guarantees :math:`\alpha \rho f(O^*) - O(\varepsilon)`. A factor
    :math:`\le 0` makes the guarantee void.

    Args:
        r: matroid rank, ``r > h``.
        h: smoothing-set size, ``h > t``.
        t: subset size, ``t >= 1``.
        monotone: drop the :math:`t/(h-t)` term.

    Returns:
        :math:`\rho` (may be negative).

    Raises:
        ValueError: unless ``1 <= t < h < r``.

    References:
        Bhawalkar et al., NeurIPS 2025, the smoothing lemma.

    Example:
        >>> round(smoothing_factor(32, 8, 3, monotone=False), 4)  # the practical preset on Davis: near void
        0.0667
    """
    t = check_int(t, "t", low=1)
    h = check_int(h, "h", low=t + 1)
    r = check_int(r, "r", low=h + 1)
    return 1.0 - h / (r - h) - (0.0 if monotone else t / (h - t))


@dataclass(frozen=True)
class TheoryParams:
    """Worst-case parameters of the meta-algorithm for a target accuracy.

    Attributes:
        m: subsets averaged per surrogate value.
        t: subset size.
        h: smoothing-set size.
        feasible: whether the guarantee's precondition ``r > 2h`` holds.
        queries_factor: ``m``, the multiplicative query overhead over the inner algorithm.
        smoothing_loss: ``h/(r-h) + t/(h-t)`` (non-monotone) lost by smoothing; ``nan`` when ``r <= h``.
    """

    m: int
    t: int
    h: int
    feasible: bool
    queries_factor: int
    smoothing_loss: float


def theory_params(
    n: int, r: int, *, eps: float, nu: float = 1.0, delta: float = 0.1, c: float = 1.0, monotone: bool = False
) -> TheoryParams:
    r"""Worst-case sample sizes of the meta-algorithm (Bhawalkar et al., NeurIPS 2025, Sec. 3).

    :math:`m = \lceil c\,\nu^2 (n + \ln(1/\delta)) / \varepsilon^2 \rceil` (accuracy :math:`\varepsilon` relative
    to :math:`f_{max}`, sub-exponential noise parameter :math:`\nu`), :math:`t = \lceil \log_2(4m) \rceil`,
    :math:`h = t^2`; the smoothing lemma needs :math:`r \gg h` and loses
    :math:`h/(r-h) + t/(h-t)` (the :math:`t` term only for non-monotone :math:`f`). The paper's absolute
    constant is not reproduced here: ``c`` stands for it (``c = 1`` by default).

    Args:
        n: ground-set size, ``>= 1``.
        r: matroid rank, ``>= 1``.
        eps: target additive accuracy as a fraction of :math:`f_{max}`, in ``(0, 1]``.
        nu: sub-exponential parameter of the noise (``sigma`` for Gaussian noise), ``> 0``.
        delta: failure probability in ``(0, 1)``.
        c: the absolute constant, ``> 0``.
        monotone: drop the :math:`t/(h-t)` term of the loss.

    Returns:
        :class:`TheoryParams`; ``feasible`` is ``r > 2h``.

    Raises:
        ValueError: if an argument is out of range.

    References:
        Bhawalkar, Cai, Feng, Liaw, Lin, NeurIPS 2025, arXiv:2510.21128, parameter choice of the main theorem
        (:math:`m = O(\nu^2 (n + \log 1/\delta)/\varepsilon^2)`, :math:`t \ge \log_2 4m`, :math:`h = t^2`);
        the absolute constant was not available and is ``c`` here.

    Example:
        >>> p = theory_params(32, 32, eps=0.1)
        >>> (p.m, p.t, p.h, p.feasible)
        (3431, 14, 196, False)
    """
    n = check_int(n, "n", low=1)
    r = check_int(r, "r", low=1)
    eps = check_real(eps, "eps", low=0.0, high=1.0, open_low=True)
    nu = check_real(nu, "nu", low=0.0, open_low=True)
    delta = check_real(delta, "delta", low=0.0, high=1.0, open_low=True)
    if delta >= 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    c = check_real(c, "c", low=0.0, open_low=True)
    m = math.ceil(c * nu**2 * (n + math.log(1.0 / delta)) / eps**2)
    t = max(1, math.ceil(math.log2(4 * m)))
    h = t * t
    loss = h / (r - h) + (0.0 if monotone else t / (h - t)) if r > h else float("nan")
    return TheoryParams(m=m, t=t, h=h, feasible=r > 2 * h, queries_factor=m, smoothing_loss=loss)
