r"""The greedy algorithm over a matroid (Fisher, Nemhauser & Wolsey 1978), as one ``lax.while_loop``.

At each step the feasible element of largest marginal gain is added:
:math:`S \leftarrow S + \arg\max_{i: S + i \in \mathcal I} f(S + i) - f(S)`. It is exact for modular functions on
matroids, :math:`(1 - 1/e)`-approximate for monotone submodular functions under a cardinality constraint and
:math:`1/2` under a general matroid.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from nips25_submodular._checks import concrete, count, mask_arg
from nips25_submodular.matroids import Partition
from nips25_submodular.selection import Selection
from nips25_submodular.set_functions import SetFunction, require_set_function

__all__ = ["check_problem", "greedy"]


@partial(jax.jit, static_argnames=("steps", "stop_at_nonpositive"))
def _greedy_loop(
    f: SetFunction, matroid: Partition, init: jax.Array, *, steps: int, stop_at_nonpositive: bool
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """At most ``steps`` greedy picks from ``init``; a ``while_loop`` that stops when nothing can be added."""
    Carry = tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]

    def cond(carry: Carry) -> jax.Array:
        mask, step, _, _, _, going = carry
        return going & (step < steps) & matroid.can_add(mask).any()

    def body(carry: Carry) -> Carry:
        mask, step, order, picked, evals, _ = carry
        feasible = matroid.can_add(mask)
        gains = jnp.where(feasible, f.gains(mask), -jnp.inf)
        i = jnp.argmax(gains)
        take = (gains[i] > 0) if stop_at_nonpositive else jnp.asarray(True)
        return (
            mask.at[i].set(mask[i] | take),
            step + 1,
            order.at[step].set(jnp.where(take, i, -1)),
            picked.at[step].set(jnp.where(take, gains[i], jnp.nan)),
            evals + feasible.sum() + 1,
            take,
        )

    start = (
        init, jnp.int32(0), jnp.full(steps, -1, jnp.int32), jnp.full(steps, jnp.nan), jnp.int32(0), jnp.asarray(True)
    )  # fmt: skip
    mask, _, order, gains, evals, _ = jax.lax.while_loop(cond, body, start)
    return mask, order, gains, evals


def greedy(f: SetFunction, matroid: Partition, *, stop_at_nonpositive: bool = False, init: Any = None) -> Selection:
    r"""Greedy maximisation of ``f`` over ``matroid`` (at most ``rank`` picks).

    Each step evaluates :math:`f(S)` and :math:`f(S + i)` for every feasible :math:`i` (the gains are computed
    in one vectorised call); ``queries`` counts :math:`1 + \#\text{feasible}` per step times
    ``f.queries_per_eval``. No element is picked twice; for monotone submodular ``f`` the recorded gains are
    non-increasing.

    Args:
        f: the set function (noiseless, noisy oracle or smoothing surrogate), ground set size ``n``.
        matroid: the constraint, same ``n``.
        stop_at_nonpositive: stop as soon as the best gain is :math:`\le 0` (for non-monotone ``f``); by default
            the greedy fills a base, as the monotone analysis assumes.
        init: boolean ``(n,)`` independent set to start from (default empty), e.g. to complete a rounded set.

    Returns:
        :class:`Selection` with ``mask`` (bool ``(n,)``), ``order`` (int32 ``(k,)``) and ``gains`` (float ``(k,)``)
        of the picks (``-1``/``nan`` padding when it stopped early; ``k = rank - |init|``, or ``n`` when the
        matroid or ``init`` is traced) and ``queries``.

    Traceable: ``jax.jit``/``jax.vmap`` over ``f`` (e.g. noisy oracles with a batch of keys or noise levels),
    ``init`` or the matroid's arrays work; under tracing the independence of ``init`` is not checked.

    Raises:
        ValueError: if the sizes of ``f`` and ``matroid`` differ or a concrete ``init`` is not independent.

    References:
        Fisher, Nemhauser & Wolsey, "An analysis of approximations for maximizing submodular set functions II",
        1978; used as the inner algorithm for cardinality constraints in Bhawalkar et al., NeurIPS 2025.

    Example:
        >>> from nips25_submodular import Modular, Uniform
        >>> greedy(Modular([1.0, 3.0, 2.0]), Uniform(3, 2)).order.tolist()
        [1, 2]
    """
    check_problem(f, matroid)
    start = jnp.zeros(f.n, dtype=bool) if init is None else mask_arg(init, "init", n=f.n)
    static = concrete(matroid)
    if static and concrete(start) and not bool(matroid.independent(start)):
        raise ValueError("init must be an independent set of matroid")
    steps = matroid.rank if static else matroid.n
    mask, order, gains, evals = _greedy_loop(f, matroid, start, steps=steps, stop_at_nonpositive=stop_at_nonpositive)
    if concrete(start) and static:
        k = steps - int(start.sum())
        order, gains = order[:k], gains[:k]
    return Selection(mask=mask, queries=count(evals * f.queries_per_eval), order=order, gains=gains)


def check_problem(f: Any, matroid: Any, *, name: str = "f") -> None:
    """A :class:`SetFunction` ``f`` (called ``name`` in errors) and a matroid of the same size, or an error."""
    require_set_function(f, name)
    if not isinstance(matroid, Partition):
        raise TypeError(f"matroid must be a Partition/Uniform/Free matroid, got {type(matroid).__name__}")
    if f.n != matroid.n:
        raise ValueError(f"{name} has n={f.n} elements but matroid has n={matroid.n}")
