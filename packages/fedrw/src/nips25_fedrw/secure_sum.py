"""Secure sums of count vectors on MPyC's runtime (Shamir secret sharing, honest majority).

Every party secret-shares one integer vector; the parties add the shares locally and open segment ``i`` of the
sum to party ``i`` alone. Party ``i`` learns :math:`\\sum_j v_j[s_i:e_i]` and nothing else about any single
:math:`v_j` beyond what that sum implies. With ``K`` parties MPyC's threshold is ``t = (K-1) // 2``: the
secrecy holds against coalitions of at most ``t`` parties, so ``K = 2`` gives none (and there the sum minus one's
own share is the other's vector anyway).

Two modes run the same MPyC program: :func:`secure_sum` in one process (MPyC with ``M = 1``, the party inputs
every vector; for tests and timing) and :func:`run_party` as party ``i`` of ``M = K`` processes over loopback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["run_party", "secure_sum"]


def _mpc(argv: Sequence[str]) -> Any:
    """MPyC's runtime object, importing MPyC with ``argv`` (MPyC reads its options from ``sys.argv`` at import)."""
    if "mpyc.runtime" not in sys.modules:
        saved = sys.argv
        sys.argv = [saved[0] if saved else "nips25-fedrw", *argv]
        try:
            from mpyc.runtime import mpc  # noqa: F401
        finally:
            sys.argv = saved
    return sys.modules["mpyc.runtime"].mpc


def _check_segments(segments: object, n: int) -> list[tuple[int, int]]:
    if not isinstance(segments, Sequence) or not segments:
        raise ValueError("segments must be a non-empty sequence of (start, stop) pairs")
    out = []
    for k, seg in enumerate(segments):
        if not isinstance(seg, Sequence) or len(seg) != 2:
            raise ValueError(f"segments[{k}] must be a (start, stop) pair, got {seg!r}")
        s, e = int(seg[0]), int(seg[1])
        if not 0 <= s <= e <= n:
            raise ValueError(f"segments[{k}] must satisfy 0 <= start <= stop <= {n}, got {(s, e)}")
        out.append((s, e))
    return out


def _check_vector(name: str, v: object, bit_length: int) -> np.ndarray:
    arr = np.asarray(v)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D integer vector, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.min() < 0 or arr.max() >= 2 ** (bit_length - 2):
        raise ValueError(f"{name} must hold counts in [0, 2**{bit_length - 2}), got range [{arr.min()}, {arr.max()}]")
    return arr.astype(np.int64)


async def _program(mpc: Any, vectors: list[np.ndarray], segments: list[tuple[int, int]], bit_length: int) -> list:
    secint = mpc.SecInt(bit_length)
    await mpc.start()
    try:
        m = len(mpc.parties)
        if m == 1:
            shared = [mpc.input(secint.array(v), senders=0) for v in vectors]
        else:
            shared = mpc.input(secint.array(vectors[0]), senders=list(range(m)))
        total = shared[0]
        for s in shared[1:]:
            total = total + s
        outs = []
        for i, (s, e) in enumerate(segments):
            receiver = 0 if m == 1 else i
            if e > s:
                outs.append(await mpc.output(total[s:e], receivers=[receiver]))
            else:
                outs.append(np.zeros(0, dtype=np.int64) if mpc.pid == receiver else None)
        return outs
    finally:
        await mpc.shutdown()


