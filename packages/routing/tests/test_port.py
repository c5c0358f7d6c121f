"""PORT's learning phase, determinism, and saved/restored state."""

from __future__ import annotations

import math

import numpy as np
import pytest
from nips25_routing import ANNEstimator, PORTRouter
from scipy.stats import chisquare

from .conftest import make_history


@pytest.mark.parametrize("batch_size", [1, 7, 256])
def test_learning_phase_is_ceil_eps_n_uniform_actions_before_the_fit(batch_size):
    """Exactly ceil(eps N) actions are uniform on {0..M} (chi-square), and gamma is fitted on exactly those."""
    hist = make_history(0)
    est = ANNEstimator(hist, backend="faiss-flat")
    n_total, eps = 3000, 0.35
    stream = np.random.default_rng(1).normal(size=(n_total, 8)) * 3
    router = PORTRouter(est, [50.0, 50.0, 50.0], n_total=n_total, eps=eps, alpha=1.0, seed=2)
    actions = np.concatenate([router.route(stream[i : i + batch_size]) for i in range(0, n_total, batch_size)])
    n_learn = math.ceil(eps * n_total)
    assert router.n_learn == n_learn
    assert sum(x.shape[0] for x in router._learn_d) == n_learn
    counts = np.bincount(actions[:n_learn], minlength=4)
    assert chisquare(counts).pvalue > 1e-3
    assert (actions[n_learn:] < 3).all()  # the exploit phase never drops


def test_same_seed_same_decisions():
    """Determinism: two routers with the same seed route a stream identically; another seed differs."""
    est = ANNEstimator(make_history(0), backend="faiss-hnsw")
    stream = np.random.default_rng(1).normal(size=(500, 8)) * 3
    kw = {"n_total": 500, "eps": 0.2, "alpha": 1.0}
    a = PORTRouter(est, [30.0, 30.0, 30.0], seed=7, **kw).route(stream)
    b = PORTRouter(est, [30.0, 30.0, 30.0], seed=7, **kw).route(stream)
    c = PORTRouter(est, [30.0, 30.0, 30.0], seed=8, **kw).route(stream)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_saved_state_resumes_exactly(tmp_path):
    """Routing half a stream, saving, loading and routing the rest equals routing it in one go."""
    est = ANNEstimator(make_history(0), backend="faiss-flat")
    stream = np.random.default_rng(1).normal(size=(400, 8)) * 3
    kw = {"n_total": 400, "eps": 0.3, "alpha": 1.0, "seed": 3}
    whole = PORTRouter(est, [30.0, 30.0, 30.0], **kw).route(stream)
    first = PORTRouter(est, [30.0, 30.0, 30.0], **kw)
    head = first.route(stream[:100])  # still inside the learning phase (120 queries)
    path = first.save(tmp_path / "state.json")
    resumed = PORTRouter.load(path, est)
    tail = resumed.route(stream[100:])
    assert np.array_equal(np.concatenate([head, tail]), whole)
