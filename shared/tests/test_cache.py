import hashlib
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from nips25_shared import FetchError, cache_dir, cached, fetch
from nips25_shared.cache import atomic_write


def test_cache_dir_from_env(_isolated_cache):
    assert cache_dir() == _isolated_cache and _isolated_cache.is_dir()


def test_builds_once_and_reuses():
    calls = []

    def build():
        calls.append(1)
        return {"x": np.arange(5.0), "y": np.eye(2)}

    first = cached("t/a", build)
    second = cached("t/a", build)
    assert len(calls) == 1
    for v in (first, second):
        np.testing.assert_array_equal(v["x"], np.arange(5.0))
        np.testing.assert_array_equal(v["y"], np.eye(2))


@pytest.mark.parametrize(("kind", "value"), [("json", {"a": [1, 2], "b": "c"}), ("bytes", b"\x00\x01abc")])
def test_other_kinds_round_trip(kind, value):
    assert cached("k", lambda: value, kind=kind) == value
    assert cached("k", lambda: pytest.fail("rebuilt"), kind=kind) == value


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete-sha"])
def test_corrupt_entry_is_rebuilt_with_warning(damage, caplog):
    cached("c", lambda: {"x": np.arange(1000)})
    path = cache_dir() / "c.npz"
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    else:
        (cache_dir() / "c.npz.sha256").unlink()
    calls = []
    with caplog.at_level("WARNING", logger="nips25"):
        import logging

        logging.getLogger("nips25").propagate = True
        try:
            out = cached("c", lambda: calls.append(1) or {"x": np.arange(1000)})
        finally:
            logging.getLogger("nips25").propagate = False
    assert calls == [1]
    np.testing.assert_array_equal(out["x"], np.arange(1000))
    assert any("rebuilding" in r.message for r in caplog.records)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == (cache_dir() / "c.npz.sha256").read_text()


def test_interrupted_write_leaves_no_half_file(monkeypatch, tmp_path):
    """An interruption between writing the temp file and the rename leaves neither the target nor the temp file."""
    target = tmp_path / "d" / "f.bin"
    atomic_write(target, b"old")

    def boom(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, b"new" * 1000)
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in target.parent.iterdir()) == ["f.bin"]


def test_interrupted_build_stores_nothing():
    def build():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cached("i", build)
    assert not (cache_dir() / "i.npz").exists()
    assert cached("i", lambda: {"x": np.ones(2)})["x"].tolist() == [1.0, 1.0]


_SLOW_BUILD = """
import sys, time
from pathlib import Path
import numpy as np
from nips25_shared import cached

def build():
    Path(sys.argv[1]).touch()
    time.sleep(60)
    return {"x": np.zeros(1)}

cached("slow", build)
"""

_COUNT_BUILD = """
import sys, time
import numpy as np
from nips25_shared import cached

def build():
    with open(sys.argv[1], "a") as fh:
        fh.write("built\\n")
    time.sleep(0.5)
    return {"x": np.arange(3)}

assert cached("shared-key", build)["x"].tolist() == [0, 1, 2]
"""


def _python(code, *args):
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], env=os.environ.copy())


def test_killed_writer_leaves_no_entry(tmp_path):
    """A process killed (SIGKILL) while building leaves no entry; the next call builds it."""
    started = tmp_path / "started"
    proc = _python(_SLOW_BUILD, started)
    deadline = time.time() + 30
    while not started.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert started.exists()
    proc.kill()
    proc.wait()
    assert not (cache_dir() / "slow.npz").exists()
    assert cached("slow", lambda: {"x": np.zeros(3)})["x"].tolist() == [0.0, 0.0, 0.0]


def test_two_processes_build_once(tmp_path):
    """Two processes asking for the same key at once: one builds, the other waits on the lock and reads."""
    counter = tmp_path / "count.txt"
    procs = [_python(_COUNT_BUILD, counter) for _ in range(2)]
    assert [p.wait(60) for p in procs] == [0, 0]
    assert counter.read_text().splitlines() == ["built"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"key": "../x", "build": dict}, "key"),
        ({"key": "", "build": dict}, "key"),
        ({"key": "a", "build": dict, "kind": "pickle"}, "kind"),
        ({"key": "a", "build": 3}, "build"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        cached(**kwargs)


def test_wrong_build_type():
    from nips25_shared import CacheError

    with pytest.raises(CacheError, match="bytes"):
        cached("b", lambda: "text", kind="bytes")


def test_fetch_file_url_and_checksum(tmp_path):
    src = tmp_path / "data.txt"
    src.write_bytes(b"hello")
    digest = hashlib.sha256(b"hello").hexdigest()
    path = fetch(src.as_uri(), sha256=digest)
    assert path.read_bytes() == b"hello"
    src.unlink()  # now served from the cache with no access to the source
    assert fetch(src.as_uri(), sha256=digest) == path
    with pytest.raises(FetchError, match="expected"):
        other = tmp_path / "other.txt"
        other.write_bytes(b"x")
        fetch(other.as_uri(), sha256=digest)


def test_fetch_offline_error_names_url_and_local_path():
    url = "http://127.0.0.1:9/missing.csv"
    with pytest.raises(FetchError) as err:
        fetch(url, sha256="0" * 64, timeout=2)
    assert url in str(err.value) and "downloads/missing.csv" in str(err.value)


@pytest.mark.parametrize(("url", "sha"), [("ftp://x/y", "0" * 64), ("https://x/y", "abc")])
def test_fetch_bad_arguments(url, sha):
    with pytest.raises(ValueError):
        fetch(url, sha256=sha)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_atomic_write_mode_is_that_of_a_plain_open(tmp_path, umask):
    old = os.umask(umask)
    try:
        atomic_write(tmp_path / "atomic.bin", b"x")
        with open(tmp_path / "plain.bin", "w") as fh:
            fh.write("x")
    finally:
        os.umask(old)
    mode = os.stat(tmp_path / "atomic.bin").st_mode & 0o777
    assert mode == os.stat(tmp_path / "plain.bin").st_mode & 0o777 == 0o666 & ~umask


def test_cached_entry_and_checksum_are_0644_under_umask_022():
    old = os.umask(0o022)
    try:
        cached("mode-check", lambda: {"a": np.arange(3)})
    finally:
        os.umask(old)
    for path in (cache_dir() / "mode-check.npz", cache_dir() / "mode-check.npz.sha256"):
        assert os.stat(path).st_mode & 0o777 == 0o644, path
