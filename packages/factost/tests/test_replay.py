"""Reservoir replay buffer: bounded, uniform inclusion (chi-squared), uniform sampling, bad inputs."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_factost import ReplayBuffer
from scipy import stats


def test_bounded_and_keeps_everything_until_full():
    buf = ReplayBuffer(5, seed=0)
    buf.add_batch(np.arange(6.0).reshape(3, 2), np.array([0, 1, 2]))
    assert len(buf) == 3 and sorted(buf.ids.tolist()) == [0, 1, 2]
    buf.add_batch(np.zeros((100, 2)), np.zeros(100, dtype=int))
    assert len(buf) == 5 and buf.seen == 103
    assert buf.contents()[0].shape == (5, 2)


def test_inclusion_is_uniform_chi_squared():
    """After a stream of 40 items into a buffer of 10, every item is held with probability 1/4 (chi^2, fixed seed)."""
    n_items, capacity, trials = 40, 10, 1500
    counts = np.zeros(n_items)
    for t in range(trials):
        buf = ReplayBuffer(capacity, seed=t)
        buf.add_batch(np.arange(n_items, dtype=float)[:, None], np.zeros(n_items, dtype=int))
        counts[buf.ids] += 1
    assert counts.sum() == capacity * trials
    expected = np.full(n_items, capacity * trials / n_items)
    assert stats.chisquare(counts, expected).pvalue > 0.001
    # early and late arrivals are equally likely to be held (Algorithm R's defining property)
    assert abs(counts[:20].sum() - counts[20:].sum()) < 0.1 * counts.sum()


def test_sample_is_uniform_over_contents():
    buf = ReplayBuffer(8, seed=0)
    buf.add_batch(np.arange(8.0)[:, None], np.arange(8))
    windows, domains = buf.sample(8000)
    assert np.array_equal(windows[:, 0], domains.astype(float))
    assert stats.chisquare(np.bincount(domains, minlength=8)).pvalue > 0.001


def test_bad_inputs():
    with pytest.raises(ValueError, match="capacity"):
        ReplayBuffer(0)
    buf = ReplayBuffer(3)
    with pytest.raises(ValueError, match="empty"):
        buf.sample(1)
    with pytest.raises(ValueError, match="windows"):
        buf.add_batch(np.zeros(3), np.zeros(3, dtype=int))
    with pytest.raises(ValueError, match="domains"):
        buf.add_batch(np.zeros((3, 2)), np.zeros(2, dtype=int))
    with pytest.raises(ValueError, match="inf"):
        buf.add_batch(np.full((1, 2), np.inf), np.zeros(1, dtype=int))
    buf.add_batch(np.zeros((1, 2)), np.zeros(1, dtype=int))
    with pytest.raises(ValueError, match="length"):
        buf.add_batch(np.zeros((1, 3)), np.zeros(1, dtype=int))
    with pytest.raises(ValueError, match="n must"):
        buf.sample(0)
