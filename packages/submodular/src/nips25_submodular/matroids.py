r"""Partition matroids and their special cases: uniform (cardinality) and free (unconstrained).

A partition matroid splits the ground set into classes :math:`P_1, \dots, P_c` with capacities :math:`k_c`;
:math:`S` is independent iff :math:`|S \cap P_c| \le k_c` for every class. A ``ground`` mask restricts the elements
that may be used at all, which is what contraction produces: :math:`\mathcal I_H = \{S \subseteq N \setminus H :
S \cup H \in \mathcal I\}` (Bhawalkar et al., Algorithm 1, step (d)). Matroids are JAX pytrees; their methods on
masks are jit/vmap-clean, while :attr:`rank`, :meth:`contract` and construction run on the host.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nips25_submodular._checks import as_key, as_mask, check_int

__all__ = ["Free", "Partition", "Uniform"]


class Partition:
    """Partition matroid with per-class capacities, optionally restricted to a ``ground`` subset.

    Args:
        labels: class of each element, integers ``(n,)`` in ``[0, c)``.
        caps: capacity of each class ``(c,)``, non-negative integers.
        ground: boolean ``(n,)``, the usable elements; all when omitted.

    Raises:
        ValueError: if ``labels`` is empty or out of range, a capacity is negative or not an integer, or
            ``ground`` has the wrong shape.

    Example:
        >>> m = Partition([0, 0, 1], [1, 1])
        >>> m.rank, bool(m.independent(jnp.array([True, True, False])))
        (2, False)
    """

    def __init__(self, labels: Any, caps: Any, ground: Any = None) -> None:
        lab = np.asarray(labels)
        if lab.ndim != 1 or lab.size == 0:
            raise ValueError(f"labels must be a non-empty 1-D integer array, got shape {lab.shape}")
        if not np.issubdtype(lab.dtype, np.integer):
            raise TypeError(f"labels must hold integers, got dtype {lab.dtype}")
        cap = np.asarray(caps, dtype=np.float64)  # matroids are built on the host: their rank is static
        if cap.ndim != 1 or cap.size == 0:
            raise ValueError(f"caps must be a non-empty 1-D array, got shape {cap.shape}")
        if not np.isfinite(cap).all() or (cap < 0).any():
            raise ValueError("caps must be finite and non-negative")
        if (cap != np.round(cap)).any():
            raise ValueError("caps must hold integers")
        if lab.min() < 0 or lab.max() >= cap.shape[0]:
            raise ValueError(f"labels must lie in [0, {cap.shape[0]}) (one capacity per class)")
        n = lab.shape[0]
        gr = np.ones(n, dtype=bool) if ground is None else as_mask(ground, "ground", n=n)
        self.labels = jnp.asarray(lab, dtype=jnp.int32)
        self.caps = jnp.asarray(cap, dtype=jnp.int32)
        self.ground = jnp.asarray(gr)

    @property
    def n(self) -> int:
        """Size of the ground set (including elements outside ``ground``)."""
        return int(self.labels.shape[0])

    @property
    def n_classes(self) -> int:
        """Number of classes ``c``."""
        return int(self.caps.shape[0])

    def counts(self, mask: jax.Array) -> jax.Array:
        """Elements of ``mask`` in each class, ``(c,)`` int."""
        return jnp.zeros(self.n_classes, jnp.int32).at[self.labels].add(jnp.asarray(mask, dtype=jnp.int32))

    @property
    def rank(self) -> int:
        r"""Rank :math:`r = \sum_c \min(k_c, |P_c \cap \mathrm{ground}|)` (host-side)."""
        avail = np.bincount(np.asarray(self.labels)[np.asarray(self.ground)], minlength=self.n_classes)
        return int(np.minimum(np.asarray(self.caps), avail).sum())

    def independent(self, mask: jax.Array) -> jax.Array:
        """Whether ``mask`` ``(n,)`` is independent (inside ``ground`` and within every capacity); bool scalar."""
        mask = jnp.asarray(mask, dtype=bool)
        return jnp.all(self.ground | ~mask) & jnp.all(self.counts(mask) <= self.caps)

    def can_add(self, mask: jax.Array) -> jax.Array:
        r"""``(n,)`` bool: element :math:`i \notin S` keeps :math:`S + i` independent (``S`` assumed independent)."""
        mask = jnp.asarray(mask, dtype=bool)
        room = self.counts(mask) < self.caps
        return self.ground & ~mask & room[self.labels]

    def max_weight_independent(self, w: jax.Array, *, positive_only: bool = True) -> jax.Array:
        r"""Maximum-weight independent set for weights ``w`` ``(n,)`` (greedy is exact on matroids).

        In each class the :math:`k_c` heaviest usable elements are kept (ties broken by index); with
        ``positive_only`` only elements of positive weight, else a maximum-weight base.

        Returns:
            Boolean mask ``(n,)``.
        """
        w = jnp.asarray(w)
        eligible = self.ground & ((w > 0) if positive_only else True)
        idx = jnp.arange(self.n)
        same = self.labels[:, None] == self.labels[None, :]
        ahead = (w[None, :] > w[:, None]) | ((w[None, :] == w[:, None]) & (idx[None, :] < idx[:, None]))
        rank_in_class = (same & ahead & eligible[None, :]).sum(axis=1)
        return eligible & (rank_in_class < self.caps[self.labels])

    def random_base(self, key: jax.Array) -> jax.Array:
        """A uniformly random base (max-weight base for i.i.d. uniform weights); boolean ``(n,)``."""
        return self.max_weight_independent(jax.random.uniform(as_key(key), (self.n,)), positive_only=False)

    def contract(self, H: Any) -> Partition:
        r"""The contraction :math:`\mathcal I_H = \{S \subseteq N \setminus H : S \cup H \in \mathcal I\}`.

        Args:
            H: boolean mask ``(n,)`` of an independent set.

        Returns:
            A :class:`Partition` with ``ground`` minus ``H`` and each capacity lowered by ``|H \cap P_c|``.

        Raises:
            ValueError: if ``H`` is not independent.
        """
        h = as_mask(H, "H", n=self.n)
        if not bool(self.independent(jnp.asarray(h))):
            raise ValueError("H must be an independent set of the matroid to contract by it")
        caps = np.asarray(self.caps) - np.asarray(self.counts(jnp.asarray(h)))
        return Partition(np.asarray(self.labels), caps, np.asarray(self.ground) & ~h)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n={self.n}, classes={self.n_classes}, rank={self.rank})"


class Uniform(Partition):
    """Uniform matroid :math:`U_{n,k}`: every set of at most ``k`` elements (a cardinality constraint).

    Example:
        >>> Uniform(5, 2).rank
        2
    """

    def __init__(self, n: int, k: int) -> None:
        n = check_int(n, "n", low=1)
        super().__init__(np.zeros(n, dtype=np.int64), [check_int(k, "k", low=0, high=n)])


class Free(Partition):
    """Free matroid on ``n`` elements: every set is independent (unconstrained maximisation).

    Example:
        >>> Free(4).rank
        4
    """

    def __init__(self, n: int) -> None:
        n = check_int(n, "n", low=1)
        super().__init__(np.zeros(n, dtype=np.int64), [n])


def _flatten(m: Partition) -> tuple[tuple[jax.Array, ...], None]:
    return (m.labels, m.caps, m.ground), None


def _unflatten(cls: type[Partition]) -> Any:
    def build(_: None, children: tuple[jax.Array, ...]) -> Partition:
        obj = object.__new__(cls)
        obj.labels, obj.caps, obj.ground = children
        return obj

    return build


for _cls in (Partition, Uniform, Free):
    jax.tree_util.register_pytree_node(_cls, _flatten, _unflatten(_cls))
