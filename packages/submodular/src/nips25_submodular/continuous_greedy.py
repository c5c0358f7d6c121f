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

from nips25_submodular._checks import as_key, check_int, check_real, concrete, count, point_arg
from nips25_submodular.greedy import check_problem, greedy
from nips25_submodular.matroids import Partition
from nips25_submodular.selection import Selection
from nips25_submodular.set_functions import SetFunction, require_set_function

__all__ = ["measured_continuous_greedy", "multilinear", "pipage_rounding"]

_ROUND_TOL = 1e-6  # float32 arithmetic: coordinates within 1e-6 of 0 or 1 count as integral


@partial(jax.jit, static_argnames=("n_samples",))
def _multilinear(f: SetFunction, y: jax.Array, key: jax.Array, *, n_samples: int) -> tuple[jax.Array, jax.Array]:
    samples = jax.random.uniform(key, (n_samples, y.shape[0])) < y[None, :]
    values = jax.vmap(f.value)(samples)
    return values.mean(), values.std() / jnp.sqrt(n_samples)


def multilinear(f: SetFunction, y: Any, *, n_samples: int = 256, key: jax.Array) -> tuple[jax.Array, jax.Array]:
    r"""Monte-Carlo estimate of the multilinear extension :math:`F(y) = \sum_S f(S) \prod_{i\in S} y_i
    \prod_{i \notin S} (1 - y_i)`.

    Args:
        f: the set function, ground set size ``n``.
        y: point of :math:`[0, 1]^n`, shape ``(n,)``.
        n_samples: number of random sets :math:`R(y)`.
        key: PRNG key.

    Returns:
        ``(estimate, standard_error)``, two float scalar JAX arrays.

    Traceable: ``jax.jit``/``jax.vmap`` over ``y``, ``key`` or ``f`` work (e.g. a batch of points ``(B, n)``);
    under tracing the range of ``y`` is not checked.

    Raises:
        ValueError: if ``y`` has the wrong shape, or (when concrete) leaves :math:`[0, 1]` or is not finite, or
            ``n_samples < 1``.

    References:
        Calinescu, Chekuri, Pál & Vondrák, "Maximizing a monotone submodular function subject to a matroid
        constraint", SIAM J. Comput. 2011 (the multilinear extension); Bhawalkar et al., NeurIPS 2025 (MCG as the
        robust inner algorithm).

    Example:
        >>> from nips25_submodular import Modular
        >>> est, se = multilinear(Modular([1.0, 2.0]), [1.0, 0.0], n_samples=8, key=jax.random.key(0))
        >>> float(est), float(se)
        (1.0, 0.0)
    """
    require_set_function(f)
    yy = point_arg(y, "y", n=f.n)
    n_samples = check_int(n_samples, "n_samples", low=1)
    return _multilinear(f, yy, as_key(key), n_samples=n_samples)


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


@jax.jit
def _pipage(y: jax.Array, labels: jax.Array, caps: jax.Array, ground: jax.Array, key: jax.Array) -> jax.Array:
    """One left-to-right pass: each class keeps one fractional "carry" element, paired with the next fractional one."""
    n, c = y.shape[0], caps.shape[0]
    k_pair, k_last = jax.random.split(key)
    u, v = jax.random.uniform(k_pair, (n,)), jax.random.uniform(k_last, (c,))

    def fractional(x: jax.Array) -> jax.Array:
        return (x > _ROUND_TOL) & (x < 1 - _ROUND_TOL)

    def step(carry: tuple[jax.Array, jax.Array], j: jax.Array) -> tuple[tuple[jax.Array, jax.Array], None]:
        yy, cur = carry
        cls = labels[j]
        i = cur[cls]
        pair = fractional(yy[j]) & (i >= 0)
        yi, yj = yy[jnp.maximum(i, 0)], yy[j]
        up, down = jnp.minimum(1 - yi, yj), jnp.minimum(yi, 1 - yj)
        move = jnp.where(u[j] < down / jnp.where(pair, up + down, 1.0), up, -down)
        new_i, new_j = yi + move, yj - move
        paired = yy.at[jnp.maximum(i, 0)].set(new_i).at[j].set(new_j)
        keep = jnp.where(fractional(new_i), i, jnp.where(fractional(new_j), j, -1))
        nxt = jnp.where(pair, keep, jnp.where(fractional(yj), j, i))
        return (jnp.where(pair, paired, yy), cur.at[cls].set(nxt)), None

    (yy, cur), _ = jax.lax.scan(step, (y, jnp.full(c, -1, jnp.int32)), jnp.arange(n))
    full = jnp.zeros(c, jnp.int32).at[labels].add((~fractional(yy) & (yy > 0.5)).astype(jnp.int32))
    last = yy[jnp.maximum(cur, 0)]
    up = (cur >= 0) & (full < caps) & (v < last)
    yy = yy.at[jnp.where(cur >= 0, cur, n)].set(up.astype(yy.dtype), mode="drop")
    return (yy > 0.5) & ground


