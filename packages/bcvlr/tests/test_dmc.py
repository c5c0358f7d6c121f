"""The dm_control wrapper (``dmc`` extra): gymnasium API, headless MuJoCo pixels, action repeat, the PD expert.

Skipped where dm_control is not installed or MuJoCo cannot render headless; the missing-extra error is tested always.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from nips25_bcvlr import PDExpert, make_dmc_pixels


@pytest.fixture(scope="module")
def env():  # type: ignore[no-untyped-def]
    pytest.importorskip("dm_control", reason="the dmc extra (dm_control + mujoco) is not installed")
    env = make_dmc_pixels("point_mass", "easy", size=32, action_repeat=2)
    try:
        env.reset(seed=0)
    except RuntimeError as err:  # no EGL / OSMesa on this machine
        pytest.skip(f"MuJoCo cannot render headless here: {err}")
    return env


def test_dmc_pixels_follow_the_gymnasium_api(env) -> None:  # type: ignore[no-untyped-def]
    """Seeded resets give the same (32, 32, 3) uint8 frame; a step advances action_repeat control steps."""
    obs, _ = env.reset(seed=3)
    assert obs.shape == (32, 32, 3) and obs.dtype == np.uint8 and env.observation_space.contains(obs)
    assert np.array_equal(env.reset(seed=3)[0], obs)
    assert not np.array_equal(env.reset(seed=4)[0], obs)
    start = env.physics.data.time
    obs2, reward, terminated, truncated, _ = env.step(np.ones(2, np.float32))
    assert env.physics.data.time == pytest.approx(start + 2 * env._env.control_timestep())
    assert isinstance(reward, float) and 0.0 <= reward <= 2.0
    assert not terminated and not truncated and not np.array_equal(obs2, obs)
    assert env.action_space.shape == (2,)


def test_pd_expert_drives_dmc_point_mass_to_the_target(env) -> None:  # type: ignore[no-untyped-def]
    """The scripted PD expert reads the wrapper's pos/vel and brings the mass closer to the target."""
    env.reset(seed=1)
    start = float(np.linalg.norm(env.pos))
    expert = PDExpert(kp=20.0, kd=2.0)
    for _ in range(40):
        env.step(expert(env))
    assert float(np.linalg.norm(env.pos)) < 0.5 * start


def test_dmc_wrapper_rejects_bad_input(env) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="domain/task"):
        make_dmc_pixels("point_mass", "impossible")
    with pytest.raises(ValueError, match="size"):
        make_dmc_pixels(size=4)
    with pytest.raises(ValueError, match="action_repeat"):
        make_dmc_pixels(action_repeat=0)
    with pytest.raises(AttributeError, match="point_mass"):
        make_dmc_pixels("reacher", "easy", size=16).pos


def test_missing_dmc_extra_names_the_install_command(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Without dm_control the wrapper raises ImportError with the extra to install (runs everywhere)."""
    monkeypatch.setitem(sys.modules, "dm_control", None)
    with pytest.raises(ImportError, match=r"nips25-bcvlr\[dmc\]"):
        make_dmc_pixels()
