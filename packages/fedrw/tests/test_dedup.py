"""Hard-deduplication baselines: EP-MPD's README example, the trusted party, agreement on the distinct set."""

from __future__ import annotations

import pytest
from nips25_fedrw import Client, PlainOracle, ep_mpd_hard_dedup, trusted_party_dedup


def test_ep_mpd_tree_reproduces_the_readme_example():
    """EP-MPD README: [1,2,3,4], [3,4,5,6], [1,5,7,8] become [2], [3,4,6], [1,5,7,8]."""
    clients = [Client(0, tuple("1234")), Client(1, tuple("3456")), Client(2, tuple("1578"))]
    out = ep_mpd_hard_dedup(clients)
    assert [c.samples for c in out.clients if c is not None] == [("2",), ("3", "4", "6"), ("1", "5", "7", "8")]
    assert out.psi_runs == 3 and out.parallel_seconds <= out.seconds + 1e-12


def test_both_hard_dedups_keep_each_distinct_sample_exactly_once():
    clients = [Client(0, ("a", "b", "a", "c")), Client(1, ("c", "d", "d")), Client(2, ("a", "e")), Client(3, ("e",))]
    trusted = trusted_party_dedup(clients)
    tree = ep_mpd_hard_dedup(clients, backend=PlainOracle())
    for res in (trusted, tree):
        kept = sorted(s for c in res.clients if c is not None for s in c.samples)
        assert kept == ["a", "b", "c", "d", "e"]
    assert [c.samples for c in trusted.clients if c is not None] == [("a", "b", "c"), ("d",), ("e",)]
    assert tree.clients[3] is not None and trusted.clients[3] is None


def test_dedup_rejects_bad_input():
    with pytest.raises(TypeError, match="clients"):
        trusted_party_dedup("ab")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"clients\[0\]"):
        ep_mpd_hard_dedup([("a",), ("b",)])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="backend"):
        ep_mpd_hard_dedup([Client(0, ("a",)), Client(1, ("b",))], backend="psi")  # type: ignore[arg-type]
