"""The online loop's contract with gymnasium and stable-baselines3: the latent targets of the official code,
rewards never read, vector envs, SB3's ``predict`` / ``evaluate_policy``."""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest
import torch
from nips25_bcvlr import BCVLR, BCVLRConfig, BFSExpert, PointMassPixels, Rollout, make_minigrid_pixels, record_video
from nips25_bcvlr.baselines import BCO, BaselineConfig
from nips25_bcvlr.evaluation import evaluate_returns

TINY = BCVLRConfig.preset(
    "cpu", stage1_steps=2, stage2_steps=3, stage3_steps=3, stage1_batch=8, stage2_batch=8, stage3_batch=8,
    idm_updates=2, reclone_steps=2, finetune_batch=8, n_envs=2, steps_per_iter=8, codebook_size=8,
)  # fmt: skip


class UntouchableReward:
    """A reward that fails on any use: conversion, arithmetic, comparison, truth value."""

    def _fail(self, *args: object) -> None:
        raise AssertionError("the reward was read")

    __float__ = __int__ = __index__ = __bool__ = __array__ = _fail
    __add__ = __radd__ = __mul__ = __rmul__ = __lt__ = __gt__ = __eq__ = _fail
    __hash__ = None  # type: ignore[assignment]


class HideReward(gym.Wrapper):
    def step(self, action):  # type: ignore[no-untyped-def]
        obs, _, terminated, truncated, info = self.env.step(action)
        return obs, UntouchableReward(), terminated, truncated, info


def _limited(max_steps: int) -> gym.Env:
    return gym.wrappers.TimeLimit(make_minigrid_pixels(), max_episode_steps=max_steps)


@pytest.fixture(scope="module")
def video():  # type: ignore[no-untyped-def]
    return record_video(make_minigrid_pixels(), BFSExpert(), n_frames=60, seed=0)


@pytest.fixture(scope="module")
def agent(video):  # type: ignore[no-untyped-def]
    a = BCVLR(TINY, obs_shape=video.frames.shape[1:], action_space=make_minigrid_pixels().action_space, seed=0)
    a.pretrain(video, show_progress=False)
    return a


@pytest.mark.parametrize("target", ["continuous", "quantized"])
def test_latent_targets_follow_the_official_code(video, target: str) -> None:  # type: ignore[no-untyped-def]
    """Policy targets and decoder inputs are the IDM's output before VQ (``la``) by default, ``z_q`` as an option.

    The clone targets equal ``IDM(window)`` exactly (continuous) or lie on the codebook (quantized); in the online
    fine-tuning the decoder reads the very tensor the IDM produced (continuous) or a different one (quantized).
    """
    cfg = BCVLRConfig(**{**TINY.__dict__, "latent_target": target})
    a = BCVLR(cfg, obs_shape=video.frames.shape[1:], action_space=make_minigrid_pixels().action_space, seed=0)
    a.pretrain(video, show_progress=False)
    targets = torch.from_numpy(a.latent_actions(video))
    feats = a.features(torch.from_numpy(video.frames))[torch.from_numpy(video.windows(cfg.n_context))]
    with torch.no_grad():
        la = a.lam.idm(feats)
    codes = a.lam.vq.embed.reshape(-1, cfg.code_dim)  # every code of every codebook
    heads = targets.reshape(-1, cfg.code_dim)
    dist = torch.cdist(heads, codes, compute_mode="donot_use_mm_for_euclid_dist").min(-1).values
    on_codebook = dist.max().item() < 1e-5  # z + (z_hat - z) rounds to z_hat within float32 ulps
    if target == "continuous":
        assert torch.equal(targets, la) and not on_codebook
    else:
        assert on_codebook and not torch.allclose(targets, la)
    seen: list[tuple[str, torch.Tensor]] = []
    h1 = a.lam.idm.register_forward_hook(lambda m, i, o: seen.append(("idm", o.detach().clone())))
    h2 = a.decoder.register_forward_pre_hook(lambda m, i: seen.append(("decoder", i[0].detach().clone())))
    a.online([make_minigrid_pixels() for _ in range(2)], 16, show_progress=False)
    h1.remove()
    h2.remove()
    pairs = [(p[1], q[1]) for p, q in itertools.pairwise(seen) if p[0] == "idm" and q[0] == "decoder"]
    assert len(pairs) == TINY.idm_updates  # one per fine-tuning update
    assert all(torch.equal(z, d) for z, d in pairs) == (target == "continuous")


