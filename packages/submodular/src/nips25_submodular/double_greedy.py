r"""Double greedy for unconstrained (non-monotone) submodular maximisation (Buchbinder et al. 2012).

Start from :math:`X = \emptyset`, :math:`Y = N`; for each element :math:`i` in turn let
:math:`a_i = f(X + i) - f(X)` and :math:`b_i = f(Y - i) - f(Y)`. The randomised version adds :math:`i` to
:math:`X` with probability :math:`a_i^+ / (a_i^+ + b_i^+)` (1 when both are 0), else removes it from :math:`Y`
(a :math:`1/2`-approximation in expectation); the deterministic one adds iff :math:`a_i \ge b_i` (:math:`1/3`).
At the end :math:`X = Y`. Bhawalkar et al. (NeurIPS 2025) prove the randomised version robust to small
value errors, which makes it a valid inner algorithm of the noisy meta-algorithm.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nips25_submodular._checks import as_key, concrete, count
from nips25_submodular.greedy import check_problem
from nips25_submodular.matroids import Free, Partition
from nips25_submodular.selection import Selection
from nips25_submodular.set_functions import SetFunction

__all__ = ["double_greedy"]


@partial(jax.jit, static_argnames=("randomized",))
def _double_greedy_scan(
    f: SetFunction, ground: jax.Array, order: jax.Array, u: jax.Array, *, randomized: bool
) -> jax.Array:
    x0 = jnp.zeros_like(ground)

    Carry = tuple[jax.Array, jax.Array, jax.Array, jax.Array]

    def step(carry: Carry, inp: tuple[jax.Array, jax.Array]) -> tuple[Carry, None]:
        x, y, fx, fy = carry
        i, ui = inp
        xi, yi = x.at[i].set(True), y.at[i].set(False)
        fxi, fyi = f.value(xi), f.value(yi)
        a, b = fxi - fx, fyi - fy
        if randomized:
            ap, bp = jnp.maximum(a, 0.0), jnp.maximum(b, 0.0)
            p = jnp.where(ap + bp > 0, ap / jnp.where(ap + bp > 0, ap + bp, 1.0), 1.0)
            add = ui < p
        else:
            add = a >= b
        use = ground[i]
        x, fx = jnp.where(use & add, xi, x), jnp.where(use & add, fxi, fx)
        y, fy = jnp.where(use & ~add, yi, y), jnp.where(use & ~add, fyi, fy)
        return (x, y, fx, fy), None

    (x, _, _, _), _ = jax.lax.scan(step, (x0, ground, f.value(x0), f.value(ground)), (order, u))
    return x


def check_free(matroid: Partition) -> None:
    """Raise ``ValueError`` naming ``matroid`` unless every usable element fits (a possibly contracted free matroid).

    Double greedy solves the unconstrained problem only; a capacity it would ignore makes its output infeasible.
    """
    if not concrete(matroid):  # a traced matroid (vmap over instances): its capacities cannot be read
        return
    usable = int(np.asarray(matroid.ground).sum())  # matroids are small host-side objects
    if matroid.rank != usable:
        raise ValueError(
            f"matroid must be Free for double greedy (an unconstrained algorithm), got {matroid!r} with rank "
            f"{matroid.rank} < {usable} usable elements; use greedy or measured_continuous_greedy for a constraint"
        )


def double_greedy(
    f: SetFunction,
    matroid: Partition | None = None,
    *,
    key: jax.Array | None = None,
    randomized: bool = True,
    order: Any = None,
) -> Selection:
    r"""Double greedy maximisation of ``f`` over the usable elements of a free matroid.

    ``queries`` counts :math:`f(\emptyset)`, :math:`f(N)` and two evaluations per usable element, times
    ``f.queries_per_eval``.

    Args:
        f: the set function, ground set size ``n``.
        matroid: a :class:`Free` matroid, possibly contracted (its ``ground`` is the set :math:`N` the algorithm
            runs on); default ``Free(n)``. Double greedy is for the unconstrained case: any other matroid raises.
        key: PRNG key for the coin flips (required when ``randomized``).
        randomized: randomised (1/2) or deterministic (1/3) rule.
        order: permutation of ``range(n)`` giving the element order; default ``0, 1, ..., n-1``.

    Returns:
        :class:`Selection` with the final :math:`X = Y` (bool ``(n,)``).

    Traceable: ``jax.jit``/``jax.vmap`` over ``key``, ``order`` or ``f`` (a batch of noisy oracles, of graphs of one
    size) work; under tracing a permutation check on ``order`` and the free-matroid check on a traced matroid are
    skipped (shapes and dtypes are still checked).

    Raises:
        ValueError: if ``matroid`` is not free (a capacity below its number of usable elements), a concrete ``order`` is
            not a permutation, ``key`` is missing when ``randomized``, or sizes differ.

    References:
        Buchbinder, Feldman, Naor & Schwartz, "A tight linear time (1/2)-approximation for unconstrained
        submodular maximization", FOCS 2012; Bhawalkar et al., NeurIPS 2025 (robustness, unconstrained case).

    Example:
        >>> from nips25_submodular import Modular
        >>> double_greedy(Modular([1.0, -1.0, 0.0]), randomized=False).indices.tolist()
        [0, 2]
    """
    matroid = Free(f.n) if matroid is None and isinstance(f, SetFunction) else matroid
    check_problem(f, matroid)
    assert matroid is not None
    check_free(matroid)
    n = f.n
    perm = jnp.arange(n) if order is None else jnp.asarray(order)
    if perm.shape != (n,) or not jnp.issubdtype(perm.dtype, jnp.integer):
        raise ValueError(f"order must be a permutation of range({n}) (integer, shape ({n},)), got shape {perm.shape}")
    if concrete(perm) and not bool(jnp.array_equal(jnp.sort(perm), jnp.arange(n))):
        raise ValueError(f"order must be a permutation of range({n})")
    if randomized:
        if key is None:
            raise ValueError("key is required when randomized=True")
        u = jax.random.uniform(as_key(key), (n,))
    else:
        u = jnp.zeros(n)
    x = _double_greedy_scan(f, matroid.ground, perm, u, randomized=randomized)
    return Selection(mask=x, queries=count((2 + 2 * matroid.ground.sum()) * f.queries_per_eval))
