"""VDA's multi-window inference: plan of the windows, alignment across windows, interpolation, bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from nips25_st2360d import (
    ST2360D,
    VDA_WINDOW,
    IndependentOracle,
    ST2360DConfig,
    window_plan,
    windowed_inference,
)


def test_window_plan_follows_vda_keyframes() -> None:
    assert window_plan(24) == [list(range(24))]  # one window: the default SUS sequence
    plans = window_plan(100)
    assert all(len(p) == VDA_WINDOW for p in plans)
    assert plans[0] == list(range(32))
    for prev, cur in itertools.pairwise(plans):
        assert cur[:2] == [prev[0], prev[12]]  # anchors: frame 0 always, and the previous window's position 12
        assert cur[2:10] == prev[24:32]  # the 8 interpolation frames repeat the previous window's last 8
        assert cur[10:] == list(range(prev[-1] + 1, prev[-1] + 23))  # 22 new frames per window
    covered = sorted({p for plan in plans for p in plan if p < 100})
    assert covered == list(range(100)) and plans[-1][-1] >= 99


def test_windows_with_their_own_scale_and_shift_are_aligned_to_the_first() -> None:
    rng = np.random.default_rng(0)
    truth = rng.uniform(0.2, 2.0, size=(75, 4, 5))
    jumps = iter([(1.7, 0.3), (0.6, -0.05), (2.5, 0.8), (0.9, 0.1), (1.2, 0.0)])
    calls: list[int] = []

    def clip(x: np.ndarray) -> np.ndarray:
        calls.append(len(x))
        s, t = next(jumps)
        return s * x + t

    out = windowed_inference(clip, truth)
    assert calls == [32] * len(window_plan(75))
    np.testing.assert_allclose(out, 1.7 * truth + 0.3, rtol=1e-5)  # the first window's scale and shift everywhere


def test_interpolation_blends_the_shared_frames_linearly() -> None:
    seq = np.ones((40, 1, 1))
    values = iter([1.0, 2.0])  # window 0 says 1 everywhere, window 1 says 2: alignment off to see the blend

    def clip(x: np.ndarray) -> np.ndarray:
        return np.full(x.shape, next(values))

    out = windowed_inference(clip, seq, align="none")[:, 0, 0]
    np.testing.assert_allclose(out[:24], 1.0)
    np.testing.assert_allclose(out[24:32], 1.0 + np.arange(8) / 7.0, rtol=1e-6)  # frames 24..31: 1 -> 2
    np.testing.assert_allclose(out[32:], 2.0)


def test_scale_only_alignment_and_short_sequences() -> None:
    truth = np.random.default_rng(1).uniform(0.5, 1.5, size=(50, 3, 3))
    scales = iter([1.0, 4.0, 0.5])
    np.testing.assert_allclose(windowed_inference(lambda x: next(scales) * x, truth, align="scale"), truth, rtol=1e-5)
    np.testing.assert_allclose(windowed_inference(lambda x: 3.0 * x, truth[:5]), 3.0 * truth[:5], rtol=1e-6)


def test_pipeline_runs_sequences_longer_than_a_window() -> None:
    """A 64-view Fibonacci sequence (two windows) through a windowed exact model: the merge stays exact (sphere)."""
    exact = IndependentOracle(lambda r: np.full(len(r), 2.0), sigma=0.0, noise=0.0, tilt=0.0)

    class Windowed:
        output = "depth"

        def predict(self, frames, *, views, fov):
            return windowed_inference(lambda f: exact.predict(f, views=views[: len(f)], fov=fov), frames, align="scale")

    cfg = ST2360DConfig(sampler="fibonacci", n_views=64, frame_size=16)
    depth = ST2360D(Windowed(), cfg).predict(np.zeros((16, 32, 3), np.uint8), show_progress=False).depth
    np.testing.assert_allclose(depth, 2.0, rtol=1e-4)


def test_windowed_inference_rejects_bad_input() -> None:
    seq = np.ones((40, 2, 2))
    with pytest.raises(TypeError, match="run_window"):
        windowed_inference("model", seq)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="frames"):
        windowed_inference(lambda x: x, np.ones((0, 2, 2)))
    with pytest.raises(ValueError, match="align"):
        windowed_inference(lambda x: x, seq, align="median")
    with pytest.raises(ValueError, match="window"):
        windowed_inference(lambda x: x, seq, window=1)
    with pytest.raises(ValueError, match="anchors"):
        windowed_inference(lambda x: x, seq, anchors=(12, 0))
    with pytest.raises(ValueError, match="anchors"):
        windowed_inference(lambda x: x, seq, window=16, anchors=(0, 12))
    with pytest.raises(ValueError, match="n_interp"):
        windowed_inference(lambda x: x, seq, n_interp=1)
    with pytest.raises(ValueError, match="run_window output"):
        windowed_inference(lambda x: x[:-1], seq)
    with pytest.raises(ValueError, match="run_window output"):
        windowed_inference(lambda x: x * np.nan, seq)
    with pytest.raises(ValueError, match="n_frames"):
        window_plan(0)
