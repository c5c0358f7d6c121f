"""The Procgen wrapper: gymnasium API over procgen's gym3 env. Skipped without procgen (``pip install
procgen-mirror``, which pins numpy<2, so it is not in the test group); the missing-package error is tested always."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from nips25_bcvlr import ProcgenPixels


@pytest.fixture(scope="module")
def env():  # type: ignore[no-untyped-def]
    pytest.importorskip("procgen", reason="procgen is not installed (pip install procgen-mirror; pins numpy<2)")
    return ProcgenPixels("coinrun", num_levels=1, start_level=0)


def test_procgen_pixels_follow_the_gymnasium_api(env) -> None:  # type: ignore[no-untyped-def]
    """Seeded resets give the same 64x64 frame; steps return (obs, float reward, terminated, False, info)."""
    obs, _ = env.reset(seed=3)
    assert obs.shape == (64, 64, 3) and obs.dtype == np.uint8 and env.observation_space.contains(obs)
    assert np.array_equal(env.reset(seed=3)[0], obs)
    obs2, reward, terminated, truncated, _ = env.step(env.action_space.sample())
    assert obs2.shape == (64, 64, 3) and isinstance(reward, float)
    assert isinstance(terminated, bool) and truncated is False


def test_procgen_episode_ends_and_the_next_reset_keeps_the_new_level(env) -> None:  # type: ignore[no-untyped-def]
    env.reset(seed=0)
    for _ in range(1001):  # coinrun times out after 1000 steps
        obs, _, terminated, _, _ = env.step(0)
        if terminated:
            break
    assert terminated
    assert np.array_equal(env.reset()[0], obs)


def test_procgen_rejects_bad_input(env) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="env_name"):
        ProcgenPixels("pong")
    with pytest.raises(ValueError, match="distribution_mode"):
        ProcgenPixels(distribution_mode="medium")
    with pytest.raises(ValueError, match="action"):
        env.reset(seed=0)
        env.step(15)


def test_missing_procgen_names_the_install_command(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "procgen", None)
    with pytest.raises(ImportError, match="procgen-mirror"):
        ProcgenPixels()
