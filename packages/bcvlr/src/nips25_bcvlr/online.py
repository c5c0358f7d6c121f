"""Interaction with a batch of envs and the replay buffer of transition windows used by the online loop."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from nips25_bcvlr._validation import check_int

__all__ = ["ReplayBuffer", "Rollout", "RolloutBatch"]


@dataclass(frozen=True)
class RolloutBatch:
    """Transitions collected by :meth:`Rollout.collect`, in time-major order. There are no rewards: the
    reward-free methods never read them (log returns with gymnasium's ``RecordEpisodeStatistics`` wrapper).

    Attributes:
        windows: ``(M, n_context, 3, H, W)`` uint8 frame windows ending at :math:`o_{t+1}`.
        actions: ``(M,)`` int64 or ``(M, A)`` float32 actions taken at :math:`o_t`.
        dones: ``(M,)`` bool, episode ended at this transition.
    """

    windows: np.ndarray
    actions: np.ndarray
    dones: np.ndarray


def _episode_return(info: Any, i: int | None) -> float | None:
    """The return ``RecordEpisodeStatistics`` put in ``info`` at an episode's end (env ``i`` of a vector env)."""
    if not isinstance(info, dict) or "episode" not in info:
        return None
    if i is None:
        return float(info["episode"]["r"])
    mask = info.get("_episode")
    if mask is not None and not bool(mask[i]):
        return None
    return float(np.asarray(info["episode"]["r"])[i])


class Rollout:
    """Steps several envs in lock step with a batched policy and collects transition windows, without rewards.

    The rewards the envs return are never read, converted or stored (BCV-LR and BCO learn without them). Episode
    returns are logged only when the user opts in by wrapping the env(s) in gymnasium's
    ``RecordEpisodeStatistics`` (``gymnasium.wrappers.vector.RecordEpisodeStatistics`` for a vector env).

    Args:
        envs: a list of gymnasium envs (reset here when an episode ends) or one ``gymnasium.vector.VectorEnv``
            (``SyncVectorEnv``, ``AsyncVectorEnv``) in the ``NEXT_STEP`` (gymnasium's default) or ``SAME_STEP``
            autoreset mode; observations ``(H, W, 3)`` uint8 per env.
        n_context: frames per stored window (the first frame of an episode is repeated for missing past frames).
        seed: env ``i`` of a list is first reset with ``seed + i``; a vector env with ``seed``.

    Attributes:
        episode_returns: returns of the finished episodes, when the envs record them (see above); else empty.

    Raises:
        ValueError: for an empty list, a vector env with autoreset disabled, or observations that are not
            ``(H, W, 3)`` uint8.
    """

    def __init__(self, envs: Sequence[gym.Env] | gym.vector.VectorEnv, *, n_context: int, seed: int = 0) -> None:
        self.n_context = check_int("n_context", n_context, minimum=2)
        self.vector: gym.vector.VectorEnv | None = None
        if isinstance(envs, gym.vector.VectorEnv):
            mode = envs.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
            if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
                raise ValueError(f"envs: a vector env needs autoreset mode NEXT_STEP or SAME_STEP, got {mode}")
            self.vector, self.same_step = envs, mode == AutoresetMode.SAME_STEP
            self.envs: list[gym.Env] = []
            first = list(envs.reset(seed=seed)[0])
        else:
            self.envs = list(envs)
            if not self.envs:
                raise ValueError("envs must hold at least one env")
            first = [env.reset(seed=seed + i)[0] for i, env in enumerate(self.envs)]
        self.n_envs = len(first)
        self.history = [[self._chw(obs)] * (n_context - 1) for obs in first]
        self.pending_reset = np.zeros(self.n_envs, bool)  # NEXT_STEP: this env's next step only resets it
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

    def _step(self, a: np.ndarray) -> list[tuple[bool, np.ndarray, bool, np.ndarray | None, float | None]]:
        """Per env: (transition happened, next obs, done, obs after reset or None, recorded return or None)."""
        out: list[tuple[bool, np.ndarray, bool, np.ndarray | None, float | None]] = []
        if self.vector is None:
            for i, env in enumerate(self.envs):
                obs, _reward, terminated, truncated, info = env.step(a[i])  # the reward is never touched
                done = bool(terminated or truncated)
                ret = _episode_return(info, None) if done else None
                out.append((True, obs, done, env.reset()[0] if done else None, ret))
            return out
        obs, _rewards, terminated, truncated, info = self.vector.step(a)
        for i in range(self.n_envs):
            if self.pending_reset[i]:  # NEXT_STEP: the action was ignored and obs[i] starts a new episode
                out.append((False, obs[i], False, obs[i], None))
                continue
            done = bool(terminated[i] or truncated[i])
            ret = _episode_return(info, i) if done else None
            if done and self.same_step:
                out.append((True, info["final_obs"][i], True, obs[i], ret))
            else:
                out.append((True, obs[i], done, None, ret))
        return out

    def collect(self, act: Callable[[np.ndarray], np.ndarray], n_steps: int) -> RolloutBatch:
        """Take ``n_steps`` steps in every env with ``act((n_envs, 3, H, W) uint8) -> (n_envs, ...) actions``.

        Returns up to ``n_steps * n_envs`` transitions (fewer when a vector env spends a step resetting).
        """
        check_int("n_steps", n_steps)
        windows, actions, dones = [], [], []
        for _ in range(n_steps):
            a = np.asarray(act(self.current()))
            for i, (moved, obs, done, reset, ret) in enumerate(self._step(a)):
                if not moved:
                    self.pending_reset[i] = False
                    self.history[i] = [self._chw(obs)] * (self.n_context - 1)
                    continue
                nxt = self._chw(obs)
                windows.append(np.stack([*self.history[i], nxt]))
                actions.append(a[i])
                dones.append(done)
                if ret is not None:
                    self.episode_returns.append(ret)
                if reset is not None:
                    self.history[i] = [self._chw(reset)] * (self.n_context - 1)
                elif done:
                    self.pending_reset[i] = True
                else:
                    self.history[i] = [*self.history[i][1:], nxt]
        if not windows:
            shape = (0, self.n_context, *self.history[0][-1].shape)
            return RolloutBatch(np.zeros(shape, np.uint8), np.asarray(actions), np.zeros(0, bool))
        return RolloutBatch(windows=np.stack(windows), actions=np.stack(actions), dones=np.asarray(dones))


class ReplayBuffer:
    """First-in-first-out buffer of transition windows and actions, stored as torch tensors.

    Optionally it keeps, row for row, a tensor computed once per transition when it is added (the online loop's
    cache of frozen features, :attr:`features`), trimmed with the windows.

    Args:
        capacity: maximum number of transitions kept (paper: 20k Procgen, 100k DMC).

    Example:
        >>> buf = ReplayBuffer(3)
        >>> batch = RolloutBatch(np.zeros((2, 3, 3, 4, 4), np.uint8), np.arange(2), np.zeros(2, bool))
        >>> buf.add(batch, features=torch.zeros(2, 5)); buf.add(batch, features=torch.ones(2, 5))
        >>> len(buf), buf.features.shape, buf.features[:, 0].tolist()
        (3, torch.Size([3, 5]), [0.0, 1.0, 1.0])
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = check_int("capacity", capacity)
        self.windows: torch.Tensor | None = None
        self.actions: torch.Tensor | None = None
        self.features: torch.Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.windows is None else int(self.windows.shape[0])

    def add(self, batch: RolloutBatch, *, features: torch.Tensor | None = None) -> None:
        """Append a :class:`RolloutBatch`, dropping the oldest transitions beyond ``capacity``.

        Args:
            batch: the transitions.
            features: optional ``(M, ...)`` tensor, one row per transition of ``batch``; give it on every call or
                on none.

        Raises:
            ValueError: if ``features`` has not one row per transition, or is given on some calls and not others.
        """
        if features is not None and features.shape[0] != len(batch.actions):
            n = len(batch.actions)
            raise ValueError(f"features must have {n} rows (one per transition), got {features.shape[0]}")
        if len(batch.actions) == 0:
            return
        if len(self) > 0 and (features is None) != (self.features is None):
            raise ValueError("features must be given on every call to add or on none")
        w = torch.from_numpy(batch.windows)
        a = torch.from_numpy(batch.actions)
        if self.windows is None or self.actions is None:
            self.windows, self.actions, self.features = w, a, features
        else:
            self.windows = torch.cat([self.windows, w])
            self.actions = torch.cat([self.actions, a])
            if self.features is not None and features is not None:
                self.features = torch.cat([self.features, features])[-self.capacity :]
        self.windows = self.windows[-self.capacity :]
        self.actions = self.actions[-self.capacity :]
        if self.features is not None:
            self.features = self.features[-self.capacity :]
