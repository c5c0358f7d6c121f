"""Quantile outputs of the temporal backbone and the pinball (quantile) loss (FactoST-v2's probabilistic head).

FactoST-v2 [official code, v2] predicts 11 quantiles per future step and takes the median as the point forecast;
its pretraining minimises the pinball loss averaged over the quantile levels.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import torch

__all__ = ["V2_QUANTILES", "check_quantiles", "pinball_loss"]

#: The quantile levels of the v2 upstream head.
V2_QUANTILES: tuple[float, ...] = (0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99)


def check_quantiles(quantiles: Sequence[float], name: str = "quantiles") -> tuple[float, ...]:
    """Validate quantile levels: a non-empty, strictly increasing sequence in ``(0, 1)`` that contains 0.5.

    Returns:
        The levels as a tuple of floats.

    Raises:
        ValueError: naming ``name`` if the levels are empty, unsorted, out of ``(0, 1)``, or lack the median.
    """
    try:
        levels = tuple(float(q) for q in quantiles)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a sequence of numbers, got {quantiles!r}") from err
    if not levels or any(not 0.0 < q < 1.0 for q in levels):
        raise ValueError(f"{name} must be a non-empty sequence of levels in (0, 1), got {levels}")
    if any(b <= a for a, b in pairwise(levels)):
        raise ValueError(f"{name} must be strictly increasing, got {levels}")
    if 0.5 not in levels:
        raise ValueError(f"{name} must contain the median 0.5 (the point forecast), got {levels}")
    return levels


def pinball_loss(
    pred: torch.Tensor, target: torch.Tensor, quantiles: Sequence[float], *, mask: torch.Tensor | None = None
) -> torch.Tensor:
    r"""Mean pinball (quantile) loss over the observed entries and the quantile levels.

    :math:`\rho_\tau(u) = \max(\tau u, (\tau - 1) u)` with :math:`u = y - \hat y_\tau`;
    the result is :math:`\frac{1}{|\Omega| Q}\sum_{i \in \Omega}\sum_{j=1}^{Q} \rho_{\tau_j}(y_i - \hat y_{i,j})`.
    For the single level 0.5 it equals half the mean absolute error.

    Args:
        pred: ``(..., Q)`` predicted quantiles.
        target: ``(...)`` targets (NaN = missing, ignored).
        quantiles: the ``Q`` levels in ``(0, 1)``.
        mask: optional boolean ``(...)``; only ``True`` entries (and observed targets) count.

    Returns:
        0-d tensor (0 when nothing is observed).

    Raises:
        ValueError: on mismatched shapes, no levels or levels out of ``(0, 1)``, or an inf in ``target``.
        TypeError: if ``mask`` is not a boolean tensor.

    References:
        Koenker & Bassett (1978); FactoST-v2's quantile head (arXiv 2601.12083).

    Example:
        >>> pinball_loss(torch.tensor([[0.0]]), torch.tensor([2.0]), (0.5,))
        tensor(1.)
    """
    if pred.ndim < 1 or pred.shape[:-1] != target.shape or pred.shape[-1] != len(quantiles):
        raise ValueError(f"pred must be target.shape + (Q={len(quantiles)},), got {tuple(pred.shape)} and "
                         f"{tuple(target.shape)}")  # fmt: skip
    if not len(quantiles) or any(not 0.0 < float(q) < 1.0 for q in quantiles):
        raise ValueError(f"quantiles must be a non-empty sequence of levels in (0, 1), got {tuple(quantiles)}")
    if torch.isinf(target).any():
        raise ValueError("target must not contain inf (NaN marks a missing value)")
    observed = ~torch.isnan(target)
    if mask is not None:
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            raise TypeError(f"mask must be a boolean tensor, got {getattr(mask, 'dtype', type(mask).__name__)}")
        if mask.shape != target.shape:
            raise ValueError(f"mask must have the target's shape {tuple(target.shape)}, got {tuple(mask.shape)}")
        observed = observed & mask
    tau = torch.as_tensor([float(q) for q in quantiles], dtype=pred.dtype, device=pred.device)
    u = torch.nan_to_num(target)[..., None] - pred
    loss = torch.maximum(tau * u, (tau - 1) * u).mean(-1)
    return torch.where(observed, loss, 0.0).sum() / observed.sum().clamp(min=1)
