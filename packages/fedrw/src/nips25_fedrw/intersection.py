"""Two-party private set intersection (PSI), the primitive of PPMPR and of the EP-MPD-style baseline.

:class:`OpenMinedPSI` wraps OpenMined's ECDH-based PSI (``openmined-psi``): the *answerer* (PSI server) encrypts its
set under a secret key, the *querier* (PSI client) learns which of its own items the answerer holds and nothing
else but the answerer's set size; the answerer learns the querier's set size only. :class:`PlainOracle` computes
the same answer in the clear and exists for tests.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["OpenMinedPSI", "PSIBackend", "PSIRun", "PlainOracle"]

_STRUCTURES = ("raw", "gcs", "bloom_filter")


@dataclass(frozen=True)
class PSIRun:
    """Outcome of one PSI run, seen from the querier.

    Attributes:
        indices: sorted int64 indices into the querier's items of the items the answerer also holds.
        messages: the serialised messages in protocol order (answerer setup, querier request, answerer response);
            empty for :class:`PlainOracle`.
        seconds: wall-clock time of the run (both sides, one process).
    """

    indices: np.ndarray
    messages: tuple[bytes, ...]
    seconds: float

    @property
    def bytes_sent(self) -> int:
        """Total bytes of all messages exchanged."""
        return sum(len(m) for m in self.messages)


@runtime_checkable
class PSIBackend(Protocol):
    """Anything that intersects a querier's items with an answerer's items, revealing the result to the querier."""

    def intersect(self, querier_items: Sequence[bytes], answerer_items: Sequence[bytes]) -> PSIRun:
        """Indices of ``querier_items`` present in ``answerer_items``, with the transcript."""
        ...


def _check_items(name: str, items: object) -> list[bytes]:
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        raise TypeError(f"{name} must be a sequence of bytes, got {type(items).__name__}")
    out = list(items)
    for x in out:
        if not isinstance(x, bytes):
            raise TypeError(f"{name} must hold bytes (canonical samples), got {type(x).__name__}")
    if len(set(out)) != len(out):
        raise ValueError(f"{name} must hold distinct items (a set), got {len(out) - len(set(out))} repeats")
    return out


def _psi_module() -> Any:
    import private_set_intersection.python as psi

    return psi


class PSIAnswerer:
    """The answerer's (PSI server's) side of one run: holds the secret key and the set."""

    def __init__(self, items: Sequence[bytes], *, fpr: float, data_structure: str) -> None:
        self._psi = _psi_module()
        self._items = _check_items("items", items)
        self._server = self._psi.server.CreateWithNewKey(True)
        self._fpr = fpr
        self._ds = {
            "raw": self._psi.DataStructure.RAW,
            "gcs": self._psi.DataStructure.GCS,
            "bloom_filter": self._psi.DataStructure.BLOOM_FILTER,
        }[data_structure]

    def setup(self, n_querier_items: int) -> bytes:
        """The setup message (the answerer's encrypted set) for a querier holding ``n_querier_items`` items."""
        msg = self._server.CreateSetupMessage(self._fpr, max(int(n_querier_items), 1), self._items, self._ds)
        return bytes(msg.SerializeToString())

    def respond(self, request: bytes) -> bytes:
        """The response to a querier's serialised request (its items re-encrypted under the answerer's key)."""
        req = self._psi.Request()
        req.ParseFromString(request)
        return bytes(self._server.ProcessRequest(req).SerializeToString())


class PSIQuerier:
    """The querier's (PSI client's) side of one run."""

    def __init__(self, items: Sequence[bytes]) -> None:
        self._psi = _psi_module()
        self._items = _check_items("items", items)
        self._client = self._psi.client.CreateWithNewKey(True)

    def request(self) -> bytes:
        """The request message (the querier's items encrypted under its own key)."""
        return bytes(self._client.CreateRequest(self._items).SerializeToString())

    def intersection(self, setup: bytes, response: bytes) -> np.ndarray:
        """Sorted indices of the querier's items that the answerer holds."""
        s = self._psi.ServerSetup()
        s.ParseFromString(setup)
        r = self._psi.Response()
        r.ParseFromString(response)
        return np.sort(np.asarray(self._client.GetIntersection(s, r), dtype=np.int64))


class OpenMinedPSI:
    """ECDH private set intersection from ``openmined-psi`` (reveal-intersection mode, querier learns the result).

    Args:
        fpr: false-positive rate of the setup message; ignored by the exact ``"raw"`` structure.
        data_structure: ``"raw"`` (exact, default), ``"gcs"`` or ``"bloom_filter"`` (smaller, approximate).

    Raises:
        ValueError: if ``fpr`` is not in ``(0, 1)`` or ``data_structure`` is unknown.

    Example:
        >>> OpenMinedPSI().intersect([b"a", b"b", b"c"], [b"c", b"a", b"z"]).indices.tolist()
        [0, 2]
    """

    def __init__(self, *, fpr: float = 1e-9, data_structure: str = "raw") -> None:
        if not isinstance(fpr, float | int) or not 0.0 < float(fpr) < 1.0:
            raise ValueError(f"fpr must be in (0, 1), got {fpr!r}")
        if data_structure not in _STRUCTURES:
            raise ValueError(f"data_structure must be one of {_STRUCTURES}, got {data_structure!r}")
        self.fpr = float(fpr)
        self.data_structure = data_structure

    def answerer(self, items: Sequence[bytes]) -> PSIAnswerer:
        """A fresh answerer (new secret key) for ``items``."""
        return PSIAnswerer(items, fpr=self.fpr, data_structure=self.data_structure)

    def querier(self, items: Sequence[bytes]) -> PSIQuerier:
        """A fresh querier (new secret key) for ``items``."""
        return PSIQuerier(items)

    def intersect(self, querier_items: Sequence[bytes], answerer_items: Sequence[bytes]) -> PSIRun:
        """Run both sides of one PSI in this process; see :class:`PSIBackend`.

        Raises:
            TypeError: if an item is not ``bytes``.
            ValueError: if a side holds repeated items.
        """
        q_items = _check_items("querier_items", querier_items)
        a_items = _check_items("answerer_items", answerer_items)
        start = time.perf_counter()
        answerer = self.answerer(a_items)
        querier = self.querier(q_items)
        setup = answerer.setup(len(q_items))
        request = querier.request()
        response = answerer.respond(request)
        idx = querier.intersection(setup, response)
        return PSIRun(indices=idx, messages=(setup, request, response), seconds=time.perf_counter() - start)


class PlainOracle:
    """Plaintext intersection with the :class:`PSIBackend` interface. For tests only: it offers no privacy."""

    def intersect(self, querier_items: Sequence[bytes], answerer_items: Sequence[bytes]) -> PSIRun:
        """Indices of ``querier_items`` found in ``answerer_items``, computed in the clear."""
        q_items = _check_items("querier_items", querier_items)
        a_set = set(_check_items("answerer_items", answerer_items))
        start = time.perf_counter()
        idx = np.asarray([i for i, x in enumerate(q_items) if x in a_set], dtype=np.int64)
        return PSIRun(indices=idx, messages=(), seconds=time.perf_counter() - start)
