"""PPMPR: frequencies equal plaintext counts; secure sums; what a client's view holds; multi-process run."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter

import numpy as np
import pytest
from nips25_fedrw import Client, PlainOracle, contribution_vectors, ppmpr_in_process, secure_sum, simulate


def _clients() -> list[Client]:
    return [
        Client(0, ("the rose", "the rose", "summer day", "only zero line")),
        Client(1, ("the rose", "summer day", "summer day", "only one line", "shared by 1 and 2")),
        Client(2, ("the rose", "shared by 1 and 2", "only two line", "only two line", "only two line")),
        Client(3, ("summer  day ", "alone at three")),
    ]


def _central(clients: list[Client]) -> dict[int, list[int]]:
    counter = Counter(k for c in clients for k in c.keys)
    return {c.id: [counter[k] for k in c.keys] for c in clients}


def test_ppmpr_frequencies_equal_central_counter():
    """F_i(x) from PSI + secure sums equals a central Counter over all multisets (canonicalised whitespace too)."""
    clients = _clients()
    res = ppmpr_in_process(clients, seed=0)
    expected = _central(clients)
    assert {i: f.tolist() for i, f in res.freq.items()} == expected
    assert expected[0] == [4, 4, 4, 1] and expected[3] == [4, 1]
    assert res.psi_runs == 12 and res.transcript_bytes > 0
    assert res.timings["psi_parallel"] <= res.timings["psi"] + 1e-12


def test_secure_sum_and_contribution_vectors_known_answer():
    """Hand example: client 1 shares items with clients 0 and 2; the opened segments are the other clients' sums."""
    outs = secure_sum([np.array([1, 2, 3, 4]), np.array([0, 5, 1, 0]), np.array([2, 0, 0, 7])],
                      segments=[(0, 2), (2, 4), (4, 4)])  # fmt: skip
    assert [o.tolist() for o in outs] == [[3, 7], [4, 11], []]
    counts = [np.array([1, 1]), np.array([2, 3]), np.array([5])]
    shared = {(0, 1): np.array([1]), (1, 0): np.array([0]), (1, 2): np.array([1]), (2, 1): np.array([0]),
              (0, 2): np.array([], dtype=np.int64), (2, 0): np.array([], dtype=np.int64)}  # fmt: skip
    perms = [np.array([1, 0]), np.array([0, 1]), np.array([0])]
    vecs, segs = contribution_vectors(counts, shared, perms)
    assert segs == [(0, 2), (2, 4), (4, 5)]
    assert (
        vecs[1].tolist() == [2, 0, 0, 0, 3]
        and vecs[0].tolist() == [0, 0, 1, 0, 0]
        and vecs[2].tolist() == [0, 0, 0, 5, 0]
    )


def test_client_view_holds_no_other_plaintext_and_only_aggregates():
    """A client's received bytes hold no sample it lacks; its outputs depend on other clients' counts only via sums."""
    clients = _clients()
    res = ppmpr_in_process(clients, seed=1)
    for i, view in res.views.items():
        blob = b"".join(view.psi_messages) + b"".join(p.tobytes() for p in view.positions_received.values())
        own = set(clients[i].keys)
        others = {k for c in clients if c.id != i for k in c.keys} - own
        assert others and not any(x in blob for x in others)
        assert all(p.max(initial=-1) < len(set(clients[j].keys)) for j, p in view.positions_received.items())
    # move one copy of "summer day" from client 1 (2 copies) to client 3 (holds it): client 0's view is unchanged
    moved = [clients[0], Client(1, ("the rose", "summer day", "only one line", "shared by 1 and 2")), clients[2],
             Client(3, ("summer  day ", "alone at three", "summer day"))]  # fmt: skip
    res2 = ppmpr_in_process(moved, seed=1, backend=PlainOracle())
    assert np.array_equal(res.views[0].secure_sum_output, res2.views[0].secure_sum_output)
    assert all(np.array_equal(res.views[0].shared_with[j], res2.views[0].shared_with[j]) for j in (1, 2, 3))


