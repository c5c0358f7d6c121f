"""PPMPR: privacy-preserving multi-party reweighting, the frequency protocol of FedRW (Sec. 4).

Each client ``i`` learns the global frequency :math:`F_i(x) = \\sum_k c_k(x)` of each of its own samples ``x``
with no trusted third party, in three steps (our reconstruction of the paper's protocol, see the README):

1. **Pairwise PSI**, scheduled as a round-robin tournament (pairs of a round run in parallel): for each pair
   ``(i, j)`` one openmined-psi run per direction, so that both learn :math:`D_i \\cap D_j` (the distinct items
   they share) and nothing else but set sizes.
2. **Position exchange**: client ``i`` draws a secret random permutation :math:`\\pi_i` of its ``n_i`` distinct
   items and sends ``j`` the positions :math:`\\pi_i(x)` of the shared items, listed in byte order of ``x``
   (which both know). ``j`` learns only positions in ``[0, n_i)``.
3. **Secure sum** (MPyC): client ``j`` secret-shares the vector holding :math:`c_j(x)` at
   :math:`\\mathrm{off}_i + \\pi_i(x)` for every ``i`` and shared ``x``; segment ``i`` of the sum is opened to ``i``
   only, who adds its own counts. ``i`` learns :math:`\\sum_{j \\neq i} c_j(x)` (a total, but see below).

**What each client learns** (semi-honest parties; set sizes are public in every PSI run): for each of its own
distinct items ``x``, the set :math:`H_i(x) = \\{j \\ne i : x \\in D_j\\}` of partners holding it (pairwise PSI
reveals every intersection to both sides) and the total :math:`\\sum_{j \\in H_i(x)} c_j(x)`. When exactly one
partner holds ``x`` (:math:`|H_i(x)| = 1`) that total **is** the partner's exact count :math:`c_j(x)`; only for
items held by two or more other clients is the split between them hidden. :func:`nips25_fedrw.leakage.client_inferences`
computes these inferences from a client's view.

:func:`ppmpr_in_process` is an **in-process simulation without secrecy**: every party runs in this process and
MPyC runs with a single party that inputs every client's vector, so nothing is secret from the process running it.
It computes what the protocol outputs and records each client's view, for tests, audits and timing.
:func:`nips25_fedrw.simulate.simulate` is the real protocol: one OS process per client, PSI messages on TCP, and
MPyC with ``K`` parties (Shamir threshold ``(K - 1) // 2``, so secrecy of the sums needs ``K >= 3``).

With ``count_cap=T`` the protocol is the brief's count-encoded variant instead: each PSI runs on
:mod:`nips25_fedrw.count_encoding` items, so the querier learns :math:`\\hat c_j(x) = \\min(c_j(x), T)` of every
partner directly and steps 2-3 are skipped: :math:`F_i(x) = c_i(x) + \\sum_{j \\ne i} \\hat c_j(x)`, exact when every
count is at most ``T``, and ``i`` learns each partner's capped count (more than the secure-sum variant reveals).
"""

from __future__ import annotations

import time
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from nips25_fedrw.count_encoding import answerer_items, capped_counts, check_count_cap, querier_items
from nips25_fedrw.intersection import OpenMinedPSI, PSIBackend
from nips25_fedrw.samples import Client, check_clients
from nips25_fedrw.schedule import round_robin_schedule
from nips25_fedrw.secure_sum import secure_sum

__all__ = ["ClientView", "PPMPRResult", "contribution_vectors", "plaintext_frequencies", "ppmpr", "ppmpr_in_process"]