def test_online_and_bco_never_read_rewards(agent, video) -> None:  # type: ignore[no-untyped-def]
    """An env whose reward raises on any use runs BCV-LR's online loop and BCO to completion."""
    log = agent.online([HideReward(make_minigrid_pixels()) for _ in range(2)], 40, show_progress=False)
    assert log.env_steps == 40 and log.episode_returns == []
    bco = BCO(video.frames.shape[1:], agent.action_space, config=BaselineConfig(bc_steps=2, idm_steps=2,
              n_iters=2, batch_size=8), seed=0)  # fmt: skip
    assert bco.learn(video, [HideReward(make_minigrid_pixels()) for _ in range(2)], 20) == []


def test_episode_returns_come_from_the_opt_in_wrapper(agent) -> None:  # type: ignore[no-untyped-def]
    """With ``RecordEpisodeStatistics`` the log holds the wrapper's returns; MiniGrid returns lie in (0, 1]."""
    envs = [gym.wrappers.RecordEpisodeStatistics(_limited(6)) for _ in range(2)]
    log = agent.online(envs, 32, show_progress=False)
    assert len(log.episode_returns) >= 2 * (16 // 6)  # 16 steps per env, episodes of at most 6
    assert all(0.0 <= r <= 1.0 for r in log.episode_returns)


def _obs_policy(obs: np.ndarray) -> np.ndarray:
    """A deterministic policy of the observation only (so a skipped reset step does not shift later actions)."""
    return np.tanh(obs.reshape(len(obs), -1).astype(np.float32).mean(-1, keepdims=True) / 40.0 - 1.0).repeat(2, 1)


def test_vector_env_rollout_matches_a_list_of_envs() -> None:
    """``SyncVectorEnv`` in SAME_STEP mode gives exactly the transitions of the same envs as a list; in NEXT_STEP
    mode (gymnasium's default) the reset steps are dropped and every transition is one of the list's."""

    def make() -> PointMassPixels:
        return PointMassPixels(size=12, max_steps=5)

    ref = Rollout([make(), make()], n_context=3, seed=4).collect(_obs_policy, 12)
    same = gym.vector.SyncVectorEnv([make, make], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    got = Rollout(same, n_context=3, seed=4).collect(_obs_policy, 12)
    assert np.array_equal(got.windows, ref.windows) and np.array_equal(got.dones, ref.dones)
    nxt = Rollout(gym.vector.SyncVectorEnv([make, make]), n_context=3, seed=4).collect(_obs_policy, 12)
    assert len(nxt.actions) == 24 - 2 * 2  # 2 envs x 2 finished episodes, each followed by one reset step
    known = {w.tobytes() for w in ref.windows}
    assert all(w.tobytes() in known for w in nxt.windows)
    disabled = gym.vector.SyncVectorEnv([make], autoreset_mode=gym.vector.AutoresetMode.DISABLED)
    with pytest.raises(ValueError, match="envs"):
        Rollout(disabled, n_context=3)


def test_online_accepts_a_vector_env(agent) -> None:  # type: ignore[no-untyped-def]
    vec = gym.vector.SyncVectorEnv([make_minigrid_pixels, make_minigrid_pixels])
    log = agent.online(vec, 24, show_progress=False)
    assert log.env_steps >= 24 and log.updates > 0


def test_predict_is_stable_baselines3_compatible(agent) -> None:  # type: ignore[no-untyped-def]
    """``evaluate_policy`` runs the agent; its one-episode return equals ours from the same start state."""
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    obs = make_minigrid_pixels().reset(seed=0)[0]
    action, state = agent.predict(obs, state=None, episode_start=np.array([True]), deterministic=True)
    assert state is None and np.ndim(action) == 0
    vec = DummyVecEnv([lambda: Monitor(_limited(30))])
    vec.seed(123)
    rewards, lengths = evaluate_policy(agent, vec, n_eval_episodes=1, deterministic=True, return_episode_rewards=True)
    ours = evaluate_returns(agent.predict, [_limited(30)], n_episodes=1, seed=123)
    assert rewards == pytest.approx([float(ours[0])]) and lengths[0] >= 1


def _weights(agent: BCVLR) -> dict[str, torch.Tensor]:
    return {
        f"{name}.{k}": v for name in ("lam", "policy", "decoder") for k, v in getattr(agent, name).state_dict().items()
    }


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"finetune_idm": False, "reclone": False},
        {"feature_space": "pixels", "finetune_idm": False, "reclone": False},
    ],
    ids=["bcvlr", "decoder-only", "pixels"],
)
def test_frozen_feature_cache_equals_reencoding(video, monkeypatch, overrides) -> None:  # type: ignore[no-untyped-def]
    """The online loop with the replay's frozen features (or frozen latents) cached gives the same losses and
    weights as re-encoding every minibatch (0.2.0's path, ``feature_cache_mib=0``), and does use the cache."""
    space = make_minigrid_pixels().action_space
    results = []
    for mib in (0.0, 1024.0):
        cfg = BCVLRConfig(**{**TINY.__dict__, **overrides, "feature_cache_mib": mib, "steps_per_iter": 4})
        a = BCVLR(cfg, obs_shape=video.frames.shape[1:], action_space=space, seed=3)
        a.pretrain(video, show_progress=False)
        calls: list[int] = []

        def counted(w, calls=calls, encode=a._window_features):  # type: ignore[no-untyped-def]
            calls.append(len(w))
            return encode(w)

        monkeypatch.setattr(a, "_window_features", counted)
        a.online([make_minigrid_pixels() for _ in range(2)], 24, show_progress=False)
        results.append((_weights(a), a.logs["finetune"].losses, len(calls)))
    (w0, loss0, calls0), (w1, loss1, calls1) = results
    n_iters = 24 // (2 * 4)
    assert calls0 == n_iters * TINY.idm_updates and calls1 == n_iters  # per update vs once per added batch
    np.testing.assert_allclose(loss1, loss0, rtol=1e-5, atol=1e-6)
    for k in w0:
        torch.testing.assert_close(w1[k], w0[k], rtol=0, atol=1e-5, msg=k)
    assert any(not torch.equal(w0[k], v) for k, v in _weights(BCVLR(TINY, obs_shape=video.frames.shape[1:],
               action_space=space, seed=3)).items())  # the loop did train: the weights moved  # fmt: skip


