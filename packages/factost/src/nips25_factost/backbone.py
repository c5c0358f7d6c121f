"""The space-agnostic temporal backbone of FactoST (Stage 1, "UTP"): a patch Transformer over one series at a time.

Structure after the v2-era upstream code (instance normalisation, [values, observed-mask] patch embedding, domain
prompts ``P_d = u_d v_d^T`` through a shared linear map, a [REG] token and future placeholders, a linear head per
future patch); widths and the exact layout are [reconstructed] (the v1 paper's operator details are not public).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

from nips25_factost.quantiles import V2_QUANTILES, check_quantiles

__all__ = ["BackboneConfig", "TemporalBackbone", "instance_denormalize", "instance_normalize", "patchify", "unpatchify"]


def _check_series(x: torch.Tensor, name: str = "x") -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be floating point, got {x.dtype}")
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name} must have shape (B, L) with B, L >= 1, got {tuple(x.shape)}")
    if torch.isinf(x).any():
        raise ValueError(f"{name} must not contain inf (NaN marks a missing value)")
    return x


def instance_normalize(
    x: torch.Tensor, *, eps: float = 1e-5
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""Per-window instance normalisation over the observed context values.

    :math:`z = (x - \mu) / \sqrt{\sigma^2 + \epsilon}`, with :math:`\mu, \sigma^2` the mean and (biased) variance
    of the observed entries of each row; missing entries become 0 in ``z``.

    Args:
        x: ``(B, L)`` float, NaN where missing.
        eps: :math:`\epsilon > 0`.

    Returns:
        ``(z, observed, mean, std)``: ``z`` and ``observed`` (bool) ``(B, L)``; ``mean``, ``std`` ``(B, 1)``.
        A row without observations gets mean 0 and std ``sqrt(eps)``.

    Raises:
        TypeError, ValueError: on non-float, wrong-shape or infinite input, or ``eps <= 0``.
    """
    _check_series(x)
    if not eps > 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    observed = ~torch.isnan(x)
    filled = torch.nan_to_num(x)
    n = observed.sum(dim=1, keepdim=True).clamp(min=1)
    mean = filled.sum(dim=1, keepdim=True) / n
    var = (torch.where(observed, filled - mean, torch.zeros_like(filled)) ** 2).sum(dim=1, keepdim=True) / n
    std = torch.sqrt(var + eps)
    z = torch.where(observed, (filled - mean) / std, torch.zeros_like(filled))
    return z, observed, mean, std


