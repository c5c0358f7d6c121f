"""EP-MPD's own protocol (Type I / Type II EG-PSI over its client tree): the speed baseline of issue 33."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from nips25_fedrw import Client, PlainOracle, ep_mpd_hard_dedup, overlapping_clients, trusted_party_dedup
from nips25_fedrw.ep_mpd import EG_PSI_TYPES, ep_mpd_dedup, tree_levels

README = [Client(0, tuple("1234")), Client(1, tuple("3456")), Client(2, tuple("1578"))]


@pytest.mark.parametrize("eg_psi", EG_PSI_TYPES)
def test_both_types_reproduce_the_ep_mpd_readme_example(eg_psi):
    """EP-MPD README: [1,2,3,4], [3,4,5,6], [1,5,7,8] become [2], [3,4,6], [1,5,7,8]."""
    out = ep_mpd_dedup(README, eg_psi=eg_psi)
    assert [c.samples for c in out.clients if c is not None] == [("2",), ("3", "4", "6"), ("1", "5", "7", "8")]
    assert out.protocol == f"ep_mpd_{eg_psi}" and out.psi_runs == 0 and out.eg_psi_instances == 2
    t = out.timings
    assert set(t) == {"setup", "nodes", "clients", "third_party", "parallel", "serial"}
    assert 0 < out.parallel_seconds <= out.seconds and t["parallel"] == out.parallel_seconds
    assert (t["setup"] > 0) == (eg_psi == "type2")  # only Type II has the OPRF setup phase


def test_type1_and_type2_message_bytes_follow_the_protocol():
    """Type I: (32-byte PRF + 4-byte index) per item and partner, 4 bytes per returned index. Type II: 2 x 32 bytes
    per item at setup (blinded point to the TP and back), 32 bytes per remaining group-1 item per group-0 partner."""
    # Type I, node ([1], [2]): 4 + 4 ciphertexts, 1 hit ("5"); root ([0], [1, 2]): 3 + 4 + 2 x 4, 3 hits
    assert ep_mpd_dedup(README, eg_psi="type1").transcript_bytes == (8 * 36 + 4) + (15 * 36 + 3 * 4)
    # Type II: setup 12 items; node ([1], [2]): client 2's 4 values; root: client 1's 3 and client 2's 4 values
    assert ep_mpd_dedup(README, eg_psi="type2").transcript_bytes == 12 * 64 + 4 * 32 + 7 * 32


def test_every_ep_mpd_variant_keeps_the_same_samples_as_the_tree_and_each_distinct_once():
    pool = [f"line {i}" for i in range(40)]
    for k in (2, 3, 5, 6):
        clients = overlapping_clients(pool, k, 12, np.random.default_rng(k))  # local repeats at rate 0.3
        tree = ep_mpd_hard_dedup(clients, backend=PlainOracle())
        distinct = {x for c in clients for x in c.keys}
        for eg_psi in EG_PSI_TYPES:
            out = ep_mpd_dedup(clients, eg_psi=eg_psi)
            assert out.kept == tree.kept, (k, eg_psi)
            kept = [x for c in out.clients if c is not None for x in c.keys]
            assert sorted(kept) == sorted(distinct)  # every distinct sample exactly once
            # it survives at the right-most client holding it
            for c in out.clients:
                for x in c.keys if c is not None else ():
                    assert max(j for j, d in enumerate(clients) if x in d.keys) == c.id
        assert len(trusted_party_dedup(clients).kept) == k


def test_tree_levels_cover_every_pair_once_in_ep_mpd_splits():
    for k in range(2, 18):
        levels = tree_levels(k)
        nodes = [n for level in levels for n in level]
        assert len(nodes) == k - 1
        assert levels[0] == [(list(range(k // 2)), list(range(k // 2, k)))]  # root splits at the middle
        covered = sorted((a, b) for g0, g1 in nodes for a in g0 for b in g1)
        assert covered == list(itertools.combinations(range(k), 2))  # each pair meets at exactly one node
        for level in levels:  # nodes of one level are disjoint (they run in parallel)
            ids = [i for g0, g1 in level for i in g0 + g1]
            assert len(ids) == len(set(ids))


def test_ep_mpd_rejects_bad_input():
    with pytest.raises(ValueError, match="eg_psi"):
        ep_mpd_dedup(README, eg_psi="type3")
    with pytest.raises(TypeError, match="clients"):
        ep_mpd_dedup("ab")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_clients"):
        tree_levels(1)
