"""Pixel environments that run offline: MiniGrid (discrete), a numpy-rendered point mass (continuous) and, with the
``dmc`` extra, the DeepMind Control Suite rendered headless by MuJoCo (the paper's continuous benchmark)."""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from nips25_bcvlr._validation import check_int, check_real

__all__ = [
    "DMCPixels",
    "MiniGridPixels",
    "PointMassPixels",
    "ProcgenPixels",
    "make_dmc_pixels",
    "make_minigrid_pixels",
]


class MiniGridPixels(gym.ObservationWrapper):
    """Full-grid RGB pixels of a MiniGrid env as ``(H, W, 3)`` uint8, with the three navigation actions.

    Actions: 0 turn left, 1 turn right, 2 forward (MiniGrid's own first three); the others (pickup, drop,
    toggle, done) do nothing in empty rooms and are left out. With ``crop_walls`` the constant outer ring of wall
    tiles is cut off (a 6x6 room at 5 px per tile gives 20x20 frames).
    """

    def __init__(self, env: gym.Env, *, tile_size: int = 5, crop_walls: bool = True) -> None:
        from minigrid.wrappers import RGBImgObsWrapper

        super().__init__(RGBImgObsWrapper(env, tile_size=tile_size))
        self.crop = tile_size if crop_walls else 0
        image_space: Any = self.env.observation_space
        h, w, _ = image_space["image"].shape
        shape = (h - 2 * self.crop, w - 2 * self.crop, 3)
        self.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)
        self.action_space = gym.spaces.Discrete(3)

    def observation(self, observation: dict[str, Any]) -> np.ndarray:
        img = np.asarray(observation["image"], dtype=np.uint8)
        if self.crop:
            img = img[self.crop : -self.crop, self.crop : -self.crop]
        return np.ascontiguousarray(img)


def make_minigrid_pixels(
    env_id: str = "MiniGrid-Empty-Random-6x6-v0", *, tile_size: int = 5, crop_walls: bool = True
) -> MiniGridPixels:
    """Make a MiniGrid env with full-grid pixel observations (``RGBImgObsWrapper``) and 3 actions.

    The agent's view-cone highlight is switched off (``highlight=False``), so a frame shows the room, the goal
    and the agent only.

    Args:
        env_id: a registered MiniGrid id (default: 6x6 empty room, random start, 4x4 free cells).
        tile_size: pixels per grid cell, ``>= 2``.
        crop_walls: cut off the outer wall ring (6x6 x 5 px: 20x20 frames instead of 30x30).

    Returns:
        A gymnasium env with ``(H, W, 3)`` uint8 observations and ``Discrete(3)`` actions.

    Raises:
        ValueError: if ``env_id`` is not a registered MiniGrid id or ``tile_size < 2``.

    Example:
        >>> make_minigrid_pixels().observation_space.shape
        (20, 20, 3)
    """
    import minigrid  # noqa: F401  (registers the MiniGrid ids)

    check_int("tile_size", tile_size, minimum=2)
    if not isinstance(env_id, str) or env_id not in gym.registry or not env_id.startswith("MiniGrid-"):
        raise ValueError(f"env_id must be a registered MiniGrid id such as 'MiniGrid-Empty-6x6-v0', got {env_id!r}")
    return MiniGridPixels(gym.make(env_id, highlight=False), tile_size=tile_size, crop_walls=crop_walls)


