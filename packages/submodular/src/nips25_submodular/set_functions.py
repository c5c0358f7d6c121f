r"""Set functions on boolean masks: facility location, graph cut, coverage and modular functions.

A set :math:`S \subseteq N`, :math:`N = \{0, \dots, n-1\}`, is a boolean mask of shape ``(n,)``. Every set function
is a JAX pytree (its arrays are leaves), so it can be passed through ``jax.jit`` and ``jax.vmap`` and the algorithms
compile once per shape. ``f(mask)`` is the value; ``f.gains(mask)`` the vector of marginal gains
:math:`f(S \cup \{i\}) - f(S)` for every :math:`i` (zero for :math:`i \in S`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from nips25_submodular._checks import as_matrix, as_vector, concrete, mask_arg

__all__ = ["Coverage", "FacilityLocation", "GraphCut", "Modular", "SetFunction"]


class SetFunction:
    """Base class of set functions :math:`f: 2^N \\to \\mathbb{R}` evaluated on boolean masks ``(n,)``.

    Subclasses list their array attributes in ``_leaves`` (pytree children) and their static attributes in
    ``_static``; they are registered as JAX pytrees automatically. They implement :meth:`value` and may override
    :meth:`gains` with a closed form.

    Attributes:
        queries_per_eval: oracle queries one evaluation of this function costs (1 for a plain function or an
            oracle, ``m`` for the smoothing surrogate, which averages ``m`` oracle values).
    """

    _leaves: ClassVar[tuple[str, ...]] = ()
    _static: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        jax.tree_util.register_pytree_node(cls, cls._tree_flatten, cls._tree_unflatten)

    def _tree_flatten(self) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        return tuple(getattr(self, k) for k in self._leaves), tuple(getattr(self, k) for k in self._static)

    @classmethod
    def _tree_unflatten(cls, aux: tuple[Any, ...], children: tuple[Any, ...]) -> SetFunction:
        obj = object.__new__(cls)
        for k, v in zip(cls._leaves, children):
            object.__setattr__(obj, k, v)
        for k, v in zip(cls._static, aux):
            object.__setattr__(obj, k, v)
        return obj

    @property
    def n(self) -> int:
        """Size of the ground set."""
        raise NotImplementedError

    @property
    def queries_per_eval(self) -> int:
        """Oracle queries one evaluation costs."""
        return 1

    def value(self, mask: jax.Array) -> jax.Array:
        """:math:`f(S)` for a boolean mask ``(n,)``; a float scalar."""
        raise NotImplementedError

    def __call__(self, mask: Any) -> jax.Array:
        """:math:`f(S)`; ``mask`` is checked (shape ``(n,)``, bool or integer dtype; 0/1 values when concrete).

        Traceable: under ``jit``/``vmap`` only the shape and dtype are checked.

        Raises:
            ValueError: if ``mask`` does not have shape ``(n,)``.
            TypeError: if ``mask`` is not boolean (or 0/1 integers).
        """
        return self.value(mask_arg(mask, "mask", n=self.n))

    def gains(self, mask: jax.Array) -> jax.Array:
        r"""Marginal gains :math:`f(S \cup \{i\}) - f(S)` for all :math:`i`, shape ``(n,)``; zero for :math:`i \in S`.

        The default evaluates :math:`f` on the ``n`` augmented masks with ``jax.vmap``.
        """
        mask = jnp.asarray(mask, dtype=bool)
        plus = mask[None, :] | jnp.eye(self.n, dtype=bool)
        return jnp.where(mask, 0.0, jax.vmap(self.value)(plus) - self.value(mask))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n={self.n})"


class FacilityLocation(SetFunction):
    r"""Facility location :math:`f(S) = \sum_{j} \max_{i \in S} s_{ji}` with :math:`f(\emptyset) = 0`.

    Monotone submodular for a non-negative similarity matrix.

    Args:
        sim: similarities ``(n_data, n)``, non-negative and finite: ``sim[j, i]`` is how well candidate ``i``
            represents data point ``j``. The ground set is the ``n`` columns.

    Raises:
        ValueError: if ``sim`` is not 2-D, empty, negative or not finite.

    Example:
        >>> f = FacilityLocation([[1.0, 0.0], [0.5, 1.0]])
        >>> float(f([True, False])), float(f([True, True]))
        (1.5, 2.0)
    """

    _leaves = ("sim",)

    def __init__(self, sim: Any) -> None:
        self.sim = as_matrix(sim, "sim", nonnegative=True)

    @property
    def n(self) -> int:
        return int(self.sim.shape[1])

    def _cover(self, mask: jax.Array) -> jax.Array:
        return jnp.max(jnp.where(mask[None, :], self.sim, 0.0), axis=1)

    def value(self, mask: jax.Array) -> jax.Array:
        return self._cover(mask).sum()

    def gains(self, mask: jax.Array) -> jax.Array:
        mask = jnp.asarray(mask, dtype=bool)
        cover = self._cover(mask)
        return jnp.where(mask, 0.0, jnp.maximum(self.sim - cover[:, None], 0.0).sum(axis=0))


class GraphCut(SetFunction):
    r"""Cut function :math:`f(S) = \sum_{i \in S, j \notin S} W_{ij}` of an undirected weighted graph.

    Non-negative, symmetric and (non-monotone) submodular; its maximum is the max-cut.

    Args:
        W: symmetric non-negative weights ``(n, n)``; the diagonal (self-loops) is ignored.

    Raises:
        ValueError: if ``W`` is not square, not symmetric, negative or not finite.

    Example:
        >>> f = GraphCut([[0, 1, 0], [1, 0, 2], [0, 2, 0]])
        >>> float(f([False, True, False]))
        3.0
    """

    _leaves = ("W",)

    def __init__(self, W: Any) -> None:
        w = as_matrix(W, "W", nonnegative=True, square=True)
        if concrete(w) and not bool(jnp.allclose(w, w.T)):
            raise ValueError("W must be symmetric (an undirected graph)")
        self.W = jnp.where(jnp.eye(w.shape[0], dtype=bool), 0.0, w)

    @property
    def n(self) -> int:
        return int(self.W.shape[0])

    def value(self, mask: jax.Array) -> jax.Array:
        x = mask.astype(self.W.dtype)
        return x @ self.W @ (1.0 - x)

    def gains(self, mask: jax.Array) -> jax.Array:
        mask = jnp.asarray(mask, dtype=bool)
        x = mask.astype(self.W.dtype)
        return jnp.where(mask, 0.0, self.W @ (1.0 - 2.0 * x))


class Coverage(SetFunction):
    r"""Weighted coverage :math:`f(S) = \sum_{u} w_u \, \mathbb{1}[\exists i \in S: A_{ui} = 1]`.

    Monotone submodular.

    Args:
        incidence: ``(n_items, n)`` 0/1 matrix; ``incidence[u, i]`` says whether element ``i`` covers item ``u``.
        weights: item weights ``(n_items,)``, non-negative; all ones when omitted.

    Raises:
        ValueError: if the shapes disagree, an entry of ``incidence`` is not 0/1 or a weight is negative.

    Example:
        >>> f = Coverage([[1, 0], [1, 1], [0, 1]], weights=[1.0, 2.0, 4.0])
        >>> float(f([True, False]))
        3.0
    """

    _leaves = ("incidence", "weights")

    def __init__(self, incidence: Any, weights: Any = None) -> None:
        inc = as_matrix(incidence, "incidence")
        if concrete(inc) and not bool(jnp.all((inc == 0) | (inc == 1))):
            raise ValueError("incidence must hold only 0 and 1")
        w = jnp.ones(inc.shape[0]) if weights is None else as_vector(weights, "weights", nonnegative=True)
        if w.shape[0] != inc.shape[0]:
            raise ValueError(f"weights must have shape ({inc.shape[0]},) (one per item), got {w.shape}")
        self.incidence = inc
        self.weights = w

    @property
    def n(self) -> int:
        return int(self.incidence.shape[1])

    def _uncovered(self, mask: jax.Array) -> jax.Array:
        return (self.incidence @ mask.astype(self.incidence.dtype)) == 0

    def value(self, mask: jax.Array) -> jax.Array:
        return jnp.where(self._uncovered(mask), 0.0, self.weights).sum()

    def gains(self, mask: jax.Array) -> jax.Array:
        mask = jnp.asarray(mask, dtype=bool)
        fresh = jnp.where(self._uncovered(mask), self.weights, 0.0)
        return jnp.where(mask, 0.0, fresh @ self.incidence)


class Modular(SetFunction):
    r"""Modular (linear) function :math:`f(S) = \sum_{i \in S} w_i`; weights may have any sign.

    Args:
        w: weights ``(n,)``, finite.

    Example:
        >>> float(Modular([1.0, -2.0, 3.0])([True, True, True]))
        2.0
    """

    _leaves = ("w",)

    def __init__(self, w: Any) -> None:
        self.w = as_vector(w, "w")

    @property
    def n(self) -> int:
        return int(self.w.shape[0])

    def value(self, mask: jax.Array) -> jax.Array:
        return jnp.where(mask, self.w, 0.0).sum()

    def gains(self, mask: jax.Array) -> jax.Array:
        return jnp.where(jnp.asarray(mask, dtype=bool), 0.0, self.w)
