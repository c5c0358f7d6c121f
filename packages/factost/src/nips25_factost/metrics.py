"""Masked forecasting metrics (BasicTS / torch-spatiotemporal convention: a null value marks missing targets)."""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = ["masked_mae", "masked_mape", "masked_rmse"]


def _prepare(pred: torch.Tensor | np.ndarray, true: torch.Tensor | np.ndarray, null_value: float) -> tuple:
    p = torch.as_tensor(pred)
    t = torch.as_tensor(true)
    if not (p.is_floating_point() and t.is_floating_point()):
        raise TypeError(f"pred and true must be floating point, got {p.dtype} and {t.dtype}")
    if p.shape != t.shape:
        raise ValueError(f"pred has shape {tuple(p.shape)} but true has shape {tuple(t.shape)}")
    if p.numel() == 0:
        raise ValueError("pred and true must not be empty")
    if not torch.isfinite(p).all():
        raise ValueError("pred must be finite")
    if torch.isinf(t).any():
        raise ValueError("true must not contain inf (NaN marks a missing value)")
    t = t.to(p.dtype)
    mask = ~torch.isnan(t) if math.isnan(null_value) else (~torch.isnan(t)) & (t != null_value)
    return p, t, mask


def _masked_mean(err: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    n = mask.sum()
    if n == 0:
        return torch.full((), float("nan"), dtype=err.dtype)
    return torch.where(mask, err, torch.zeros_like(err)).sum() / n


def masked_mae(
    pred: torch.Tensor | np.ndarray, true: torch.Tensor | np.ndarray, *, null_value: float = math.nan
) -> torch.Tensor:
    r"""Mean absolute error over observed targets: :math:`\sum_i m_i |\hat y_i - y_i| / \sum_i m_i`.

    Args:
        pred: predictions, any shape (e.g. ``(B, H, N)``), finite floats.
        true: targets, same shape; entries that are NaN (or equal ``null_value``) are ignored.
        null_value: extra value marking missing targets (NaN: only NaNs are missing).

    Returns:
        A 0-d tensor (differentiable in ``pred``); NaN if no target is observed.

    Raises:
        TypeError: for non-float inputs. ValueError: for shape mismatch, empty input, non-finite ``pred``.

    Example:
        >>> float(masked_mae(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0, float("nan"), 5.0])))
        1.5
    """
    p, t, mask = _prepare(pred, true, null_value)
    return _masked_mean(torch.abs(p - torch.nan_to_num(t)), mask)


def masked_rmse(
    pred: torch.Tensor | np.ndarray, true: torch.Tensor | np.ndarray, *, null_value: float = math.nan
) -> torch.Tensor:
    r"""Root mean squared error over observed targets: :math:`\sqrt{\sum_i m_i (\hat y_i - y_i)^2 / \sum_i m_i}`.

    Same arguments, returns and errors as :func:`masked_mae`.
    """
    p, t, mask = _prepare(pred, true, null_value)
    return torch.sqrt(_masked_mean((p - torch.nan_to_num(t)) ** 2, mask))


def masked_mape(
    pred: torch.Tensor | np.ndarray, true: torch.Tensor | np.ndarray, *, null_value: float = math.nan
) -> torch.Tensor:
    r"""Mean absolute percentage error (in %) over observed, non-zero targets.

    :math:`100 \sum_i m_i |\hat y_i - y_i| / |y_i| / \sum_i m_i` with :math:`m_i = 0` where :math:`y_i` is missing
    or zero (the percentage is undefined there). Same arguments, returns and errors as :func:`masked_mae`.
    """
    p, t, mask = _prepare(pred, true, null_value)
    mask = mask & (torch.nan_to_num(t) != 0)
    safe = torch.where(mask, torch.nan_to_num(t), torch.ones_like(p))
    return 100.0 * _masked_mean(torch.abs(p - safe) / torch.abs(safe), mask)
