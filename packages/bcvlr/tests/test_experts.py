"""Scripted experts, environments and videos: optimal BFS path lengths, expert returns, window indices."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_bcvlr import BFSExpert, PDExpert, PointMassPixels, Video, load_video, make_minigrid_pixels, record_video

_VEC = ((1, 0), (0, 1), (-1, 0), (0, -1))


def _turns(d_from: int, d_to: int) -> int:
    k = (d_to - d_from) % 4
    return min(k, 4 - k)


def _optimal_length(pos: tuple[int, int], d: int, goal: tuple[int, int]) -> int:
    """Manhattan distance plus the turns needed in an empty room (independent closed form)."""
    dx, dy = goal[0] - pos[0], goal[1] - pos[1]
    heads = [h for h, need in ((0, dx > 0), (2, dx < 0), (1, dy > 0), (3, dy < 0)) if need]
    manhattan = abs(dx) + abs(dy)
    if not heads:
        return 0
    if len(heads) == 1:
        return manhattan + _turns(d, heads[0])
    return manhattan + min(_turns(d, h) for h in heads) + 1


@pytest.mark.parametrize("env_id", ["MiniGrid-Empty-Random-6x6-v0", "MiniGrid-Empty-8x8-v0"])
def test_bfs_expert_path_length_is_manhattan_plus_turns(env_id: str) -> None:
    """From 25 start states, the BFS plan's length equals the closed-form optimum and it reaches the goal."""
    env = make_minigrid_pixels(env_id)
    expert = BFSExpert()
    for seed in range(25):
        env.reset(seed=seed)
        core = env.unwrapped
        pos, d = (int(core.agent_pos[0]), int(core.agent_pos[1])), int(core.agent_dir)
        goal = (core.width - 2, core.height - 2)
        plan = expert.plan(env)
        assert len(plan) == _optimal_length(pos, d, goal)
        terminated = False
        for a in plan:
            _, r, terminated, _, _ = env.step(a)
        assert terminated and r > 0


def test_expert_video_return_and_layout() -> None:
    """The BFS expert's return is > 0.9; frames are channel-first uint8; actions end each episode with -1."""
    env = make_minigrid_pixels()
    video = record_video(env, BFSExpert(), n_frames=100, seed=3)
    assert video.returns is not None and video.returns.min() > 0.9
    assert video.frames.dtype == np.uint8 and video.frames.shape[1:] == (3, 20, 20)
    last = np.flatnonzero(np.diff(video.episode_ids, append=video.episode_ids[-1] + 1))
    assert video.actions is not None and np.all(video.actions[last] == -1)
    assert set(np.unique(video.actions[video.actions >= 0])) <= {0, 1, 2}


def test_video_windows_known_answer(tmp_path: object) -> None:
    """Episodes [0,1,2] and [3,4]: 3-windows (0,0,1) (0,1,2) (3,3,4); 2-windows are the consecutive pairs."""
    frames = np.zeros((5, 3, 4, 4), np.uint8)
    video = Video(frames=frames, episode_ids=np.array([0, 0, 0, 1, 1]))
    assert video.windows(3).tolist() == [[0, 0, 1], [0, 1, 2], [3, 3, 4]]
    assert video.windows(2).tolist() == [[0, 1], [1, 2], [3, 4]]
    path = video.save(tmp_path / "v.npz")  # type: ignore[operator]
    assert load_video(path).windows(3).tolist() == video.windows(3).tolist()


def test_point_mass_pd_expert_reaches_the_target() -> None:
    """The PD expert drives the point mass into the target; the reward is 1 inside it."""
    env = PointMassPixels()
    video = record_video(env, PDExpert(), n_frames=120, seed=0)
    assert video.frames.shape[1:] == (3, 32, 32)
    assert env.reward() == 1.0 and np.linalg.norm(env.pos) <= env.target_size
    assert video.returns is not None and video.returns.mean() > 0.5 * env.max_steps


def test_point_mass_edges_are_anti_aliased_and_sub_pixel_moves_show() -> None:
    """A pixel's red level is the disc's coverage: full at the centre, background far away, in between at the edge;
    moving the mass by a tenth of a pixel changes the frame."""
    env = PointMassPixels(size=16)
    env.reset(seed=0)
    env.pos = np.array([0.5625, -0.5625])  # the centre of pixel (row 3, column 12)
    frame = env.render().astype(int)
    centre = frame[3, 12]
    assert tuple(centre) == (230, 60, 60)
    assert tuple(frame[0, 0]) == (40, 40, 40)
    edge = frame[:, :, 0][(frame[:, :, 0] > 40) & (frame[:, :, 0] < 230)]
    assert edge.size > 0  # partial coverage exists
    env.pos = env.pos + np.array([0.1 * 2 / 16, 0.0])
    assert not np.array_equal(env.render().astype(int), frame)


def test_point_mass_action_is_determined_by_three_positions() -> None:
    """Away from the walls, a_t = ((x_t+1 - x_t) - (1 - c dt)(x_t - x_t-1)) / (g dt^2): three frames identify the
    action (why the continuous presets give the IDM three or more frames), two do not (v_t is unseen)."""
    env = PointMassPixels()
    env.reset(seed=1)
    env.pos, env.vel = np.array([0.1, -0.2]), np.array([0.3, 0.1])
    rng = np.random.default_rng(0)
    xs = [env.pos.copy()]
    actions = rng.uniform(-1, 1, size=(4, 2))
    for a in actions:
        env.step(a)
        xs.append(env.pos.copy())
    for t in range(1, 4):
        recovered = ((xs[t + 1] - xs[t]) - (1 - env.damping * env.dt) * (xs[t] - xs[t - 1])) / (env.gain * env.dt**2)
        np.testing.assert_allclose(recovered, actions[t], atol=1e-9)