def instance_denormalize(z: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`instance_normalize`: ``z * std + mean`` (``mean``, ``std`` broadcast as ``(B, 1)``)."""
    if z.ndim != 2 or mean.shape != (z.shape[0], 1) or std.shape != (z.shape[0], 1):
        raise ValueError(f"need z (B, H), mean and std (B, 1); got {tuple(z.shape)}, {tuple(mean.shape)}, "
                         f"{tuple(std.shape)}")  # fmt: skip
    return z * std + mean


def patchify(z: torch.Tensor, observed: torch.Tensor, patch_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Cut ``(B, L)`` into ``P = ceil(L / p)`` non-overlapping patches, left-padding with unobserved zeros.

    Padding sits at the start so that the last patch always ends at the forecast origin.

    Returns:
        ``(values, observed)`` of shape ``(B, P, p)``.
    """
    if z.shape != observed.shape or z.ndim != 2:
        raise ValueError(f"z and observed must be (B, L) of one shape, got {tuple(z.shape)}, {tuple(observed.shape)}")
    if patch_len < 1:
        raise ValueError(f"patch_len must be >= 1, got {patch_len}")
    pad = (-z.shape[1]) % patch_len
    z = nn.functional.pad(z, (pad, 0))
    observed = nn.functional.pad(observed, (pad, 0), value=False)
    b = z.shape[0]
    return z.reshape(b, -1, patch_len), observed.reshape(b, -1, patch_len)


def unpatchify(patches: torch.Tensor, length: int) -> torch.Tensor:
    """Inverse of :func:`patchify` for the values: ``(B, P, p) -> (B, length)`` (drops the left padding)."""
    if patches.ndim != 3 or not 1 <= length <= patches.shape[1] * patches.shape[2]:
        raise ValueError(f"patches must be (B, P, p) with length <= P*p, got {tuple(patches.shape)}, {length}")
    return patches.reshape(patches.shape[0], -1)[:, -length:]


@dataclass(frozen=True)
class BackboneConfig:
    """Hyper-parameters of :class:`TemporalBackbone`; CPU defaults [reconstructed].

    The upstream "tiny" profile uses ``patch_len=16, d_model=256, d_ff=1024, dropout=0.2`` for long contexts.
    ``quantiles`` are the levels of the head [official code, v2: 11 levels]; the point forecast is the median.
    """

    patch_len: int = 4
    d_model: int = 64
    n_layers: int = 3
    n_heads: int = 4
    d_ff: int = 128
    dropout: float = 0.1
    n_domains: int = 1
    n_prompt_tokens: int = 3
    n_freqs: int = 3
    max_tokens: int = 128
    eps: float = 1e-5
    quantiles: tuple[float, ...] = V2_QUANTILES

    def __post_init__(self) -> None:
        for name in ("patch_len", "d_model", "n_layers", "n_heads", "d_ff", "n_domains", "n_prompt_tokens",
                     "n_freqs", "max_tokens"):  # fmt: skip
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if not self.eps > 0:
            raise ValueError(f"eps must be > 0, got {self.eps}")
        object.__setattr__(self, "quantiles", check_quantiles(self.quantiles, "quantiles"))

    @property
    def median_index(self) -> int:
        """Position of the median (the point forecast) among :attr:`quantiles`."""
        return self.quantiles.index(0.5)


class TemporalBackbone(nn.Module):
    r"""Space-agnostic patch Transformer forecaster for univariate series (FactoST Stage 1).

    A series :math:`x \in \mathbb{R}^L` is instance-normalised, cut into :math:`P = \lceil L/p \rceil` patches,
    each embedded from ``[values, observed mask]`` (:math:`2p \to d`). The sequence
    ``[prompt (n_tok) | context (P) | REG | future placeholders (ceil(H/p))]`` (+ learned positions and a frequency
    embedding) passes a pre-norm Transformer encoder; a linear head maps each future token to :math:`p` values,
    truncated to :math:`H` and de-normalised; with several ``quantiles`` the head gives :math:`p \times Q` values per
    token and the point forecast is the median (v2's quantile head). Domain prompts are
    :math:`P_d = W (u_d v_d^\top) + b` with :math:`u_d \in \mathbb{R}^{n_{tok}}` initialised at 0.

    Every series is processed alone: the model has no cross-series interaction (space-agnostic).

    Args:
        config: a :class:`BackboneConfig`; keyword overrides are accepted instead (``TemporalBackbone(d_model=32)``).

    Example:
        >>> m = TemporalBackbone(d_model=16, n_heads=2, n_layers=1, d_ff=32).eval()
        >>> m(torch.randn(5, 12), torch.zeros(5, dtype=torch.long), horizon=7).shape
        torch.Size([5, 7])
    """

    def __init__(self, config: BackboneConfig | None = None, **overrides: object) -> None:
        super().__init__()
        if config is None:
            config = BackboneConfig(**overrides)  # type: ignore[arg-type]
        elif overrides:
            raise TypeError("pass either config or keyword overrides, not both")
        if not isinstance(config, BackboneConfig):
            raise TypeError(f"config must be a BackboneConfig, got {type(config).__name__}")
        self.config = config
        d, p = config.d_model, config.patch_len
        self.patch_embed = nn.Linear(2 * p, d)
        self.position = nn.Parameter(torch.randn(config.max_tokens, d) * 0.02)
        self.reg_token = nn.Parameter(torch.randn(d) * 0.02)
        self.future_token = nn.Parameter(torch.randn(d) * 0.02)
        self.mask_token = nn.Parameter(torch.randn(d) * 0.02)
        self.freq_embed = nn.Embedding(config.n_freqs, d)
        nn.init.normal_(self.freq_embed.weight, std=0.02)
        self.prompt_u = nn.Parameter(torch.zeros(config.n_domains, config.n_prompt_tokens, 1))
        self.prompt_v = nn.Parameter(torch.randn(config.n_domains, 1, d) * 0.02)
        self.prompt_proj = nn.Linear(d, d)
        layer = nn.TransformerEncoderLayer(d, config.n_heads, config.d_ff, config.dropout, batch_first=True,
                                           norm_first=True)  # fmt: skip
        self.encoder = nn.TransformerEncoder(layer, config.n_layers, enable_nested_tensor=False)
        self.final_norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, p * len(config.quantiles))

    # -- pieces -------------------------------------------------------------------------------------------------
    def n_future(self, horizon: int) -> int:
        """Number of future placeholder tokens, ``ceil(H / p)``."""
        if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
            raise ValueError(f"horizon must be an integer >= 1, got {horizon!r}")
        return math.ceil(horizon / self.config.patch_len)

    def prepare(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Normalise and embed context patches: ``(tokens (B, P, d), mean (B, 1), std (B, 1))``."""
        z, observed, mean, std = instance_normalize(x, eps=self.config.eps)
        values, mask = patchify(z, observed, self.config.patch_len)
        tokens = self.patch_embed(torch.cat([values, mask.to(values.dtype)], dim=-1))
        return tokens, mean, std

    def tokens(self, x: torch.Tensor) -> torch.Tensor:
        """Embedded context tokens ``(B, P, d)`` of the series ``x`` ``(B, L)`` (before the encoder)."""
        return self.prepare(x)[0]

    def assemble(self, context_tokens: torch.Tensor, horizon: int, freq: int | torch.Tensor = 0) -> torch.Tensor:
        """``[context | REG | future]`` + positions + frequency embedding: ``(B, P + 1 + ceil(H/p), d)``."""
        if context_tokens.ndim != 3 or context_tokens.shape[-1] != self.config.d_model:
            raise ValueError(f"context_tokens must be (B, P, {self.config.d_model}), got {tuple(context_tokens.shape)}")
        b, n_ctx, d = context_tokens.shape
        n_fut = self.n_future(horizon)
        length = n_ctx + 1 + n_fut
        if length > self.config.max_tokens:
            raise ValueError(f"sequence of {length} tokens exceeds max_tokens={self.config.max_tokens}")
        reg = self.reg_token.expand(b, 1, d)
        fut = self.future_token.expand(b, n_fut, d)
        seq = torch.cat([context_tokens, reg, fut], dim=1) + self.position[:length]
        freq_t = torch.as_tensor(freq, device=seq.device).long().expand(b)
        return seq + self.freq_embed(freq_t)[:, None, :]

    def domain_prompts(self) -> torch.Tensor:
        """All domain prompts ``(n_domains, n_tok, d)``: :math:`W(u_d v_d^T) + b`."""
        return self.prompt_proj(self.prompt_u @ self.prompt_v)

    def prompt(self, domain: torch.Tensor) -> torch.Tensor:
        """Prompts ``(B, n_tok, d)`` of the domain ids ``(B,)``."""
        if domain.ndim != 1 or domain.dtype not in (torch.int32, torch.int64):
            raise TypeError(f"domain must be a 1-D integer tensor, got {domain.dtype} {tuple(domain.shape)}")
        if domain.numel() and (int(domain.min()) < 0 or int(domain.max()) >= self.config.n_domains):
            raise ValueError(f"domain ids must be in [0, {self.config.n_domains}), got {domain.tolist()[:8]}...")
        return self.domain_prompts()[domain]

    def encode(self, sequence: torch.Tensor, prompt: torch.Tensor) -> torch.Tensor:
        """Prepend ``prompt`` ``(B, n_tok, d)``, run the encoder, return the outputs of ``sequence``'s positions."""
        out = self.encoder(torch.cat([prompt, sequence], dim=1))
        return self.final_norm(out[:, prompt.shape[1] :])

    def decode_quantiles(self, outputs: torch.Tensor, n_context: int, horizon: int) -> torch.Tensor:
        """Normalised quantile forecasts ``(B, H, Q)`` from the encoder outputs of the future placeholders."""
        fut = self.head(outputs[:, n_context + 1 :])
        return fut.reshape(fut.shape[0], -1, len(self.config.quantiles))[:, :horizon]

    def decode(self, outputs: torch.Tensor, n_context: int, horizon: int) -> torch.Tensor:
        """Normalised point forecast ``(B, H)`` (the median quantile) from the encoder outputs."""
        return self.decode_quantiles(outputs, n_context, horizon)[..., self.config.median_index]

    def reconstruct(self, outputs: torch.Tensor, n_context: int) -> torch.Tensor:
        """Normalised context patches ``(B, P, p, Q)`` (one per quantile) from the encoder outputs (UTP)."""
        rec = self.head(outputs[:, :n_context])
        return rec.reshape(rec.shape[0], n_context, self.config.patch_len, len(self.config.quantiles))

    # -- forward ------------------------------------------------------------------------------------------------
    def forward(
        self, x: torch.Tensor, domain: torch.Tensor, horizon: int, *, freq: int = 0, prompt: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Zero-shot forecast ``(B, H)`` of each series ``x`` ``(B, L)`` (NaN = missing) under its domain prompt.

        The point forecast is the median quantile. ``prompt`` ``(B, n_tok, d)`` overrides the domain prompt (e.g. a
        target prompt from the adapter).
        """
        q = self.forecast_quantiles(x, domain, horizon, freq=freq, prompt=prompt, rearrange=False)
        return q[..., self.config.median_index]

    def forecast_quantiles(
        self,
        x: torch.Tensor,
        domain: torch.Tensor,
        horizon: int,
        *,
        freq: int = 0,
        prompt: torch.Tensor | None = None,
        rearrange: bool = True,
    ) -> torch.Tensor:
        """Zero-shot quantile forecasts ``(B, H, Q)`` (levels ``config.quantiles``), de-normalised like ``forward``.

        The head's levels are separate linear outputs and can cross. ``rearrange=True`` (default) sorts them per
        step (monotone rearrangement, Chernozhukov, Fernandez-Val & Galichon 2010), so level ``j`` never exceeds
        level ``j + 1``; where they crossed, the rearranged median can differ from ``forward`` (the raw median).
        ``rearrange=False`` returns the raw head outputs.
        """
        _check_series(x)
        tokens, mean, std = self.prepare(x)
        seq = self.assemble(tokens, horizon, freq)
        pr = self.prompt(domain) if prompt is None else prompt
        out = self.encode(seq, pr)
        q = self.decode_quantiles(out, tokens.shape[1], horizon) * std[..., None] + mean[..., None]
        return q.sort(dim=-1).values if rearrange else q

    def config_dict(self) -> dict:
        """The configuration as a plain dict (for checkpoints)."""
        config = asdict(self.config)
        config["quantiles"] = list(config["quantiles"])
        return config
