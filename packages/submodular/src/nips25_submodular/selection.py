"""The result every maximisation algorithm returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

import jax
import numpy as np

__all__ = ["Selection"]


@partial(
    jax.tree_util.register_dataclass, data_fields=["mask", "queries", "order", "gains", "y", "info"], meta_fields=[]
)
@dataclass(frozen=True)
class Selection:
    """A selected set and how it was found; a JAX pytree, so ``jax.vmap``/``jax.jit`` of an algorithm return one
    with a leading batch axis on every array.

    Attributes:
        mask: boolean ``(n,)`` JAX array, the selected set.
        queries: value-oracle queries spent (analytic count; see each algorithm's docstring): a Python ``int``,
            or an int32 array when the algorithm ran under ``jit``/``vmap``.
        order: elements in the order they were picked ``(k,)`` (greedy), else ``None``.
        gains: the (possibly noisy) marginal gain of each pick ``(k,)`` (greedy), else ``None``.
        y: the fractional point ``(n,)`` before rounding (continuous greedy), else ``None``.
        info: algorithm-specific extras (the meta-algorithm's ``H``, subsets, guarantee flag, ...).
    """

    mask: Any
    queries: Any
    order: Any = None
    gains: Any = None
    y: Any = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def indices(self) -> np.ndarray:
        """Indices of the selected elements, ascending (host-side NumPy; not for traced selections)."""
        return np.flatnonzero(np.asarray(self.mask))
