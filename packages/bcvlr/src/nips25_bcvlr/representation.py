"""Stage 1: self-supervised visual features (CURL + reconstruction for discrete tasks, prototypes for continuous)."""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.nn import functional as F

from nips25_bcvlr._validation import check_finite_tensor, check_int, check_real
from nips25_bcvlr.encoder import ConvDecoder, ImpalaEncoder

__all__ = [
    "CurlObjective",
    "ProtoTemporalObjective",
    "curl_info_nce",
    "ema_update_",
    "random_shift",
    "sinkhorn",
]


def random_shift(x: torch.Tensor, *, pad: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """Random-shift augmentation (DrQ): replicate-pad by ``pad`` pixels, then crop back at a random offset per image.

    Args:
        x: ``(B, C, H, W)`` float images.
        pad: shift range in pixels, ``>= 0`` (paper: 1 for Procgen, 4 for DMC).
        generator: optional torch generator for the offsets.

    Returns:
        ``(B, C, H, W)``, each image shifted by an integer offset in ``[-pad, pad]`` on both axes.

    Example:
        >>> random_shift(torch.ones(2, 3, 5, 5), pad=1).shape
        torch.Size([2, 3, 5, 5])
    """
    check_finite_tensor("x", x, ndim=4)
    check_int("pad", pad, minimum=0)
    if pad == 0:
        return x
    b, _, h, w = x.shape
    padded = F.pad(x, (pad, pad, pad, pad), mode="replicate")
    oy = torch.randint(0, 2 * pad + 1, (b,), generator=generator).to(x.device)
    ox = torch.randint(0, 2 * pad + 1, (b,), generator=generator).to(x.device)
    iy = (oy[:, None] + torch.arange(h, device=x.device)[None, :])[:, :, None]  # (B, H, 1)
    ix = (ox[:, None] + torch.arange(w, device=x.device)[None, :])[:, None, :]  # (B, 1, W)
    out = padded[torch.arange(b, device=x.device)[:, None, None], :, iy, ix]  # (B, H, W, C)
    return out.permute(0, 3, 1, 2).contiguous()


def curl_info_nce(q: torch.Tensor, k: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    r"""Bilinear InfoNCE of CURL: :math:`-\frac1B\sum_i \log \mathrm{softmax}_j(q_i^\top W k_j)_i`.

    With orthonormal matched ``q = k`` and ``W = s I`` the value is :math:`\log(1 + (B-1)e^{-s})`.

    Args:
        q: ``(B, d)`` anchors (online branch).
        k: ``(B, d)`` positives (target branch); ``k_i`` is the positive of ``q_i``, the others negatives.
        w: ``(d, d)`` bilinear matrix.

    Returns:
        Scalar loss.

    References:
        Srinivas et al., "CURL", ICML 2020, Eq. (1); BCV-LR, Sec. 3.1 (discrete tasks).

    Example:
        >>> round(curl_info_nce(torch.eye(2), torch.eye(2), 3.0 * torch.eye(2)).item(), 6)
        0.048587
    """
    check_finite_tensor("q", q, ndim=2)
    check_finite_tensor("k", k, ndim=2, last_dim=q.shape[1])
    check_finite_tensor("w", w, ndim=2)
    if k.shape[0] != q.shape[0] or w.shape != (q.shape[1], q.shape[1]):
        raise ValueError(f"k must be {tuple(q.shape)} and w ({q.shape[1]}, {q.shape[1]}); got {k.shape}, {w.shape}")
    logits = q @ w @ k.T
    logits = logits - logits.max(dim=1, keepdim=True).values.detach()
    return F.cross_entropy(logits, torch.arange(q.shape[0], device=q.device))


def sinkhorn(scores: torch.Tensor, *, n_iters: int = 3, epsilon: float = 0.05) -> torch.Tensor:
    r"""Sinkhorn-Knopp equal-partition assignment of ``B`` samples to ``K`` prototypes (SwAV, Proto-RL).

    Starting from :math:`Q = \exp(S/\epsilon)`, alternately rescale so that prototype marginals are :math:`1/K`
    and sample marginals :math:`1/B`, ``n_iters`` times; the result is scaled so each sample's row sums to 1
    (prototype columns then approach :math:`B/K` as the iterations grow).

    Args:
        scores: ``(B, K)`` similarity scores.
        n_iters: Sinkhorn iterations (paper: 3), ``>= 1``.
        epsilon: entropic temperature, ``> 0``.

    Returns:
        ``(B, K)`` non-negative assignment whose rows sum to 1.

    References:
        Caron et al., "SwAV", NeurIPS 2020, Sec. 3.1; Yarats et al., "Proto-RL", ICML 2021; BCV-LR, Sec. 3.1.

    Example:
        >>> sinkhorn(torch.zeros(2, 4)).sum(1).tolist()
        [1.0, 1.0]
    """
    check_finite_tensor("scores", scores, ndim=2)
    check_int("n_iters", n_iters)
    check_real("epsilon", epsilon, low=0.0, low_open=True)
    b, k = scores.shape
    logq = (scores / epsilon).T.double()  # (K, B), log-domain for stability
    logq = logq - torch.logsumexp(logq.flatten(), 0)
    for _ in range(n_iters):
        logq = logq - torch.logsumexp(logq, dim=1, keepdim=True) - torch.log(torch.tensor(float(k)))
        logq = logq - torch.logsumexp(logq, dim=0, keepdim=True) - torch.log(torch.tensor(float(b)))
    return (logq.exp() * b).T.to(scores.dtype)


@torch.no_grad()
def ema_update_(target: nn.Module, online: nn.Module, *, tau: float) -> None:
    r"""Polyak update of a target network in place: :math:`\theta' \leftarrow (1-\tau)\theta' + \tau\theta`."""
    for pt, po in zip(target.parameters(), online.parameters(), strict=True):
        pt.lerp_(po, tau)


class CurlObjective(nn.Module):
    r"""Discrete-task Stage-1 objective: CURL InfoNCE between two random shifts plus 0.1 x pixel reconstruction.

    :math:`L = -\frac1B\sum_i \log\mathrm{softmax}_j(q_i^\top W k_j)_i + \lambda\,\mathrm{MSE}(\mathrm{dec}(f(o)), o)`
    with :math:`q = g(f(\mathrm{aug}_1(o)))`, :math:`k = \bar g(\bar f(\mathrm{aug}_2(o)))` from an EMA target.

    Args:
        encoder: the shared :class:`ImpalaEncoder` (trained in place).
        obs_shape: ``(3, H, W)`` of the observations.
        dim: projection size of ``g``.
        tau: target EMA rate (paper: 0.05), applied every ``target_every`` updates (paper: 2) by the trainer.
        recon_weight: :math:`\lambda` (paper: 0.1).
        pad: random-shift pad (paper: 1).

    References:
        BCV-LR, Sec. 3.1; Srinivas et al., "CURL", ICML 2020.
    """

    def __init__(
        self,
        encoder: ImpalaEncoder,
        obs_shape: tuple[int, int, int],
        *,
        dim: int = 64,
        tau: float = 0.05,
        recon_weight: float = 0.1,
        pad: int = 1,
    ) -> None:
        super().__init__()
        check_int("dim", dim)
        self.tau = check_real("tau", tau, low=0.0, high=1.0, low_open=True)
        self.recon_weight = check_real("recon_weight", recon_weight, low=0.0)
        self.pad = check_int("pad", pad, minimum=0)
        c, h, w = obs_shape
        self.encoder = encoder
        self.proj = nn.Sequential(nn.Flatten(), nn.Linear(encoder.out_channels * h * w, dim), nn.LayerNorm(dim))
        self.w = nn.Parameter(torch.eye(dim) + 0.01 * torch.randn(dim, dim))
        self.decoder = ConvDecoder(encoder.out_channels, c)
        self.target_encoder = copy.deepcopy(encoder).requires_grad_(False)
        self.target_proj = copy.deepcopy(self.proj).requires_grad_(False)

    def forward(self, obs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """Loss on a ``(B, 3, H, W)`` batch of scaled observations."""
        a = random_shift(obs, pad=self.pad, generator=generator)
        b = random_shift(obs, pad=self.pad, generator=generator)
        feats = self.encoder(a)
        q = self.proj(feats)
        with torch.no_grad():
            k = self.target_proj(self.target_encoder(b))
        recon = F.mse_loss(self.decoder(feats), a)
        return curl_info_nce(q, k, self.w) + self.recon_weight * recon

    def update_target(self) -> None:
        """EMA step of the target encoder and projection."""
        ema_update_(self.target_encoder, self.encoder, tau=self.tau)
        ema_update_(self.target_proj, self.proj, tau=self.tau)


class ProtoTemporalObjective(nn.Module):
    r"""Continuous-task Stage-1 objective: prototype-based temporal prediction (SwAV / Proto-RL style).

    The online branch embeds :math:`\mathrm{aug}(o_t)` to :math:`\hat s_t` (L2-normalised), the EMA target embeds
    :math:`\mathrm{aug}(o_{t+1})`; target scores against the prototypes :math:`C` are Sinkhorn-balanced into
    :math:`q_t`, and :math:`L = -\sum_k q_{t,k}\log\mathrm{softmax}(C\hat s_t/T)_k`.

    Args:
        encoder: the shared encoder (trained in place).
        obs_shape: ``(3, H, W)``.
        dim: embedding size (paper: 128).
        n_protos: prototypes (paper: 512).
        temperature: softmax temperature ``T`` (paper: 0.1).
        sinkhorn_iters: Sinkhorn iterations (paper: 3).
        tau: target EMA rate (paper: 0.05, every update).
        pad: random-shift pad (paper: 4).

    References:
        BCV-LR, Sec. 3.1; Yarats et al., "Proto-RL", ICML 2021.
    """

    def __init__(
        self,
        encoder: ImpalaEncoder,
        obs_shape: tuple[int, int, int],
        *,
        dim: int = 128,
        n_protos: int = 512,
        temperature: float = 0.1,
        sinkhorn_iters: int = 3,
        tau: float = 0.05,
        pad: int = 4,
    ) -> None:
        super().__init__()
        check_int("dim", dim)
        check_int("n_protos", n_protos)
        self.temperature = check_real("temperature", temperature, low=0.0, low_open=True)
        self.sinkhorn_iters = check_int("sinkhorn_iters", sinkhorn_iters)
        self.tau = check_real("tau", tau, low=0.0, high=1.0, low_open=True)
        self.pad = check_int("pad", pad, minimum=0)
        _, h, w = obs_shape
        self.encoder = encoder
        self.proj = nn.Sequential(nn.Flatten(), nn.Linear(encoder.out_channels * h * w, dim))
        self.predictor = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.protos = nn.Linear(dim, n_protos, bias=False)
        self.target_encoder = copy.deepcopy(encoder).requires_grad_(False)
        self.target_proj = copy.deepcopy(self.proj).requires_grad_(False)

    def forward(
        self, obs_t: torch.Tensor, obs_tp1: torch.Tensor, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """Loss on consecutive ``(B, 3, H, W)`` batches of scaled observations."""
        with torch.no_grad():
            self.protos.weight.copy_(F.normalize(self.protos.weight, dim=1))
        s = F.normalize(self.predictor(self.proj(self.encoder(random_shift(obs_t, pad=self.pad, generator=generator)))))
        with torch.no_grad():
            t = F.normalize(
                self.target_proj(self.target_encoder(random_shift(obs_tp1, pad=self.pad, generator=generator)))
            )
            q = sinkhorn(self.protos(t) / self.temperature, n_iters=self.sinkhorn_iters, epsilon=1.0)
        logp = F.log_softmax(self.protos(s) / self.temperature, dim=1)
        return -(q * logp).sum(1).mean()

    def update_target(self) -> None:
        """EMA step of the target encoder and projection."""
        ema_update_(self.target_encoder, self.encoder, tau=self.tau)
        ema_update_(self.target_proj, self.proj, tau=self.tau)
