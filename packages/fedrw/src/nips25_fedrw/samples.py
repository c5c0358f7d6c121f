"""Clients and their samples: canonical byte strings, local multiplicities (FedRW, Sec. 3 "global frequency")."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Client", "canonicalize"]

_FORMS = ("NFC", "NFD", "NFKC", "NFKD")
_SPACE = re.compile(r"\s+")


def canonicalize(text: str, *, form: str = "NFC", collapse_whitespace: bool = True) -> bytes:
    r"""Canonical UTF-8 bytes of one sample, the key under which duplicates are matched.

    Two samples are duplicates when their canonical forms are equal: Unicode normal form ``form``, leading and
    trailing whitespace stripped and, with ``collapse_whitespace``, every run of whitespace replaced by one space.

    Args:
        text: the sample.
        form: Unicode normal form, one of ``"NFC"``, ``"NFD"``, ``"NFKC"``, ``"NFKD"``.
        collapse_whitespace: replace internal whitespace runs by a single space.

    Returns:
        The canonical form as UTF-8 ``bytes``; ``b""`` for empty or whitespace-only text (which :class:`Client`
        rejects as a sample: such samples would all count as duplicates of one another).

    Raises:
        TypeError: if ``text`` is not a ``str``.
        ValueError: if ``form`` is unknown.

    References:
        Ye et al., "FedRW", NeurIPS 2025, arXiv:2511.07505 (exact-duplicate matching; canonicalisation is our choice).

    Example:
        >>> canonicalize("  Shall I  compare thee\n") == b"Shall I compare thee"
        True
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if form not in _FORMS:
        raise ValueError(f"form must be one of {_FORMS}, got {form!r}")
    out = unicodedata.normalize(form, text).strip()  # type: ignore[arg-type]
    if collapse_whitespace:
        out = _SPACE.sub(" ", out)
    return out.encode("utf-8")


@dataclass(frozen=True)
class Client:
    """One federated client and its local multiset of text samples.

    Attributes:
        id: the client's index ``0 <= id < K`` in the federation.
        samples: the local samples, duplicates included, in training order.
        form: Unicode normal form used by :func:`canonicalize`.

    Example:
        >>> c = Client(0, ("a", "b", "a"))
        >>> c.distinct()[0], c.distinct()[1].tolist()
        ([b'a', b'b'], [2, 1])
    """

    id: int
    samples: tuple[str, ...]
    form: str = "NFC"
    _keys: tuple[bytes, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.id, bool) or not isinstance(self.id, int | np.integer) or self.id < 0:
            raise ValueError(f"id must be a non-negative int, got {self.id!r}")
        if isinstance(self.samples, str) or not isinstance(self.samples, Sequence):
            raise TypeError(f"samples must be a sequence of str, got {type(self.samples).__name__}")
        samples = tuple(self.samples)
        if not samples:
            raise ValueError(f"samples of client {self.id} must be non-empty")
        for s in samples:
            if not isinstance(s, str):
                raise TypeError(f"samples of client {self.id} must all be str, got {type(s).__name__}")
        object.__setattr__(self, "id", int(self.id))
        object.__setattr__(self, "samples", samples)
        keys = tuple(canonicalize(s, form=self.form) for s in samples)
        if b"" in keys:
            r = keys.index(b"")
            raise ValueError(
                f"samples of client {self.id} must not be empty or whitespace only, got samples[{r}]={samples[r]!r}"
            )
        object.__setattr__(self, "_keys", keys)

    @property
    def keys(self) -> tuple[bytes, ...]:
        """Canonical key of every sample, aligned with ``samples``."""
        return self._keys

    def distinct(self) -> tuple[list[bytes], np.ndarray, np.ndarray]:
        """Distinct canonical items, their local counts :math:`c_k(x)` and each sample's item index.

        Returns:
            ``(items, counts, inverse)``: ``items`` sorted bytes (length ``n``), ``counts`` int64 ``(n,)``,
            ``inverse`` int64 ``(len(samples),)`` with ``items[inverse[s]] == keys[s]``.
        """
        items = sorted(set(self._keys))
        index = {x: i for i, x in enumerate(items)}
        inverse = np.fromiter((index[k] for k in self._keys), dtype=np.int64, count=len(self._keys))
        counts = np.bincount(inverse, minlength=len(items)).astype(np.int64)
        return items, counts, inverse


def check_clients(clients: object, name: str = "clients") -> list[Client]:
    """Return ``clients`` as a list after checking it holds >= 2 :class:`Client` with ids ``0..K-1`` in order."""
    if not isinstance(clients, Sequence) or isinstance(clients, str | bytes):
        raise TypeError(f"{name} must be a sequence of Client, got {type(clients).__name__}")
    out = list(clients)
    if len(out) < 2:
        raise ValueError(f"{name} must hold at least 2 clients, got {len(out)}")
    for k, c in enumerate(out):
        if not isinstance(c, Client):
            raise TypeError(f"{name}[{k}] must be a Client, got {type(c).__name__}")
        if c.id != k:
            raise ValueError(f"{name}[{k}].id must be {k} (ids are 0..K-1 in order), got {c.id}")
    return out
