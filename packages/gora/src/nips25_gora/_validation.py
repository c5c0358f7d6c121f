"""Input checks shared by the public entry points: each error names the argument and what was expected."""

from __future__ import annotations

import torch

__all__ = ["check_matrix"]


def check_matrix(name: str, value: object, *, shape: tuple[int, int] | None = None) -> torch.Tensor:
    """Return ``value`` if it is a finite, non-empty, floating 2-D tensor (of ``shape`` when given).

    Raises:
        TypeError: if ``value`` is not a floating-point ``torch.Tensor``.
        ValueError: if it is not 2-D, is empty, has the wrong shape, or holds NaN/inf.
    """
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    if value.ndim != 2:
        raise ValueError(f"{name} must be 2-D (out_features, in_features), got shape {tuple(value.shape)}")
    if value.numel() == 0:
        raise ValueError(f"{name} must be non-empty, got shape {tuple(value.shape)}")
    if shape is not None and tuple(value.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(value.shape)}")
    if not bool(torch.isfinite(value).all()):
        raise ValueError(f"{name} holds NaN or inf values")
    return value
