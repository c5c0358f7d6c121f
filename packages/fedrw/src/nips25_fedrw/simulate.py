"""PPMPR as a real multi-party protocol: one operating-system process per client, talking over loopback.

This is the protocol with its secrecy (unlike :func:`nips25_fedrw.ppmpr.ppmpr_in_process`, which simulates every
party in one process). Each client process holds only its own samples; what it learns is stated in
:mod:`nips25_fedrw.ppmpr` (the partners holding each of its items and their total count, hence a single holder's
exact count).

:func:`simulate` starts ``K`` processes (``python -m nips25_fedrw.simulate --client i --workdir DIR``). Each client
process opens a TCP listener on ``127.0.0.1``, runs its openmined-psi runs with its partner of every round of the
round-robin schedule (both directions), exchanges positions, then acts as MPyC party ``i`` of ``K`` (MPyC's own
runtime over loopback) for the secure sum, and writes its frequencies. Pairs of a round run truly in parallel.
With ``count_cap`` the clients run count-encoded PSI instead and skip the position exchange and the secure sum.

**Files** (all in the run's working directory, a fresh temporary directory by default, removed afterwards; none is
a report output): the launching process writes the run's ``config.json``, each party's input ``client_<i>.json``
and opens each party's ``stderr_<i>.txt``; each party process writes its own outputs ``result_<i>.npz``,
``phases_<i>.json`` and ``received_<i>.bin``, which the launcher reads back. These per-party writes are by design
(a party process writes only its own files, and the party processes are not ``accelerate`` ranks). Under
``accelerate launch`` every rank that calls :func:`simulate` runs its own protocol in its own temporary directory;
an explicit ``workdir`` must then differ per rank.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Client as Connect
from multiprocessing.connection import Connection, Listener
from pathlib import Path

import numpy as np

from nips25_fedrw.count_encoding import check_count_cap
from nips25_fedrw.ppmpr import check_seed
from nips25_fedrw.samples import Client, check_clients
from nips25_fedrw.schedule import round_robin_schedule

__all__ = ["SimulationResult", "simulate"]


@dataclass(frozen=True)
class SimulationResult:
    """Output of :func:`simulate`.

    Attributes:
        freq: ``{client id: int64 (len(samples),)}`` global frequencies, as each client process computed them.
        wall_seconds: wall time from starting the processes until all finished.
        phase_seconds: ``{client id: {"connect", "psi", "secure_sum"}}`` seconds measured inside each process.
        received: ``{client id: every byte the client received from other clients on the PSI / position
            channel, concatenated}``; MPyC's own secret-share traffic of the secure sum is not recorded.
        mpc_parties: MPyC parties of the secure sum, one per client (``0`` with count-encoded PSI: no sum).
        threshold: Shamir threshold ``(K - 1) // 2`` of the sum: secrecy holds against coalitions of at most this
            many clients (``0``, i.e. none, for ``K = 2``).
    """

    freq: dict[int, np.ndarray]
    wall_seconds: float
    phase_seconds: dict[int, dict[str, float]]
    received: dict[int, bytes]
    mpc_parties: int = 0
    threshold: int = 0


def _free_port_block(n: int) -> int:
    """A base port with ``n`` consecutive free ports on loopback."""
    rng = np.random.default_rng()
    for _ in range(200):
        base = int(rng.integers(20000, 60000 - n))
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no block of free loopback ports found")


def simulate(
    clients: Sequence[Client],
    *,
    timeout: float = 300.0,
    seed: int | None = None,
    workdir: Path | None = None,
    count_cap: int | None = None,
) -> SimulationResult:
    """Run PPMPR for real: every client in its own process over loopback, ``K`` MPyC parties; start and stop them.

    Args:
        clients: ``K >= 2`` clients with ids ``0..K-1``.
        timeout: seconds after which every client process still running is killed and an error raised.
        seed: seed of the clients' secret position permutations (``None``: fresh entropy).
        workdir: directory for the exchange files (default: a fresh temporary directory, removed afterwards).
        count_cap: ``None`` (PSI + MPyC secure sum) or the cap ``T`` of count-encoded PSI, as in
            :func:`nips25_fedrw.ppmpr.ppmpr`.

    Returns:
        A :class:`SimulationResult`; its ``freq`` equals :func:`nips25_fedrw.ppmpr.ppmpr`'s.

    Raises:
        ValueError: for malformed clients, a non-positive or non-finite timeout, a negative seed or a
            ``count_cap`` outside ``[1, 65536]``.
        TypeError: for a non-int seed or count_cap, or a non-number timeout.
        RuntimeError: if a client process fails or times out (its stderr tail is included).
    """
    cl = check_clients(clients)
    seed = check_seed(seed)
    cap = None if count_cap is None else check_count_cap(count_cap)
    if isinstance(timeout, bool) or not isinstance(timeout, float | int):
        raise TypeError(f"timeout must be a number of seconds, got {type(timeout).__name__}")
    if not 0 < timeout < float("inf"):
        raise ValueError(f"timeout must be a finite number of seconds > 0, got {timeout!r}")
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="fedrw-sim-") as tmp:
            return _simulate(cl, float(timeout), seed, Path(tmp), cap)
    return _simulate(cl, float(timeout), seed, Path(workdir), cap)


def _simulate(cl: list[Client], timeout: float, seed: int | None, work: Path, cap: int | None) -> SimulationResult:
    k = len(cl)
    work.mkdir(parents=True, exist_ok=True)
    psi_base = _free_port_block(k)
    mpc_base = _free_port_block(k)
    while abs(mpc_base - psi_base) < k:
        mpc_base = _free_port_block(k)
    config = {
        "n_clients": k,
        "psi_base_port": psi_base,
        "mpc_base_port": mpc_base,
        "authkey": secrets.token_hex(16),
        "seed": seed,
        "count_cap": cap,
    }
    (work / "config.json").write_text(json.dumps(config))
    for c in cl:
        (work / f"client_{c.id}.json").write_text(json.dumps({"samples": list(c.samples), "form": c.form}))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    start = time.perf_counter()
    procs = []
    for c in cl:
        err = open(work / f"stderr_{c.id}.txt", "wb")  # noqa: SIM115 - closed after the process ends
        # -c, not -m nips25_fedrw.simulate: the package imports this module, so runpy would warn that it is
        # already in sys.modules when it runs it as __main__
        cmd = [sys.executable, "-c", _CLIENT_ENTRY, "--client", str(c.id), "--workdir", str(work)]
        procs.append((subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env), err))
    failed: list[int] = []
    try:
        # poll every process: the first one to fail stops the run at once (its partners would otherwise wait
        # for it until the timeout)
        while not failed and [proc.poll() for proc, _ in procs].count(None):
            failed = [c.id for c, (proc, _) in zip(cl, procs) if proc.returncode not in (None, 0)]
            if not failed and time.perf_counter() - start > timeout:
                failed = [c.id for c, (proc, _) in zip(cl, procs) if proc.returncode is None]
            time.sleep(0.02)
        failed = failed or [c.id for c, (proc, _) in zip(cl, procs) if proc.returncode not in (None, 0)]
    finally:
        for proc, err in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            err.close()
    wall = time.perf_counter() - start
    if failed:
        tail = (work / f"stderr_{failed[0]}.txt").read_text(errors="replace")[-1500:]
        raise RuntimeError(f"client process {failed[0]} failed or timed out after {wall:.1f} s:\n{tail}")
    freq, phases, received = {}, {}, {}
    for c in cl:
        data = np.load(work / f"result_{c.id}.npz")
        freq[c.id] = data["freq"].astype(np.int64)
        phases[c.id] = json.loads((work / f"phases_{c.id}.json").read_text())
        received[c.id] = (work / f"received_{c.id}.bin").read_bytes()
    return SimulationResult(
        freq=freq,
        wall_seconds=wall,
        phase_seconds=phases,
        received=received,
        mpc_parties=k if cap is None else 0,
        threshold=(k - 1) // 2 if cap is None else 0,
    )


class _Channel:
    """A loopback connection to one other client that records every byte received."""

    def __init__(self, conn: Connection, log: list[bytes]) -> None:
        self.conn = conn
        self.log = log

    def send(self, data: bytes) -> None:
        self.conn.send_bytes(data)

    def recv(self) -> bytes:
        data = self.conn.recv_bytes()
        self.log.append(data)
        return data


def _connect_all(me: int, k: int, base: int, authkey: bytes, log: list[bytes]) -> dict[int, _Channel]:
    """Connect to every lower id, then accept every higher id (no cycle, so no deadlock)."""
    listener = Listener(("127.0.0.1", base + me), authkey=authkey)
    chans: dict[int, _Channel] = {}
    for j in range(me):
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = Connect(("127.0.0.1", base + j), authkey=authkey)
                break
            except (ConnectionRefusedError, OSError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        conn.send_bytes(str(me).encode())
        chans[j] = _Channel(conn, log)
    for _ in range(me + 1, k):
        conn = listener.accept()
        j = int(conn.recv_bytes().decode())
        chans[j] = _Channel(conn, log)
    listener.close()
    return chans


def _client_main(me: int, work: Path) -> None:
    from nips25_fedrw.count_encoding import answerer_items, capped_counts, querier_items
    from nips25_fedrw.intersection import OpenMinedPSI
    from nips25_fedrw.secure_sum import run_party

    cfg = json.loads((work / "config.json").read_text())
    data = json.loads((work / f"client_{me}.json").read_text())
    k = int(cfg["n_clients"])
    client = Client(me, tuple(data["samples"]), form=data["form"])
    items, counts, inverse = client.distinct()
    cap = cfg.get("count_cap")
    q_set = items if cap is None else querier_items(items, count_cap=cap)
    a_set = items if cap is None else answerer_items(items, counts, count_cap=cap)
    psi = OpenMinedPSI()
    log: list[bytes] = []
    phases: dict[str, float] = {}
    t0 = time.perf_counter()
    chans = _connect_all(me, k, int(cfg["psi_base_port"]), bytes.fromhex(cfg["authkey"]), log)
    phases["connect"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    sizes = {me: len(items)}
    shared: dict[int, np.ndarray] = {}
    seed = cfg["seed"]
    rng = np.random.default_rng(None if seed is None else [int(seed), me])
    perm = rng.permutation(len(items))
    positions: dict[int, np.ndarray] = {}
    for pairs in round_robin_schedule(k):
        partner = next((j if i == me else i for i, j in pairs if me in (i, j)), None)
        if partner is None:
            continue
        ch = chans[partner]
        ch.send(str(len(items)).encode())
        sizes[partner] = int(ch.recv().decode())
        first_querier = min(me, partner)
        for querier in (first_querier, max(me, partner)):
            if querier == me:
                q = psi.querier(q_set)
                ch.send(q.request())
                setup, response = ch.recv(), ch.recv()
                shared[partner] = q.intersection(setup, response)
            else:
                a = psi.answerer(a_set)
                request = ch.recv()
                ch.send(a.setup(sizes[partner] * (cap or 1)))
                ch.send(a.respond(request))
        if cap is not None:
            continue
        ch.send(perm[shared[partner]].astype(np.int64).tobytes())
        positions[partner] = np.frombuffer(ch.recv(), dtype=np.int64)
        if positions[partner].size != shared[partner].size:
            raise RuntimeError(f"client {me}: intersection with {partner} differs in size between directions")
    phases["psi"] = time.perf_counter() - t0
    for ch in chans.values():
        ch.conn.close()
    if cap is not None:  # count-encoded PSI: the capped counts come straight from the intersections
        capped = [capped_counts(idx, len(items), count_cap=cap) for idx in shared.values()]
        phases["secure_sum"] = 0.0
        _write(work, me, (counts + sum(capped, np.zeros_like(counts)))[inverse], phases, log)
        return
    order = list(range(k))
    offsets = np.concatenate([[0], np.cumsum([sizes[j] for j in order])]).astype(int)
    vector = np.zeros(int(offsets[-1]), dtype=np.int64)
    for j, pos in positions.items():
        vector[offsets[j] + pos] = counts[shared[j]]
    segments = [(int(offsets[j]), int(offsets[j + 1])) for j in order]
    t0 = time.perf_counter()
    out = run_party(vector, segments=segments, n_parties=k, party_id=me, base_port=int(cfg["mpc_base_port"]))
    phases["secure_sum"] = time.perf_counter() - t0
    _write(work, me, (counts + out[perm])[inverse], phases, log)


def _write(work: Path, me: int, freq: np.ndarray, phases: dict[str, float], log: list[bytes]) -> None:
    np.savez(work / f"result_{me}.npz", freq=freq)
    (work / f"phases_{me}.json").write_text(json.dumps(phases))
    (work / f"received_{me}.bin").write_bytes(b"".join(log))


_CLIENT_ENTRY = "import sys; from nips25_fedrw.simulate import _main; raise SystemExit(_main(sys.argv[1:]))"


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nips25_fedrw.simulate", description="one PPMPR client process")
    parser.add_argument("--client", type=int, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    args, _ = parser.parse_known_args(argv)
    _client_main(args.client, args.workdir)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