def secure_sum(
    vectors: Sequence[np.ndarray], *, segments: Sequence[tuple[int, int]], bit_length: int = 32
) -> list[np.ndarray]:
    r"""Segments of :math:`\sum_j v_j` computed by MPyC in one process (``M = 1``; no secrecy, same program).

    Args:
        vectors: ``K`` non-negative integer vectors of equal length ``N``, one per contributing party.
        segments: ``(start, stop)`` of the slice opened to each receiver, ``0 <= start <= stop <= N``.
        bit_length: bit length of MPyC's secure integers; every entry of the sum must stay below
            ``2**(bit_length - 2)``.

    Returns:
        ``[sum_j v_j[start_i:stop_i] for each segment i]`` as int64 arrays.

    Raises:
        ValueError: for no vectors, unequal lengths, negative or too large entries, bad segments or bit length.
        TypeError: if a vector holds non-integers.

    References:
        MPyC (Schoenmakers), https://github.com/lschoe/mpyc; FedRW (arXiv:2511.07505) obtains global frequencies
        through secure multi-party computation; the vector layout is our reconstruction.

    Example:
        >>> [o.tolist() for o in secure_sum([np.array([1, 2, 3]), np.array([0, 5, 1])], segments=[(0, 1), (1, 3)])]
        [[1], [7, 4]]
    """
    if not isinstance(bit_length, int) or not 8 <= bit_length <= 62:
        raise ValueError(f"bit_length must be an int in [8, 62], got {bit_length!r}")
    if isinstance(vectors, np.ndarray) and vectors.ndim == 2:
        vectors = list(vectors)
    if not isinstance(vectors, Sequence) or len(vectors) == 0:
        raise ValueError("vectors must be a non-empty sequence of 1-D integer vectors")
    vecs = [_check_vector(f"vectors[{j}]", v, bit_length) for j, v in enumerate(vectors)]
    n = vecs[0].size
    if any(v.size != n for v in vecs):
        raise ValueError(f"vectors must all have the same length, got {[v.size for v in vecs]}")
    if sum(int(v.max()) for v in vecs) >= 2 ** (bit_length - 2):
        raise ValueError(f"vectors: their sum may exceed 2**{bit_length - 2}; raise bit_length")
    segs = _check_segments(segments, n)
    mpc = _mpc(["--no-log"])
    if len(mpc.parties) != 1:
        raise RuntimeError("secure_sum runs MPyC with one party; use run_party in a multi-party process")
    outs = mpc.run(_program(mpc, vecs, segs, bit_length))
    return [np.asarray(o, dtype=np.int64).reshape(-1) for o in outs]


def run_party(
    vector: np.ndarray,
    *,
    segments: Sequence[tuple[int, int]],
    n_parties: int,
    party_id: int,
    base_port: int,
    bit_length: int = 32,
) -> np.ndarray:
    """Act as party ``party_id`` of ``n_parties`` MPyC processes on ``localhost`` and return this party's segment.

    Must run in a fresh process that has not imported MPyC yet (MPyC fixes its party set at import).

    Args:
        vector: this party's non-negative integer vector ``(N,)``; all parties use the same ``N``.
        segments: ``n_parties`` slices; slice ``i`` of the sum is opened to party ``i`` only.
        n_parties: the number of MPyC parties ``M >= 2``.
        party_id: this party's index ``0 <= party_id < n_parties``.
        base_port: party ``i`` listens on ``base_port + i``.
        bit_length: bit length of the secure integers.

    Returns:
        This party's slice of the sum, int64.

    Raises:
        ValueError: for bad arguments; RuntimeError if MPyC was already imported with another party set.
    """
    if not isinstance(n_parties, int) or n_parties < 2:
        raise ValueError(f"n_parties must be an int >= 2, got {n_parties!r}")
    if not isinstance(party_id, int) or not 0 <= party_id < n_parties:
        raise ValueError(f"party_id must be in [0, {n_parties}), got {party_id!r}")
    if not isinstance(base_port, int) or not 1024 <= base_port <= 65535 - n_parties:
        raise ValueError(f"base_port must be in [1024, {65535 - n_parties}], got {base_port!r}")
    vec = _check_vector("vector", vector, bit_length)
    segs = _check_segments(segments, vec.size)
    if len(segs) != n_parties:
        raise ValueError(f"segments must hold one slice per party ({n_parties}), got {len(segs)}")
    argv = ["-M", str(n_parties), "-I", str(party_id), "--base-port", str(base_port), "--no-log"]
    mpc = _mpc(argv)
    if len(mpc.parties) != n_parties or mpc.pid != party_id:
        raise RuntimeError("MPyC was imported before with another party set; run_party needs a fresh process")
    outs = mpc.run(_program(mpc, [vec], segs, bit_length))
    return np.asarray(outs[party_id], dtype=np.int64).reshape(-1)
