"""Brute-force helpers for the tests."""

from __future__ import annotations

import numpy as np


def all_masks(n: int) -> np.ndarray:
    """All 2^n subsets of range(n) as a boolean (2^n, n) array, mask k holding the bits of k."""
    return ((np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)
