"""Benchmark timing and peak memory, one implementation for every package's ``benchmarks/bench_<slug>.py``.

Every package benchmark reports the median wall time of several runs and the peak memory of a run, side by side
with its peer. This module is the one place that measures both, so that "median of 5" and "peak MiB" mean the same
thing in every README.

Example:
    >>> import numpy as np
    >>> from nips25_shared.bench import measure
    >>> m = measure(lambda: np.ones(1_000_000).sum(), repeats=3, memory="tracemalloc")
    >>> len(m.times), float(m.result)
    (3, 1000000.0)
"""

from __future__ import annotations

import gc
import os
import resource
import statistics
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Measurement", "MemoryMode", "measure", "median_seconds", "peak_rss_mib", "rss_mib"]

MemoryMode = Literal["rss", "tracemalloc", "cuda", "none"]
_MODES = ("rss", "tracemalloc", "cuda", "none")


def rss_mib() -> float:
    """Current resident set size of this process, MiB.

    Reads ``/proc/self/statm`` (Linux); elsewhere falls back to :func:`peak_rss_mib` (the high-water mark).
    """
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):  # pragma: no cover - non-Linux
        return peak_rss_mib()


def peak_rss_mib() -> float:
    """High-water mark of this process's resident set size since it started, MiB (``getrusage`` ``ru_maxrss``).

    Linux reports KiB, macOS bytes; both are converted.
    """
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


@dataclass(frozen=True)
class Measurement:
    """What :func:`measure` found.

    Attributes:
        seconds: median wall time of the timed runs, seconds.
        times: every timed run's wall time, seconds, in run order.
        peak_mib: peak memory of one run above the memory in use just before it, MiB (``nan`` for mode ``"none"``).
        memory: how ``peak_mib`` was measured: ``"rss"`` (resident set size sampled every ``interval_s`` by a
            thread: sees every allocator, misses spikes shorter than the interval), ``"tracemalloc"`` (Python and
            numpy allocations, exact, not torch/JAX buffers), ``"cuda"`` (``torch.cuda.max_memory_allocated``) or
            ``"none"``.
        result: the return value of the last run.
    """

    seconds: float
    times: tuple[float, ...]
    peak_mib: float
    memory: MemoryMode
    result: Any


def _cuda_sync() -> Callable[[], None]:
    try:
        import torch
    except ImportError as exc:
        raise ValueError("memory='cuda' needs torch installed") from exc
    if not torch.cuda.is_available():
        raise ValueError("memory='cuda' needs a CUDA device; use memory='rss' on CPU")
    return torch.cuda.synchronize


def _timed(fn: Callable[[], Any], sync: Callable[[], None] | None) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    if sync is not None:
        sync()
    return time.perf_counter() - start, out


def _rss_run(fn: Callable[[], Any], interval_s: float) -> tuple[float, Any, float]:
    gc.collect()
    base = rss_mib()
    peak = [base]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_mib())
            time.sleep(interval_s)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        seconds, out = _timed(fn, None)
        peak[0] = max(peak[0], rss_mib())
    finally:
        done.set()
        thread.join()
    return seconds, out, peak[0] - base


def _tracemalloc_peak(fn: Callable[[], Any]) -> float:
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return (peak - base) / 2**20


def _cuda_run(fn: Callable[[], Any], sync: Callable[[], None]) -> tuple[float, Any, float]:
    import torch

    sync()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    seconds, out = _timed(fn, sync)
    return seconds, out, (torch.cuda.max_memory_allocated() - before) / 2**20


def measure(
    fn: Callable[[], Any],
    *,
    repeats: int = 5,
    warmup: int = 0,
    memory: MemoryMode = "rss",
    interval_s: float = 0.005,
) -> Measurement:
    """Median wall time of ``repeats`` calls of ``fn`` and the peak memory of one call.

    ``warmup`` untimed calls come first (compilation, caches). With ``memory="rss"`` or ``"cuda"`` the first timed
    call also gives the memory peak (sampling costs almost nothing); with ``"tracemalloc"``, which slows Python
    allocation, one extra untimed call measures memory after the timed ones. With ``"cuda"`` every call is followed
    by ``torch.cuda.synchronize()`` so that the time includes the device's work.

    Args:
        fn: the work, a callable with no arguments.
        repeats: timed calls, >= 1; ``seconds`` is their median.
        warmup: untimed calls before the timed ones, >= 0.
        memory: ``"rss"``, ``"tracemalloc"``, ``"cuda"`` or ``"none"`` (see :class:`Measurement`).
        interval_s: RSS sampling interval in seconds, > 0 (mode ``"rss"`` only).

    Returns:
        A :class:`Measurement`.

    Raises:
        TypeError: if ``fn`` is not callable.
        ValueError: if ``repeats`` < 1, ``warmup`` < 0, ``memory`` is not a known mode, ``interval_s`` <= 0, or
            ``memory="cuda"`` without torch or a CUDA device.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an int >= 0, got {warmup!r}")
    if memory not in _MODES:
        raise ValueError(f"memory must be one of {_MODES}, got {memory!r}")
    if not interval_s > 0:
        raise ValueError(f"interval_s must be > 0, got {interval_s!r}")
    sync = _cuda_sync() if memory == "cuda" else None
    for _ in range(warmup):
        _timed(fn, sync)
    peak = float("nan")
    times: list[float] = []
    if memory == "rss":
        seconds, out, peak = _rss_run(fn, interval_s)
        times.append(seconds)
    elif memory == "cuda":
        assert sync is not None
        seconds, out, peak = _cuda_run(fn, sync)
        times.append(seconds)
    while len(times) < repeats:
        seconds, out = _timed(fn, sync)
        times.append(seconds)
    if memory == "tracemalloc":
        peak = _tracemalloc_peak(fn)
    return Measurement(statistics.median(times), tuple(times), peak, memory, out)


def median_seconds(fn: Callable[[], Any], *, repeats: int = 5, warmup: int = 0) -> float:
    """Median wall time of ``repeats`` calls of ``fn`` after ``warmup`` untimed calls, seconds.

    Shorthand for ``measure(fn, repeats=repeats, warmup=warmup, memory="none").seconds``; raises what it raises.
    """
    return measure(fn, repeats=repeats, warmup=warmup, memory="none").seconds
