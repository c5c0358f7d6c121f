"""Interaction with a batch of envs and the replay buffer of transition windows used by the online loop."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch

from nips25_bcvlr._validation import check_int

__all__ = ["ReplayBuffer", "Rollout", "RolloutBatch"]


@dataclass(frozen=True)
class RolloutBatch:
    """Transitions collected by :meth:`Rollout.collect`, in time-major order.

    Attributes:
        windows: ``(M, n_context, 3, H, W)`` uint8 frame windows ending at :math:`o_{t+1}`.
        actions: ``(M,)`` int64 or ``(M, A)`` float32 actions taken at :math:`o_t`.
        rewards: ``(M,)`` rewards (only the RL baseline may use them; BCV-LR never does).
        dones: ``(M,)`` bool, episode ended at this transition.
    """

    windows: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray


class Rollout:
    """Steps ``len(envs)`` gymnasium envs in lock step with a batched policy; resets finished episodes.

    Args:
        envs: envs with ``(H, W, 3)`` uint8 observations.
        n_context: frames per stored window (the first frame of an episode is repeated for missing past frames).
        seed: the env ``i`` is first reset with ``seed + i``.

    Attributes:
        episode_returns: returns of every episode finished so far (for logging and evaluation only).
    """

    def __init__(self, envs: Sequence[gym.Env], *, n_context: int, seed: int = 0) -> None:
        if not envs:
            raise ValueError("envs must hold at least one env")
        self.envs = list(envs)
        self.n_context = check_int("n_context", n_context, minimum=2)
        self.history = []
        for i, env in enumerate(self.envs):
            obs, _ = env.reset(seed=seed + i)
            self.history.append([self._chw(obs)] * (n_context - 1))
        self.running = np.zeros(len(self.envs))
        self.episode_returns: list[float] = []

    @staticmethod
    def _chw(obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs)
        if obs.dtype != np.uint8 or obs.ndim != 3 or obs.shape[-1] != 3:
            raise ValueError(f"envs must return (H, W, 3) uint8 observations, got {obs.shape} {obs.dtype}")
        return np.ascontiguousarray(obs.transpose(2, 0, 1))

    def current(self) -> np.ndarray:
        """``(n_envs, 3, H, W)`` uint8 current observations."""
        return np.stack([h[-1] for h in self.history])

    def collect(self, act: Callable[[np.ndarray], np.ndarray], n_steps: int) -> RolloutBatch:
        """Take ``n_steps`` steps in every env with ``act((n_envs, 3, H, W) uint8) -> (n_envs, ...) actions``."""
        check_int("n_steps", n_steps)
        windows, actions, rewards, dones = [], [], [], []
        for _ in range(n_steps):
            a = np.asarray(act(self.current()))
            for i, env in enumerate(self.envs):
                obs, r, terminated, truncated, _ = env.step(a[i])
                nxt = self._chw(obs)
                windows.append(np.stack([*self.history[i], nxt]))
                self.running[i] += float(r)
                done = bool(terminated or truncated)
                if done:
                    self.episode_returns.append(float(self.running[i]))
                    self.running[i] = 0.0
                    reset, _ = env.reset()
                    self.history[i] = [self._chw(reset)] * (self.n_context - 1)
                else:
                    self.history[i] = [*self.history[i][1:], nxt]
                actions.append(a[i])
                rewards.append(float(r))
                dones.append(done)
        return RolloutBatch(
            windows=np.stack(windows),
            actions=np.stack(actions),
            rewards=np.asarray(rewards, np.float32),
            dones=np.asarray(dones),
        )


class ReplayBuffer:
    """First-in-first-out buffer of transition windows and actions, stored as torch tensors.

    Args:
        capacity: maximum number of transitions kept (paper: 20k Procgen, 100k DMC).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = check_int("capacity", capacity)
        self.windows: torch.Tensor | None = None
        self.actions: torch.Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.windows is None else int(self.windows.shape[0])

    def add(self, batch: RolloutBatch) -> None:
        """Append a :class:`RolloutBatch`, dropping the oldest transitions beyond ``capacity``."""
        w = torch.from_numpy(batch.windows)
        a = torch.from_numpy(batch.actions)
        if self.windows is None or self.actions is None:
            self.windows, self.actions = w, a
        else:
            self.windows = torch.cat([self.windows, w])
            self.actions = torch.cat([self.actions, a])
        self.windows = self.windows[-self.capacity :]
        self.actions = self.actions[-self.capacity :]
