"""Corpora shipped offline, duplicate planting, client splits."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_fedrw import load_corpus, overlapping_clients, plant_duplicates, split_clients


def test_corpora_load_offline_with_known_sizes():
    sonnets = load_corpus("sonnets")
    assert sonnets[0] == "From fairest creatures we desire increase,"
    assert sonnets[-1] == "Love's fire heats water, water cools not love."
    assert 2100 <= len(sonnets) <= 2160 and not any(s.strip() in {"I", "CLIV", ""} for s in sonnets)
    assert len(load_corpus("jokes")) == 283


def test_plant_and_split_known_counts():
    rng = np.random.default_rng(0)
    planted = plant_duplicates([f"s{i}" for i in range(100)], 0.3, rng)
    assert len(planted) == 130 and set(planted[100:]) <= set(planted[:100])
    clients = split_clients(planted, 4, rng)
    assert sorted(s for c in clients for s in c.samples) == sorted(planted)
    blocks = split_clients(list("abcdef"), 2, rng, iid=False)
    assert [c.samples for c in blocks] == [tuple("abc"), tuple("def")]
    over = overlapping_clients([f"p{i}" for i in range(50)], 3, 20, rng, dup_rate=0.5)
    assert [len(c.samples) for c in over] == [30, 30, 30]


def test_corpus_functions_reject_bad_input():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="name"):
        load_corpus("wiki")
    with pytest.raises(ValueError, match="rate"):
        plant_duplicates(["a"], -0.1, rng)
    with pytest.raises(ValueError, match="samples"):
        plant_duplicates([], 0.1, rng)
    with pytest.raises(ValueError, match="n_clients"):
        split_clients(["a", "b"], 1, rng)
    with pytest.raises(ValueError, match="samples"):
        split_clients(["a"], 2, rng)
    with pytest.raises(ValueError, match="pool"):
        overlapping_clients(["a", "b"], 2, 3, rng)
