"""Argument checks shared by the public entry points: every error names the argument and what was expected."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

__all__ = [
    "check_choice",
    "check_finite_tensor",
    "check_frames",
    "check_int",
    "check_real",
]


def check_int(name: str, value: Any, *, minimum: int = 1) -> int:
    """Return ``value`` as int; raise TypeError/ValueError naming ``name`` unless it is an int ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_real(
    name: str,
    value: Any,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as float; raise naming ``name`` unless it is a finite real in the given interval."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    below = v <= low if low_open else v < low
    above = v >= high if high_open else v > high
    if below or above:
        lo, hi = ("(" if low_open else "["), (")" if high_open else "]")
        raise ValueError(f"{name} must be in {lo}{low}, {high}{hi}, got {v}")
    return v


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """Raise ValueError naming ``name`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return str(value)


def check_finite_tensor(name: str, x: Any, *, ndim: int | None = None, last_dim: int | None = None) -> torch.Tensor:
    """Raise naming ``name`` unless ``x`` is a non-empty finite floating tensor of the given rank / last size."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not torch.is_floating_point(x):
        raise TypeError(f"{name} must be a floating tensor, got dtype {x.dtype}")
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(x.shape)}")
    if x.numel() == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(x.shape)}")
    if last_dim is not None and x.shape[-1] != last_dim:
        raise ValueError(f"{name} must have last dimension {last_dim}, got shape {tuple(x.shape)}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return x


def check_frames(name: str, frames: Any) -> np.ndarray:
    """Raise naming ``name`` unless ``frames`` is a non-empty ``(N, 3, H, W)`` uint8 array (channel-first RGB)."""
    if isinstance(frames, torch.Tensor):
        frames = frames.detach().cpu().numpy()
    if not isinstance(frames, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, got {type(frames).__name__}")
    if frames.dtype != np.uint8:
        raise TypeError(f"{name} must be uint8 pixels in [0, 255], got dtype {frames.dtype}")
    if frames.ndim != 4 or frames.shape[1] != 3:
        raise ValueError(f"{name} must have shape (N, 3, H, W), got {frames.shape}")
    if frames.shape[0] == 0 or frames.shape[2] < 4 or frames.shape[3] < 4:
        raise ValueError(f"{name} must hold at least one frame of at least 4x4 pixels, got {frames.shape}")
    return frames