class PointMassPixels(gym.Env):
    r"""A 2-D point mass rendered to pixels with numpy, after dm_control's ``point_mass`` (continuous control).

    State :math:`(x, v) \in [-1, 1]^2 \times \mathbb{R}^2`; action :math:`a \in [-1, 1]^2`; semi-implicit Euler
    :math:`v \leftarrow (1 - c\,\Delta t) v + g\,a\,\Delta t`, :math:`x \leftarrow \mathrm{clip}(x + v\,\Delta t)`
    (the velocity component into a wall is zeroed). Reward is dm_control's ``tolerance``: 1 inside the target
    (radius ``target_size`` at the origin), a Gaussian fall-off with margin ``target_size`` outside. Episodes
    last ``max_steps``; the start is uniform in the arena with zero velocity. The frame shows the target (green)
    and the mass (red) with anti-aliased edges; as in the paper's continuous setting, the velocity is only visible
    from several frames (the action from three: :math:`x_{t-1}, x_t, x_{t+1}`).

    Args:
        size: frame side in pixels.
        max_steps: episode length.
        dt: time step; damping ``c`` and gain ``g`` set the dynamics.
        target_size: target radius (dm_control easy: 0.015 in a 0.3 arena, i.e. 0.05 of the half-width; we use a
            larger default for the small frames).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"]}  # type: ignore[misc]

    def __init__(
        self,
        *,
        size: int = 32,
        max_steps: int = 60,
        dt: float = 0.1,
        damping: float = 2.0,
        gain: float = 2.0,
        target_size: float = 0.15,
    ) -> None:
        self.size = check_int("size", size, minimum=8)
        self.max_steps = check_int("max_steps", max_steps)
        self.dt = check_real("dt", dt, low=0.0, low_open=True)
        self.damping = check_real("damping", damping, low=0.0)
        self.gain = check_real("gain", gain, low=0.0, low_open=True)
        self.target_size = check_real("target_size", target_size, low=0.0, high=1.0, low_open=True)
        self.observation_space = gym.spaces.Box(0, 255, (size, size, 3), np.uint8)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.render_mode = "rgb_array"
        grid = (np.arange(size) + 0.5) / size * 2 - 1
        self._yy, self._xx = np.meshgrid(grid, grid, indexing="ij")
        self.pos = np.zeros(2)
        self.vel = np.zeros(2)
        self.steps = 0

    def _disc(self, centre: np.ndarray, radius: float) -> np.ndarray:
        """Coverage in ``[0, 1]`` of each pixel by a disc: 1 inside, 0 outside, linear over one pixel at the edge.

        Anti-aliased edges (MuJoCo's offscreen buffer is multisampled) make sub-pixel moves of the mass visible.
        """
        d = np.sqrt((self._xx - centre[0]) ** 2 + (self._yy - centre[1]) ** 2)
        pixel = 2.0 / self.size
        return np.clip((radius - d) / pixel + 0.5, 0.0, 1.0)

    def render(self) -> np.ndarray:  # type: ignore[override]
        img = np.full((self.size, self.size, 3), 40.0)
        for centre, radius, colour in ((np.zeros(2), self.target_size, (60, 200, 60)), (self.pos, 0.12, (230, 60, 60))):
            alpha = self._disc(centre, radius)[..., None]
            img = (1 - alpha) * img + alpha * np.asarray(colour, np.float64)
        return np.rint(img).astype(np.uint8)

    def reward(self) -> float:
        """dm_control ``tolerance(d, bounds=(0, r), margin=r)`` with a Gaussian sigmoid (value 0.1 at the margin)."""
        d = float(np.linalg.norm(self.pos))
        if d <= self.target_size:
            return 1.0
        x = (d - self.target_size) / self.target_size
        return float(np.exp(-0.5 * (x * np.sqrt(-2 * np.log(0.1))) ** 2))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-0.8, 0.8, size=2)
        self.vel = np.zeros(2)
        self.steps = 0
        return self.render(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        a = np.clip(np.asarray(action, dtype=np.float64).reshape(2), -1.0, 1.0)
        self.vel = (1 - self.damping * self.dt) * self.vel + self.gain * a * self.dt
        new = self.pos + self.vel * self.dt
        hit = np.abs(new) > 1.0
        self.vel[hit] = 0.0
        self.pos = np.clip(new, -1.0, 1.0)
        self.steps += 1
        return self.render(), self.reward(), False, self.steps >= self.max_steps, {}


def _dm_control_suite() -> Any:
    """Import ``dm_control.suite`` with a headless GL backend (``MUJOCO_GL=egl`` unless the user set one)."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    # Mesa's EGL driver and the LLVM inside triton clash: once an EGL context exists, importing triton (torch does so
    # lazily when the first optimizer is built) kills the process with a segmentation fault. Load it first.
    if importlib.util.find_spec("triton") is not None:
        importlib.import_module("triton")

    try:
        from dm_control import suite
    except ImportError as err:
        raise ImportError(
            f"DMCPixels needs dm_control and mujoco: pip install 'nips25-bcvlr[dmc]' (import failed: {err})"
        ) from err
    return suite


class DMCPixels(gym.Env):
    """A DeepMind Control Suite task with pixel observations, as a gymnasium env (the paper's continuous setting).

    Each :meth:`step` repeats the action ``action_repeat`` times (the paper: 2) and sums the rewards; the frame is
    MuJoCo's render of camera ``camera_id`` at ``size x size``. Episodes end with ``truncated=True`` at the task's
    time limit (``terminated=True`` only if the task reports a zero discount). Actions live in ``[-1, 1]^A`` and are
    mapped linearly to the task's action bounds. Rendering is headless: ``MUJOCO_GL`` defaults to ``egl`` (set it to
    ``osmesa`` where EGL is missing; it must be set before ``mujoco`` is first imported).

    For the ``point_mass`` domain, :attr:`pos` (position relative to the target) and :attr:`vel` expose the state
    the scripted :class:`~nips25_bcvlr.experts.PDExpert` reads.

    Args:
        domain: a ``dm_control.suite`` domain, e.g. ``"point_mass"``, ``"reacher"``, ``"finger"``.
        task: a task of that domain, e.g. ``"easy"``.
        size: frame side in pixels, ``>= 8`` (paper: 84 for DMC; 64 in this package's presets).
        action_repeat: physics control steps per env step, ``>= 1``.
        camera_id: MuJoCo camera (0 is the suite's default view).

    Raises:
        ImportError: if dm_control is not installed (the ``dmc`` extra).
        ValueError: for an unknown ``(domain, task)`` or out-of-range sizes.
        RuntimeError: if MuJoCo cannot render headless with the selected ``MUJOCO_GL`` backend.

    Example:
        >>> env = DMCPixels("point_mass", "easy", size=64)  # doctest: +SKIP
        >>> env.reset(seed=0)[0].shape  # doctest: +SKIP
        (64, 64, 3)
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"]}  # type: ignore[misc]

    def __init__(
        self, domain: str = "point_mass", task: str = "easy", *, size: int = 64, action_repeat: int = 2,
        camera_id: int = 0,
    ) -> None:  # fmt: skip
        self.size = check_int("size", size, minimum=8)
        self.action_repeat = check_int("action_repeat", action_repeat)
        self.camera_id = check_int("camera_id", camera_id, minimum=0)
        suite = _dm_control_suite()
        if (domain, task) not in suite.ALL_TASKS:
            known = sorted({d for d, _ in suite.ALL_TASKS})
            raise ValueError(
                f"domain/task must be a dm_control suite task, got ({domain!r}, {task!r}); domains: {known}"
            )
        self.domain, self.task = domain, task
        self._env = suite.load(domain, task, task_kwargs={"random": 0})
        spec = self._env.action_spec()
        self._low = np.asarray(spec.minimum, np.float64)
        self._high = np.asarray(spec.maximum, np.float64)
        self.observation_space = gym.spaces.Box(0, 255, (size, size, 3), np.uint8)
        self.action_space = gym.spaces.Box(-1.0, 1.0, spec.shape, np.float32)
        self.render_mode = "rgb_array"

    @property
    def physics(self) -> Any:
        """The task's MuJoCo physics (``dm_control.mujoco.Physics``)."""
        return self._env.physics

    def render(self) -> np.ndarray:  # type: ignore[override]
        try:
            frame = self._env.physics.render(self.size, self.size, camera_id=self.camera_id)
        except Exception as err:  # mujoco raises its own FatalError / RuntimeError types for GL failures
            raise RuntimeError(
                f"MuJoCo could not render headless with MUJOCO_GL={os.environ.get('MUJOCO_GL')!r}: {err}. "
                "Install EGL (Debian: libegl1) or set MUJOCO_GL=osmesa (libosmesa6) before importing nips25_bcvlr."
            ) from err
        return np.ascontiguousarray(frame, dtype=np.uint8)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self._env.task.random.seed(seed)  # the task's start-state generator (a numpy RandomState)
        self._env.reset()
        return self.render(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        a = np.clip(np.asarray(action, dtype=np.float64).reshape(self._low.shape), -1.0, 1.0)
        scaled = self._low + (a + 1.0) * 0.5 * (self._high - self._low)
        total = 0.0
        for _ in range(self.action_repeat):
            ts = self._env.step(scaled)
            total += float(ts.reward or 0.0)
            if ts.last():
                break
        terminated = bool(ts.last() and ts.discount == 0.0)
        return self.render(), total, terminated, bool(ts.last() and not terminated), {}

    def _point_mass(self, name: str) -> None:
        if self.domain != "point_mass":
            raise AttributeError(f"{name} is defined for the point_mass domain only, not {self.domain!r}")

    @property
    def pos(self) -> np.ndarray:
        """Point mass: ``(2,)`` position of the mass relative to the target (what :class:`PDExpert` drives to 0)."""
        self._point_mass("pos")
        xpos = self.physics.named.data.geom_xpos
        return np.asarray(xpos["pointmass"][:2] - xpos["target"][:2], np.float64)

    @property
    def vel(self) -> np.ndarray:
        """Point mass: ``(2,)`` velocity of the mass."""
        self._point_mass("vel")
        return np.asarray(self.physics.data.qvel[:2], np.float64).copy()


def make_dmc_pixels(
    domain: str = "point_mass", task: str = "easy", *, size: int = 64, action_repeat: int = 2, camera_id: int = 0
) -> DMCPixels:
    """Make a dm_control task with ``(size, size, 3)`` uint8 pixel observations (see :class:`DMCPixels`).

    Raises:
        ImportError: without the ``dmc`` extra (``pip install 'nips25-bcvlr[dmc]'``).
        ValueError: for an unknown task or out-of-range arguments.
    """
    return DMCPixels(domain, task, size=size, action_repeat=action_repeat, camera_id=camera_id)


class ProcgenPixels(gym.Env):
    """One Procgen game (the paper's discrete benchmark) as a gymnasium env: ``(64, 64, 3)`` uint8, ``Discrete(15)``.

    It drives ``procgen``'s gym3 env with one instance (PyPI ``procgen`` has no Python 3.11 wheel; the
    ``procgen-mirror`` build does, but it pins ``numpy<2``, so install it in its own environment:
    ``pip install procgen-mirror``). gym3 starts the next episode by itself: a step that ends an episode returns
    ``terminated=True`` with the first frame of the next level (the reward is that of the final step), and
    ``reset()`` right after it keeps that frame. ``reset(seed=s)`` (or a reset mid-episode) builds a new game whose
    levels are drawn with ``rand_seed=s``.

    Args:
        env_name: one of ``procgen.env.ENV_NAMES`` (e.g. ``"fruitbot"``, ``"coinrun"``).
        distribution_mode: ``"easy"`` (the paper's setting) or ``"hard"``.
        num_levels: number of distinct levels, ``0`` for unlimited.
        start_level: first level seed.

    Raises:
        ImportError: if ``procgen`` is not installed.
        ValueError: for an unknown game or mode, or negative level counts.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"]}  # type: ignore[misc]

    def __init__(
        self, env_name: str = "fruitbot", *, distribution_mode: str = "easy", num_levels: int = 0,
        start_level: int = 0,
    ) -> None:  # fmt: skip
        try:
            from procgen import ProcgenGym3Env
            from procgen.env import ENV_NAMES
        except ImportError as err:
            raise ImportError(
                f"ProcgenPixels needs procgen: pip install procgen-mirror (pins numpy<2; import failed: {err})"
            ) from err
        if env_name not in ENV_NAMES:
            raise ValueError(f"env_name must be one of {sorted(ENV_NAMES)}, got {env_name!r}")
        if distribution_mode not in ("easy", "hard"):
            raise ValueError(f"distribution_mode must be 'easy' or 'hard', got {distribution_mode!r}")
        self.num_levels = check_int("num_levels", num_levels, minimum=0)
        self.start_level = check_int("start_level", start_level, minimum=0)
        self.env_name, self.distribution_mode = env_name, distribution_mode
        self._factory = ProcgenGym3Env
        self._game: Any = None
        self._fresh = False
        self._frame = np.zeros((64, 64, 3), np.uint8)
        self.observation_space = gym.spaces.Box(0, 255, (64, 64, 3), np.uint8)
        self.action_space = gym.spaces.Discrete(15)
        self.render_mode = "rgb_array"

    def _observe(self) -> tuple[float, bool]:
        reward, obs, first = self._game.observe()
        self._frame = np.ascontiguousarray(obs["rgb"][0], dtype=np.uint8)
        return float(reward[0]), bool(first[0])

    def render(self) -> np.ndarray:  # type: ignore[override]
        return self._frame.copy()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None or self._game is None or not self._fresh:
            rand_seed = int(seed) if seed is not None else int(self.np_random.integers(2**31 - 1))
            self._game = self._factory(num=1, env_name=self.env_name, num_levels=self.num_levels,
                                       start_level=self.start_level, distribution_mode=self.distribution_mode,
                                       rand_seed=rand_seed)  # fmt: skip
            self._observe()
        self._fresh = False
        return self.render(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._game is None:
            raise RuntimeError("call reset() before step()")
        a = int(np.asarray(action).reshape(()))
        if not 0 <= a < 15:
            raise ValueError(f"action must be in [0, 15), got {a}")
        self._game.act(np.array([a], np.int32))
        reward, first = self._observe()
        self._fresh = first
        return self.render(), reward, first, False, {}
