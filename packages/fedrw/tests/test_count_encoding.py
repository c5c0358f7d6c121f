"""Count-encoded PSI with a cap T: capped frequencies equal plaintext counts; what a client learns under it."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_fedrw import (
    Client,
    PlainOracle,
    answerer_items,
    capped_counts,
    plaintext_frequencies,
    ppmpr_in_process,
    querier_items,
    simulate,
)


def _clients() -> list[Client]:
    return [
        Client(0, ("the rose", "the rose", "summer day", "only zero line")),
        Client(1, ("the rose",) * 5 + ("summer day", "only one line")),
        Client(2, ("the rose", "the rose", "the rose", "only two line", "summer day", "summer day")),
    ]


def test_encoding_known_answer_matches_are_capped_counts():
    """Hand example: answerer holds x 5 times and y once; with T = 3 the querier's matches are min(c, 3)."""
    q = querier_items([b"x", b"y", b"z"], count_cap=3)
    a = answerer_items([b"x", b"y"], np.array([5, 1]), count_cap=3)
    assert len(q) == 9 and len(a) == 4 and len(set(q)) == 9
    run = PlainOracle().intersect(q, a)
    assert capped_counts(run.indices, 3, count_cap=3).tolist() == [3, 1, 0]
    # the 4-byte copy prefix keeps x||t unambiguous even when an item looks like an encoded one
    assert len(set(querier_items([b"a", b"\x00\x00\x00\x01a"], count_cap=2))) == 4


@pytest.mark.parametrize("cap", [1, 2, 3, 8])
def test_count_encoded_ppmpr_frequencies_equal_capped_plaintext_counts(cap):
    """Through openmined-psi: F_i(x) = c_i(x) + sum_j min(c_j(x), T), for every sample of every client."""
    clients = _clients()
    res = ppmpr_in_process(clients, seed=0, count_cap=cap)
    local = [Counter(c.keys) for c in clients]
    for c in clients:
        hand = [local[c.id][x] + sum(min(o[x], cap) for j, o in enumerate(local) if j != c.id) for x in c.keys]
        assert res.freq[c.id].tolist() == hand == plaintext_frequencies(clients, count_cap=cap)[c.id].tolist()
    assert res.count_cap == cap and res.timings["secure_sum"] == 0.0 and res.psi_runs == 6
    if cap >= 5:  # every count <= T: the exact global frequencies, as the secure-sum variant gives
        exact = ppmpr_in_process(clients, seed=0).freq
        assert all(np.array_equal(res.freq[i], exact[i]) for i in exact)
        assert res.freq[0].tolist() == [10, 10, 4, 1]


@settings(max_examples=15, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcde"), min_size=1, max_size=9), min_size=2, max_size=4),
       st.integers(1, 4))  # fmt: skip
def test_count_encoding_equals_plaintext_for_random_multisets(samples, cap):
    clients = [Client(k, tuple(s)) for k, s in enumerate(samples)]
    res = ppmpr_in_process(clients, backend=PlainOracle(), seed=0, count_cap=cap)
    ref = plaintext_frequencies(clients, count_cap=cap)
    assert all(np.array_equal(res.freq[i], ref[i]) for i in ref)


def test_what_a_client_learns_under_count_encoding():
    """Client 0 learns each partner's count of its own items, capped at T, and nothing of items it lacks."""
    cap = 2
    clients = _clients()
    res = ppmpr_in_process(clients, seed=0, count_cap=cap)
    view = res.views[0]
    items = sorted(set(clients[0].keys))  # [only zero line, summer day, the rose]
    assert items == [b"only zero line", b"summer day", b"the rose"]
    # per-partner capped counts: client 1 holds the rose 5x (seen as 2) and summer day 1x; client 2 the rose 3x
    assert view.partner_counts[1].tolist() == [0, 1, 2] and view.partner_counts[2].tolist() == [0, 2, 2]
    assert view.shared_with[1].tolist() == [1, 2] and view.positions_received == {}
    # no plaintext sample of another client in any received PSI message
    for i, v in res.views.items():
        blob = b"".join(v.psi_messages)
        others = {x for c in clients if c.id != i for x in c.keys} - set(clients[i].keys)
        assert blob and others and not any(x in blob for x in others)
    # counts above T are hidden: client 1 holding the rose 5x or 2x gives client 0 the same view
    fewer = [clients[0], Client(1, ("the rose",) * 2 + ("summer day", "only one line")), clients[2]]
    v2 = ppmpr_in_process(fewer, seed=0, backend=PlainOracle(), count_cap=cap).views[0]
    assert all(np.array_equal(view.partner_counts[j], v2.partner_counts[j]) for j in (1, 2))
    # ...but below T the per-partner split is revealed (unlike the secure-sum variant, which reveals only sums)
    moved = [clients[0], Client(1, ("the rose", "summer day", "only one line")), clients[2]]
    v3 = ppmpr_in_process(moved, seed=0, backend=PlainOracle(), count_cap=cap).views[0]
    assert v3.partner_counts[1].tolist() == [0, 1, 1]


