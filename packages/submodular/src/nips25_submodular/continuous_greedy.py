r"""The multilinear extension, measured continuous greedy and pipage rounding on partition matroids.

The multilinear extension of :math:`f` is :math:`F(y) = \mathbb E[f(R(y))]`, where :math:`R(y)` contains each
:math:`i` independently with probability :math:`y_i`. Measured continuous greedy (Feldman, Naor & Schwartz 2011)
moves :math:`y` from 0 in steps :math:`\delta` up to time 1: :math:`y \leftarrow y + \delta (1 - y) \odot
\mathbb 1_I` where :math:`I` is a maximum-weight independent set for the weights
:math:`w_i = \mathbb E[f(R(y) + i) - f(R(y))]`, estimated by sampling. It gives :math:`1 - 1/e` for monotone
and :math:`1/e` for non-monotone :math:`f` over a matroid after lossless rounding; Bhawalkar et al. (NeurIPS 2025)
prove it robust, which makes it the inner algorithm of their meta-algorithm under matroid constraints.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nips25_submodular._checks import as_key, as_vector, check_int, check_real
from nips25_submodular.greedy import check_problem, greedy
from nips25_submodular.matroids import Partition
from nips25_submodular.selection import Selection
from nips25_submodular.set_functions import SetFunction

__all__ = ["measured_continuous_greedy", "multilinear", "pipage_rounding"]

_ROUND_TOL = 1e-9


@partial(jax.jit, static_argnames=("n_samples",))
def _multilinear(f: SetFunction, y: jax.Array, key: jax.Array, *, n_samples: int) -> tuple[jax.Array, jax.Array]:
    samples = jax.random.uniform(key, (n_samples, y.shape[0])) < y[None, :]
    values = jax.vmap(f.value)(samples)
    return values.mean(), values.std() / jnp.sqrt(n_samples)


def multilinear(f: SetFunction, y: Any, *, n_samples: int = 256, key: jax.Array) -> tuple[float, float]:
    r"""Monte-Carlo estimate of the multilinear extension :math:`F(y) = \sum_S f(S) \prod_{i\in S} y_i
    \prod_{i \notin S} (1 - y_i)`.

    Args:
        f: the set function, ground set size ``n``.
        y: point of :math:`[0, 1]^n`, shape ``(n,)``.
        n_samples: number of random sets :math:`R(y)`.
        key: PRNG key.

    Returns:
        ``(estimate, standard_error)``.

    Raises:
        ValueError: if ``y`` has the wrong shape, leaves :math:`[0, 1]` or is not finite, or ``n_samples < 1``.

    Example:
        >>> from nips25_submodular import Modular
        >>> est, se = multilinear(Modular([1.0, 2.0]), [1.0, 0.0], n_samples=8, key=jax.random.key(0))
        >>> est, se
        (1.0, 0.0)
    """
    if not isinstance(f, SetFunction):
        raise TypeError(f"f must be a SetFunction, got {type(f).__name__}")
    yy = _check_point(y, f.n)
    n_samples = check_int(n_samples, "n_samples", low=1)
    est, se = _multilinear(f, jnp.asarray(yy), as_key(key), n_samples=n_samples)
    return float(est), float(se)


def _check_point(y: Any, n: int) -> np.ndarray:
    yy = as_vector(y, "y", n=n)
    if (yy < 0).any() or (yy > 1).any():
        raise ValueError("y must lie in [0, 1]^n")
    return yy


@partial(jax.jit, static_argnames=("steps", "n_samples", "monotone"))
def _mcg_scan(
    f: SetFunction, matroid: Partition, key: jax.Array, delta: jax.Array, *, steps: int, n_samples: int, monotone: bool
) -> tuple[jax.Array, jax.Array]:
    n = matroid.labels.shape[0]

    def step(y: jax.Array, k: jax.Array) -> tuple[jax.Array, jax.Array]:
        samples = jax.random.uniform(k, (n_samples, n)) < y[None, :]
        w = jax.vmap(f.gains)(samples).mean(axis=0)
        chosen = matroid.max_weight_independent(w, positive_only=not monotone)
        evals = n_samples * (1 + (matroid.ground[None, :] & ~samples).sum(axis=1).mean())
        return y + delta * (1.0 - y) * chosen, evals

    y, evals = jax.lax.scan(step, jnp.zeros(n), jax.random.split(key, steps))
    return y, evals.sum()


def pipage_rounding(y: Any, matroid: Partition, *, key: jax.Array) -> np.ndarray:
    r"""Randomised pipage rounding of a point of a partition matroid polytope to an independent set.

    Within each class, two fractional coordinates :math:`i, j` are moved along :math:`e_i - e_j` to one of the two
    ends of the feasible segment, with probabilities that keep :math:`\mathbb E[y]` unchanged, until at most one is
    fractional; that last one is rounded up with probability :math:`y_i` (room is left because
    :math:`\sum_{i \in P_c} y_i \le k_c`). Each marginal is preserved, and since :math:`F` is convex along
    :math:`e_i - e_j` for submodular :math:`f`, :math:`\mathbb E[f(S)] \ge F(y)` (Calinescu et al. 2011).

    Args:
        y: point ``(n,)`` with :math:`0 \le y \le 1`, zero outside ``matroid.ground`` and
            :math:`\sum_{i \in P_c} y_i \le k_c`.
        matroid: the partition matroid.
        key: PRNG key.

    Returns:
        Boolean mask ``(n,)`` of an independent set.

    Raises:
        ValueError: if ``y`` is not in the matroid polytope.

    Example:
        >>> from nips25_submodular import Uniform
        >>> int(pipage_rounding([0.5, 0.5, 0.0], Uniform(3, 1), key=jax.random.key(0)).sum())
        1
    """
    if not isinstance(matroid, Partition):
        raise TypeError(f"matroid must be a Partition/Uniform/Free matroid, got {type(matroid).__name__}")
    yy = _check_point(y, matroid.n).copy()
    labels, caps, ground = (np.asarray(a) for a in (matroid.labels, matroid.caps, matroid.ground))
    if (yy[~ground] > _ROUND_TOL).any():
        raise ValueError("y must be zero outside matroid.ground")
    totals = np.bincount(labels, weights=yy, minlength=caps.shape[0])
    if (totals > caps + 1e-6).any():
        raise ValueError("y must satisfy sum(y over class c) <= caps[c] (the matroid polytope)")
    rng = np.random.default_rng(np.asarray(jax.random.key_data(as_key(key))).astype(np.uint64).tolist())
    for c in range(caps.shape[0]):
        members = [i for i in np.flatnonzero(labels == c) if _ROUND_TOL < yy[i] < 1 - _ROUND_TOL]
        while len(members) >= 2:
            i, j = members[0], members[1]
            up, down = min(1 - yy[i], yy[j]), min(yy[i], 1 - yy[j])
            step = up if rng.random() < down / (up + down) else -down
            yy[i], yy[j] = yy[i] + step, yy[j] - step
            members = [e for e in members if _ROUND_TOL < yy[e] < 1 - _ROUND_TOL]
        if members:
            i = members[0]
            room = np.sum((labels == c) & (yy >= 1 - _ROUND_TOL)) < caps[c]
            yy[i] = float(room and rng.random() < yy[i])
    return (yy > 0.5) & ground


def measured_continuous_greedy(
    f: SetFunction,
    matroid: Partition,
    *,
    key: jax.Array,
    monotone: bool,
    delta: float = 0.02,
    n_samples: int = 16,
    complete: bool | None = None,
) -> Selection:
    r"""Measured continuous greedy (Feldman–Naor–Schwartz) with pipage rounding, on a partition matroid.

    Runs :math:`1/\delta` steps of :math:`y \leftarrow y + \delta (1 - y) \odot \mathbb 1_I`, each with weights
    estimated from ``n_samples`` random sets :math:`R(y)` (the whole gain vector of one sample is one vectorised
    call); :math:`I` is a maximum-weight base (monotone) or a maximum-weight independent set of positive-weight
    elements (non-monotone). The point is rounded by :func:`pipage_rounding`; for monotone ``f`` the set is then
    completed greedily to a base. ``queries`` counts, per step and sample, :math:`f(R)` and :math:`f(R + i)` for
    the usable :math:`i \notin R`, plus the completion's queries, times ``f.queries_per_eval``.

    Args:
        f: the set function, ground set size ``n``.
        matroid: partition matroid (possibly contracted).
        key: PRNG key (sampling and rounding).
        monotone: whether ``f`` is monotone (chooses the direction set and the completion).
        delta: step size in :math:`(0, 1]`; ``round(1/delta)`` steps.
        n_samples: samples per step for the weights.
        complete: complete the rounded set greedily to a base; default ``monotone``.

    Returns:
        :class:`Selection` with ``mask``, ``y`` (the fractional point) and ``queries``.

    Raises:
        ValueError: if ``delta`` is outside :math:`(0, 1]`, ``n_samples < 1`` or the sizes differ.

    References:
        Feldman, Naor & Schwartz, "A unified continuous greedy algorithm for submodular maximization", FOCS 2011;
        Bhawalkar et al., NeurIPS 2025 (robustness of measured continuous greedy).

    Example:
        >>> from nips25_submodular import Modular, Uniform
        >>> sel = measured_continuous_greedy(Modular([5.0, 0.1, 4.0]), Uniform(3, 2), key=jax.random.key(0),
        ...                                  monotone=True, delta=0.1, n_samples=8)
        >>> sel.indices.tolist()
        [0, 2]
    """
    check_problem(f, matroid)
    delta = check_real(delta, "delta", low=0.0, high=1.0, open_low=True)
    n_samples = check_int(n_samples, "n_samples", low=1)
    k_run, k_round = jax.random.split(as_key(key))
    steps = max(1, round(1.0 / delta))
    y, evals = _mcg_scan(
        f, matroid, k_run, jnp.asarray(delta, jnp.float32), steps=steps, n_samples=n_samples, monotone=monotone
    )
    y_np = np.clip(np.asarray(y, dtype=np.float64), 0.0, 1.0)
    mask = pipage_rounding(y_np, matroid, key=k_round)
    queries = round(float(evals)) * f.queries_per_eval
    if monotone if complete is None else complete:
        done = greedy(f, matroid, init=mask)
        mask, queries = done.mask, queries + done.queries
    return Selection(mask=mask, queries=queries, y=y_np)
