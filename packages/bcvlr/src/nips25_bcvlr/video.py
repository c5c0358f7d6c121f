"""Action-free expert videos: frames grouped into episodes, window indices, and ``.npz`` loading/saving."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nips25_bcvlr._validation import check_frames, check_int
from nips25_shared.logs import is_main_rank

__all__ = ["Video", "load_video"]


@dataclass(frozen=True)
class Video:
    """An expert video: frames with their episode index; true actions are kept for evaluation only.

    Attributes:
        frames: ``(N, 3, H, W)`` uint8 RGB frames, episodes stored contiguously in time order.
        episode_ids: ``(N,)`` int episode index of each frame (non-decreasing).
        actions: optional ``(N,)`` (discrete, int) or ``(N, A)`` (continuous, float) action taken *at* each frame,
            used only by the true-action baseline and the linear probe (never by BCV-LR); the last frame of an
            episode has no action (``-1`` or NaN).
        returns: optional per-episode returns of the expert (for normalising scores).

    Raises:
        ValueError / TypeError: if the arrays are inconsistent, naming the field.
    """

    frames: np.ndarray
    episode_ids: np.ndarray
    actions: np.ndarray | None = None
    returns: np.ndarray | None = None

    def __post_init__(self) -> None:
        check_frames("frames", self.frames)
        ep = np.asarray(self.episode_ids)
        if ep.shape != (self.frames.shape[0],) or not np.issubdtype(ep.dtype, np.integer):
            raise ValueError(f"episode_ids must be ({self.frames.shape[0]},) integers, got {ep.shape} {ep.dtype}")
        if np.any(np.diff(ep) < 0):
            raise ValueError("episode_ids must be non-decreasing (episodes stored contiguously)")
        object.__setattr__(self, "episode_ids", ep)
        if self.actions is not None and np.asarray(self.actions).shape[0] != self.frames.shape[0]:
            raise ValueError(f"actions must have {self.frames.shape[0]} rows, got {np.asarray(self.actions).shape}")
        if self.returns is not None:
            r = np.asarray(self.returns, dtype=np.float64)
            if r.ndim != 1 or r.size == 0 or not np.isfinite(r).all():
                raise ValueError("returns must be a non-empty 1-D array of finite per-episode returns")
            object.__setattr__(self, "returns", r)

    def __len__(self) -> int:
        return int(self.frames.shape[0])

    def windows(self, n_context: int = 3) -> np.ndarray:
        """Frame indices of every transition window ``(..., t, t+1)`` inside one episode.

        For ``n_context = 3`` a row is ``(t-1, t, t+1)`` with ``t-1`` clipped to the episode's first frame; for
        ``n_context = 2`` it is ``(t, t+1)``.

        Returns:
            ``(M, n_context)`` int64 indices, one row per transition ``t -> t+1``.

        Raises:
            ValueError: if no episode holds a transition.
        """
        check_int("n_context", n_context, minimum=2)
        ep = self.episode_ids
        t = np.flatnonzero(ep[1:] == ep[:-1])  # t and t+1 in the same episode
        if t.size == 0:
            raise ValueError("video holds no transition (every episode has a single frame)")
        starts = np.searchsorted(ep, ep[t], side="left")
        cols = [np.maximum(t - k, starts) for k in range(n_context - 2, 0, -1)] + [t, t + 1]
        return np.stack(cols, axis=1).astype(np.int64)

    def save(self, path: str | Path, *, is_main_process: bool | None = None) -> Path:
        """Write the video as an uncompressed ``.npz`` (keys ``frames``, ``episode_ids``, optional others).

        Args:
            path: the file (``.npz`` is appended when missing, as numpy does).
            is_main_process: whether this process writes; ``None`` (default) asks
                ``nips25_shared.logs.is_main_rank()``, so under a distributed launch only the main rank writes
                (pass ``accelerator.is_main_process`` after ``accelerator.wait_for_everyone()`` with an accelerator).

        Returns:
            The path written (or that the main process writes).
        """
        path = Path(path)
        target = path if path.suffix == ".npz" else path.with_suffix(path.suffix + ".npz")
        if not (is_main_rank() if is_main_process is None else is_main_process):
            return target
        arrays = {"frames": self.frames, "episode_ids": self.episode_ids}
        if self.actions is not None:
            arrays["actions"] = np.asarray(self.actions)
        if self.returns is not None:
            arrays["returns"] = self.returns
        np.savez(path, **arrays)  # type: ignore[arg-type]
        return target


def load_video(path: str | Path) -> Video:
    """Load a video from ``.npz``: our layout (``frames`` (N,3,H,W), ``episode_ids``) or observation stacks.

    Accepted keys: ``frames`` or ``obs``/``observations``, either ``(N, 3, H, W)``, ``(N, H, W, 3)`` (one episode,
    or with ``episode_ids``/``dones``) or ``(E, T, H, W, 3)`` / ``(E, T, 3, H, W)`` (``E`` episodes of ``T`` frames).

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if ``path`` is not a readable ``.npz``, no frame array is found or the shapes are not pixels.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no video file at {path}")
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise ValueError(f"path: {path} is not a readable .npz file ({type(err).__name__})") from err
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError(f"path: {path} holds a single array, expected an .npz archive with a frames/obs key")
    with archive as data:
        key = next((k for k in ("frames", "obs", "observations") if k in data), None)
        if key is None:
            raise ValueError(f"path: {path} has none of the keys frames/obs/observations (has {list(data.keys())})")
        frames = np.asarray(data[key])
        extra = {k: np.asarray(data[k]) for k in ("episode_ids", "dones", "actions", "returns") if k in data}
    if frames.ndim == 5:
        e, t = frames.shape[:2]
        frames = frames.reshape(e * t, *frames.shape[2:])
        extra.setdefault("episode_ids", np.repeat(np.arange(e), t))
    if frames.ndim != 4:
        raise ValueError(f"path: {path}: {key} must be 4-D or 5-D pixel arrays, got shape {frames.shape}")
    if frames.shape[-1] == 3 and frames.shape[1] != 3:
        frames = frames.transpose(0, 3, 1, 2)
    if "episode_ids" not in extra:
        dones = extra.get("dones")
        if dones is not None and dones.shape != (len(frames),):
            raise ValueError(f"path: {path}: dones must have shape ({len(frames)},), got {dones.shape}")
        extra["episode_ids"] = (
            np.concatenate([[0], np.cumsum(dones[:-1].astype(bool))]) if dones is not None else np.zeros(len(frames))
        )
    ids = extra["episode_ids"]
    integral = np.issubdtype(ids.dtype, np.integer) or np.issubdtype(ids.dtype, np.bool_)
    whole = np.issubdtype(ids.dtype, np.floating) and bool(np.all(np.isfinite(ids) & (ids == np.round(ids))))
    if not (integral or whole):
        raise ValueError(f"path: {path}: episode_ids must hold integer episode indices, got dtype {ids.dtype}")
    try:
        return Video(
            frames=np.ascontiguousarray(frames),
            episode_ids=ids.astype(np.int64),
            actions=extra.get("actions"),
            returns=extra.get("returns"),
        )
    except (ValueError, TypeError) as err:  # name the file (and the key the frames came from) in the message
        raise type(err)(f"path: {path} ({key}): {err}") from err
