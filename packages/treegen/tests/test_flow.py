"""Discrete BFN: simplex, exact Bayes, uniform flow at t=0, loss zero at the truth, entropy schedule."""

import math

import numpy as np
import pytest
import torch
from nips25_treegen.flow import (
    DiscreteBayesianFlow,
    EntropySchedule,
    bayesian_update,
    entropy_ratio,
    flow_sample,
    sender_sample,
)


def _mask(k, w=None):
    w = w or k
    return (torch.arange(w) < k)[None].expand(4, -1).contiguous()


def test_update_is_explicit_bayes_and_stays_on_simplex():
    """theta' = theta e^y / sum(theta e^y), computed independently in float64 numpy."""
    gen = torch.Generator().manual_seed(0)
    mask = _mask(5, 7)
    theta = torch.softmax(torch.randn(4, 7, generator=gen).masked_fill(~mask, -math.inf), -1)
    y = sender_sample(torch.tensor([0, 1, 2, 4]), torch.full((4,), 0.7), mask, generator=gen)
    new = bayesian_update(theta, y, mask)
    th, yy = theta.double().numpy()[:, :5], y.double().numpy()[:, :5]
    ref = th * np.exp(yy) / (th * np.exp(yy)).sum(-1, keepdims=True)
    assert np.allclose(new.numpy()[:, :5], ref, atol=1e-5)
    assert torch.all(new[:, 5:] == 0) and torch.allclose(new.sum(-1), torch.ones(4))
    assert torch.all(new >= 0)


def test_flow_uniform_at_t0_and_onehot_at_large_accuracy():
    mask = _mask(6)
    x = torch.tensor([0, 3, 5, 2])
    assert torch.allclose(flow_sample(x, torch.zeros(4), mask), torch.full((4, 6), 1 / 6))
    sharp = flow_sample(x, torch.full((4,), 1e4), mask)
    assert torch.equal(sharp.argmax(-1), x) and torch.all(sharp.max(-1).values > 0.999)


def test_loss_is_zero_at_truth_and_positive_elsewhere():
    flow = DiscreteBayesianFlow(schedule="quadratic", beta1=3.0)
    mask = torch.ones(1, 4, dtype=torch.bool)  # one row of K = 4 classes, batch of 4
    x = torch.tensor([[0], [1], [2], [3]])
    onehot = torch.nn.functional.one_hot(x, 4).float()
    t = torch.full((4,), 0.5)
    assert torch.all(flow.loss(x, onehot, mask, t) == 0)
    uniform = torch.full((4, 1, 4), 0.25)
    # (K/2) * beta'(t) * ||e_x - u||^2 = 2 * (2 * 3 * 0.5) * 0.75
    assert torch.allclose(flow.loss(x, uniform, mask, t), torch.full((4, 1), 2 * 3.0 * 0.75))


@pytest.mark.parametrize(("k", "expected"), [(2, 0.71), (8, 0.40), (32, 0.035)])
def test_entropy_ratio_at_beta_half(k, expected):
    """E[H(theta)]/log K at beta = 0.5: 0.71, 0.40, 0.035 for K = 2, 8, 32 (the brief's Monte Carlo values)."""
    assert entropy_ratio(0.5, k, n_mc=20000) == pytest.approx(expected, abs=0.01)


def test_consistent_schedule_follows_target_for_all_k():
    """|h_K(beta_K(t)) - h(t)| < 0.02 for K = 2..32 on a grid of t (fresh Monte Carlo, other seed)."""
    sched = EntropySchedule(k_max=32)
    ts = np.linspace(0.0, 1.0, 11)
    worst = 0.0
    for k in (2, 3, 5, 8, 13, 21, 32):
        betas = sched.beta(k, ts)
        h = np.array([entropy_ratio(float(b), k, n_mc=6000, seed=7) for b in betas])
        worst = max(worst, float(np.abs(h - sched.target(ts)).max()))
        assert np.all(np.diff(betas) >= 0)
    assert worst < 0.02
    assert np.all(sched.dbeta_dt(4, np.array([0.2, 0.8])) > 0)


def test_flow_rejects_bad_input():
    with pytest.raises(ValueError, match="h_min"):
        EntropySchedule(h_min=1.5)
    with pytest.raises(ValueError, match="k must"):
        EntropySchedule(k_max=4).beta(9, 0.5)
    with pytest.raises(ValueError, match="t must"):
        EntropySchedule(k_max=4).beta(3, 1.5)
    with pytest.raises(ValueError, match="schedule"):
        DiscreteBayesianFlow(schedule="cosine")
    with pytest.raises(ValueError, match="alpha"):
        sender_sample(torch.tensor([0]), torch.tensor([-1.0]), torch.ones(1, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="mask"):
        bayesian_update(torch.ones(2, 3) / 3, torch.zeros(2, 3), torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="k must"):
        entropy_ratio(0.5, 1)
    with pytest.raises(ValueError, match="x must"):
        sender_sample(torch.tensor([5]), torch.tensor([1.0]), torch.ones(1, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="x must"):
        sender_sample(torch.tensor([2]), torch.tensor([1.0]), torch.tensor([[True, True, False]]))
    with pytest.raises(ValueError, match="x must"):
        sender_sample(torch.tensor([0, 1]), torch.tensor([1.0]), torch.ones(1, 3, dtype=torch.bool))


def test_entropy_table_is_deterministic_and_the_cache_holds_a_fresh_build(tmp_path, monkeypatch):
    """Issue 42: the cached table is a pure function of its key (seeded Monte Carlo on one torch thread), so it does
    not matter which process builds it; the cache entry (written atomically, sha256 beside it) is that build."""
    import nips25_treegen.flow as flow

    monkeypatch.setenv("NIPS25_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(flow, "_TABLES", {})
    schedule = EntropySchedule(k_max=4, n_grid=16, n_mc=200)  # builds and caches the table
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        again = schedule._build()
    finally:
        torch.set_num_threads(threads)
    (entry,) = tmp_path.glob("treegen-entropy-k4-*.npz")
    assert entry.with_name(entry.name + ".sha256").is_file()
    with np.load(entry) as stored:
        for key, value in schedule._build().items():
            assert np.array_equal(value, again[key]) and np.array_equal(value, stored[key])
