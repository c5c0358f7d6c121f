"""nips25_shared.bench: median timing and peak memory."""

from __future__ import annotations

import time

import numpy as np
import pytest

from nips25_shared.bench import Measurement, measure, median_seconds, peak_rss_mib, rss_mib


def test_median_of_known_sleeps() -> None:
    durations = iter([0.05, 0.01, 0.03])

    def work() -> str:
        time.sleep(next(durations))
        return "done"

    m = measure(work, repeats=3, memory="none")
    assert isinstance(m, Measurement)
    assert len(m.times) == 3 and m.result == "done"
    assert m.times[0] >= 0.05 and m.times[1] >= 0.01 and m.times[2] >= 0.03
    assert m.seconds == sorted(m.times)[1]  # median of three
    assert 0.03 <= m.seconds < 0.05
    assert np.isnan(m.peak_mib) and m.memory == "none"


def test_warmup_calls_are_not_timed() -> None:
    calls = []

    def work() -> None:
        calls.append(1)
        time.sleep(0.2 if len(calls) == 1 else 0.0)

    m = measure(work, repeats=2, warmup=1, memory="none")
    assert len(calls) == 3 and len(m.times) == 2 and m.seconds < 0.2


@pytest.mark.parametrize("mode", ["rss", "tracemalloc"])
def test_peak_memory_sees_a_64_mib_array(mode: str) -> None:
    def work() -> float:
        a = np.ones(8 * 2**20)  # 64 MiB of float64, touched
        time.sleep(0.05)  # long enough for the RSS sampler
        return float(a[-1])

    m = measure(work, repeats=2, memory=mode)  # type: ignore[arg-type]
    assert m.result == 1.0 and m.memory == mode
    assert 60 <= m.peak_mib < 200, m.peak_mib


def test_tracemalloc_measures_after_timing_and_leaves_tracing_as_found() -> None:
    import tracemalloc

    calls = []
    m = measure(lambda: calls.append(1), repeats=3, memory="tracemalloc")
    assert len(calls) == 4 and len(m.times) == 3  # one extra, untimed call for memory
    assert not tracemalloc.is_tracing()


def test_median_seconds_and_rss_helpers() -> None:
    assert median_seconds(lambda: None, repeats=3) >= 0
    assert rss_mib() > 1 and peak_rss_mib() >= rss_mib() * 0.5


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"repeats": 0}, "repeats"),
        ({"repeats": 1.5}, "repeats"),
        ({"repeats": True}, "repeats"),
        ({"warmup": -1}, "warmup"),
        ({"memory": "vram"}, "memory"),
        ({"interval_s": 0.0}, "interval_s"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        measure(lambda: None, **kwargs)


def test_fn_must_be_callable() -> None:
    with pytest.raises(TypeError, match="fn"):
        measure(42)  # type: ignore[arg-type]


def test_cuda_mode_without_torch_or_a_device_is_a_clear_error() -> None:
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if has_cuda:
        pytest.skip("a CUDA device is present")
    with pytest.raises(ValueError, match="memory='cuda' needs"):
        measure(lambda: None, memory="cuda")
