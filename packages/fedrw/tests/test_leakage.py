"""What a client can infer from its PPMPR view (issue 33): a single holder's count is exact, two holders hide it."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_fedrw import (
    Client,
    PlainOracle,
    client_inferences,
    ppmpr,
    ppmpr_in_process,
    simulate,
)


def _example() -> list[Client]:
    """Clients (x, y), (x x4), (z, y, y): client 0 shares x with client 1 only and y with client 2 only."""
    return [Client(0, ("x", "y")), Client(1, ("x",) * 4), Client(2, ("z", "y", "y"))]


def test_single_holder_sum_is_that_partners_exact_count():
    """Client 0 learns c_1(x) = 4 and c_2(y) = 2 exactly: PSI names the only holder, the sum is its count."""
    clients = _example()
    res = ppmpr_in_process(clients, seed=0)
    inf = {i.item: i for i in client_inferences(clients[0], res)}
    assert set(inf) == {b"x", b"y"}
    assert inf[b"x"].holders == (1,) and inf[b"x"].others_total == 4 and inf[b"x"].exact_counts == {1: 4}
    assert inf[b"y"].holders == (2,) and inf[b"y"].others_total == 2 and inf[b"y"].exact_counts == {2: 2}
    # the inference is the truth: the partners' real counts
    assert inf[b"x"].exact_counts[1] == clients[1].keys.count(b"x")
    assert inf[b"y"].exact_counts[2] == clients[2].keys.count(b"y")


def test_two_holders_hide_the_split_and_the_view_does_not_change_when_copies_move():
    """With x on clients 1 and 2 as (3, 1) or (2, 2) copies, client 0 sees the same sum and only bounds [1, 3]."""
    views = []
    for n1, n2 in ((3, 1), (2, 2)):
        clients = [Client(0, ("x", "w")), Client(1, ("x",) * n1 + ("u",)), Client(2, ("x",) * n2 + ("v",))]
        res = ppmpr_in_process(clients, seed=3, backend=PlainOracle())
        inf = {i.item: i for i in client_inferences(clients[0], res)}
        assert inf[b"x"].holders == (1, 2) and inf[b"x"].others_total == 4
        assert inf[b"x"].bounds == {1: (1, 3), 2: (1, 3)} and inf[b"x"].exact_counts == {}
        assert inf[b"w"].holders == () and inf[b"w"].others_total == 0
        views.append(res.views[0])
    assert np.array_equal(views[0].secure_sum_output, views[1].secure_sum_output)
    assert all(np.array_equal(views[0].shared_with[j], views[1].shared_with[j]) for j in (1, 2))


def test_count_encoding_reveals_every_partner_count_below_the_cap():
    """count_cap=T: exact partner counts below T, only a lower bound T at the cap (even with two holders)."""
    clients = [Client(0, ("x", "y")), Client(1, ("x",) * 5 + ("y",)), Client(2, ("x", "x", "y"))]
    res = ppmpr_in_process(clients, seed=0, count_cap=3, backend=PlainOracle())
    inf = {i.item: i for i in client_inferences(clients[0], res)}
    assert inf[b"x"].bounds == {1: (3, None), 2: (2, 2)} and inf[b"x"].exact_counts == {2: 2}
    assert inf[b"y"].exact_counts == {1: 1, 2: 1}


def test_in_process_run_says_it_has_no_secrecy_and_the_real_protocol_has_k_parties():
    """ppmpr_in_process runs MPyC with one party (secure False); simulate runs K parties with threshold (K-1)//2."""
    clients = _example()
    res = ppmpr_in_process(clients, seed=0)
    assert res.secure is False and res.mpc_parties == 1
    assert ppmpr_in_process(clients, seed=0, count_cap=2).mpc_parties == 0
    with pytest.warns(DeprecationWarning, match="in-process simulation without secrecy"):
        old = ppmpr(clients, seed=0)
    assert all(np.array_equal(old.freq[i], res.freq[i]) for i in res.freq)
    sim = simulate(clients, seed=0, timeout=120)
    assert sim.mpc_parties == 3 and sim.threshold == 1
    assert all(np.array_equal(sim.freq[i], res.freq[i]) for i in res.freq)


def test_client_inferences_rejects_mismatched_inputs():
    clients = _example()
    res = ppmpr_in_process(clients, seed=0, backend=PlainOracle())
    with pytest.raises(TypeError, match="client"):
        client_inferences("x", res)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="result"):
        client_inferences(clients[0], {})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no view of client 5"):
        client_inferences(Client(5, ("x",)), res)
    with pytest.raises(ValueError, match="samples"):
        client_inferences(Client(0, ("x", "y", "y")), res)
