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


def test_continuous_recipe_runs_on_dmc_pixels(env) -> None:  # type: ignore[no-untyped-def]
    """A PD-expert video of dm_control's point mass, BCV-LR's continuous recipe pre-trained on it and a short
    reward-free online loop on the wrapper: actions in [-1, 1]^2."""
    from nips25_bcvlr import BCVLR, BCVLRConfig, record_video

    def make():  # type: ignore[no-untyped-def]
        return make_dmc_pixels("point_mass", "easy", size=16, action_repeat=8)  # 1000 / 8 -> 125-step episodes

    video = record_video(make(), PDExpert(kp=20.0, kd=2.0), n_frames=20, seed=0)
    assert video.frames.shape[1:] == (3, 16, 16)
    cfg = BCVLRConfig.preset("cpu-continuous", stage1_steps=2, stage2_steps=2, stage3_steps=2, stage1_batch=8,
                             stage2_batch=8, stage3_batch=8, idm_updates=2, reclone_steps=2, finetune_batch=8,
                             n_envs=1, steps_per_iter=8, random_steps=4, codebook_size=8)  # fmt: skip
    agent = BCVLR(cfg, obs_shape=video.frames.shape[1:], action_space=env.action_space, seed=0)
    agent.pretrain(video, show_progress=False)
    log = agent.online(make(), 8, show_progress=False)
    assert log.env_steps == 8
    actions = agent.predict(video.frames[:3].transpose(0, 2, 3, 1))[0]
    assert actions.shape == (3, 2) and np.all(np.abs(actions) <= 1.0)


def test_rendering_before_the_first_optimizer_does_not_crash(env) -> None:  # type: ignore[no-untyped-def]
    """Regression: an EGL render followed by importing triton (what torch does at the first optimizer) segfaulted."""
    import importlib.util
    import subprocess

    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed: nothing can clash with EGL")
    code = (
        "from nips25_bcvlr import make_dmc_pixels\nmake_dmc_pixels(size=16).reset(seed=0)\nimport triton\nprint('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-500:]
