r"""Region prompts (SAMA Sec. 3.2): a mask becomes its bounding box, pooled over ViT tokens (visual feature) and
resized to 112x112 for a shape MLP (shape feature)."""

from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F
from torch import nn

from nips25_sama._validation import check_int, check_tensor

__all__ = ["RegionEncoder", "mask_pooling", "mask_to_box", "prepare_region_inputs", "shape_mask"]


def mask_to_box(masks: torch.Tensor) -> torch.Tensor:
    r"""Replace each binary mask by the filled axis-aligned box that bounds it (an empty mask stays empty).

    :math:`B_{ij} = 1 \iff y_0 \le i \le y_1,\ x_0 \le j \le x_1` with :math:`(y_0, x_0, y_1, x_1)` the extreme
    rows/columns of the mask.

    Args:
        masks: ``(..., H, W)`` bool, integer 0/1 or float 0/1 masks.

    Returns:
        ``(..., H, W)`` bool box masks.

    Raises:
        TypeError, ValueError: if ``masks`` is not a finite tensor of rank >= 2.

    Example:
        >>> m = torch.zeros(4, 4, dtype=torch.bool); m[1, 2] = m[2, 1] = True
        >>> mask_to_box(m).int().sum().item()
        4
    """
    check_tensor("masks", masks, ndim=tuple(range(2, 8)), floating=None, allow_empty=True)
    m = masks != 0
    rows = m.any(dim=-1)  # (..., H)
    cols = m.any(dim=-2)  # (..., W)

    def _span(hit: torch.Tensor) -> torch.Tensor:
        idx = torch.arange(hit.shape[-1], device=hit.device)
        first = torch.where(hit, idx, hit.shape[-1]).amin(dim=-1, keepdim=True)
        last = torch.where(hit, idx, -1).amax(dim=-1, keepdim=True)
        return (idx >= first) & (idx <= last)

    return _span(rows).unsqueeze(-1) & _span(cols).unsqueeze(-2)


def mask_pooling(features: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    r"""Masked average pooling of a token grid: the official ``MaskPooling``.

    The mask is resized bilinearly (``align_corners=False``) to the grid, binarised by :math:`>0`, and
    :math:`v_r = \sum_{ij} \tilde m_{r,ij} x_{ij} / (\sum_{ij} \tilde m_{r,ij} + 10^{-8})`.

    Args:
        features: ``(N, C)`` tokens of one frame on a square grid (``N = h*h``, e.g. 256 = 16x16), float.
        masks: ``(R, H, W)`` region masks (bool or 0/1) of that frame.

    Returns:
        ``(R, C)`` pooled features (zeros for an empty mask).

    Raises:
        ValueError: if ``N`` is not a square, shapes are wrong, or values are NaN/inf.

    Example:
        >>> x = torch.arange(4.0).reshape(4, 1); m = torch.zeros(1, 2, 2); m[0, 0, :] = 1
        >>> mask_pooling(x, m).tolist()
        [[0.5]]
    """
    check_tensor("features", features, ndim=2)
    check_tensor("masks", masks, ndim=3, floating=None)
    n, c = features.shape
    side = round(n**0.5)
    if side * side != n:
        raise ValueError(f"features must hold a square grid of tokens (N = h*h), got N={n}")
    grid = features.T.reshape(1, c, side, side)
    m = masks.to(features.dtype).unsqueeze(0)
    if tuple(m.shape[-2:]) != (side, side):
        m = F.interpolate(m, size=(side, side), mode="bilinear", align_corners=False)
    m = (m > 0).to(features.dtype)
    m = m / (m.sum(dim=(-1, -2), keepdim=True) + 1e-8)
    return torch.einsum("bchw,brhw->brc", grid, m)[0]


def shape_mask(masks: torch.Tensor, *, size: int = 112, threshold: float = 0.5) -> torch.Tensor:
    r"""The region's box mask resized to ``size x size`` (bilinear, then :math:`> \text{threshold}`), as float.

    Args:
        masks: ``(R, H, W)`` masks (bool or 0/1); converted to boxes first (:func:`mask_to_box`).
        size: output side (112 in SAMA, so the shape MLP input is 12,544-dimensional).
        threshold: binarisation threshold in ``[0, 1)`` after bilinear resizing.

    Returns:
        ``(R, size, size)`` float 0/1.

    Raises:
        ValueError: on wrong shapes, NaN/inf, ``size < 1`` or ``threshold`` outside ``[0, 1)``.
    """
    check_tensor("masks", masks, ndim=3, floating=None)
    check_int("size", size, minimum=1)
    if not 0.0 <= threshold < 1.0:
        raise ValueError(f"threshold must be in [0, 1), got {threshold}")
    box = mask_to_box(masks).float().unsqueeze(0)
    out = F.interpolate(box, size=(size, size), mode="bilinear", align_corners=False)[0]
    return (out > threshold).float()


def prepare_region_inputs(
    frame_tokens: torch.Tensor, masks: torch.Tensor, *, frame_index: int = 0, mask_size: int = 112
) -> tuple[torch.Tensor, torch.Tensor]:
    """Raw region inputs of the aggregator from the frame tokens and region masks of one pooling frame.

    Args:
        frame_tokens: ``(T, N, C)`` ViT+MLP tokens of the dense frames.
        masks: ``(R, T, H, W)`` region masks over the same frames, or ``(R, H, W)`` for the pooling frame only.
        frame_index: the frame whose tokens are pooled (SAMA draws it at random among the dense frames).
        mask_size: side of the shape mask.

    Returns:
        ``(visual (R, C), shape (R, mask_size, mask_size))``: box-mask pooled tokens and box shape masks.

    Raises:
        ValueError: on shape mismatches or an out-of-range ``frame_index``.
    """
    check_tensor("frame_tokens", frame_tokens, ndim=3)
    check_tensor("masks", masks, ndim=(3, 4), floating=None)
    check_int("frame_index", frame_index, minimum=0)
    if frame_index >= frame_tokens.shape[0]:
        raise ValueError(f"frame_index must be < T={frame_tokens.shape[0]}, got {frame_index}")
    if masks.ndim == 4:
        if masks.shape[1] != frame_tokens.shape[0]:
            raise ValueError(f"masks must have T={frame_tokens.shape[0]} frames on dim 1, got {tuple(masks.shape)}")
        masks = masks[:, frame_index]
    box = mask_to_box(masks)
    return mask_pooling(frame_tokens[frame_index], box), shape_mask(box, size=mask_size)


class _MLP(nn.Module):
    """``layers.{0,1,2}``: Linear-ReLU-Linear-ReLU-Linear (the official MLP's key layout)."""

    def __init__(self, dims: tuple[int, ...]) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(dims))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = F.relu(x)
        return x