def test_video_feature_cache_is_invalidated_when_the_encoder_changes(video) -> None:  # type: ignore[no-untyped-def]
    """The pre-training video's features are reused while the encoder and statistics stay; a changed encoder
    (``load_state_dict``), new statistics or another video give freshly computed features."""
    cfg = BCVLRConfig(**{**TINY.__dict__, "feature_norm": "standardize"})
    a = BCVLR(cfg, obs_shape=video.frames.shape[1:], action_space=make_minigrid_pixels().action_space, seed=0)
    a.pretrain(video, show_progress=False)
    frames = torch.from_numpy(video.frames)
    cached = a._video_features(video)
    assert a._video_features(video) is cached and torch.equal(cached, a.features(frames))
    other = record_video(make_minigrid_pixels(), BFSExpert(), n_frames=20, seed=5)
    assert a._video_features(other).shape[0] == len(other) and a._video_features(video) is cached
    a.encoder.load_state_dict({k: v + 0.1 for k, v in a.encoder.state_dict().items()})
    fresh = a._video_features(video)
    assert fresh is not cached and not torch.allclose(fresh, cached) and torch.equal(fresh, a.features(frames))
    mean, std = a.feature_stats  # type: ignore[misc]
    a.feature_stats = (mean, 2 * std)
    assert torch.allclose(a._video_features(video), fresh / 2, atol=1e-5)  # (f - mean) / (2 std)


def test_replay_buffer_features_are_checked() -> None:
    from nips25_bcvlr import ReplayBuffer
    from nips25_bcvlr.online import RolloutBatch

    batch = RolloutBatch(np.zeros((2, 3, 3, 4, 4), np.uint8), np.arange(2), np.zeros(2, bool))
    buf = ReplayBuffer(4)
    with pytest.raises(ValueError, match="features must have 2 rows"):
        buf.add(batch, features=torch.zeros(3, 1))
    buf.add(batch, features=torch.zeros(2, 1))
    with pytest.raises(ValueError, match="every call"):
        buf.add(batch)
    buf.add(RolloutBatch(np.zeros((0, 3, 3, 4, 4), np.uint8), np.zeros(0, int), np.zeros(0, bool)))  # empty: no-op
    assert len(buf) == 2 and buf.features is not None and buf.features.shape == (2, 1)
