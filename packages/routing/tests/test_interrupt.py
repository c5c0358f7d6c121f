"""An interrupted `route` stream loses nothing: the state on disk covers every decision written (issue 44, item 8)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from nips25_routing import ANNEstimator, HistoryStore, PORTRouter

from .conftest import make_history

SCRIPT = "import sys; from nips25_routing.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_killed_route_leaves_a_state_whose_n_seen_equals_the_lines_written(tmp_path, sig):
    hist = make_history(0)
    path = tmp_path / "history.npz"
    np.savez(path, embeddings=hist.embeddings, quality=hist.quality, cost=hist.cost, models=np.array(hist.models))
    state = tmp_path / "port.json"
    cmd = [sys.executable, "-c", SCRIPT, "route", "--history", str(path), "--budgets", "50,50,50", "--n-total",
           "20000", "--backend", "faiss-flat", "--batch-size", "64", "--state", str(state)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rng = np.random.default_rng(0)
    lines = [json.dumps({"id": i, "embedding": (rng.normal(size=8) * 3).round(4).tolist()}) + "\n" for i in range(4000)]

    def feed() -> None:  # an endless stream: the process never sees EOF before the signal
        try:
            while True:
                for line in lines:
                    proc.stdin.write(line)
                proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    threading.Thread(target=feed, daemon=True).start()
    out: list[str] = []
    deadline = time.monotonic() + 60
    while len(out) < 1500 and time.monotonic() < deadline:
        out.append(proc.stdout.readline())
    proc.send_signal(sig)
    rest = proc.stdout.read()  # the same buffered reader as readline (communicate would skip its buffer)
    err = proc.stderr.read()
    proc.wait(timeout=60)
    written = [line for line in out + rest.splitlines(True) if line.strip()]
    assert proc.returncode == 128 + sig, err
    assert f"holds all {len(written)} queries written" in err
    saved = json.loads(state.read_text())
    assert saved["n_seen"] == len(written) > 1500
    router = PORTRouter.load(state, ANNEstimator(HistoryStore(hist.embeddings, hist.quality, hist.cost,
                                                              hist.models), backend="faiss-flat"))  # fmt: skip
    assert router.n_seen == len(written) and router.gamma_ is not None  # past the learning phase (500 queries)


def test_save_is_atomic(tmp_path, monkeypatch):
    """A failing write leaves the previous state file intact (temp file + rename)."""
    router = PORTRouter(ANNEstimator(make_history(0), backend="faiss-flat"), [5.0, 5.0, 5.0], n_total=50)
    path = router.save(tmp_path / "s.json")
    before = path.read_text()
    router.route(np.random.default_rng(0).normal(size=(10, 8)))

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", boom)
    with pytest.raises(OSError, match="disk full"):
        router.save(path)
    assert path.read_text() == before and len(list(tmp_path.iterdir())) == 1