def test_simulate_count_encoded_equals_in_process():
    """One process per client over loopback, count-encoded PSI: the in-process capped frequencies."""
    clients = _clients()
    out = simulate(clients, seed=0, timeout=120, count_cap=2)
    ref = ppmpr_in_process(clients, seed=0, count_cap=2).freq
    assert {i: f.tolist() for i, f in out.freq.items()} == {i: f.tolist() for i, f in ref.items()}
    assert out.phase_seconds[0]["secure_sum"] == 0.0


def test_count_encoding_rejects_bad_input():
    for bad in (0, -1, 1 << 17):
        with pytest.raises(ValueError, match="count_cap"):
            ppmpr_in_process(_clients(), count_cap=bad)
    with pytest.raises(TypeError, match="count_cap"):
        ppmpr_in_process(_clients(), count_cap=2.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="count_cap"):
        simulate(_clients(), count_cap=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="count_cap"):
        plaintext_frequencies(_clients(), count_cap=0)
    with pytest.raises(TypeError, match="items"):
        querier_items("abc", count_cap=2)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="items"):
        querier_items(["abc"], count_cap=2)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="counts"):
        answerer_items([b"a"], np.array([1, 2]), count_cap=2)
    with pytest.raises(ValueError, match="counts"):
        answerer_items([b"a"], np.array([0]), count_cap=2)
    with pytest.raises(ValueError, match="counts"):
        answerer_items([b"a"], np.array([1.5]), count_cap=2)
    with pytest.raises(ValueError, match="indices"):
        capped_counts(np.array([6]), 2, count_cap=3)


def test_count_encoding_rejects_repeated_items_and_malformed_indices():
    """Review regressions (silent wrong counts before): a repeated item merged into one PSI set element, so the
    querier learnt min(c, T) of one copy; float indices were truncated and repeated ones counted past T."""
    with pytest.raises(ValueError, match="distinct"):
        answerer_items([b"a", b"a"], np.array([2, 2]), count_cap=5)
    with pytest.raises(ValueError, match="distinct"):
        querier_items([b"a", b"a"], count_cap=2)
    with pytest.raises(TypeError, match="indices"):
        capped_counts(np.array([0.7, 1.9]), 2, count_cap=3)
    with pytest.raises(ValueError, match="distinct"):
        capped_counts(np.array([0, 0, 0, 0]), 2, count_cap=3)
    with pytest.raises(ValueError, match="n_items"):
        capped_counts(np.array([0]), -1, count_cap=3)
    with pytest.raises(TypeError, match="n_items"):
        capped_counts(np.array([0]), 2.5, count_cap=3)  # type: ignore[arg-type]
    assert capped_counts(np.array([], dtype=np.int64), 2, count_cap=3).tolist() == [0, 0]
    assert capped_counts([], 2, count_cap=3).tolist() == [0, 0]


def test_simulate_client_processes_start_without_runpy_warning(tmp_path):
    """Review regression: ``python -m nips25_fedrw.simulate`` warned (RuntimeWarning, runpy) in every client process
    because the package imports that module; the clients' stderr is now clean."""
    simulate(_clients()[:2], seed=0, timeout=120, count_cap=2, workdir=tmp_path)
    for k in range(2):
        assert "RuntimeWarning" not in (tmp_path / f"stderr_{k}.txt").read_text()
