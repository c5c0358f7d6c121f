"""The reweighted token-level language-modelling loss of FedRW (Sec. 3)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["weighted_lm_loss"]


def weighted_lm_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor,
    weights: torch.Tensor,
    *,
    reduction: str = "sample",
) -> torch.Tensor:
    r"""Cross-entropy of a causal LM with one weight per sample.

    With per-token cross-entropy :math:`\ell_{b,t}` and mask :math:`m_{b,t}`:

    * ``"sample"``: :math:`L = \sum_b w_b \bar\ell_b / \sum_b w_b`, :math:`\bar\ell_b = \sum_t m_{b,t}\ell_{b,t} /
      \sum_t m_{b,t}` (each sample's mean token loss, weighted);
    * ``"token"``: :math:`L = \sum_{b,t} w_b m_{b,t} \ell_{b,t} / \sum_{b,t} w_b m_{b,t}`.

    With all :math:`w_b = 1` the ``"token"`` form equals ``torch.nn.functional.cross_entropy`` over the masked tokens.

    Args:
        logits: float ``(B, T, V)``.
        targets: int64 ``(B, T)`` in ``[0, V)`` where ``mask`` is true.
        mask: bool or 0/1 ``(B, T)``; every sample needs at least one unmasked token.
        weights: float ``(B,)``, finite, ``> 0``.
        reduction: ``"sample"`` (default) or ``"token"``.

    Returns:
        Scalar tensor.

    Raises:
        TypeError, ValueError: for wrong dtypes/shapes, NaN/inf, non-positive weights, empty samples, bad reduction.

    References:
        Ye et al., "FedRW", NeurIPS 2025, arXiv:2511.07505, Sec. 3 (weights scale token-level losses).

    Example:
        >>> lg = torch.zeros(1, 2, 4); tg = torch.tensor([[1, 2]]); m = torch.ones(1, 2, dtype=torch.bool)
        >>> round(float(weighted_lm_loss(lg, tg, m, torch.ones(1))), 4)  # ln 4
        1.3863
    """
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise TypeError("logits must be a floating-point torch.Tensor")
    if logits.ndim != 3 or logits.numel() == 0:
        raise ValueError(f"logits must be non-empty (B, T, V), got shape {tuple(logits.shape)}")
    b, t, v = logits.shape
    if not isinstance(targets, torch.Tensor) or targets.dtype not in (torch.int64, torch.int32):
        raise TypeError("targets must be an integer torch.Tensor")
    if tuple(targets.shape) != (b, t):
        raise ValueError(f"targets must have shape {(b, t)}, got {tuple(targets.shape)}")
    if not isinstance(mask, torch.Tensor) or tuple(mask.shape) != (b, t):
        raise ValueError(f"mask must be a tensor of shape {(b, t)}")
    if not isinstance(weights, torch.Tensor) or not weights.is_floating_point():
        raise TypeError("weights must be a floating-point torch.Tensor")
    if tuple(weights.shape) != (b,):
        raise ValueError(f"weights must have shape {(b,)}, got {tuple(weights.shape)}")
    if not bool(torch.isfinite(weights).all()) or bool((weights <= 0).any()):
        raise ValueError("weights must be finite and > 0")
    if not bool(torch.isfinite(logits).all()):
        raise ValueError("logits holds NaN or inf values")
    if reduction not in ("sample", "token"):
        raise ValueError(f"reduction must be 'sample' or 'token', got {reduction!r}")
    m = mask.to(logits.dtype)
    n_tok = m.sum(dim=1)
    if bool((n_tok == 0).any()):
        raise ValueError("mask: every sample needs at least one unmasked token")
    safe_targets = torch.where(mask.bool(), targets.long(), torch.zeros_like(targets.long()))
    if bool(((safe_targets < 0) | (safe_targets >= v)).any()):
        raise ValueError(f"targets must lie in [0, {v}) where mask is set")
    ce = F.cross_entropy(logits.reshape(b * t, v), safe_targets.reshape(-1), reduction="none").reshape(b, t) * m
    w = weights.to(logits.dtype)
    if reduction == "sample":
        return (w * ce.sum(dim=1) / n_tok).sum() / w.sum()
    return (w[:, None] * ce).sum() / (w[:, None] * m).sum()