def test_simulate_with_one_process_per_client_equals_in_process():
    """Three client processes over loopback (PSI messages + MPyC with M=3) reach the in-process frequencies."""
    clients = _clients()[:3]
    out = simulate(clients, seed=0, timeout=120)
    assert {i: f.tolist() for i, f in out.freq.items()} == _central(clients)
    for c in clients:
        others = {k for o in clients if o.id != c.id for k in o.keys} - set(c.keys)
        assert out.received[c.id] and not any(x in out.received[c.id] for x in others)
    assert set(out.phase_seconds[0]) == {"connect", "psi", "secure_sum"}


def test_ppmpr_and_secure_sum_reject_bad_input():
    with pytest.raises(ValueError, match="at least 2"):
        ppmpr_in_process([Client(0, ("a",))])
    with pytest.raises(ValueError, match=r"clients\[1\].id"):
        ppmpr_in_process([Client(0, ("a",)), Client(2, ("b",))])
    with pytest.raises(TypeError, match="backend"):
        ppmpr_in_process(_clients(), backend=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="samples"):
        Client(0, ())
    with pytest.raises(TypeError, match="samples"):
        Client(0, "abc")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="same length"):
        secure_sum([np.array([1, 2]), np.array([1])], segments=[(0, 1)])
    with pytest.raises(ValueError, match="segments"):
        secure_sum([np.array([1, 2])], segments=[(1, 5)])
    with pytest.raises(TypeError, match="integers"):
        secure_sum([np.array([1.5, 2.0])], segments=[(0, 1)])
    with pytest.raises(ValueError, match="counts"):
        secure_sum([np.array([-1, 2])], segments=[(0, 1)])
    with pytest.raises(ValueError, match="timeout"):
        simulate(_clients(), timeout=0)
    # review fix: a negative seed, a NaN/inf timeout were numpy errors or accepted
    with pytest.raises(ValueError, match="seed"):
        ppmpr_in_process(_clients(), seed=-1)
    with pytest.raises(TypeError, match="seed"):
        ppmpr_in_process(_clients(), seed=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seed"):
        simulate(_clients(), seed=-1)
    # review fix: contribution_vectors silently accepted a wrong-length permutation and raised KeyError on a
    # one-directional pair
    one = [np.array([1])]
    with pytest.raises(ValueError, match=r"permutations\[0\]"):
        contribution_vectors(one * 2, {}, [np.array([0, 1]), np.array([0])])
    with pytest.raises(ValueError, match="permutations must hold one entry"):
        contribution_vectors(one * 2, {}, [np.array([0])])
    with pytest.raises(ValueError, match="shared must hold both"):
        contribution_vectors(one * 2, {(0, 1): np.array([0])}, [np.array([0]), np.array([0])])
    with pytest.raises(ValueError, match=r"shared\[\(0, 1\)\]"):
        contribution_vectors(one * 2, {(0, 1): np.array([3]), (1, 0): np.array([0])}, [np.array([0])] * 2)
    for t in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="timeout"):
            simulate(_clients(), timeout=t)


def test_simulate_stops_at_once_when_one_client_process_fails(monkeypatch):
    """Review fix: a crashed client made simulate wait for its partners until the timeout, then blame client 0."""
    real_popen = subprocess.Popen

    def popen(cmd, **kwargs):
        if cmd[cmd.index("--client") + 1] == "1":
            cmd = [sys.executable, "-c", "import sys; sys.exit(3)"]
        return real_popen(cmd, **kwargs)

    monkeypatch.setattr(sys.modules["nips25_fedrw.simulate"].subprocess, "Popen", popen)
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match="client process 1 failed"):
        simulate(_clients()[:3], seed=0, timeout=20)
    assert time.perf_counter() - start < 15


def test_empty_or_whitespace_only_samples_are_rejected():
    """Review regression: ``canonicalize`` maps every whitespace-only text to ``b""``, so such samples silently
    counted as duplicates of one another (and of ``""``); a client now rejects them, naming the sample."""
    from nips25_fedrw import canonicalize

    assert canonicalize("   ") == canonicalize("") == b""
    for bad in (("a", "   "), ("", "a"), ("a", "\n\t")):
        with pytest.raises(ValueError, match=r"samples\[\d\]"):
            Client(0, bad)
    assert Client(0, (" a ", "a")).distinct()[1].tolist() == [2]
