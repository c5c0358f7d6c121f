"""Vector quantisation of latent actions with EMA codebooks and a straight-through gradient (BCV-LR, Sec. 3.2)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from nips25_bcvlr._validation import check_finite_tensor, check_int, check_real

__all__ = ["VQEMA", "VQOutput"]


def _world_size() -> int:
    dist = torch.distributed
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def _gather_vectors(heads: torch.Tensor) -> torch.Tensor:
    """``(G, M, D)`` vectors of every process concatenated on dim 1 in rank order (the global batch's layout)."""
    n = _world_size()
    if n == 1:
        return heads
    parts = [torch.empty_like(heads) for _ in range(n)]
    torch.distributed.all_gather(parts, heads.contiguous())
    return torch.cat(parts, dim=1)


@dataclass(frozen=True)
class VQOutput:
    """Result of :meth:`VQEMA.forward`.

    Attributes:
        z: ``(B, latent_dim)`` the input latents before quantisation (the official code's ``la``), with their
            gradient; BCV-LR clones the policy on them and feeds them to the action decoder.
        z_q: ``(B, latent_dim)`` quantised latents with the straight-through gradient (value of the codes,
            gradient of the identity with respect to the input ``z``).
        indices: ``(B, n_latents, n_codebooks)`` int64 code indices.
        loss: scalar commitment loss :math:`\\beta\\,\\mathrm{MSE}(z, \\mathrm{sg}(\\hat z))`.
        perplexity: scalar, :math:`\\exp H(\\bar p)` of the batch's code usage, averaged over codebooks.
    """

    z: torch.Tensor
    z_q: torch.Tensor
    indices: torch.Tensor
    loss: torch.Tensor
    perplexity: torch.Tensor


class VQEMA(nn.Module):
    r"""Vector quantiser with EMA codebook updates (van den Oord et al. 2017, App. A.1), as used for latent actions.

    A latent :math:`z \in \mathbb{R}^{L\cdot G\cdot D}` is read as ``(L, G, D)``: ``L = n_latents`` vectors, each
    split into ``G = n_codebooks`` heads of ``D = dim`` dimensions; head ``g`` is quantised with codebook ``g``
    (``K = codebook_size`` codes) to its nearest code :math:`e_k`, :math:`k = \arg\min_j \|z - e_j\|_2`.

    Training-mode forward passes update every codebook by exponential moving averages, for code :math:`i`:

    .. math::
        N_i \leftarrow \gamma N_i + (1-\gamma) n_i, \quad
        m_i \leftarrow \gamma m_i + (1-\gamma) \textstyle\sum_{j: k_j = i} z_j, \quad
        e_i = m_i / \tilde N_i, \quad \tilde N_i = \frac{N_i + \epsilon}{N + K\epsilon} N

    with :math:`n_i` the batch count, :math:`N = \sum_i N_i` (Laplace smoothing). The loss is the commitment term
    :math:`\beta\,\|z - \mathrm{sg}(\hat z)\|^2` (mean); the output carries the straight-through estimator
    :math:`z + \mathrm{sg}(\hat z - z)`.

    Args:
        n_codebooks: codebooks / heads per latent vector ``G`` (paper: 2).
        n_latents: latent vectors per action ``L`` (paper: 4).
        codebook_size: codes per codebook ``K`` (paper: 64).
        dim: code dimension ``D`` (paper: 16), so ``latent_dim = L*G*D = 128``.
        beta: commitment weight (paper: 0.05).
        decay: EMA decay :math:`\gamma \in (0, 1)` (paper: 0.999).
        eps: Laplace smoothing :math:`\epsilon > 0`.
        dead_code_threshold: codes whose EMA count falls below this are re-seeded from the batch (0 disables).
        init_from_data: seed the codebooks from the first training batch instead of N(0, 1).

    Raises:
        ValueError / TypeError: for out-of-range hyper-parameters, naming the argument.

    References:
        Liu, Li, Zhao, "Videos are Sample-Efficient Supervisions: Behavior Cloning from Videos via Latent
        Representations", NeurIPS 2025, arXiv:2512.21586, Sec. 3.2.

    Example:
        >>> vq = VQEMA(n_codebooks=1, n_latents=1, codebook_size=2, dim=2).eval()
        >>> vq.embed.data = torch.tensor([[[0.0, 0.0], [1.0, 1.0]]])
        >>> vq(torch.tensor([[0.9, 0.8]])).indices.flatten().tolist()
        [1]
    """

    embed: torch.Tensor
    cluster_size: torch.Tensor
    embed_avg: torch.Tensor
    initialized: torch.Tensor

    def __init__(
        self,
        *,
        n_codebooks: int = 2,
        n_latents: int = 4,
        codebook_size: int = 64,
        dim: int = 16,
        beta: float = 0.05,
        decay: float = 0.999,
        eps: float = 1e-5,
        dead_code_threshold: float = 0.0,
        init_from_data: bool = True,
    ) -> None:
        super().__init__()
        self.n_codebooks = check_int("n_codebooks", n_codebooks)
        self.n_latents = check_int("n_latents", n_latents)
        self.codebook_size = check_int("codebook_size", codebook_size)
        self.dim = check_int("dim", dim)
        self.beta = check_real("beta", beta, low=0.0)
        self.decay = check_real("decay", decay, low=0.0, high=1.0, low_open=True, high_open=True)
        self.eps = check_real("eps", eps, low=0.0, low_open=True)
        self.dead_code_threshold = check_real("dead_code_threshold", dead_code_threshold, low=0.0)
        self.latent_dim = self.n_latents * self.n_codebooks * self.dim
        self.register_buffer("embed", torch.randn(n_codebooks, codebook_size, dim))
        self.register_buffer("cluster_size", torch.ones(n_codebooks, codebook_size))
        self.register_buffer("embed_avg", self.embed.clone())
        self.register_buffer("initialized", torch.tensor(not init_from_data))

    def _heads(self, z: torch.Tensor) -> torch.Tensor:
        """``(B, L*G*D)`` to ``(G, B*L, D)``: the vectors each codebook quantises."""
        b = z.shape[0]
        return (
            z.reshape(b, self.n_latents, self.n_codebooks, self.dim)
            .permute(2, 0, 1, 3)
            .reshape(self.n_codebooks, b * self.n_latents, self.dim)
        )

    def nearest(self, heads: torch.Tensor) -> torch.Tensor:
        """Index of the nearest code (squared Euclidean) for ``(G, M, D)`` vectors; returns ``(G, M)`` int64."""
        d = (heads.pow(2).sum(-1, keepdim=True) - 2 * heads @ self.embed.transpose(1, 2)) + self.embed.pow(2).sum(
            -1
        ).unsqueeze(1)
        return d.argmin(-1)

    @torch.no_grad()
    def ema_update(self, heads: torch.Tensor, indices: torch.Tensor) -> None:
        r"""One EMA step of every codebook from ``(G, M, D)`` vectors assigned to ``(G, M)`` codes (formula above)."""
        onehot = F.one_hot(indices, self.codebook_size).to(heads.dtype)  # (G, M, K)
        counts = onehot.sum(1)  # (G, K)
        sums = onehot.transpose(1, 2) @ heads  # (G, K, D)
        if _world_size() > 1:  # data-parallel: the statistics of the global batch, identical on every process
            torch.distributed.all_reduce(counts)
            torch.distributed.all_reduce(sums)
        self.cluster_size.mul_(self.decay).add_(counts, alpha=1 - self.decay)
        self.embed_avg.mul_(self.decay).add_(sums, alpha=1 - self.decay)
        total = self.cluster_size.sum(-1, keepdim=True)
        smoothed = (self.cluster_size + self.eps) / (total + self.codebook_size * self.eps) * total
        self.embed.copy_(self.embed_avg / smoothed.unsqueeze(-1))
        if self.dead_code_threshold > 0:
            self._reset_dead_codes(heads)

    @torch.no_grad()
    def _reset_dead_codes(self, heads: torch.Tensor) -> None:
        heads = _gather_vectors(heads)
        dead = self.cluster_size < self.dead_code_threshold  # (G, K)
        for g in range(self.n_codebooks):  # at most G=2 codebooks; the per-code work is vectorised
            n_dead = int(dead[g].sum())
            if n_dead == 0:
                continue
            pick = torch.randint(heads.shape[1], (n_dead,), device=heads.device)
            self.embed[g, dead[g]] = heads[g, pick]
            self.embed_avg[g, dead[g]] = heads[g, pick]
            self.cluster_size[g, dead[g]] = 1.0

    @torch.no_grad()
    def _init_from(self, heads: torch.Tensor) -> None:
        heads = _gather_vectors(heads)  # every process seeds from the global batch (same global RNG everywhere)
        m = heads.shape[1]
        pick = torch.randint(m, (self.codebook_size,), device=heads.device) if m < self.codebook_size else None
        for g in range(self.n_codebooks):
            idx = pick if pick is not None else torch.randperm(m, device=heads.device)[: self.codebook_size]
            self.embed[g] = heads[g, idx]
        self.embed_avg.copy_(self.embed)
        self.cluster_size.fill_(1.0)
        self.initialized.fill_(True)

    def forward(self, z: torch.Tensor) -> VQOutput:
        """Quantise ``z`` of shape ``(B, latent_dim)``; in training mode also update the codebooks (EMA)."""
        check_finite_tensor("z", z, ndim=2, last_dim=self.latent_dim)
        heads = self._heads(z)
        if self.training and not bool(self.initialized):
            self._init_from(heads.detach())
        idx = self.nearest(heads.detach())
        quant = torch.gather(self.embed, 1, idx.unsqueeze(-1).expand(-1, -1, self.dim))  # (G, M, D)
        if self.training:
            self.ema_update(heads.detach(), idx)
        b = z.shape[0]
        z_hat = quant.reshape(self.n_codebooks, b, self.n_latents, self.dim).permute(1, 2, 0, 3).reshape(b, -1)
        loss = self.beta * F.mse_loss(z, z_hat.detach())
        z_q = z + (z_hat - z).detach()
        usage = F.one_hot(idx, self.codebook_size).float().mean(1)  # (G, K)
        perplexity = torch.exp(-(usage * torch.log(usage + 1e-10)).sum(-1)).mean()
        indices = idx.reshape(self.n_codebooks, b, self.n_latents).permute(1, 2, 0)
        return VQOutput(z=z, z_q=z_q, indices=indices, loss=loss, perplexity=perplexity)