def pipage_rounding(y: Any, matroid: Partition, *, key: jax.Array) -> jax.Array:
    r"""Randomised pipage rounding of a point of a partition matroid polytope to an independent set.

    Within each class, two fractional coordinates :math:`i, j` are moved along :math:`e_i - e_j` to one of the two
    ends of the feasible segment, with probabilities that keep :math:`\mathbb E[y]` unchanged, until at most one is
    fractional; that last one is rounded up with probability :math:`y_i` (room is left because
    :math:`\sum_{i \in P_c} y_i \le k_c`). Each marginal is preserved, and since :math:`F` is convex along
    :math:`e_i - e_j` for submodular :math:`f`, :math:`\mathbb E[f(S)] \ge F(y)` (Calinescu et al. 2011). One
    ``lax.scan`` over the elements (pairs formed in index order within each class).

    Args:
        y: point ``(n,)`` with :math:`0 \le y \le 1`, zero outside ``matroid.ground`` and
            :math:`\sum_{i \in P_c} y_i \le k_c`.
        matroid: the partition matroid.
        key: PRNG key.

    Returns:
        Boolean JAX mask ``(n,)`` of an independent set.

    Traceable: ``jax.jit``/``jax.vmap`` over ``y`` and ``key`` work; the polytope checks run only on concrete
    inputs.

    Raises:
        ValueError: if a concrete ``y`` is not in the matroid polytope, or ``y`` has the wrong shape.

    References:
        Ageev & Sviridenko, "Pipage rounding", J. Comb. Optim. 2004; Calinescu, Chekuri, Pál & Vondrák,
        SIAM J. Comput. 2011 (randomised pipage rounding on matroids).

    Example:
        >>> from nips25_submodular import Uniform
        >>> int(pipage_rounding([0.5, 0.5, 0.0], Uniform(3, 1), key=jax.random.key(0)).sum())
        1
    """
    if not isinstance(matroid, Partition):
        raise TypeError(f"matroid must be a Partition/Uniform/Free matroid, got {type(matroid).__name__}")
    yy = point_arg(y, "y", n=matroid.n)
    if concrete(yy, matroid):
        if bool(jnp.any(jnp.where(matroid.ground, 0.0, yy) > _ROUND_TOL)):
            raise ValueError("y must be zero outside matroid.ground")
        totals = jnp.zeros(matroid.n_classes).at[matroid.labels].add(yy)
        if bool(jnp.any(totals > matroid.caps + _ROUND_TOL)):
            raise ValueError("y must satisfy sum(y over class c) <= caps[c] (the matroid polytope)")
    return _pipage(yy, matroid.labels, matroid.caps, matroid.ground, as_key(key))


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
        :class:`Selection` with ``mask`` (bool ``(n,)``), ``y`` (the fractional point, float ``(n,)``) and
        ``queries``.

    Traceable: ``jax.jit``/``jax.vmap`` over ``key`` or ``f`` (e.g. a batch of noisy oracles) work; ``delta``,
    ``n_samples``, ``monotone`` and ``complete`` are static.

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
    y = jnp.clip(y, 0.0, 1.0)
    mask = _pipage(y, matroid.labels, matroid.caps, matroid.ground, k_round)
    queries = jnp.round(evals).astype(jnp.int32) * f.queries_per_eval
    if monotone if complete is None else complete:
        done = greedy(f, matroid, init=mask)
        mask, queries = done.mask, queries + done.queries
    return Selection(mask=mask, queries=count(queries), y=y)
