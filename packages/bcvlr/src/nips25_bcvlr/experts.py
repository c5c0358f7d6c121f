"""Scripted experts that make the videos (their actions are discarded by BCV-LR) and the video recorder."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from nips25_bcvlr._validation import check_int, check_real
from nips25_bcvlr.video import Video

__all__ = ["BFSExpert", "PDExpert", "record_video"]

_DIR_TO_VEC = ((1, 0), (0, 1), (-1, 0), (0, -1))  # MiniGrid: 0 east, 1 south, 2 west, 3 north
LEFT, RIGHT, FORWARD = 0, 1, 2


class BFSExpert:
    """Shortest-path expert for MiniGrid navigation: breadth-first search over (cell, heading) states.

    Actions are turn left, turn right and forward (each one step); the plan is recomputed at every call, so the
    expert is optimal from any state. Ties go to the lowest action index.

    Example:
        >>> from nips25_bcvlr.environments import make_minigrid_pixels
        >>> env = make_minigrid_pixels("MiniGrid-Empty-5x5-v0")
        >>> _ = env.reset(seed=0)
        >>> len(BFSExpert().plan(env))  # from (1, 1) facing east to the goal at (3, 3)
        5
    """

    def plan(self, env: gym.Env) -> list[int]:
        """Shortest action sequence from the agent's state to the goal cell.

        Raises:
            ValueError: if the env is not a MiniGrid env with a reachable goal.
        """
        core: Any = env.unwrapped
        if not hasattr(core, "grid") or not hasattr(core, "agent_pos"):
            raise ValueError(f"env must be a MiniGrid env, got {type(core).__name__}")
        grid = core.grid
        goals = {
            (x, y)
            for x in range(grid.width)
            for y in range(grid.height)
            if (c := grid.get(x, y)) is not None and c.type == "goal"
        }
        start = (int(core.agent_pos[0]), int(core.agent_pos[1]), int(core.agent_dir))
        parent: dict[tuple[int, int, int], tuple[tuple[int, int, int], int] | None] = {start: None}
        queue = deque([start])
        while queue:
            state = queue.popleft()
            x, y, d = state
            if (x, y) in goals:
                actions = []
                while (link := parent[state]) is not None:
                    state, a = link
                    actions.append(a)
                return actions[::-1]
            dx, dy = _DIR_TO_VEC[d]
            cell = grid.get(x + dx, y + dy)
            moves = [((x, y, (d - 1) % 4), LEFT), ((x, y, (d + 1) % 4), RIGHT)]
            if cell is None or cell.can_overlap():
                moves.append(((x + dx, y + dy, d), FORWARD))
            for nxt, a in sorted(moves, key=lambda m: m[1]):
                if nxt not in parent:
                    parent[nxt] = (state, a)
                    queue.append(nxt)
        raise ValueError("env: the goal is not reachable from the agent's position")

    def __call__(self, env: gym.Env, obs: np.ndarray | None = None) -> int:
        """Next expert action (0 left, 1 right, 2 forward)."""
        plan = self.plan(env)
        return plan[0] if plan else FORWARD


class PDExpert:
    r"""Proportional-derivative expert for a point mass: :math:`a = \mathrm{clip}(-k_p x - k_d v)`.

    It reads ``env.unwrapped.pos`` (relative to the target) and ``.vel``: :class:`PointMassPixels`, or dm_control's
    ``point_mass`` through :class:`DMCPixels`.

    Args:
        kp: position gain, ``> 0``.
        kd: velocity gain, ``>= 0``.
    """

    def __init__(self, *, kp: float = 3.0, kd: float = 1.5) -> None:
        self.kp = check_real("kp", kp, low=0.0, low_open=True)
        self.kd = check_real("kd", kd, low=0.0)

    def __call__(self, env: gym.Env, obs: np.ndarray | None = None) -> np.ndarray:
        core: Any = env.unwrapped
        return np.clip(-self.kp * core.pos - self.kd * core.vel, -1.0, 1.0).astype(np.float32)


def record_video(
    env: gym.Env,
    expert: Callable[[gym.Env, np.ndarray], Any],
    *,
    n_frames: int,
    seed: int = 0,
) -> Video:
    """Roll out ``expert`` until at least ``n_frames`` frames are recorded (whole episodes).

    Args:
        env: a pixel env with ``(H, W, 3)`` uint8 observations.
        expert: ``expert(env, obs) -> action``.
        n_frames: minimum number of frames, ``>= 2``.
        seed: seed of the first reset (episode ``i`` uses ``seed + i``).

    Returns:
        A :class:`Video` with channel-first frames, the expert's actions (for evaluation only; ``-1``/NaN on each
        episode's last frame) and per-episode returns.

    Raises:
        ValueError: if ``n_frames < 2`` or ``seed < 0``.
        TypeError: if ``env`` is not a gymnasium env.
    """
    check_int("n_frames", n_frames, minimum=2)
    check_int("seed", seed, minimum=0)
    if not isinstance(env, gym.Env):
        raise TypeError(f"env must be a gymnasium.Env, got {type(env).__name__}")
    frames: list[np.ndarray] = []
    episode_ids: list[int] = []
    actions: list[Any] = []
    returns: list[float] = []
    continuous = isinstance(env.action_space, gym.spaces.Box)
    no_action = np.full(env.action_space.shape or (), np.nan, np.float32) if continuous else -1
    episode = 0
    while len(frames) < n_frames:
        obs, _ = env.reset(seed=seed + episode)
        total, done = 0.0, False
        while not done:
            a = expert(env, obs)
            frames.append(obs)
            episode_ids.append(episode)
            actions.append(a)
            obs, r, terminated, truncated, _ = env.step(a)
            total += float(r)
            done = terminated or truncated
        frames.append(obs)
        episode_ids.append(episode)
        actions.append(no_action)
        returns.append(total)
        episode += 1
    return Video(
        frames=np.ascontiguousarray(np.stack(frames).transpose(0, 3, 1, 2)),
        episode_ids=np.asarray(episode_ids, np.int64),
        actions=np.asarray(actions, np.float32 if continuous else np.int64),
        returns=np.asarray(returns),
    )
