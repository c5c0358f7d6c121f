"""The result every maximisation algorithm returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Selection"]


@dataclass(frozen=True)
class Selection:
    """A selected set and how it was found.

    Attributes:
        mask: boolean ``(n,)``, the selected set.
        queries: value-oracle queries spent (analytic count; see each algorithm's docstring).
        order: elements in the order they were picked ``(k,)`` (greedy), else ``None``.
        gains: the (possibly noisy) marginal gain of each pick ``(k,)`` (greedy), else ``None``.
        y: the fractional point ``(n,)`` before rounding (continuous greedy), else ``None``.
        info: algorithm-specific extras (the meta-algorithm's ``H``, subsets, guarantee flag, ...).
    """

    mask: np.ndarray
    queries: int
    order: np.ndarray | None = None
    gains: np.ndarray | None = None
    y: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def indices(self) -> np.ndarray:
        """Indices of the selected elements, ascending."""
        return np.flatnonzero(self.mask)
