"""Small fixed instances shared by the tests."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_routing import ANNEstimator, HistoryStore


def make_history(seed: int = 0, *, n: int = 300, dim: int = 8, n_models: int = 3, clusters: int = 6) -> HistoryStore:
    """Clustered embeddings with continuous quality and cost (no ties)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(clusters, dim)) * 3
    label = rng.integers(0, clusters, size=n)
    emb = centers[label] + rng.normal(size=(n, dim))
    quality = rng.uniform(0.05, 0.95, size=(n, n_models))
    cost = rng.uniform(0.5, 2.0, size=(n, n_models)) * np.linspace(1.0, 4.0, n_models)
    return HistoryStore(emb, quality, cost, [f"m{i}" for i in range(n_models)])


@pytest.fixture
def history() -> HistoryStore:
    return make_history()


@pytest.fixture
def estimator(history: HistoryStore) -> ANNEstimator:
    return ANNEstimator(history, backend="faiss-flat", k=5)
