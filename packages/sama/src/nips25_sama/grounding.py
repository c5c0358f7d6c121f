r"""Grounding head and mask losses of SAMA (inherited from Sa2VA; SAMA Sec. 3.3 and the released training code).

The LLM's hidden state at each ``[SEG]`` token is mapped by an MLP to one prompt embedding of SAM2's mask decoder;
the decoder's mask logits are trained with

.. math:: \mathcal{L} = \lambda_{ce}\,\mathcal{L}_{ce} + \lambda_{bce}\,\mathcal{L}_{bce} + \lambda_{dice}\,
    \mathcal{L}_{dice}, \qquad (\lambda_{ce}, \lambda_{bce}, \lambda_{dice}) = (1, 2, 0.5),

where the two mask terms are evaluated on :math:`P = 12{,}544` points per mask chosen by importance sampling
(oversample 3, importance ratio 0.75; Kirillov et al., PointRend, and Cheng et al., Mask2Former): :math:`kP`
uniform candidates are drawn, the :math:`\beta P` most uncertain (logit closest to 0) are kept and :math:`(1 -
\beta) P` uniform points are added.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from nips25_sama._validation import check_int, check_tensor

__all__ = [
    "GroundingHead",
    "GroundingLoss",
    "GroundingLossConfig",
    "dice_loss",
    "importance_sample_points",
    "point_sample",
    "seg_hidden_states",
]


def seg_hidden_states(hidden_states: torch.Tensor, input_ids: torch.Tensor, *, seg_token_id: int) -> torch.Tensor:
    """The hidden states at every ``[SEG]`` token, in reading order (row by row, left to right).

    Args:
        hidden_states: ``(B, L, H)`` last-layer hidden states of the LLM, float.
        input_ids: ``(B, L)`` the token ids of the same sequences, integer.
        seg_token_id: the id of ``[SEG]`` in the LLM tokenizer.

    Returns:
        ``(S, H)`` with ``S`` the number of ``[SEG]`` tokens (``S = 0`` gives an empty ``(0, H)`` tensor).

    Raises:
        TypeError, ValueError: on wrong dtypes, shapes, NaN/inf or a negative ``seg_token_id``.

    Example:
        >>> h = torch.arange(6.0).reshape(1, 3, 2)
        >>> seg_hidden_states(h, torch.tensor([[5, 9, 5]]), seg_token_id=9).tolist()
        [[2.0, 3.0]]
    """
    check_tensor("hidden_states", hidden_states, ndim=3)
    check_tensor("input_ids", input_ids, ndim=2, floating=False)
    check_int("seg_token_id", seg_token_id, minimum=0)
    if tuple(input_ids.shape) != tuple(hidden_states.shape[:2]):
        raise ValueError(f"input_ids must have shape {tuple(hidden_states.shape[:2])}, got {tuple(input_ids.shape)}")
    return hidden_states[input_ids == seg_token_id]


class GroundingHead(nn.Module):
    r"""``[SEG]`` hidden state :math:`\to` SAM2 prompt embedding: :math:`W_2\,\mathrm{ReLU}(W_1 h + b_1) + b_2`.

    Args:
        hidden_size: the LLM's hidden width (896 for SAMA-1B's Qwen2-0.5B).
        prompt_dim: SAM2's prompt-embedding width (256).
        dropout: dropout after the last layer (0 in Sa2VA).

    Example:
        >>> head = GroundingHead(8, 4)
        >>> head(torch.zeros(3, 8)).shape
        torch.Size([3, 1, 4])
    """

    def __init__(self, hidden_size: int, prompt_dim: int = 256, *, dropout: float = 0.0) -> None:
        super().__init__()
        check_int("hidden_size", hidden_size, minimum=1)
        check_int("prompt_dim", prompt_dim, minimum=1)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.hidden_size = hidden_size
        self.mlp = nn.Sequential(
            nn.Linear(hidden_size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, prompt_dim), nn.Dropout(dropout)
        )

    def forward(self, seg_states: torch.Tensor) -> torch.Tensor:
        """Map ``(S, H)`` ``[SEG]`` states to ``(S, 1, prompt_dim)`` sparse prompt embeddings (one token per mask).

        Raises:
            ValueError: if the last dim is not ``hidden_size`` or values are NaN/inf.
        """
        check_tensor("seg_states", seg_states, ndim=2, allow_empty=True)
        if seg_states.shape[-1] != self.hidden_size:
            raise ValueError(
                f"seg_states must have last dim hidden_size={self.hidden_size}, got {seg_states.shape[-1]}"
            )
        return self.mlp(seg_states).unsqueeze(1)


def point_sample(values: torch.Tensor, points: torch.Tensor, *, padding_mode: str = "border") -> torch.Tensor:
    r"""Bilinear values of ``(N, C, H, W)`` maps at ``(N, P, 2)`` points given as ``(x, y)`` in ``[0, 1]``.

    Pixel :math:`(i, j)` has its centre at :math:`((j + 0.5)/W, (i + 0.5)/H)` (``align_corners=False``), so sampling
    a pixel centre returns the pixel's value exactly. A point in the outer half-pixel takes the edge value
    (``padding_mode="border"``, our default); PointRend's ``point_sample`` pads with zeros (``"zeros"``), which blends
    border points with 0 and gives a confident, perfect mask a loss well above 0.

    Returns:
        ``(N, C, P)``.

    Raises:
        ValueError: on wrong shapes, NaN/inf, points outside ``[0, 1]`` or an unknown ``padding_mode``.
    """
    if padding_mode not in ("border", "zeros"):
        raise ValueError(f"padding_mode must be 'border' or 'zeros', got {padding_mode!r}")
    check_tensor("values", values, ndim=4)
    check_tensor("points", points, ndim=3)
    if points.shape[0] != values.shape[0] or points.shape[2] != 2:
        raise ValueError(f"points must have shape ({values.shape[0]}, P, 2), got {tuple(points.shape)}")
    if bool((points < 0).any() or (points > 1).any()):
        raise ValueError("points must lie in [0, 1] (normalised x, y)")
    grid = (2.0 * points - 1.0).unsqueeze(2).to(values.dtype)  # (N, P, 1, 2) in [-1, 1]
    return F.grid_sample(values, grid, mode="bilinear", padding_mode=padding_mode, align_corners=False).squeeze(3)


def importance_sample_points(
    logits: torch.Tensor,
    *,
    num_points: int,
    oversample_ratio: float = 3.0,
    importance_sample_ratio: float = 0.75,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    r"""PointRend's training-time point selection on mask logits ``(N, 1, H, W)``.

    Draw :math:`\lceil kP \rceil` uniform points, keep the :math:`\lfloor \beta P \rfloor` with the highest uncertainty
    :math:`-|\ell|` (logit nearest 0), and add :math:`P - \lfloor \beta P \rfloor` uniform points.

    Args:
        logits: ``(N, 1, H, W)`` mask logits (not back-propagated through the choice).
        num_points: ``P``.
        oversample_ratio: ``k >= 1``.
        importance_sample_ratio: ``beta`` in ``[0, 1]``.
        generator: optional ``torch.Generator`` for reproducible draws.

    Returns:
        ``(N, P, 2)`` points ``(x, y)`` in ``[0, 1]``.

    Raises:
        ValueError: on wrong shapes, NaN/inf, or hyper-parameters out of range.
    """
    check_tensor("logits", logits, ndim=4)
    check_int("num_points", num_points, minimum=1)
    if logits.shape[1] != 1:
        raise ValueError(f"logits must have one channel, got shape {tuple(logits.shape)}")
    if not 1.0 <= oversample_ratio < float("inf"):
        raise ValueError(f"oversample_ratio must be a finite number >= 1, got {oversample_ratio}")
    if not 0.0 <= importance_sample_ratio <= 1.0:
        raise ValueError(f"importance_sample_ratio must be in [0, 1], got {importance_sample_ratio}")
    n = logits.shape[0]
    n_cand = math.ceil(num_points * oversample_ratio - 1e-9)  # 12544 * 3.0 is exact; guard float error
    n_imp = int(importance_sample_ratio * num_points)
    cand = torch.rand(n, n_cand, 2, generator=generator, dtype=logits.dtype).to(logits.device)
    with torch.no_grad():
        uncertainty = -point_sample(logits.detach(), cand)[:, 0].abs()  # (N, n_cand)
        idx = uncertainty.topk(n_imp, dim=1).indices
    chosen = torch.gather(cand, 1, idx.unsqueeze(-1).expand(-1, -1, 2))
    rand = torch.rand(n, num_points - n_imp, 2, generator=generator, dtype=logits.dtype).to(logits.device)
    return torch.cat([chosen, rand], dim=1)


def dice_loss(logits: torch.Tensor, targets: torch.Tensor, *, eps: float = 1.0) -> torch.Tensor:
    r"""Mean over masks of :math:`1 - (2\sum_i p_i g_i + \epsilon) / (\sum_i p_i + \sum_i g_i + \epsilon)`,
    :math:`p = \sigma(\ell)` (the "naive" Dice of V-Net with linear denominators).

    Args:
        logits: ``(N, ...)`` mask logits.
        targets: same shape, values in ``[0, 1]``.
        eps: smoothing ``> 0``.

    Returns:
        A scalar tensor.

    Raises:
        ValueError: on shape mismatches, NaN/inf, empty input or ``eps <= 0``.
    """
    check_tensor("logits", logits, ndim=tuple(range(1, 6)))
    check_tensor("targets", targets, ndim=tuple(range(1, 6)), floating=None)
    if logits.shape != targets.shape:
        raise ValueError(f"targets must have shape {tuple(logits.shape)}, got {tuple(targets.shape)}")
    if not 0.0 < eps < float("inf"):
        raise ValueError(f"eps must be a finite number > 0, got {eps}")
    p = logits.sigmoid().flatten(1)
    g = targets.to(p.dtype).flatten(1)
    return (1 - (2 * (p * g).sum(1) + eps) / (p.sum(1) + g.sum(1) + eps)).mean()


@dataclass(frozen=True)
class GroundingLossConfig:
    """Weights and point sampling of the grounding loss (defaults: the released SAMA/Sa2VA training config).

    Attributes:
        ce_weight: weight of the LLM's next-token cross-entropy (1.0).
        bce_weight: weight of the point-sampled sigmoid BCE (2.0).
        dice_weight: weight of the point-sampled Dice loss (0.5).
        num_points: points per mask (12,544 = 112^2); ``None`` evaluates every pixel (no sampling).
        oversample_ratio: PointRend's ``k`` (3.0).
        importance_sample_ratio: PointRend's ``beta`` (0.75).
        dice_eps: Dice smoothing (1.0; our choice, not checked against the release).
        padding_mode: ``grid_sample`` padding of the point sampler, ``"border"`` (our choice) or ``"zeros"``
            (PointRend's).
    """

    ce_weight: float = 1.0
    bce_weight: float = 2.0
    dice_weight: float = 0.5
    num_points: int | None = 12544
    oversample_ratio: float = 3.0
    importance_sample_ratio: float = 0.75
    dice_eps: float = 1.0
    padding_mode: str = "border"

    def __post_init__(self) -> None:
        for name in ("ce_weight", "bce_weight", "dice_weight"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v < float("inf"):
                raise ValueError(f"GroundingLossConfig.{name} must be a finite number >= 0, got {v!r}")
        if self.num_points is not None and (not isinstance(self.num_points, int) or self.num_points < 1):
            raise ValueError(f"GroundingLossConfig.num_points must be a positive int or None, got {self.num_points!r}")
        if not 1.0 <= self.oversample_ratio < float("inf"):
            raise ValueError(f"GroundingLossConfig.oversample_ratio must be >= 1, got {self.oversample_ratio}")
        if not 0.0 <= self.importance_sample_ratio <= 1.0:
            raise ValueError(
                f"GroundingLossConfig.importance_sample_ratio must be in [0, 1], got {self.importance_sample_ratio}"
            )
        if not 0.0 < self.dice_eps < float("inf"):
            raise ValueError(f"GroundingLossConfig.dice_eps must be > 0, got {self.dice_eps}")
        if self.padding_mode not in ("border", "zeros"):
            raise ValueError(f"GroundingLossConfig.padding_mode must be 'border' or 'zeros', got {self.padding_mode!r}")


class GroundingLoss(nn.Module):
    r"""SAMA's training loss: :math:`\lambda_{ce}\mathcal{L}_{ce} + \lambda_{bce}\mathcal{L}_{bce} +
    \lambda_{dice}\mathcal{L}_{dice}` with the mask terms on importance-sampled points.

    Args:
        config: :class:`GroundingLossConfig` (default: the released weights 1 / 2 / 0.5 and 12,544 points).

    Example:
        >>> loss = GroundingLoss(GroundingLossConfig(num_points=None))
        >>> out = loss(torch.zeros(1, 4, 4), torch.zeros(1, 4, 4), lm_loss=torch.tensor(1.0))
        >>> round(float(out["loss"]), 4)  # 1 + 2 * log 2 + 0.5 * (1 - 1 / 9)
        2.8307
    """

    def __init__(self, config: GroundingLossConfig | None = None) -> None:
        super().__init__()
        config = GroundingLossConfig() if config is None else config
        if not isinstance(config, GroundingLossConfig):
            raise TypeError(f"config must be a GroundingLossConfig, got {type(config).__name__}")
        self.config = config

    def forward(
        self,
        mask_logits: torch.Tensor,
        gt_masks: torch.Tensor,
        *,
        lm_loss: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> dict[str, torch.Tensor]:
        """Loss terms and their weighted sum.

        Args:
            mask_logits: ``(N, H, W)`` predicted mask logits, one per ``[SEG]`` (and frame).
            gt_masks: ``(N, H', W')`` ground-truth masks (bool or 0/1); resized to ``(H, W)`` (nearest) if needed.
            lm_loss: the LLM's next-token cross-entropy (scalar), or ``None`` to leave it out.
            generator: optional ``torch.Generator`` for the point draws.

        Returns:
            ``{"loss", "bce", "dice"}`` (+ ``"ce"`` when ``lm_loss`` is given), scalar tensors.

        Raises:
            ValueError: on shape mismatches, NaN/inf, non-binary ``gt_masks`` or a non-scalar ``lm_loss``.
        """
        cfg = self.config
        check_tensor("mask_logits", mask_logits, ndim=3)
        check_tensor("gt_masks", gt_masks, ndim=3, floating=None)
        if gt_masks.shape[0] != mask_logits.shape[0]:
            raise ValueError(f"gt_masks must hold {mask_logits.shape[0]} masks, got {tuple(gt_masks.shape)}")
        if not bool(((gt_masks == 0) | (gt_masks == 1)).all()):
            raise ValueError("gt_masks must be binary (bool or 0/1)")
        gt = gt_masks.to(mask_logits.dtype).unsqueeze(1)
        logits = mask_logits.unsqueeze(1)
        if gt.shape[-2:] != logits.shape[-2:]:
            gt = F.interpolate(gt, size=logits.shape[-2:], mode="nearest")
        if cfg.num_points is None:
            pl, pg = logits.flatten(1), gt.flatten(1)
        else:
            pts = importance_sample_points(
                logits,
                num_points=cfg.num_points,
                oversample_ratio=cfg.oversample_ratio,
                importance_sample_ratio=cfg.importance_sample_ratio,
                generator=generator,
            )
            pad = cfg.padding_mode
            pl, pg = point_sample(logits, pts, padding_mode=pad)[:, 0], point_sample(gt, pts, padding_mode=pad)[:, 0]
        out = {
            "bce": F.binary_cross_entropy_with_logits(pl, pg),
            "dice": dice_loss(pl, pg, eps=cfg.dice_eps),
        }
        total = cfg.bce_weight * out["bce"] + cfg.dice_weight * out["dice"]
        if lm_loss is not None:
            check_tensor("lm_loss", lm_loss, ndim=0)
            out["ce"] = lm_loss
            total = total + cfg.ce_weight * lm_loss
        out["loss"] = total
        return out
