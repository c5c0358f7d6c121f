"""The shared visual encoder (IMPALA residual blocks, no pooling), the IMPALA head and the pixel decoder."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from nips25_bcvlr._validation import check_finite_tensor, check_frames, check_int

__all__ = ["ConvDecoder", "ImpalaEncoder", "ImpalaHead", "ResidualBlock", "scale_observations"]


def scale_observations(frames: np.ndarray | torch.Tensor) -> torch.Tensor:
    r"""Scale uint8 pixels to floats in :math:`[-0.5, 0.5]`: :math:`o = x / 255 - 0.5` (paper, Sec. 4 set-up).

    Args:
        frames: ``(N, 3, H, W)`` uint8 pixels (numpy or torch).

    Returns:
        ``(N, 3, H, W)`` float32 tensor with values in ``[-0.5, 0.5]``.

    Raises:
        TypeError / ValueError: if ``frames`` is not a non-empty ``(N, 3, H, W)`` uint8 array.

    Example:
        >>> scale_observations(np.full((1, 3, 4, 4), 255, np.uint8)).max().item()
        0.5
    """
    if isinstance(frames, torch.Tensor) and frames.dtype == torch.uint8 and frames.ndim == 4 and frames.shape[1] == 3:
        return frames.float() / 255.0 - 0.5
    arr = check_frames("frames", frames)
    return torch.from_numpy(np.ascontiguousarray(arr)).float() / 255.0 - 0.5


class ResidualBlock(nn.Module):
    """IMPALA residual block: ``x + conv(relu(conv(relu(x))))`` with 3x3 convolutions."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv0 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv1(F.relu(self.conv0(F.relu(x))))


class ImpalaEncoder(nn.Module):
    r"""Visual encoder :math:`f`: conv 3x3 then ``n_blocks`` IMPALA residual blocks, no pooling (BCV-LR, Sec. 3.1).

    The output keeps the input's spatial size, so the feature-space FDM predicts a feature *map*.

    Args:
        in_channels: input channels (3 for RGB).
        channels: feature channels; the paper uses 16 (discrete) or 32 (continuous).
        n_blocks: residual blocks (paper: 2).

    Shapes:
        ``(B, in_channels, H, W)`` float in ``[-0.5, 0.5]`` to ``(B, channels, H, W)``.

    Example:
        >>> ImpalaEncoder(channels=8)(torch.zeros(2, 3, 10, 10)).shape
        torch.Size([2, 8, 10, 10])
    """

    def __init__(self, in_channels: int = 3, channels: int = 16, *, n_blocks: int = 2) -> None:
        super().__init__()
        check_int("in_channels", in_channels)
        check_int("channels", channels)
        check_int("n_blocks", n_blocks, minimum=0)
        self.out_channels = channels
        self.conv = nn.Conv2d(in_channels, channels, 3, padding=1)
        self.blocks = nn.Sequential(*(ResidualBlock(channels) for _ in range(n_blocks)))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        check_finite_tensor("obs", obs, ndim=4)
        if obs.shape[1] != self.conv.in_channels:
            raise ValueError(
                f"obs must have {self.conv.in_channels} channels (B, C, H, W), got shape {tuple(obs.shape)}"
            )
        return F.relu(self.blocks(self.conv(obs)))


class ImpalaHead(nn.Module):
    r"""IMPALA CNN stack (conv, max-pool /2, two residual blocks per stage) and an MLP to a vector.

    Used by the IDM (on stacked features), the latent policy (on the frozen features) and the baselines.

    Args:
        in_channels: input channels.
        in_hw: input spatial size ``(H, W)``.
        channels: per-stage channels (paper: ``(16, 32, 32)``).
        hidden: width of the hidden fully connected layer (paper: 256).
        out_dim: output size.

    Example:
        >>> ImpalaHead(6, (12, 12), channels=(4, 8), hidden=16, out_dim=5)(torch.zeros(3, 6, 12, 12)).shape
        torch.Size([3, 5])
    """

    def __init__(
        self,
        in_channels: int,
        in_hw: tuple[int, int],
        *,
        channels: Sequence[int] = (16, 32, 32),
        hidden: int = 256,
        out_dim: int = 128,
    ) -> None:
        super().__init__()
        check_int("in_channels", in_channels)
        check_int("hidden", hidden)
        check_int("out_dim", out_dim)
        if not channels:
            raise ValueError("channels must list at least one stage width")
        layers: list[nn.Module] = []
        c, (h, w) = in_channels, in_hw
        for ch in channels:
            check_int("channels[i]", ch)
            layers += [
                nn.Conv2d(c, ch, 3, padding=1),
                nn.MaxPool2d(3, stride=2, padding=1),
                ResidualBlock(ch),
                ResidualBlock(ch),
            ]
            c, h, w = ch, (h + 1) // 2, (w + 1) // 2
        self.stages = nn.Sequential(*layers)
        self.fc = nn.Sequential(nn.ReLU(), nn.Flatten(), nn.Linear(c * h * w, hidden), nn.ReLU())
        self.out = nn.Linear(hidden, out_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.fc(self.stages(x)))


class ConvDecoder(nn.Module):
    """Pixel reconstruction from the encoder's feature map (the 0.1-weighted term of the discrete objective)."""

    def __init__(self, in_channels: int, out_channels: int = 3, *, hidden: int = 16) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(in_channels, hidden, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(hidden, hidden, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(hidden, out_channels, 3, padding=1),
        )

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features)
