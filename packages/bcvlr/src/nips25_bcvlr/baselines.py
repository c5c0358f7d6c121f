"""Baselines at the same interaction budget: BCO, behaviour cloning with true actions, PPO (rewards), LAPO-style."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from nips25_bcvlr._validation import check_int, check_real
from nips25_bcvlr.config import BCVLRConfig
from nips25_bcvlr.encoder import ImpalaEncoder, ImpalaHead, scale_observations
from nips25_bcvlr.online import ReplayBuffer, Rollout
from nips25_bcvlr.training import fit
from nips25_bcvlr.video import Video

__all__ = ["BCO", "BCTrueActions", "BaselineConfig", "PPOBaseline", "lapo_lite_config"]


@dataclass(frozen=True)
class BaselineConfig:
    """Sizes and schedules of the pixel-space baselines (same widths as BCV-LR's CPU preset by default).

    Attributes:
        encoder_channels, head_channels, head_hidden: network widths (encoder + IMPALA head).
        lr, batch_size: Adam step size and minibatch size.
        bc_steps: policy updates per (re-)cloning.
        idm_steps: BCO inverse-model updates per iteration.
        n_iters: BCO(alpha) iterations; the first spends ``pre_demo_fraction`` of the budget with random actions.
        pre_demo_fraction: BCO's share of random "pre-demonstration" interactions, in ``(0, 1]``.
    """

    encoder_channels: int = 8
    head_channels: tuple[int, ...] = (16, 32)
    head_hidden: int = 128
    lr: float = 1e-3
    batch_size: int = 32
    bc_steps: int = 120
    idm_steps: int = 80
    n_iters: int = 3
    pre_demo_fraction: float = 0.5

    def __post_init__(self) -> None:
        for name in ("encoder_channels", "head_hidden", "batch_size", "n_iters"):
            check_int(name, getattr(self, name))
        for name in ("bc_steps", "idm_steps"):
            check_int(name, getattr(self, name), minimum=0)
        check_real("lr", self.lr, low=0.0, low_open=True)
        check_real("pre_demo_fraction", self.pre_demo_fraction, low=0.0, high=1.0, low_open=True)
        if not self.head_channels or not all(isinstance(c, int) and c >= 1 for c in self.head_channels):
            raise ValueError(f"head_channels must be a non-empty tuple of positive ints, got {self.head_channels!r}")


def lapo_lite_config(config: BCVLRConfig) -> BCVLRConfig:
    """The LAPO-style baseline as a BCV-LR configuration: no Stage 1, IDM and FDM on raw pixels, and online only
    the action decoder is trained on the collected transitions (no IDM fine-tuning, no re-cloning).

    References:
        Schmidt & Jiang, "Learning to Act without Actions" (LAPO), ICLR 2024.
    """
    return dataclasses.replace(config, feature_space="pixels", finetune_idm=False, reclone=False)


class _PixelNet(nn.Module):
    """Encoder + IMPALA head on ``k`` stacked RGB frames."""

    def __init__(self, n_frames: int, hw: tuple[int, int], out_dim: int, cfg: BaselineConfig) -> None:
        super().__init__()
        self.encoder = ImpalaEncoder(3 * n_frames, cfg.encoder_channels)
        self.head = ImpalaHead(
            cfg.encoder_channels, hw, channels=cfg.head_channels, hidden=cfg.head_hidden, out_dim=out_dim
        )

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        """``(B, k, 3, H, W)`` uint8 frames to ``(B, out_dim)``."""
        return self.head(
            self.encoder(scale_observations(frames.flatten(0, 1)).unflatten(0, frames.shape[:2]).flatten(1, 2))
        )


class _ClonedPolicy:
    """Shared parts of the pixel baselines: a policy network, its loss, acting and prediction."""

    def __init__(
        self, obs_shape: tuple[int, int, int], action_space: gym.Space, cfg: BaselineConfig, seed: int, accelerator: Any
    ):
        from accelerate import Accelerator

        if not isinstance(cfg, BaselineConfig):
            raise TypeError(f"config must be a BaselineConfig, got {type(cfg).__name__}")
        if len(obs_shape) != 3 or obs_shape[0] != 3:
            raise ValueError(f"obs_shape must be (3, H, W), got {obs_shape}")
        if isinstance(action_space, gym.spaces.Discrete):
            self.n_out, self.continuous = int(action_space.n), False
        elif isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1:
            self.n_out, self.continuous = int(action_space.shape[0]), True
        else:
            raise TypeError(f"action_space must be Discrete or a 1-D Box, got {action_space}")
        self.cfg, self.obs_shape, self.action_space = cfg, obs_shape, action_space
        self.hw = (obs_shape[1], obs_shape[2])
        torch.manual_seed(seed)
        self.accelerator = accelerator if accelerator is not None else Accelerator()
        rank = self.accelerator.process_index
        # minibatch indices: shared by every process (each takes its slice of the global batch, see ``fit``);
        # action noise: one stream per process
        self.generator = torch.Generator().manual_seed(seed)
        self.local_generator = torch.Generator().manual_seed(seed + 1_000_003 * rank)
        self.rng = np.random.default_rng(seed if rank == 0 else [seed, rank])
        self.seed = seed
        policy = _PixelNet(1, self.hw, self.n_out, cfg).to(self.accelerator.device)
        self.policy, self._opt = self.accelerator.prepare(policy, torch.optim.Adam(policy.parameters(), lr=cfg.lr))
        self.fitted = False

    def _action_loss(self, out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if self.continuous:
            return F.mse_loss(torch.tanh(out), target.float())
        return F.cross_entropy(out, target.long())

    def _clone(self, frames: torch.Tensor, actions: torch.Tensor, *, n_steps: int | None = None) -> None:
        params = list(self.policy.parameters())

        def loss(idx: torch.Tensor) -> torch.Tensor:
            return self._action_loss(self.policy(frames[idx].unsqueeze(1)), actions[idx])

        steps = n_steps or self.cfg.bc_steps
        fit(loss, self._opt, params, accelerator=self.accelerator, n_steps=steps, n_items=len(frames),
            batch_size=self.cfg.batch_size, generator=self.generator)  # fmt: skip
        self.fitted = True

    @torch.no_grad()
    def act(self, obs: np.ndarray, *, deterministic: bool = False) -> np.ndarray:
        """Actions for ``(B, 3, H, W)`` uint8 observations."""
        out = self.policy(torch.from_numpy(obs).unsqueeze(1).to(self.accelerator.device))
        if self.continuous:
            mean = torch.tanh(out)
            if deterministic:
                return mean.cpu().numpy()
            noise = 0.5 * torch.randn(mean.shape, generator=self.local_generator)
            return (mean.cpu() + noise).clamp(-1, 1).numpy()
        if deterministic:
            return out.argmax(-1).cpu().numpy()
        return torch.multinomial(F.softmax(out, -1).cpu(), 1, generator=self.local_generator).squeeze(-1).numpy()

    def predict(
        self, obs: np.ndarray, state: Any = None, episode_start: np.ndarray | None = None, *, deterministic: bool = True
    ) -> tuple[np.ndarray, None]:
        """Stable-baselines3's ``predict`` for ``(H, W, 3)`` or ``(B, H, W, 3)`` uint8 observations.

        Returns:
            ``(actions, None)``: a batch of actions, or one action for a single observation.

        Raises:
            RuntimeError: if called before training.
            ValueError / TypeError: for observations that are not uint8 pixels of the right shape.
        """
        if not self.fitted:
            raise RuntimeError(f"{type(self).__name__} is not fitted yet: train it first")
        arr = np.asarray(obs)
        if arr.dtype != np.uint8:
            raise TypeError(f"obs must be uint8 pixels, got dtype {arr.dtype}")
        single = arr.ndim == 3
        arr = arr[None] if single else arr
        if arr.ndim != 4 or arr.shape[1:] != (*self.hw, 3):
            raise ValueError(f"obs must be (B, {self.hw[0]}, {self.hw[1]}, 3), got {np.asarray(obs).shape}")
        actions = self.act(np.ascontiguousarray(arr.transpose(0, 3, 1, 2)), deterministic=deterministic)
        return (actions[0] if single else actions), None


def _video_pairs(video: Video) -> tuple[torch.Tensor, torch.Tensor]:
    w = torch.from_numpy(video.windows(2))
    return torch.from_numpy(video.frames), w


class BCTrueActions(_ClonedPolicy):
    """Behaviour cloning on the video **with** the expert's true actions: the upper bound (no interaction).

    It runs ``bc_steps * n_iters`` updates, as many cloning updates as :class:`BCO` makes in total.

    Args:
        obs_shape: ``(3, H, W)``; action_space: ``Discrete`` or 1-D ``Box``; config: :class:`BaselineConfig`.
        seed: weights and minibatches.
        accelerator: an ``accelerate.Accelerator`` (a default one when ``None``).
    """

    def __init__(self, obs_shape: tuple[int, int, int], action_space: gym.Space, *, config: BaselineConfig,
                 seed: int = 0, accelerator: Any = None) -> None:  # fmt: skip
        super().__init__(obs_shape, action_space, config, seed, accelerator)

    def fit(self, video: Video) -> BCTrueActions:
        """Clone the expert's actions on the video; raises ValueError if the video carries no actions."""
        if not isinstance(video, Video):
            raise TypeError(f"video must be a Video, got {type(video).__name__}")
        if video.actions is None:
            raise ValueError("video must carry the expert's actions for behaviour cloning with true actions")
        frames, w = _video_pairs(video)
        t = w[:, 0]
        self._clone(
            frames[t], torch.from_numpy(np.asarray(video.actions))[t], n_steps=self.cfg.bc_steps * self.cfg.n_iters
        )
        return self


class BCO(_ClonedPolicy):
    """Behavioural cloning from observation, BCO(alpha) (Torabi et al., IJCAI 2018) on pixels.

    An inverse dynamics model :math:`p(a \\mid o_t, o_{t+1})` is trained on the agent's own interactions (random at
    first, then with the current policy), labels the video's transitions, and the policy is cloned on the labels.

    Args:
        obs_shape, action_space, config, seed, accelerator: as :class:`BCTrueActions`.
    """

    def __init__(self, obs_shape: tuple[int, int, int], action_space: gym.Space, *, config: BaselineConfig,
                 seed: int = 0, accelerator: Any = None) -> None:  # fmt: skip
        super().__init__(obs_shape, action_space, config, seed, accelerator)
        idm = _PixelNet(2, self.hw, self.n_out, config).to(self.accelerator.device)
        self.idm, self._idm_opt = self.accelerator.prepare(idm, torch.optim.Adam(idm.parameters(), lr=config.lr))

    def learn(
        self, video: Video, envs: gym.Env | Sequence[gym.Env] | gym.vector.VectorEnv, total_steps: int
    ) -> list[float]:
        """BCO(alpha) with ``total_steps`` interactions (per process), without reading rewards.

        Args:
            video: the expert video (its actions are not read).
            envs: one env, a list or a ``gymnasium.vector.VectorEnv`` (see :class:`~nips25_bcvlr.online.Rollout`).
            total_steps: interaction budget, ``>= 2``.

        Returns:
            The finished episodes' returns when the envs are wrapped in ``RecordEpisodeStatistics`` (else empty).
        """
        if not isinstance(video, Video):
            raise TypeError(f"video must be a Video, got {type(video).__name__}")
        check_int("total_steps", total_steps, minimum=2)
        env_arg: Sequence[gym.Env] | gym.vector.VectorEnv
        if isinstance(envs, gym.vector.VectorEnv):
            env_arg = envs
        elif isinstance(envs, gym.Env):
            env_arg = [envs]
        else:
            env_arg = list(envs)
        rollout = Rollout(env_arg, n_context=2, seed=self.seed + self.accelerator.process_index * 1000)
        replay = ReplayBuffer(total_steps)
        frames, w = _video_pairs(video)
        pairs = frames[w]  # (M, 2, 3, H, W)
        first = max(1, int(self.cfg.pre_demo_fraction * total_steps))
        rest = total_steps - first
        budgets = [first] + [rest // max(1, self.cfg.n_iters - 1)] * (self.cfg.n_iters - 1 if rest > 0 else 0)
        for i, budget in enumerate(budgets):
            if budget <= 0:
                continue
            per_env = -(-budget // rollout.n_envs)
            act: Callable[[np.ndarray], np.ndarray] = (
                self._random if i == 0 else (lambda o: self.act(o, deterministic=False))
            )
            replay.add(rollout.collect(act, per_env))
            self._train_idm(replay)
            self._clone(frames[w[:, 0]], self._label(pairs))
        return list(rollout.episode_returns)

    def _random(self, obs: np.ndarray) -> np.ndarray:
        if self.continuous:
            return self.rng.uniform(-1, 1, size=(len(obs), self.n_out)).astype(np.float32)
        return self.rng.integers(self.n_out, size=len(obs))

    def _train_idm(self, replay: ReplayBuffer) -> None:
        assert replay.windows is not None and replay.actions is not None
        windows, actions = replay.windows, replay.actions

        def loss(idx: torch.Tensor) -> torch.Tensor:
            return self._action_loss(self.idm(windows[idx]), actions[idx])

        fit(loss, self._idm_opt, list(self.idm.parameters()), accelerator=self.accelerator,
            n_steps=self.cfg.idm_steps, n_items=len(replay), batch_size=self.cfg.batch_size,
            generator=self.generator)  # fmt: skip

    @torch.no_grad()
    def _label(self, pairs: torch.Tensor) -> torch.Tensor:
        out = torch.cat([self.idm(p) for p in pairs.split(512)])
        return torch.tanh(out) if self.continuous else out.argmax(-1)


class _ImpalaExtractor:  # built lazily: stable-baselines3 is imported only when PPO is used
    @staticmethod
    def make(cfg: BaselineConfig) -> type:
        from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

        class ImpalaExtractor(BaseFeaturesExtractor):
            def __init__(self, observation_space: gym.spaces.Box) -> None:
                super().__init__(observation_space, features_dim=cfg.head_hidden)
                c, h, w = observation_space.shape
                self.encoder = ImpalaEncoder(c, cfg.encoder_channels)
                self.head = ImpalaHead(cfg.encoder_channels, (h, w), channels=cfg.head_channels,
                                       hidden=cfg.head_hidden, out_dim=cfg.head_hidden)  # fmt: skip

            def forward(self, obs: torch.Tensor) -> torch.Tensor:
                return F.relu(self.head(self.encoder(obs - 0.5)))

        return ImpalaExtractor


class PPOBaseline:
    """PPO with the environment's rewards (stable-baselines3), the same network widths and interaction budget.

    Args:
        make_env: zero-argument env factory (pixel observations ``(H, W, 3)`` uint8).
        n_envs: parallel envs.
        config: widths (:class:`BaselineConfig`).
        seed: seed of PPO and the envs.
        n_steps: rollout length per env between updates; batch_size, n_epochs, learning_rate: PPO's.
        device: stable-baselines3's ``device`` (``"auto"``: a GPU when there is one).
    """

    def __init__(
        self,
        make_env: Callable[[], gym.Env],
        *,
        n_envs: int = 4,
        config: BaselineConfig,
        seed: int = 0,
        n_steps: int = 128,
        batch_size: int = 64,
        n_epochs: int = 4,
        learning_rate: float = 5e-4,
        device: str = "auto",
    ) -> None:
        from stable_baselines3 import PPO
        from stable_baselines3.common.env_util import make_vec_env

        check_int("n_envs", n_envs)
        check_int("n_steps", n_steps, minimum=2)
        venv = make_vec_env(make_env, n_envs=n_envs, seed=seed)
        self.model = PPO(
            "CnnPolicy",
            venv,
            n_steps=n_steps,
            batch_size=min(batch_size, n_steps * n_envs),
            n_epochs=n_epochs,
            learning_rate=learning_rate,
            ent_coef=0.01,
            seed=seed,
            device=device,
            verbose=0,
            policy_kwargs={"features_extractor_class": _ImpalaExtractor.make(config), "net_arch": []},
        )
        self.fitted = False

    def learn(self, total_steps: int) -> PPOBaseline:
        """Train for ``total_steps`` environment interactions (rounded up to whole rollouts)."""
        check_int("total_steps", total_steps)
        self.model.learn(total_timesteps=total_steps)
        self.fitted = True
        return self

    def predict(
        self, obs: np.ndarray, state: Any = None, episode_start: np.ndarray | None = None, *, deterministic: bool = True
    ) -> tuple[np.ndarray, Any]:
        """Stable-baselines3's ``predict`` of the trained PPO model: ``(actions, state)``."""
        if not self.fitted:
            raise RuntimeError("PPOBaseline is not fitted yet: call learn(total_steps) first")
        actions, state = self.model.predict(
            np.asarray(obs), state=state, episode_start=episode_start, deterministic=deterministic
        )
        return np.asarray(actions), state
