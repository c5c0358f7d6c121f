"""Continual memory replay (FactoST Stage 2, [reconstructed]): a reservoir of pretraining windows with domain ids."""

from __future__ import annotations

import numpy as np

__all__ = ["ReplayBuffer"]


class ReplayBuffer:
    """Reservoir sample (Vitter's Algorithm R) of pretraining windows and their domain ids.

    After ``n`` windows were offered, each of them is held with probability ``min(1, capacity / n)``, independently
    of the order of arrival; the buffer never holds more than ``capacity`` windows.

    Args:
        capacity: maximum number of windows kept, ``>= 1`` (default of the design: 1024).
        seed: seed of the buffer's own generator.

    Example:
        >>> buf = ReplayBuffer(2, seed=0)
        >>> buf.add_batch(np.arange(12.0).reshape(4, 3), np.array([0, 0, 1, 1]))
        >>> len(buf), buf.seen
        (2, 4)
    """

    def __init__(self, capacity: int, *, seed: int = 0) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 1:
            raise ValueError(f"capacity must be an integer >= 1, got {capacity!r}")
        self.capacity = int(capacity)
        self._rng = np.random.default_rng(seed)
        self._windows: np.ndarray | None = None
        self._domains = np.zeros(self.capacity, dtype=np.int64)
        self._ids = np.zeros(self.capacity, dtype=np.int64)
        self.seen = 0

    def reseed(self, seed: int) -> None:
        """Restart the buffer's generator (replacement and sampling draws) from ``seed``."""
        self._rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return min(self.seen, self.capacity)

    def add_batch(self, windows: np.ndarray, domains: np.ndarray) -> None:
        """Offer windows ``(n, W)`` (float, NaN = missing) with domain ids ``(n,)`` to the reservoir, in order."""
        windows = np.asarray(windows, dtype=np.float64)
        domains = np.asarray(domains)
        if windows.ndim != 2 or windows.shape[0] == 0 or windows.shape[1] == 0:
            raise ValueError(f"windows must have shape (n, W) with n, W >= 1, got {windows.shape}")
        if domains.shape != (windows.shape[0],) or domains.dtype.kind not in "iu":
            raise ValueError(f"domains must be integer ids of shape ({windows.shape[0]},), got {domains.shape}")
        if np.isinf(windows).any():
            raise ValueError("windows must not contain inf")
        if self._windows is None:
            self._windows = np.zeros((self.capacity, windows.shape[1]))
        elif windows.shape[1] != self._windows.shape[1]:
            raise ValueError(f"windows have length {windows.shape[1]}, the buffer holds {self._windows.shape[1]}")
        for row, dom in zip(windows, domains):
            slot = self.seen if self.seen < self.capacity else int(self._rng.integers(0, self.seen + 1))
            if slot < self.capacity:
                self._windows[slot] = row
                self._domains[slot] = dom
                self._ids[slot] = self.seen
            self.seen += 1

    @property
    def ids(self) -> np.ndarray:
        """Arrival indices (0-based) of the windows held, ``(len(self),)``."""
        return self._ids[: len(self)].copy()

    def contents(self) -> tuple[np.ndarray, np.ndarray]:
        """All held windows ``(len, W)`` and domain ids ``(len,)`` (copies)."""
        if self._windows is None:
            raise ValueError("the replay buffer is empty")
        return self._windows[: len(self)].copy(), self._domains[: len(self)].copy()

    def sample(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``n`` windows drawn uniformly with replacement from the buffer: ``((n, W), (n,))``."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n must be an integer >= 1, got {n!r}")
        windows, domains = self.contents()
        idx = self._rng.integers(0, len(self), size=n)
        return windows[idx], domains[idx]
