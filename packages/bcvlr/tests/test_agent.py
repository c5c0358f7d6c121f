"""The BCV-LR agent end to end on a tiny video: bit-reproducible seeds, save/load, the online loop's bookkeeping."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from nips25_bcvlr import BCVLR, BCVLRConfig, BFSExpert, PDExpert, PointMassPixels, make_minigrid_pixels, record_video
from nips25_bcvlr.baselines import BCO, BaselineConfig, BCTrueActions, lapo_lite_config

TINY = BCVLRConfig.preset(
    "cpu", stage1_steps=3, stage2_steps=3, stage3_steps=3, stage1_batch=8, stage2_batch=8, stage3_batch=8,
    idm_updates=2, reclone_steps=2, finetune_batch=8, n_envs=2, steps_per_iter=8, codebook_size=8,
)  # fmt: skip


@pytest.fixture(scope="module")
def video():  # type: ignore[no-untyped-def]
    return record_video(make_minigrid_pixels(), BFSExpert(), n_frames=60, seed=0)


def _run(video, seed: int):  # type: ignore[no-untyped-def]
    env = make_minigrid_pixels()
    agent = BCVLR(TINY, obs_shape=video.frames.shape[1:], action_space=env.action_space, seed=seed)
    summary = agent.pretrain(video, show_progress=False)
    log = agent.online([make_minigrid_pixels() for _ in range(2)], 24, show_progress=False)
    return agent, summary, log


def test_seeded_runs_are_bit_reproducible(video) -> None:  # type: ignore[no-untyped-def]
    """Same seed: identical losses, weights and actions; another seed differs."""
    a, sa, la = _run(video, 3)
    b, sb, lb = _run(video, 3)
    assert sa == sb
    assert la.per_iteration == lb.per_iteration
    for pa, pb in zip(a.policy.parameters(), b.policy.parameters()):
        assert torch.equal(pa, pb)
    obs = video.frames[:5].transpose(0, 2, 3, 1)
    assert np.array_equal(a.predict(obs), b.predict(obs))
    other = BCVLR(TINY, obs_shape=video.frames.shape[1:], action_space=a.action_space, seed=4)
    assert not torch.equal(other.decoder.net[0].weight, a.decoder.net[0].weight)


def test_online_loop_counts_steps_and_updates(video) -> None:  # type: ignore[no-untyped-def]
    """24 interactions over 2 envs in iterations of 2 x 8 steps: 2 iterations, 24 steps, 2 x (2 + 2) updates."""
    agent, _, log = _run(video, 0)
    assert log.env_steps == 24
    assert len(log.per_iteration) == 2
    assert log.updates == 2 * (TINY.idm_updates + TINY.reclone_steps)
    assert log.throughput > 0
    assert set(agent.logs) == {"stage1", "stage2", "stage3", "finetune", "reclone"}


def test_save_load_round_trip(video, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A loaded checkpoint acts exactly like the saved agent."""
    agent, _, _ = _run(video, 1)
    path = agent.save(tmp_path / "agent.pt")
    loaded = BCVLR.load(path)
    obs = video.frames[:7].transpose(0, 2, 3, 1)
    assert np.array_equal(agent.predict(obs), loaded.predict(obs))
    assert loaded.config == agent.config


def test_baselines_and_lapo_run_on_the_same_budget(video) -> None:  # type: ignore[no-untyped-def]
    """BCO spends exactly its budget; BC with true actions and the LAPO-style agent produce valid actions."""
    env = make_minigrid_pixels()
    cfg = BaselineConfig(bc_steps=2, idm_steps=2, n_iters=2, batch_size=8)
    bco = BCO(video.frames.shape[1:], env.action_space, config=cfg, seed=0)
    bco.learn(video, [make_minigrid_pixels() for _ in range(2)], 20)
    obs = video.frames[:4].transpose(0, 2, 3, 1)
    assert set(bco.predict(obs).tolist()) <= {0, 1, 2}
    bc = BCTrueActions(video.frames.shape[1:], env.action_space, config=cfg, seed=0).fit(video)
    assert bc.predict(obs).shape == (4,)
    lapo = BCVLR(lapo_lite_config(TINY), obs_shape=video.frames.shape[1:], action_space=env.action_space)
    lapo.pretrain(video, show_progress=False)
    log = lapo.online(env, 8, show_progress=False)
    assert log.env_steps == 8 and "reclone" not in lapo.logs


def test_continuous_variant_runs_on_the_point_mass() -> None:
    """The continuous recipe (prototype objective, 2-frame IDM, MSE decoder) acts in [-1, 1]^2."""
    env = PointMassPixels(size=16, max_steps=10)
    vid = record_video(env, PDExpert(), n_frames=30, seed=0)
    cfg = dataclasses.replace(BCVLRConfig.preset("cpu-continuous"), **{
        k: getattr(TINY, k) for k in ("stage1_steps", "stage2_steps", "stage3_steps", "stage1_batch", "stage2_batch",
                                      "stage3_batch", "idm_updates", "reclone_steps", "finetune_batch", "n_envs",
                                      "steps_per_iter", "codebook_size")
    }, random_steps=4)  # fmt: skip
    agent = BCVLR(cfg, obs_shape=vid.frames.shape[1:], action_space=env.action_space, seed=0)
    agent.pretrain(vid, show_progress=False)
    agent.online([PointMassPixels(size=16, max_steps=10) for _ in range(2)], 16, show_progress=False)
    act = agent.predict(vid.frames[:3].transpose(0, 2, 3, 1))
    assert act.shape == (3, 2) and np.all(np.abs(act) <= 1.0)
