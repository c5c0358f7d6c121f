"""PORT's learning phase, determinism, and saved/restored state."""

from __future__ import annotations

import itertools
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


def test_route_gives_the_decisions_of_alg1_composed_by_hand_on_a_fixed_stream():
    """The optimised route path (one validation, one gather) decides exactly as Alg. 1 written out step by step:
    kNN means, ceil(eps N) uniform actions on {0..M}, the dual fit on them, then the tie-broken price argmax."""
    from nips25_routing import fit_dual
    from nips25_routing.dual import alpha_vector
    from nips25_routing.ties import argmax_random_ties

    hist = make_history(0, n=400, n_models=4)
    est = ANNEstimator(hist, backend="faiss-hnsw")
    stream = np.random.default_rng(1).normal(size=(700, 8)) * 3
    budgets, kw = [20.0, 25.0, 30.0, 35.0], {"n_total": 700, "eps": 0.1, "alpha": 1.0, "seed": 4}
    router = PORTRouter(est, budgets, **kw)
    got = np.concatenate([router.route(stream[i : i + 64]) for i in range(0, 700, 64)])

    rng = np.random.default_rng(4)
    idx = est.neighbors(stream)
    d, g = hist.quality[idx].mean(axis=1), hist.cost[idx].mean(axis=1)
    n_learn = math.ceil(0.1 * 700)
    want = np.empty(700, dtype=np.int64)
    want[:n_learn] = rng.integers(0, 5, size=n_learn)
    gamma = fit_dual(d[:n_learn], g[:n_learn], np.asarray(budgets), alpha=1.0, eps=0.1).gamma
    # the router draws its tie-breaking uniforms batch by batch; the first exploit batch starts mid-batch
    bounds = [n_learn, *range((n_learn // 64 + 1) * 64, 700, 64), 700]
    for start, stop in itertools.pairwise(bounds):
        s = d[start:stop] * alpha_vector(1.0, 4) - g[start:stop] * gamma
        want[start:stop] = argmax_random_ties(s, rng)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(router.gamma_, gamma)
