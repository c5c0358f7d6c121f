"""Stage 2: the latent action model: inverse dynamics (IDM) with VQ latent actions and a feature-space FDM."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from nips25_bcvlr._validation import check_finite_tensor, check_int
from nips25_bcvlr.encoder import ImpalaHead
from nips25_bcvlr.quantization import VQEMA, VQOutput

__all__ = ["IDM", "LatentActionModel", "LatentActionOutput", "LatentFDM"]


class IDM(nn.Module):
    r"""Inverse dynamics model: a continuous latent action :math:`z_t = \mathrm{IDM}(f(o_{t-1}), f(o_t), f(o_{t+1}))`.

    Args:
        feat_channels: channels ``C`` of one feature map.
        feat_hw: spatial size ``(H, W)`` of the feature maps.
        n_context: number of stacked feature maps (3 for discrete; continuous: 4 = two 3-frame stacks, 3 on CPU).
        channels, hidden: IMPALA stack widths and FC width (paper: (16, 32, 32), 256).
        latent_dim: output size (paper: 128).

    Shapes:
        ``(B, n_context, C, H, W)`` to ``(B, latent_dim)``.
    """

    def __init__(
        self,
        feat_channels: int,
        feat_hw: tuple[int, int],
        *,
        n_context: int = 3,
        channels: Sequence[int] = (16, 32, 32),
        hidden: int = 256,
        latent_dim: int = 128,
    ) -> None:
        super().__init__()
        self.n_context = check_int("n_context", n_context, minimum=2)
        self.net = ImpalaHead(feat_channels * n_context, feat_hw, channels=channels, hidden=hidden, out_dim=latent_dim)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        return self.net(feats.flatten(1, 2))


class LatentFDM(nn.Module):
    r"""Forward dynamics in feature space: :math:`\hat f_{t+1} = \mathrm{FDM}(f(o_{t-1}), f(o_t), \tanh(\hat z)/2)`.

    A two-level UNet (``base`` and ``2 base`` channels); the latent action is mapped linearly to ``2 base``
    channels and added, broadcast, at the bottleneck; upsampling is bilinear to the skip's size so any ``H, W``
    works.

    Args:
        feat_channels: channels ``C`` of one feature map (also the output's).
        n_past: number of conditioning feature maps (paper: 2 for discrete, 1 for continuous).
        latent_dim: size of the latent action.
        base: UNet base width (paper: 24).

    Shapes:
        ``(B, n_past, C, H, W)`` and ``(B, latent_dim)`` to ``(B, C, H, W)``.
    """

    def __init__(self, feat_channels: int, *, n_past: int = 2, latent_dim: int = 128, base: int = 24) -> None:
        super().__init__()
        check_int("feat_channels", feat_channels)
        self.n_past = check_int("n_past", n_past)
        check_int("base", base)
        c_in = feat_channels * n_past
        self.enc0 = nn.Sequential(nn.Conv2d(c_in, base, 3, padding=1), nn.ReLU(), nn.Conv2d(base, base, 3, padding=1))
        self.enc1 = nn.Sequential(nn.ReLU(), nn.Conv2d(base, 2 * base, 3, stride=2, padding=1), nn.ReLU())
        self.action = nn.Linear(latent_dim, 2 * base)
        self.mid = nn.Sequential(nn.Conv2d(2 * base, 2 * base, 3, padding=1), nn.ReLU())
        self.dec = nn.Sequential(
            nn.Conv2d(3 * base, base, 3, padding=1), nn.ReLU(), nn.Conv2d(base, feat_channels, 3, padding=1)
        )

    def forward(self, past: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        s0 = self.enc0(past.flatten(1, 2))
        s1 = self.enc1(s0) + self.action(torch.tanh(z) / 2)[:, :, None, None]
        up = F.interpolate(self.mid(s1), size=s0.shape[-2:], mode="bilinear", align_corners=False)
        return self.dec(torch.cat([up, s0], dim=1))


@dataclass(frozen=True)
class LatentActionOutput:
    """Output of :meth:`LatentActionModel.forward`: the VQ result and the two loss terms."""

    vq: VQOutput
    fdm_loss: torch.Tensor

    @property
    def loss(self) -> torch.Tensor:
        r""":math:`L = \mathrm{MSE}(\mathrm{FDM}, f(o_{t+1})) + L_{VQ}` (BCV-LR, Sec. 3.2)."""
        return self.fdm_loss + self.vq.loss


class LatentActionModel(nn.Module):
    r"""IDM + VQ-EMA + feature-space FDM trained jointly on frozen features (BCV-LR, Sec. 3.2).

    For a window of ``n_context`` feature maps :math:`(f_{t-1}, f_t, f_{t+1})`, the IDM infers :math:`z_t`, the
    quantiser gives :math:`\hat z_t`, and the FDM predicts :math:`f_{t+1}` from the ``n_context - 1`` past maps
    and :math:`\hat z_t`. The target is detached (the encoder is frozen in Stage 2).

    Args:
        feat_channels: channels of one feature map.
        feat_hw: ``(H, W)`` of the feature maps.
        n_context: feature maps per window (3 discrete; continuous: 4 in the dmc preset, 3 on CPU).
        idm_channels, idm_hidden: IDM widths.
        fdm_base: FDM UNet base width.
        vq: the quantiser (its ``latent_dim`` is the IDM's output size).
    """

    def __init__(
        self,
        feat_channels: int,
        feat_hw: tuple[int, int],
        *,
        n_context: int = 3,
        idm_channels: Sequence[int] = (16, 32, 32),
        idm_hidden: int = 256,
        fdm_base: int = 24,
        vq: VQEMA | None = None,
    ) -> None:
        super().__init__()
        self.vq = vq if vq is not None else VQEMA()
        self.n_context = check_int("n_context", n_context, minimum=2)
        self.idm = IDM(
            feat_channels,
            feat_hw,
            n_context=n_context,
            channels=idm_channels,
            hidden=idm_hidden,
            latent_dim=self.vq.latent_dim,
        )
        self.fdm = LatentFDM(feat_channels, n_past=n_context - 1, latent_dim=self.vq.latent_dim, base=fdm_base)

    def infer(self, window: torch.Tensor) -> VQOutput:
        """Quantised latent actions of ``(B, n_context, C, H, W)`` feature windows."""
        check_finite_tensor("window", window, ndim=5)
        if window.shape[1] != self.n_context:
            raise ValueError(f"window must stack {self.n_context} feature maps on dim 1, got {tuple(window.shape)}")
        return self.vq(self.idm(window))

    def forward(self, window: torch.Tensor) -> LatentActionOutput:
        """Latent actions and the Stage-2 loss terms for ``(B, n_context, C, H, W)`` feature windows."""
        vq = self.infer(window)
        pred = self.fdm(window[:, :-1], vq.z_q)
        return LatentActionOutput(vq=vq, fdm_loss=F.mse_loss(pred, window[:, -1].detach()))
