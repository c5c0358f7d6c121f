"""Input checks shared by the public entry points: each error names the argument and what was expected."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["check_array", "check_int", "check_tensor"]


def check_tensor(
    name: str,
    value: object,
    *,
    ndim: int | tuple[int, ...],
    floating: bool | None = True,
    allow_empty: bool = False,
) -> torch.Tensor:
    """Return ``value`` if it is a ``torch.Tensor`` of the given rank, finite and non-empty.

    Args:
        name: the argument's name, used in the error messages.
        value: the object to check.
        ndim: the accepted number(s) of dimensions.
        floating: ``True`` requires a floating dtype, ``False`` an integer/bool dtype, ``None`` accepts both.
        allow_empty: accept tensors with zero elements.

    Raises:
        TypeError: if ``value`` is not a tensor or has the wrong dtype kind.
        ValueError: if the rank is wrong, it is empty, or it holds NaN/inf.
    """
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    dims = (ndim,) if isinstance(ndim, int) else ndim
    if value.ndim not in dims:
        raise ValueError(f"{name} must have {' or '.join(map(str, dims))} dimensions, got shape {tuple(value.shape)}")
    if floating is True and not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    if floating is False and value.is_floating_point():
        raise TypeError(f"{name} must be an integer or bool tensor, got dtype {value.dtype}")
    if not allow_empty and value.numel() == 0:
        raise ValueError(f"{name} must be non-empty, got shape {tuple(value.shape)}")
    if value.is_floating_point() and not bool(torch.isfinite(value).all()):
        raise ValueError(f"{name} holds NaN or inf values")
    return value


def check_array(name: str, value: Any, *, ndim: int | tuple[int, ...], dtype: str = "bool") -> np.ndarray:
    """Return ``value`` as a numpy array of rank ``ndim`` (``dtype`` ``"bool"`` or ``"float"``), finite.

    Raises:
        TypeError: if it cannot be read as an array of that kind.
        ValueError: if the rank is wrong or a float array holds NaN/inf.
    """
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        arr = np.asarray(value)
    except Exception as exc:
        raise TypeError(f"{name} must be array-like, got {type(value).__name__}") from exc
    if arr.dtype == object:
        raise TypeError(f"{name} must be a numeric array, got dtype object")
    dims = (ndim,) if isinstance(ndim, int) else ndim
    if arr.ndim not in dims:
        raise ValueError(f"{name} must have {' or '.join(map(str, dims))} dimensions, got shape {arr.shape}")
    if dtype == "bool":
        if arr.dtype != bool:
            if not np.issubdtype(arr.dtype, np.number):
                raise TypeError(f"{name} must be a boolean mask, got dtype {arr.dtype}")
            if arr.size and not np.isfinite(arr).all():
                raise ValueError(f"{name} holds NaN or inf values")
            if arr.size and not np.isin(arr, (0, 1)).all():
                raise ValueError(f"{name} must be a binary mask (values 0/1 or bool)")
            arr = arr.astype(bool)
        return arr
    if not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.size and not np.isfinite(arr).all():
        raise ValueError(f"{name} holds NaN or inf values")
    return arr


def main_process(is_main_process: bool | None) -> bool:
    """Whether this process writes: ``is_main_process`` if given, else :func:`nips25_shared.logs.is_main_rank`.

    Writers take ``is_main_process=`` (as transformers' ``save_pretrained`` does): under ``accelerate launch`` pass
    ``accelerator.is_main_process`` after ``accelerator.wait_for_everyone()``; the default reads ``RANK`` /
    ``LOCAL_RANK``, so only the first process of a launch writes.

    Raises:
        TypeError: if ``is_main_process`` is neither ``None`` nor a bool.
    """
    if is_main_process is None:
        from nips25_shared.logs import is_main_rank

        return is_main_rank()
    if not isinstance(is_main_process, bool):
        raise TypeError(f"is_main_process must be a bool or None, got {type(is_main_process).__name__}")
    return is_main_process


def check_int(name: str, value: object, *, minimum: int) -> int:
    """Return ``value`` if it is an ``int`` (not bool) ``>= minimum``.

    Raises:
        TypeError: if it is not an integer.
        ValueError: if it is below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)
