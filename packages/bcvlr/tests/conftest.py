"""One torch thread: the suite runs on 2 shared cores, where OpenMP spin-waiting across threads only slows it."""

from __future__ import annotations

import torch

torch.set_num_threads(1)


def pytest_configure(config) -> None:  # type: ignore[no-untyped-def]
    config.addinivalue_line("markers", "distributed: runs a script under accelerate launch on 2 CPU processes")
