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
    assert np.array_equal(a.predict(obs)[0], b.predict(obs)[0])
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
    assert np.array_equal(agent.predict(obs)[0], loaded.predict(obs)[0])
    assert loaded.config == agent.config


def test_baselines_and_lapo_run_on_the_same_budget(video) -> None:  # type: ignore[no-untyped-def]
    """BCO spends exactly its budget; BC with true actions and the LAPO-style agent produce valid actions."""
    env = make_minigrid_pixels()
    cfg = BaselineConfig(bc_steps=2, idm_steps=2, n_iters=2, batch_size=8)
    bco = BCO(video.frames.shape[1:], env.action_space, config=cfg, seed=0)
    bco.learn(video, [make_minigrid_pixels() for _ in range(2)], 20)
    obs = video.frames[:4].transpose(0, 2, 3, 1)
    assert set(bco.predict(obs)[0].tolist()) <= {0, 1, 2}
    bc = BCTrueActions(video.frames.shape[1:], env.action_space, config=cfg, seed=0).fit(video)
    assert bc.predict(obs)[0].shape == (4,)
    lapo = BCVLR(lapo_lite_config(TINY), obs_shape=video.frames.shape[1:], action_space=env.action_space)
    lapo.pretrain(video, show_progress=False)
    log = lapo.online(env, 8, show_progress=False)
    assert log.env_steps == 8 and "reclone" not in lapo.logs


def test_continuous_variant_runs_on_the_point_mass() -> None:
    """The continuous recipe (prototype objective, 3-frame IDM, MSE decoder) acts in [-1, 1]^2."""
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
    act = agent.predict(vid.frames[:3].transpose(0, 2, 3, 1))[0]
    assert act.shape == (3, 2) and np.all(np.abs(act) <= 1.0)


def test_training_step_with_prepared_model_matches_plain_torch() -> None:
    """``accelerator.prepare(model, optimizer)`` under a CPU Accelerator changes nothing: one ``fit`` step (forward,
    backward, clipping, Adam) gives bit-identical weights to the same step in plain PyTorch."""
    import copy

    from accelerate import Accelerator
    from nips25_bcvlr import VQEMA, LatentActionModel
    from nips25_bcvlr.training import fit

    torch.manual_seed(0)
    vq = VQEMA(n_codebooks=2, n_latents=2, codebook_size=8, dim=4)
    model = LatentActionModel(4, (8, 8), n_context=3, idm_channels=(8,), idm_hidden=16, fdm_base=8, vq=vq)
    plain = copy.deepcopy(model)
    initial = copy.deepcopy(model)
    windows = torch.randn(16, 3, 4, 8, 8)
    accelerator = Accelerator(cpu=True)
    wrapped, opt = accelerator.prepare(model, torch.optim.Adam(model.parameters(), lr=1e-2))
    torch.manual_seed(2)  # the codebooks are seeded from the first batch with the global generator
    fit(lambda idx: wrapped(windows[idx]).loss, opt, list(model.parameters()), accelerator=accelerator, n_steps=1,
        n_items=16, batch_size=8, generator=torch.Generator().manual_seed(1), grad_clip=2.0)  # fmt: skip
    plain_opt = torch.optim.Adam(plain.parameters(), lr=1e-2)
    idx = torch.randint(16, (8,), generator=torch.Generator().manual_seed(1))
    torch.manual_seed(2)
    loss = plain(windows[idx]).loss
    plain_opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(list(plain.parameters()), 2.0)
    plain_opt.step()
    for name, tensor in plain.state_dict().items():
        assert torch.equal(tensor, model.state_dict()[name]), name
    assert any(not torch.equal(a, b) for a, b in zip(plain.parameters(), initial.parameters()))  # a real step


def test_agent_prepares_every_trained_module(video) -> None:  # type: ignore[no-untyped-def]
    """The objective, IDM/FDM, decoder and the policy head go through ``accelerator.prepare`` (DDP under
    ``accelerate launch``); the frozen shared encoder is prepared only inside the Stage-1 objective."""
    env = make_minigrid_pixels()
    agent = BCVLR(TINY, obs_shape=video.frames.shape[1:], action_space=env.action_space, seed=0)
    prepared = {id(m) for m in agent.accelerator._models}
    for module in (agent.lam, agent.decoder, agent.policy.head, agent.objective):
        assert id(module) in prepared
    assert agent._train["policy"] is agent.policy.head  # one CPU process: no wrapper, same parameters
    lapo = BCVLR(lapo_lite_config(TINY), obs_shape=video.frames.shape[1:], action_space=env.action_space)
    assert id(lapo.policy) in {id(m) for m in lapo.accelerator._models}  # pixels: the policy trains its encoder
    bco = BCO(video.frames.shape[1:], env.action_space, config=BaselineConfig(), seed=0)
    assert {id(bco.policy), id(bco.idm)} <= {id(m) for m in bco.accelerator._models}