class RegionEncoder(nn.Module):
    r"""Visual and shape features of region prompts (SAMA Sec. 3.2).

    visual :math:`= W_v\,\mathrm{maskpool}(V_t, \mathrm{box})`, shape :math:`= \mathrm{MLP}(\mathrm{box}_{112})` with
    MLP :math:`12544 \to 1024 \to 1024 \to d`.

    Args:
        vis_dim: width ``C`` of the pooled ViT tokens.
        out_dim: feature width ``d`` (768 for the temporal Q-Former, ``C`` for the LLM).
        mask_size: side of the shape mask (112).
        hidden: hidden width of the shape MLP (1024).
    """

    def __init__(self, vis_dim: int, out_dim: int, *, mask_size: int = 112, hidden: int = 1024) -> None:
        super().__init__()
        for name, value in (("vis_dim", vis_dim), ("out_dim", out_dim), ("mask_size", mask_size), ("hidden", hidden)):
            check_int(name, value, minimum=1)
        self.mask_size = mask_size
        self.visual_proj = nn.Linear(vis_dim, out_dim)
        self.shape_mlp = _MLP((mask_size * mask_size, hidden, hidden, out_dim))

    def forward(self, visual: torch.Tensor, shape: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Project raw region inputs.

        Args:
            visual: ``(..., R, C)`` pooled tokens.
            shape: ``(..., R, S, S)`` or ``(..., R, S*S)`` box masks.

        Returns:
            ``(visual (..., R, d), shape (..., R, d))``.

        Raises:
            ValueError: on width mismatches or NaN/inf.
        """
        check_tensor("region_visual", visual, ndim=tuple(range(2, 6)))
        check_tensor("region_shape", shape, ndim=tuple(range(2, 7)))
        area = self.mask_size * self.mask_size
        if visual.shape[-1] != self.visual_proj.in_features:
            raise ValueError(f"region_visual must have last dim {self.visual_proj.in_features}, got {visual.shape[-1]}")
        if shape.shape[-2:] == (self.mask_size, self.mask_size):
            shape = shape.flatten(-2)
        if shape.shape[-1] != area or shape.shape[:-1] != visual.shape[:-1]:
            raise ValueError(
                f"region_shape must have shape {tuple(visual.shape[:-1])} + ({self.mask_size}, {self.mask_size}), "
                f"got {tuple(shape.shape)}"
            )
        return self.visual_proj(visual), self.shape_mlp(shape.to(visual.dtype))
