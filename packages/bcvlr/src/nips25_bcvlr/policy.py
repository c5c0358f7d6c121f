"""Stage 3 and the online loop: the latent policy and the latent-to-real action decoder."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from nips25_bcvlr._validation import check_finite_tensor, check_int
from nips25_bcvlr.encoder import ImpalaEncoder, ImpalaHead

__all__ = ["ActionDecoder", "LatentPolicy"]


class LatentPolicy(nn.Module):
    r"""Latent policy :math:`\pi(o_t) \approx \hat z_t`: the frozen shared encoder plus a trainable IMPALA head.

    Pre-imitation regresses the IDM's quantised latent actions on the video, :math:`\mathrm{MSE}(\pi(o_t),
    \hat z_t)` (BCV-LR, Sec. 3.3).

    Args:
        encoder: the shared encoder; kept frozen (its parameters get ``requires_grad=False``) unless
            ``train_encoder`` (used by the pixel-space LAPO-style baseline with an identity-free encoder).
        obs_hw: observation size ``(H, W)``.
        latent_dim: size of the latent action.
        channels, hidden: head widths.
        train_encoder: train the encoder with the head.
    """

    def __init__(
        self,
        encoder: ImpalaEncoder,
        obs_hw: tuple[int, int],
        *,
        latent_dim: int = 128,
        channels: Sequence[int] = (16, 32, 32),
        hidden: int = 256,
        train_encoder: bool = False,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.train_encoder = bool(train_encoder)
        if not self.train_encoder:
            self.encoder.requires_grad_(False)
        self.head = ImpalaHead(encoder.out_channels, obs_hw, channels=channels, hidden=hidden, out_dim=latent_dim)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """``(B, 3, H, W)`` scaled observations to ``(B, latent_dim)`` latent actions."""
        if self.train_encoder:
            return self.head(self.encoder(obs))
        with torch.no_grad():
            feats = self.encoder(obs)
        return self.head(feats)


class ActionDecoder(nn.Module):
    r"""Action decoder :math:`D`: MLP ``latent_dim -> 192 -> 128 -> 64 -> |A|`` (BCV-LR, Sec. 3.4).

    Discrete: logits of :math:`a \sim \mathrm{Cat}(\mathrm{softmax}(D(z)))`, trained with cross-entropy.
    Continuous: the action mean :math:`\tanh(D(z)) \in [-1, 1]^{|A|}`, trained with MSE.

    Args:
        latent_dim: input size (paper: 128).
        n_actions: output size ``|A|`` (actions for discrete, action dimensions for continuous).
        hidden: hidden widths (paper: (192, 128, 64)).
        continuous: squash outputs with tanh.

    Example:
        >>> ActionDecoder(8, 3)(torch.zeros(2, 8)).shape
        torch.Size([2, 3])
    """

    def __init__(
        self, latent_dim: int, n_actions: int, *, hidden: Sequence[int] = (192, 128, 64), continuous: bool = False
    ) -> None:
        super().__init__()
        self.latent_dim = check_int("latent_dim", latent_dim)
        self.n_actions = check_int("n_actions", n_actions)
        self.continuous = bool(continuous)
        layers: list[nn.Module] = []
        width = latent_dim
        for h in hidden:
            layers += [nn.Linear(width, check_int("hidden[i]", h)), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, n_actions))
        self.net = nn.Sequential(*layers)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """``(B, latent_dim)`` latents to ``(B, n_actions)`` logits (discrete) or actions in [-1, 1] (continuous)."""
        check_finite_tensor("z", z, ndim=2, last_dim=self.latent_dim)
        out = self.net(z)
        return torch.tanh(out) if self.continuous else out
