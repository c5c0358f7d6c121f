"""Hard-deduplication baselines: a trusted third party, and EP-MPD's client tree on pairwise PSI.

EP-MPD: Abadi, Dasu, Sarkar, NDSS 2025.

EP-MPD's own protocol (its Type I / Type II group PSI with a semi-trusted third party) is
:func:`nips25_fedrw.ep_mpd.ep_mpd_dedup`; :func:`ep_mpd_hard_dedup` here keeps EP-MPD's tree but decides each
deletion by two-party openmined-psi runs, with no third party (this package's 0.1 baseline).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from nips25_fedrw.intersection import OpenMinedPSI, PSIBackend
from nips25_fedrw.samples import Client, check_clients

__all__ = ["DedupResult", "ep_mpd_hard_dedup", "trusted_party_dedup"]


@dataclass(frozen=True)
class DedupResult:
    """Deduplicated clients and the cost of getting them.

    Attributes:
        clients: the clients after deletion (same ids; a client may end with no sample left, see ``kept``).
        kept: ``kept[k]`` indices into the original ``clients[k].samples`` that survive.
        seconds: serial wall time.
        parallel_seconds: wall time with independent PSI runs in parallel (equal to ``seconds`` for the trusted
            party).
        psi_runs: number of two-party PSI runs (0 for the trusted party and for EP-MPD's Type I/II).
        transcript_bytes: bytes of all protocol messages (0 for the trusted party).
        protocol: ``"trusted_party"``, ``"tree_psi"`` (:func:`ep_mpd_hard_dedup`), ``"ep_mpd_type1"`` or
            ``"ep_mpd_type2"`` (:func:`nips25_fedrw.ep_mpd.ep_mpd_dedup`).
        eg_psi_instances: EP-MPD group-PSI instances run (one per inner tree node; 0 for the others).
        timings: seconds by phase for EP-MPD's Type I/II (``setup``, ``nodes``, ``third_party``, ``parallel``,
            ``serial``); empty for the others.
    """

    clients: list[Client | None]
    kept: list[list[int]]
    seconds: float
    parallel_seconds: float
    psi_runs: int
    transcript_bytes: int
    protocol: str = ""
    eg_psi_instances: int = 0
    timings: dict[str, float] = field(default_factory=dict)


def _local_first(c: Client) -> list[int]:
    seen: set[bytes] = set()
    keep = []
    for s, key in enumerate(c.keys):
        if key not in seen:
            seen.add(key)
            keep.append(s)
    return keep


def _rebuild(cl: list[Client], kept: list[list[int]]) -> list[Client | None]:
    return [Client(c.id, tuple(c.samples[s] for s in keep), form=c.form) if keep else None for c, keep in zip(cl, kept)]


def trusted_party_dedup(clients: Sequence[Client]) -> DedupResult:
    """Global exact deduplication by a trusted third party that sees every sample in the clear.

    Clients are visited in id order; the first occurrence of each canonical sample is kept, every later copy
    (local or on another client) is deleted.

    Args:
        clients: ``K >= 2`` clients with ids ``0..K-1``.

    Returns:
        A :class:`DedupResult` with no PSI cost.

    Example:
        >>> r = trusted_party_dedup([Client(0, ("a", "a", "b")), Client(1, ("b", "c"))])
        >>> [c.samples for c in r.clients]
        [('a', 'b'), ('c',)]
    """
    cl = check_clients(clients)
    start = time.perf_counter()
    seen: set[bytes] = set()
    kept: list[list[int]] = []
    for c in cl:
        keep = []
        for s, key in enumerate(c.keys):
            if key not in seen:
                seen.add(key)
                keep.append(s)
        kept.append(keep)
    out = _rebuild(cl, kept)
    seconds = time.perf_counter() - start
    return DedupResult(out, kept, seconds, seconds, 0, 0, protocol="trusted_party")


def ep_mpd_hard_dedup(clients: Sequence[Client], *, backend: PSIBackend | None = None) -> DedupResult:
    r"""EP-MPD-style private hard deduplication: a binary tree over clients, deletions decided by pairwise PSI.

    Each client first removes its local repeats. The clients are split at the middle into group 0 (first half)
    and group 1; each group is deduplicated recursively; then every client of group 0 deletes the items it shares
    with any client of group 1, found by one PSI run per cross pair (group-0 client as querier). Subtrees are
    independent, so ``parallel_seconds`` takes the slower subtree, and a node's :math:`|G_0| \cdot |G_1|` runs in
    :math:`\max(|G_0|, |G_1|)` rounds of disjoint pairs.

    This re-creates EP-MPD's tree on the same PSI primitive as PPMPR, with no third party (this package's 0.1
    baseline); EP-MPD's own Type I/II group PSI is :func:`nips25_fedrw.ep_mpd.ep_mpd_dedup`.

    Args:
        clients: ``K >= 2`` clients with ids ``0..K-1``.
        backend: the PSI primitive; default :class:`OpenMinedPSI`.

    Returns:
        A :class:`DedupResult`.

    References:
        Abadi, Dasu, Sarkar, "Privacy-Preserving Data Deduplication for Enhancing Federated Learning of Language
        Models", NDSS 2025, arXiv:2407.08152 (EP-MPD).

    Example:
        >>> cs = [Client(0, tuple("1234")), Client(1, tuple("3456")), Client(2, tuple("1578"))]
        >>> [c.samples for c in ep_mpd_hard_dedup(cs).clients]
        [('2',), ('3', '4', '6'), ('1', '5', '7', '8')]
    """
    cl = check_clients(clients)
    psi = OpenMinedPSI() if backend is None else backend
    if not isinstance(psi, PSIBackend):
        raise TypeError(f"backend must implement PSIBackend.intersect, got {type(psi).__name__}")
    start = time.perf_counter()
    kept = [_local_first(c) for c in cl]
    stats: dict[str, float] = {"runs": 0, "bytes": 0, "seconds": 0.0}

    def items(k: int) -> list[bytes]:
        return [cl[k].keys[s] for s in kept[k]]

    def node(ids: list[int]) -> float:
        if len(ids) == 1:
            return 0.0
        mid = len(ids) // 2
        g0, g1 = ids[:mid], ids[mid:]
        sub = max(node(g0), node(g1))
        times: dict[tuple[int, int], float] = {}
        for a in g0:
            drop: set[int] = set()
            for b in g1:
                run = psi.intersect(items(a), items(b))
                drop.update(int(i) for i in run.indices)
                times[(a, b)] = run.seconds
                stats["runs"] += 1
                stats["bytes"] += run.bytes_sent
                stats["seconds"] += run.seconds
            kept[a] = [s for i, s in enumerate(kept[a]) if i not in drop]
        rounds = 0.0
        for r in range(max(len(g0), len(g1))):
            if len(g0) <= len(g1):
                pairs = [(a, g1[(x + r) % len(g1)]) for x, a in enumerate(g0)]
            else:
                pairs = [(g0[(y + r) % len(g0)], b) for y, b in enumerate(g1)]
            rounds += max(times[p] for p in pairs)
        return sub + rounds

    parallel_psi = node(list(range(len(cl))))
    out = _rebuild(cl, kept)
    seconds = time.perf_counter() - start
    parallel = seconds - stats["seconds"] + parallel_psi
    return DedupResult(out, kept, seconds, parallel, int(stats["runs"]), int(stats["bytes"]), protocol="tree_psi")
