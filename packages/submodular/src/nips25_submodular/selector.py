"""A scikit-learn-style selector: facility-location summarisation, optionally through a persistent noisy oracle."""

from __future__ import annotations

from typing import Any, Literal

import jax
import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.metrics.pairwise import rbf_kernel

from nips25_submodular._checks import as_matrix, check_int, check_real
from nips25_submodular.greedy import greedy
from nips25_submodular.matroids import Uniform
from nips25_submodular.meta import noisy_meta
from nips25_submodular.oracle import PersistentNoisyOracle
from nips25_submodular.set_functions import FacilityLocation

__all__ = ["FacilityLocationSelection"]


class FacilityLocationSelection(TransformerMixin, BaseEstimator):  # type: ignore[misc]
    r"""Select ``n_samples`` rows of ``X`` maximising facility location :math:`\sum_j \max_{i \in S} s_{ji}`.

    Same inputs and outputs as apricot's ``FacilityLocationSelection`` (``fit``/``transform``, ``ranking``,
    ``gains``, ``metric="precomputed"``), plus a noisy mode: with ``noise_sigma > 0`` the values are read through a
    multiplicative persistent noisy oracle and ``method`` chooses plain greedy on it (``"naive"``) or the
    smoothing meta-algorithm around greedy (``"meta"``, practical preset, **no worst-case guarantee**).

    Args:
        n_samples: number of rows to select, ``>= 1``.
        metric: ``"rbf"`` (``sklearn.metrics.pairwise.rbf_kernel`` with ``gamma``) or ``"precomputed"``
            (``X`` is a non-negative similarity matrix ``(n, n)``).
        gamma: RBF parameter (scikit-learn's default ``1 / n_features`` when ``None``).
        noise_sigma: standard deviation of the multiplicative noise, ``>= 0``.
        method: ``"naive"`` or ``"meta"`` (only used when ``noise_sigma > 0``; ``"naive"`` without noise is greedy).
        random_state: seed of the noise and of the meta-algorithm.

    Attributes:
        ranking: indices of the selected rows, in the order they were picked (greedy) or ascending (meta).
        gains: marginal gains of the picks (noiseless), shape ``(n_samples,)``.
        queries: oracle queries spent.

    Example:
        >>> X = np.random.default_rng(0).normal(size=(30, 4))
        >>> FacilityLocationSelection(3).fit(X).ranking.shape
        (3,)
    """

    def __init__(
        self,
        n_samples: int = 10,
        *,
        metric: Literal["rbf", "precomputed"] = "rbf",
        gamma: float | None = None,
        noise_sigma: float = 0.0,
        method: Literal["naive", "meta"] = "naive",
        random_state: int = 0,
    ) -> None:
        self.n_samples = n_samples
        self.metric = metric
        self.gamma = gamma
        self.noise_sigma = noise_sigma
        self.method = method
        self.random_state = random_state

    def _similarity(self, X: Any) -> np.ndarray:
        if self.metric == "precomputed":
            as_matrix(X, "X", nonnegative=True, square=True)  # validation only: keep the caller's float64 values
            return np.asarray(X, dtype=np.float64)
        if self.metric == "rbf":
            as_matrix(X, "X")
            return rbf_kernel(np.asarray(X, dtype=np.float64), gamma=self.gamma)
        raise ValueError(f"metric must be 'rbf' or 'precomputed', got {self.metric!r}")

    def fit(self, X: Any, y: Any = None) -> FacilityLocationSelection:
        """Select the rows; ``X`` is ``(n, n_features)`` or, with ``metric="precomputed"``, ``(n, n)``."""
        sim = self._similarity(X)
        n = sim.shape[1]
        k = check_int(self.n_samples, "n_samples", low=1, high=n)
        sigma = check_real(self.noise_sigma, "noise_sigma", low=0.0)
        if self.method not in ("naive", "meta"):
            raise ValueError(f"method must be 'naive' or 'meta', got {self.method!r}")
        f = FacilityLocation(sim)
        key = jax.random.key(check_int(self.random_state, "random_state", low=0))
        k_noise, k_meta = jax.random.split(key)
        oracle = f if sigma == 0 else PersistentNoisyOracle(f, sigma=sigma, key=k_noise)
        if self.method == "meta" and sigma > 0:
            sel = noisy_meta(oracle, Uniform(n, k), "greedy", key=k_meta, monotone=True)
            ranking = sel.indices
        else:
            sel = greedy(oracle, Uniform(n, k))
            assert sel.order is not None
            ranking = sel.order
        mask = np.zeros(n, dtype=bool)
        gains = []
        for i in ranking:
            gains.append(float(f.gains(jax.numpy.asarray(mask))[i]))
            mask[i] = True
        self._n_rows = int(np.shape(X)[0])
        self.ranking = np.asarray(ranking, dtype=np.int64)
        self.gains = np.asarray(gains)
        self.queries = sel.queries
        return self

    def transform(self, X: Any) -> np.ndarray:
        """The selected rows of ``X`` in ranking order: ``X[ranking]``.

        ``X`` is any array whose first axis indexes the ``n`` fitted rows (the fitted data, other columns of the
        same records, or their labels ``(n,)``).

        Raises:
            ValueError: if :meth:`fit` has not been called, or ``X`` does not have ``n`` rows.
        """
        if not hasattr(self, "ranking"):
            raise ValueError("this FacilityLocationSelection is not fitted yet: call fit(X) first")
        arr = np.asarray(X)
        if arr.ndim == 0 or arr.shape[0] != self._n_rows:
            raise ValueError(f"X must have the {self._n_rows} fitted rows on its first axis, got shape {arr.shape}")
        return arr[self.ranking]
