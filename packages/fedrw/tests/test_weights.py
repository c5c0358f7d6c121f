"""Sample weights: hand values, the soft-dedup identity of 1/F weights, bad inputs."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from nips25_fedrw import Client, PlainOracle, ppmpr_in_process, sample_weights


def test_weights_on_a_hand_built_example():
    f = np.array([1, 2, 3, 4])
    assert sample_weights(f, kind="inv").tolist() == [1.0, 0.5, 1 / 3, 0.25]
    assert sample_weights(f, kind="log") == pytest.approx([1.0, 1 / (1 + math.log(2)), 1 / (1 + math.log(3)),
                                                           1 / (1 + math.log(4))])  # fmt: skip
    assert sample_weights(f, kind="pow", beta=0.5) == pytest.approx([1.0, 2**-0.5, 3**-0.5, 0.5])
    w = sample_weights(f, normalize=True)
    assert w.mean() == pytest.approx(1.0)
    assert sample_weights(np.ones(5), kind="log").tolist() == [1.0] * 5


def test_inverse_frequency_weights_turn_the_duplicated_loss_into_the_deduplicated_loss():
    """With w = 1/F (exact F), sum over all copies of w(x) l(x) equals the sum of l over distinct samples."""
    clients = [Client(0, ("a", "b", "a", "c")), Client(1, ("a", "c", "d")), Client(2, ("d", "d", "e"))]
    loss = {b"a": 1.3, b"b": 0.2, b"c": 2.5, b"d": 0.7, b"e": 1.1}
    res = ppmpr_in_process(clients, backend=PlainOracle(), seed=0)
    total = sum(float(w) * loss[k] for c in clients for k, w in zip(c.keys, sample_weights(res.freq[c.id], kind="inv")))
    assert total == pytest.approx(sum(loss.values()), rel=1e-12)
    counter = Counter(k for c in clients for k in c.keys)
    assert sum(sample_weights(res.freq[c.id], kind="inv").sum() for c in clients) == pytest.approx(len(counter))


@given(
    st.lists(st.integers(min_value=1, max_value=10_000), min_size=1, max_size=50),
    st.sampled_from(["log", "inv", "pow"]),
)
def test_weights_are_in_unit_interval_and_decrease_with_frequency(freq, kind):
    f = np.array(freq)
    w = sample_weights(f, kind=kind)
    assert np.all((w > 0) & (w <= 1))
    order = np.argsort(f)
    assert np.all(np.diff(w[order]) <= 1e-15)


def test_weights_reject_bad_input():
    with pytest.raises(ValueError, match="freq"):
        sample_weights(np.array([]))
    with pytest.raises(ValueError, match="freq"):
        sample_weights(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="freq"):
        sample_weights(np.array([0, 1]))
    with pytest.raises(TypeError, match="freq"):
        sample_weights(np.array(["a"]))
    with pytest.raises(ValueError, match="kind"):
        sample_weights(np.array([1]), kind="sqrt")
    with pytest.raises(ValueError, match="beta"):
        sample_weights(np.array([1]), kind="pow", beta=-1.0)
