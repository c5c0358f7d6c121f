r"""EP-MPD's own private hard deduplication: a tree of EG-PSI instances (Abadi, Dasu, Sarkar, NDSS 2025).

EP-MPD (Efficient Privacy-Preserving Multi-Party Deduplication) is FedRW's baseline. Its clients form a binary
tree (split at the middle); each subtree is deduplicated first; then, at the node, an **EG-PSI** instance between
group 0 (left half) and group 1 (right half) tells every group-0 client which of its remaining items some
group-1 client holds, and the group-0 client deletes them. Every distinct item survives exactly once, at the
right-most client holding it. EP-MPD offers two EG-PSI variants, both with a **semi-trusted third party (TP)**:

* **Type I** (symmetric keys). Every pair of clients shares a secret key :math:`k_{ab}`. At a node, each client
  evaluates a keyed pseudorandom function of each remaining item under its key with every client of the other
  group and sends the ciphertexts (with item indices) to the TP; the TP counts equal ciphertexts and returns to
  each group-0 client the indices of its items whose ciphertext occurs more than once. Cost per node: each client
  does :math:`|G_{other}| \cdot n` PRF evaluations; the TP learns, per group-0 item, how many group-1 clients
  hold it (ciphertext multiplicities), and set sizes.
* **Type II** (OPRF). Once, at setup, each client obtains :math:`F_k(x) = k \cdot H(x)` for each of its items from
  the TP's key :math:`k` by an oblivious PRF on ristretto255 (the client blinds, the TP multiplies, the client
  unblinds). At a node, each group-1 client sends its OPRF values to each group-0 client, who deletes the items
  whose values it receives. The TP sees blinded points only; a group-0 client learns which of its items a group-1
  client holds.

Time accounting follows EP-MPD's own (its ``print_timing_stats``): nodes of one tree level run in parallel.
Type I: each level costs the slowest client's (PRF evaluation + TP receive) plus the slowest group-0 client's
(TP answers queued so far at that level + the client's deletion); Type II: setup = the sum over clients of their
OPRF time and the TP's (one TP serves the clients one by one), each level = slowest send + slowest receive +
slowest deletion. ``parallel_seconds`` is that total; ``seconds`` is the serial wall time.

Substituted here (EP-MPD's reference implementation is Python too): Type I's PRP (AES-256-CBC with a fixed IV on
padded items) is HMAC-SHA256 from the standard library (a PRF; equality of ciphertexts under one key is what the
protocol uses); the pairwise keys are drawn from :mod:`secrets` by the caller's process and their agreement is
not timed (EP-MPD's code also deals them outside its timed phases); Type II uses the ``oprf`` package (ristretto255
on libsodium), EP-MPD's own OPRF library, installed by the ``epmpd`` extra. Group-1 clients send the OPRF values
of their remaining items only (EP-MPD's code sends all of them; the result is the same). All parties run in this
process (a simulation: the TP and the clients see each other's memory here).
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from nips25_fedrw.dedup import DedupResult, _local_first, _rebuild
from nips25_fedrw.samples import Client, check_clients

__all__ = ["EG_PSI_TYPES", "ep_mpd_dedup", "tree_levels"]

EG_PSI_TYPES = ("type1", "type2")
_CT = 32  # bytes of one Type I ciphertext (HMAC-SHA256) and of one ristretto255 point
_IDX = 4  # bytes of one item index in Type I messages


def tree_levels(n_clients: int) -> list[list[tuple[list[int], list[int]]]]:
    """EP-MPD's tree over clients ``0..K-1``, level by level: the ``(group 0, group 1)`` split of every inner node.

    A node over clients ``[l, r)`` splits at ``(l + r) // 2``: group 0 is ``[l, mid)``, group 1 ``[mid, r)``.
    ``levels[d]`` lists the nodes at depth ``d`` (the root is depth 0); the protocol runs the deepest level first,
    and nodes of one level are independent.

    Args:
        n_clients: ``K >= 2``.

    Returns:
        ``levels``: a list (depth 0 first) of lists of ``(group0_ids, group1_ids)``; ``K - 1`` nodes in all.

    Raises:
        ValueError: if ``n_clients`` is not an int >= 2.

    Example:
        >>> tree_levels(3)
        [[([0], [1, 2])], [([1], [2])]]
    """
    if isinstance(n_clients, bool) or not isinstance(n_clients, int) or n_clients < 2:
        raise ValueError(f"n_clients must be an int >= 2, got {n_clients!r}")
    levels: list[list[tuple[list[int], list[int]]]] = []

    def node(ids: list[int], depth: int) -> None:
        if len(ids) < 2:
            return
        mid = len(ids) // 2
        if len(levels) <= depth:
            levels.append([])
        levels[depth].append((ids[:mid], ids[mid:]))
        node(ids[:mid], depth + 1)
        node(ids[mid:], depth + 1)

    node(list(range(n_clients)), 0)
    return levels


def _oprf() -> Any:
    try:
        import oprf
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "ep_mpd_dedup(eg_psi='type2') needs the oprf package: pip install 'nips25-fedrw[epmpd]'"
        ) from err
    return oprf


class _Clock:
    """Seconds spent by the clients and by the third party (serial totals), and a stopwatch."""

    def __init__(self) -> None:
        self.total: defaultdict[str, float] = defaultdict(float)
        self._t = 0.0

    def start(self) -> None:
        self._t = time.perf_counter()

    def stop(self, who: str) -> float:
        dt = time.perf_counter() - self._t
        self.total[who] += dt
        return dt


def _type1(cl: list[Client], kept: list[list[int]], clock: _Clock) -> tuple[float, int]:
    """Type I over the tree; returns (parallel seconds, bytes sent)."""
    k = len(cl)
    keys = {(a, b): secrets.token_bytes(32) for a in range(k) for b in range(a + 1, k)}
    parallel = 0.0
    n_bytes = 0

    def encrypt(c: int, others: list[int]) -> list[tuple[int, bytes]]:
        live = [cl[c].keys[s] for s in kept[c]]
        return [(i, hmac.digest(keys[(min(c, o), max(c, o))], x, "sha256")) for o in others for i, x in enumerate(live)]

    for level in reversed(tree_levels(k)):
        first = 0.0  # slowest client: PRF evaluations + the TP receiving them
        last = 0.0  # slowest group-0 client: the TP's answers so far at this level + the client's deletion
        queued = 0.0
        for g0, g1 in level:
            tally: Counter[bytes] = Counter()
            for c in g1 + g0:  # group 1 sends first, as in EP-MPD; then each group-0 client in turn
                clock.start()
                cts = encrypt(c, g0 if c in g1 else g1)
                t_enc = clock.stop("clients")
                clock.start()
                tally.update(ct for _, ct in cts)
                t_tp = clock.stop("third_party")
                first = max(first, t_enc + t_tp)
                n_bytes += len(cts) * (_CT + _IDX)
                if c in g1:
                    continue
                clock.start()
                hits = {i for i, ct in cts if tally[ct] > 1}  # the TP's answer: indices seen more than once
                queued += clock.stop("third_party")
                clock.start()
                kept[c] = [s for i, s in enumerate(kept[c]) if i not in hits]
                last = max(last, queued + clock.stop("clients"))
                n_bytes += len(hits) * _IDX
        parallel += first + last
    return parallel, n_bytes


def _type2(cl: list[Client], kept: list[list[int]], clock: _Clock) -> tuple[float, float, int]:
    """Type II over the tree; returns (setup seconds, node-phase parallel seconds, bytes sent)."""
    oprf = _oprf()
    tp_key = oprf.mask()  # the TP's secret scalar
    values: list[dict[int, bytes]] = []  # values[c][s]: F_k(x) of client c's locally kept sample s
    setup = 0.0
    n_bytes = 0
    for c, keep in zip(cl, kept):
        clock.start()
        blind = oprf.mask()  # one blinding scalar per client, as in EP-MPD
        masked = [blind(oprf.data.hash(c.keys[s])) for s in keep]
        t_client = clock.stop("clients")
        clock.start()
        salted = [tp_key(m) for m in masked]
        t_tp = clock.stop("third_party")
        clock.start()
        values.append({s: bytes(blind.unmask(v)) for s, v in zip(keep, salted)})
        setup += t_client + t_tp + clock.stop("clients")
        n_bytes += 2 * _CT * len(keep)
    parallel = 0.0
    for level in reversed(tree_levels(len(cl))):
        send = recv = dedup = 0.0
        for g0, g1 in level:
            inbox: dict[int, set[bytes]] = {a: set() for a in g0}
            for b in g1:
                clock.start()
                msg = b"".join(values[b][s] for s in kept[b])
                send = max(send, clock.stop("clients"))
                for a in g0:
                    clock.start()
                    inbox[a].update(msg[i : i + _CT] for i in range(0, len(msg), _CT))
                    recv = max(recv, clock.stop("clients"))
                    n_bytes += len(msg)
            for a in g0:
                clock.start()
                kept[a] = [s for s in kept[a] if values[a][s] not in inbox[a]]
                dedup = max(dedup, clock.stop("clients"))
        parallel += send + recv + dedup
    return setup, parallel, n_bytes


def ep_mpd_dedup(clients: Sequence[Client], *, eg_psi: str = "type1") -> DedupResult:
    r"""EP-MPD's private hard deduplication with its own Type I or Type II EG-PSI (semi-trusted third party).

    Each client first drops its local repeats; then the EP-MPD tree (:func:`tree_levels`) runs one EG-PSI
    instance per inner node, deepest level first, and every group-0 client deletes the items a group-1 client of
    its node holds. The result keeps each distinct item once, at the right-most client holding it (the same
    samples as :func:`nips25_fedrw.dedup.ep_mpd_hard_dedup`). See the module docstring for both variants, what the
    third party learns, the time accounting and what is substituted.

    Args:
        clients: ``K >= 2`` clients with ids ``0..K-1``.
        eg_psi: ``"type1"`` (pairwise keys, the TP counts ciphertexts; standard library only) or ``"type2"``
            (TP-assisted OPRF on ristretto255; needs the ``epmpd`` extra, ``pip install 'nips25-fedrw[epmpd]'``).

    Returns:
        A :class:`~nips25_fedrw.dedup.DedupResult` with ``protocol`` ``"ep_mpd_type1"``/``"ep_mpd_type2"``,
        ``psi_runs = 0``, ``eg_psi_instances = K - 1``, ``parallel_seconds`` by EP-MPD's accounting, and
        ``timings`` (``setup``: Type II's OPRF phase, 0 for Type I; ``nodes``: the tree's parallel time;
        ``clients`` and ``third_party``: serial seconds spent by each; ``parallel``; ``serial``).

    Raises:
        TypeError, ValueError: for malformed ``clients``; ValueError for an unknown ``eg_psi``.
        ImportError: for ``"type2"`` without the ``oprf`` package.

    References:
        Abadi, Dasu, Sarkar, "Privacy-Preserving Data Deduplication for Enhancing Federated Learning of Language
        Models", NDSS 2025, arXiv:2407.08152 (EP-MPD, EG-PSI Types I and II).

    Example:
        >>> cs = [Client(0, tuple("1234")), Client(1, tuple("3456")), Client(2, tuple("1578"))]
        >>> r = ep_mpd_dedup(cs, eg_psi="type1")
        >>> [c.samples for c in r.clients], r.eg_psi_instances, r.psi_runs
        ([('2',), ('3', '4', '6'), ('1', '5', '7', '8')], 2, 0)
    """
    if eg_psi not in EG_PSI_TYPES:
        raise ValueError(f"eg_psi must be one of {EG_PSI_TYPES}, got {eg_psi!r}")
    cl = check_clients(clients)
    start = time.perf_counter()
    clock = _Clock()
    kept: list[list[int]] = []
    local = 0.0  # the slowest client's local deduplication
    for c in cl:
        clock.start()
        kept.append(_local_first(c))
        local = max(local, clock.stop("clients"))
    if eg_psi == "type1":
        setup = 0.0
        nodes, n_bytes = _type1(cl, kept, clock)
    else:
        setup, nodes, n_bytes = _type2(cl, kept, clock)
    out = _rebuild(cl, kept)
    seconds = time.perf_counter() - start
    parallel = local + setup + nodes
    timings = {
        "setup": setup,
        "nodes": nodes,
        "clients": clock.total["clients"],
        "third_party": clock.total["third_party"],
        "parallel": parallel,
        "serial": seconds,
    }
    return DedupResult(
        out,
        kept,
        seconds,
        parallel,
        0,
        n_bytes,
        protocol=f"ep_mpd_{eg_psi}",
        eg_psi_instances=len(cl) - 1,
        timings=timings,
    )
