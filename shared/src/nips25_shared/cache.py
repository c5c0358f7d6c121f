"""Dataset caching: build once, reuse, write atomically, guard concurrent writers, detect corruption.

Layout of an entry ``key`` of kind ``npz`` under :func:`cache_dir`::

    <cache_dir>/<key>.npz          the payload, replaced atomically (temp file + ``os.replace``)
    <cache_dir>/<key>.npz.sha256   its sha256, written after the payload
    <cache_dir>/<key>.npz.lock     a file lock held while the entry is checked or built
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np
import platformdirs
from filelock import FileLock

from nips25_shared.logs import get_logger

__all__ = ["CacheError", "FetchError", "atomic_write", "cache_dir", "cached", "fetch"]

Kind = Literal["npz", "json", "bytes"]
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
log = get_logger("nips25_shared.cache")


class CacheError(RuntimeError):
    """A cache entry could not be built or stored."""


class FetchError(ConnectionError):
    """A file could not be downloaded (no network, wrong URL, or checksum mismatch)."""


def cache_dir() -> Path:
    """Directory of the nips25 cache: ``$NIPS25_CACHE_DIR`` if set, else the platform's user cache directory.

    The directory is created if missing.
    """
    env = os.environ.get("NIPS25_CACHE_DIR")
    path = Path(env).expanduser() if env else Path(platformdirs.user_cache_dir("nips25"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one, never a half file.

    The bytes go to a temporary file in the same directory, are flushed and fsync'ed, then renamed over
    ``path`` with ``os.replace`` (atomic on POSIX and Windows). On any exception, the temporary file is removed.

    The file gets the permissions a plain ``open(path, "w")`` would give it: ``0o666`` less the process's umask
    (``0o644`` under the usual umask 022), not the ``0o600`` of :func:`tempfile.mkstemp`.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), 0o666 & ~_umask())
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """The process's umask (reading it means setting it; it is set straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _serialize(value: Any, kind: Kind) -> bytes:
    if kind == "npz":
        if not isinstance(value, Mapping) or not value:
            raise CacheError("build() must return a non-empty mapping of name -> array for kind='npz'")
        buf = io.BytesIO()
        arrays: dict[str, Any] = {str(k): np.asarray(v) for k, v in value.items()}
        np.savez(buf, **arrays)
        return buf.getvalue()
    if kind == "json":
        return json.dumps(value, sort_keys=True).encode()
    if not isinstance(value, (bytes, bytearray)):
        raise CacheError(f"build() must return bytes for kind='bytes', got {type(value).__name__}")
    return bytes(value)


def _deserialize(data: bytes, kind: Kind) -> Any:
    if kind == "npz":
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    if kind == "json":
        return json.loads(data)
    return data


def _read_verified(path: Path, sha_path: Path) -> bytes | None:
    """The entry's bytes if present and matching their sha256; ``None`` if absent or corrupt."""
    if not path.exists() and not sha_path.exists():
        return None
    try:
        expected = sha_path.read_text().strip()
        data = path.read_bytes()
    except OSError:
        log.warning("cache entry %s is incomplete; rebuilding it", path)
        return None
    if hashlib.sha256(data).hexdigest() != expected:
        log.warning("cache entry %s is corrupt (sha256 mismatch); rebuilding it", path)
        return None
    return data


def cached(key: str, build: Callable[[], Any], *, kind: Kind = "npz") -> Any:
    """Return the cached value of ``key``, calling ``build()`` only when no valid entry exists.

    The entry is written atomically with its sha256 beside it, under a file lock, so that two processes asking
    for the same key build it once, an interrupted write leaves no half file, and a corrupt or truncated entry
    is rebuilt (with a warning), never returned.

    Args:
        key: relative name of the entry, letters, digits, ``._-`` and ``/`` (e.g. ``"routing/zoo-v1"``).
        build: zero-argument function producing the value: a mapping ``name -> array`` for ``kind="npz"``,
            any JSON-serialisable object for ``"json"``, ``bytes`` for ``"bytes"``.
        kind: storage format.

    Returns:
        The value as read back from storage: ``dict[str, numpy.ndarray]`` for ``"npz"``, the JSON object for
        ``"json"``, ``bytes`` for ``"bytes"`` (the same type on the first call and on later ones).

    Raises:
        ValueError: if ``key`` or ``kind`` is malformed.
        CacheError: if ``build()`` returns a value that ``kind`` cannot store.
    """
    if not isinstance(key, str) or not _KEY.match(key) or ".." in key:
        raise ValueError(f"key must match {_KEY.pattern!r} (no '..'), got {key!r}")
    if kind not in ("npz", "json", "bytes"):
        raise ValueError(f"kind must be 'npz', 'json' or 'bytes', got {kind!r}")
    if not callable(build):
        raise TypeError("build must be a zero-argument callable")
    path = cache_dir() / f"{key}.{kind}"
    sha_path = path.with_name(path.name + ".sha256")
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path.with_name(path.name + ".lock"))):
        data = _read_verified(path, sha_path)
        if data is None:
            log.debug("building cache entry %s", path)
            data = _serialize(build(), kind)
            sha_path.unlink(missing_ok=True)
            atomic_write(path, data)
            atomic_write(sha_path, hashlib.sha256(data).hexdigest().encode())
    return _deserialize(data, kind)


def fetch(url: str, *, sha256: str, filename: str | None = None, timeout: float = 30.0) -> Path:
    """Download ``url`` once into ``<cache_dir>/downloads/`` and return the local path, checked against ``sha256``.

    For users who have internet. Nothing in the nips25 tests or default reproductions calls it. Offline, put the
    file at the path named in the error (or set ``NIPS25_CACHE_DIR``) and it is used without any network access.

    Args:
        url: ``http(s)://`` or ``file://`` address.
        sha256: expected hex digest (64 lowercase hex characters).
        filename: local file name; defaults to the last path component of ``url``.
        timeout: seconds before a connection attempt gives up.

    Returns:
        Path of the verified local file.

    Raises:
        ValueError: if ``url`` or ``sha256`` is malformed.
        FetchError: if the download fails (the message names the URL and where to place a local copy), or the
            downloaded bytes do not match ``sha256``.
    """
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme not in ("http", "https", "file") or not parsed.path:
        raise ValueError(f"url must be an http(s):// or file:// address, got {url!r}")
    sha256 = sha256.lower()
    if not _SHA256.match(sha256):
        raise ValueError(f"sha256 must be 64 hex characters, got {sha256!r}")
    name = filename or Path(parsed.path).name
    if not name or "/" in name:
        raise ValueError(f"filename must be a plain file name, got {name!r}")
    target = cache_dir() / "downloads" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target.with_name(target.name + ".lock"))):
        if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == sha256:
            return target
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:  # scheme checked above
                data = response.read()
        except (urllib.error.URLError, OSError) as exc:
            raise FetchError(
                f"could not download {url} ({exc}). Without network access, place a copy of the file at "
                f"{target} (sha256 {sha256}), or set NIPS25_CACHE_DIR to a directory holding downloads/{name}."
            ) from exc
        digest = hashlib.sha256(data).hexdigest()
        if digest != sha256:
            raise FetchError(f"sha256 of {url} is {digest}, expected {sha256}; the file was not stored")
        atomic_write(target, data)
    return target