def check_seed(seed: object) -> int | None:
    """``seed`` as a non-negative int or ``None``; ValueError/TypeError naming ``seed`` otherwise."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"seed must be a non-negative int or None, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative int or None, got {seed}")
    return int(seed)


@dataclass(frozen=True)
class ClientView:
    """Everything one client received from others during PPMPR (its view, for leakage checks).

    Attributes:
        client: the client's id.
        psi_messages: serialised PSI messages received from other clients (setups and responses as querier,
            requests as answerer).
        shared_with: ``{j: sorted indices of own distinct items that j also holds}`` (the PSI outputs).
        positions_received: ``{j: positions in [0, n_j) that i must fill in j's sum segment}``.
        secure_sum_output: the opened segment :math:`\\sum_{j \\neq i} c_j(x)` at position :math:`\\pi_i(x)` (empty
            with count encoding).
        partner_counts: with count encoding only, ``{j: int64 (n_i,)}``, :math:`\\min(c_j(x), T)` for each of the
            client's sorted distinct items (0 where ``j`` lacks it); empty otherwise.
    """

    client: int
    psi_messages: tuple[bytes, ...]
    shared_with: dict[int, np.ndarray]
    positions_received: dict[int, np.ndarray]
    secure_sum_output: np.ndarray
    partner_counts: dict[int, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class PPMPRResult:
    """Output of :func:`ppmpr_in_process` (an in-process simulation: ``secure`` is always ``False``).

    Attributes:
        freq: ``{client id: int64 (len(samples),)}``, the global frequency :math:`F_i(x)` of every local sample
            (with ``count_cap`` T: :math:`c_i(x) + \\sum_{j \\ne i} \\min(c_j(x), T)`).
        timings: seconds: ``psi`` (all runs, serial), ``psi_parallel`` (sum over rounds of the slowest pair),
            ``secure_sum``, ``total`` (serial wall time of the whole protocol), ``parallel`` (``psi_parallel`` +
            the rest).
        psi_runs: the number of two-party PSI runs.
        transcript_bytes: bytes of all PSI messages, position messages (8 bytes each) excluded.
        views: ``{client id: ClientView}``.
        count_cap: the cap ``T`` of count-encoded PSI, or ``None`` (PSI + secure sum, exact).
        mpc_parties: MPyC parties that computed the secure sum: ``1`` in process (one party inputs every vector),
            ``0`` with count encoding (no secure sum).
        secure: ``False``: every party ran in one process, so nothing was secret from it. The real protocol, with
            one process per client and ``K`` MPyC parties, is :func:`nips25_fedrw.simulate.simulate`.
    """

    freq: dict[int, np.ndarray]
    timings: dict[str, float]
    psi_runs: int
    transcript_bytes: int
    views: dict[int, ClientView]
    count_cap: int | None = None
    mpc_parties: int = 1
    secure: bool = False


def plaintext_frequencies(clients: Sequence[Client], *, count_cap: int | None = None) -> dict[int, np.ndarray]:
    r"""What PPMPR must output, computed in the clear (a reference for tests; it offers no privacy).

    :math:`F_i(x) = c_i(x) + \sum_{j \ne i} c_j(x)` (a central count over all clients), or with ``count_cap`` T
    :math:`c_i(x) + \sum_{j \ne i} \min(c_j(x), T)`, for every sample of every client.

    Args:
        clients: ``K >= 2`` clients with ids ``0..K-1``.
        count_cap: ``None`` or the cap ``T >= 1`` of count-encoded PSI.

    Returns:
        ``{client id: int64 (len(samples),)}``.

    Raises:
        TypeError, ValueError: for malformed ``clients`` or ``count_cap``.

    Example:
        >>> f = plaintext_frequencies([Client(0, ("a", "a")), Client(1, ("a", "a", "a"))], count_cap=2)
        >>> f[0].tolist(), f[1].tolist()
        ([4, 4], [5, 5, 5])
    """
    cl = check_clients(clients)
    cap = None if count_cap is None else check_count_cap(count_cap)
    local = [Counter(c.keys) for c in cl]
    out = {}
    for i, c in enumerate(cl):
        others = (
            sum(cnt[x] if cap is None else min(cnt[x], cap) for j, cnt in enumerate(local) if j != i) for x in c.keys
        )
        out[c.id] = np.fromiter((local[i][x] + o for x, o in zip(c.keys, others)), dtype=np.int64, count=len(c.keys))
    return out


def contribution_vectors(
    counts: Sequence[np.ndarray],
    shared: dict[tuple[int, int], np.ndarray],
    permutations: Sequence[np.ndarray],
) -> tuple[list[np.ndarray], list[tuple[int, int]]]:
    """Secure-sum input vectors of step 3 and each receiver's segment.

    Args:
        counts: ``counts[j]`` int64 ``(n_j,)``, local counts of client ``j``'s sorted distinct items.
        shared: ``{(i, j): indices into i's distinct items that j also holds}``, in byte order of the items, for
            every ordered pair ``i != j``.
        permutations: ``permutations[i]``, a permutation of ``range(n_i)`` (client ``i``'s secret positions).

    Returns:
        ``(vectors, segments)``: ``vectors[j]`` int64 ``(sum_i n_i,)``; ``segments[i] = (off_i, off_i + n_i)``.

    Raises:
        ValueError: if ``permutations`` does not hold one permutation of ``range(n_i)`` per client, a pair lacks its
            other direction, an index is out of range, or a pair's two intersections differ in size.
    """
    sizes = [len(c) for c in counts]
    if len(permutations) != len(sizes):
        raise ValueError(f"permutations must hold one entry per client ({len(sizes)}), got {len(permutations)}")
    for i, (p, n) in enumerate(zip(permutations, sizes)):
        if not np.array_equal(np.sort(np.asarray(p)), np.arange(n)):
            raise ValueError(f"permutations[{i}] must be a permutation of range({n})")
    for (i, j), idx in shared.items():
        if not (0 <= i < len(sizes) and 0 <= j < len(sizes)) or i == j or (j, i) not in shared:
            raise ValueError(f"shared must hold both ({i}, {j}) and ({j}, {i}) for client ids i != j < {len(sizes)}")
        if np.asarray(idx).size and not (np.min(idx) >= 0 and np.max(idx) < sizes[i]):
            raise ValueError(f"shared[({i}, {j})] must index client {i}'s {sizes[i]} distinct items")
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    vectors = [np.zeros(int(offsets[-1]), dtype=np.int64) for _ in counts]
    for (i, j), idx_i in shared.items():
        idx_j = shared[(j, i)]
        if idx_i.size != idx_j.size:
            raise ValueError(f"shared[({i}, {j})] and shared[({j}, {i})] differ in size ({idx_i.size}, {idx_j.size})")
        vectors[j][offsets[i] + permutations[i][idx_i]] = counts[j][idx_j]
    return vectors, [(int(offsets[i]), int(offsets[i + 1])) for i in range(len(counts))]


def ppmpr_in_process(
    clients: Sequence[Client],
    *,
    backend: PSIBackend | None = None,
    seed: int | None = None,
    bit_length: int = 32,
    count_cap: int | None = None,
) -> PPMPRResult:
    r"""PPMPR's global sample frequencies, every party simulated in this process: **no secrecy** (for tests, audits).

    The outputs and each client's view (:class:`ClientView`) are the protocol's, but all clients run in one process
    and MPyC runs with a single party that inputs every client's contribution vector, so this process sees every
    count; ``PPMPRResult.secure`` is ``False`` and ``mpc_parties`` is ``1``. Use
    :func:`nips25_fedrw.simulate.simulate` for the real protocol (one process per client, ``K`` MPyC parties).
    Client ``i``'s secret permutation is drawn from ``numpy.random.default_rng([seed, i])``, as each client process
    of :func:`~nips25_fedrw.simulate.simulate` draws its own.

    For client ``i`` and local sample ``x``: :math:`F_i(x) = c_i(x) + \sum_{j \ne i} c_j(x)`, exact (no cap). The
    parties run one after the other here; ``timings["psi_parallel"]`` adds up, over the rounds of
    :func:`round_robin_schedule`, the slowest pair of each round (what pairs running in parallel would take).
    :func:`nips25_fedrw.simulate.simulate` runs the same protocol with one process per client over loopback.

    Args:
        clients: ``K >= 2`` clients with ids ``0..K-1``.
        backend: the PSI primitive; default :class:`OpenMinedPSI` (exact ``raw`` mode).
        seed: seed of the clients' secret position permutations, one stream per client (``None``: fresh entropy).
        bit_length: bit length of MPyC's secure integers.
        count_cap: ``None`` (default): PSI + position exchange + MPyC secure sum, exact frequencies; a client learns
            which partners hold each of its items and the total of their counts (a single holder's exact count, see
            the module docstring). An int ``T >= 1``: count-encoded PSI (see
            :mod:`nips25_fedrw.count_encoding`), no secure sum; frequencies
            :math:`c_i(x) + \sum_{j \ne i} \min(c_j(x), T)`, and client ``i`` learns every partner's capped count
            (``ClientView.partner_counts``).

    Returns:
        A :class:`PPMPRResult`.

    Raises:
        TypeError, ValueError: for malformed ``clients``, ``backend``, ``seed`` (a negative or non-int seed) or
            ``count_cap`` (not an int in ``[1, 65536]``).

    References:
        Ye et al., "FedRW: Efficient Privacy-Preserving Data Reweighting for Enhancing Federated Learning of
        Language Models", NeurIPS 2025, arXiv:2511.07505, Sec. 4 (PPMPR).

    Example:
        >>> res = ppmpr_in_process([Client(0, ("a", "b", "a")), Client(1, ("a", "c"))], seed=0)
        >>> res.freq[0].tolist(), res.freq[1].tolist(), res.secure
        ([3, 1, 3], [3, 1], False)
    """
    cl = check_clients(clients)
    seed = check_seed(seed)
    cap = None if count_cap is None else check_count_cap(count_cap)
    psi = OpenMinedPSI() if backend is None else backend
    if not isinstance(psi, PSIBackend):
        raise TypeError(f"backend must implement PSIBackend.intersect, got {type(psi).__name__}")
    start = time.perf_counter()
    k = len(cl)
    distinct = [c.distinct() for c in cl]
    items = [d[0] for d in distinct]
    counts = [d[1] for d in distinct]
    if cap is None:
        q_sets, a_sets = items, items
    else:
        q_sets = [querier_items(x, count_cap=cap) for x in items]
        a_sets = [answerer_items(x, c, count_cap=cap) for x, c in zip(items, counts)]
    shared: dict[tuple[int, int], np.ndarray] = {}
    received: dict[int, list[bytes]] = {i: [] for i in range(k)}
    psi_s = psi_parallel = 0.0
    n_runs = n_bytes = 0
    for pairs in round_robin_schedule(k):
        slowest = 0.0
        for i, j in pairs:
            pair_s = 0.0
            for q, a in ((i, j), (j, i)):
                run = psi.intersect(q_sets[q], a_sets[a])
                shared[(q, a)] = run.indices
                if run.messages:
                    setup, request, response = run.messages
                    received[q] += [setup, response]
                    received[a].append(request)
                pair_s += run.seconds
                n_runs += 1
                n_bytes += run.bytes_sent
            psi_s += pair_s
            slowest = max(slowest, pair_s)
        psi_parallel += slowest
    if cap is not None:
        return _count_encoded_result(cl, distinct, shared, received, cap, start, psi_s, psi_parallel, n_runs, n_bytes)
    perms = [
        np.random.default_rng(None if seed is None else [seed, i]).permutation(len(c)) for i, c in enumerate(counts)
    ]
    vectors, segments = contribution_vectors(counts, shared, perms)
    t_sum = time.perf_counter()
    outs = secure_sum(vectors, segments=segments, bit_length=bit_length)
    sum_s = time.perf_counter() - t_sum
    freq: dict[int, np.ndarray] = {}
    views: dict[int, ClientView] = {}
    for i in range(k):
        f_items = counts[i] + outs[i][perms[i]]
        freq[i] = f_items[distinct[i][2]]
        views[i] = ClientView(
            client=i,
            psi_messages=tuple(received[i]),
            shared_with={j: shared[(i, j)] for j in range(k) if j != i},
            positions_received={j: perms[j][shared[(j, i)]] for j in range(k) if j != i},
            secure_sum_output=outs[i],
        )
    timings = _timings(start, psi_s, psi_parallel, sum_s)
    return PPMPRResult(freq=freq, timings=timings, psi_runs=n_runs, transcript_bytes=n_bytes, views=views)


def _timings(start: float, psi_s: float, psi_parallel: float, sum_s: float) -> dict[str, float]:
    """``PPMPRResult.timings`` at the end of a run that began at ``start`` (``time.perf_counter``)."""
    total = time.perf_counter() - start
    return {
        "psi": psi_s,
        "psi_parallel": psi_parallel,
        "secure_sum": sum_s,
        "total": total,
        "parallel": total - psi_s + psi_parallel,
    }


def _count_encoded_result(
    cl: list[Client],
    distinct: list[tuple[list[bytes], np.ndarray, np.ndarray]],
    shared: dict[tuple[int, int], np.ndarray],
    received: dict[int, list[bytes]],
    cap: int,
    start: float,
    psi_s: float,
    psi_parallel: float,
    n_runs: int,
    n_bytes: int,
) -> PPMPRResult:
    """Frequencies and views of the count-encoded variant: decode each querier's matches into capped counts."""
    k = len(cl)
    freq: dict[int, np.ndarray] = {}
    views: dict[int, ClientView] = {}
    for i in range(k):
        items, counts, inverse = distinct[i]
        partner = {j: capped_counts(shared[(i, j)], len(items), count_cap=cap) for j in range(k) if j != i}
        freq[i] = (counts + sum(partner.values()))[inverse]
        views[i] = ClientView(
            client=i,
            psi_messages=tuple(received[i]),
            shared_with={j: np.flatnonzero(c) for j, c in partner.items()},
            positions_received={},
            secure_sum_output=np.zeros(0, dtype=np.int64),
            partner_counts=partner,
        )
    return PPMPRResult(
        freq=freq,
        timings=_timings(start, psi_s, psi_parallel, 0.0),
        psi_runs=n_runs,
        transcript_bytes=n_bytes,
        views=views,
        count_cap=cap,
        mpc_parties=0,
    )


def ppmpr(
    clients: Sequence[Client],
    *,
    backend: PSIBackend | None = None,
    seed: int | None = None,
    bit_length: int = 32,
    count_cap: int | None = None,
) -> PPMPRResult:
    """Deprecated name of :func:`ppmpr_in_process` (an in-process simulation without secrecy); removed in 0.3.

    Warns:
        DeprecationWarning: always (the computation is :func:`ppmpr_in_process`'s).
    """
    warnings.warn(
        "ppmpr() is an in-process simulation without secrecy and was renamed ppmpr_in_process(); the real "
        "multi-process protocol is simulate()",
        DeprecationWarning,
        stacklevel=2,
    )
    return ppmpr_in_process(clients, backend=backend, seed=seed, bit_length=bit_length, count_cap=count_cap)
