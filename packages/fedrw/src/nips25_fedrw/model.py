"""A tiny byte-level causal transformer LM (stands in for the paper's GPT-2, whose weights are not offline)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

__all__ = ["BOS", "PAD", "VOCAB_SIZE", "LMConfig", "TinyCausalLM", "encode_samples"]

PAD, BOS = 256, 257
VOCAB_SIZE = 258


@dataclass(frozen=True)
class LMConfig:
    """Size of :class:`TinyCausalLM` (about 63 k parameters by default)."""

    d_model: int = 48
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 96
    max_len: int = 64

    def __post_init__(self) -> None:
        for name in ("d_model", "n_layers", "n_heads", "d_ff", "max_len"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.max_len < 2:
            raise ValueError(f"max_len must be >= 2, got {self.max_len}")


def encode_samples(samples: Sequence[str], *, max_len: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """UTF-8 bytes of each sample as LM inputs/targets: ``x = [BOS, b_0..]``, ``y = [b_0.., BOS]`` (BOS ends too).

    Args:
        samples: ``B >= 1`` strings; each is cut to ``max_len - 1`` bytes.
        max_len: sequence length ``T >= 2``.

    Returns:
        ``(x, y, mask)``: int64 ``(B, T)``, int64 ``(B, T)``, bool ``(B, T)`` (true on real target positions).

    Raises:
        ValueError: if ``samples`` is empty or ``max_len < 2``.
    """
    if isinstance(samples, str) or len(samples) == 0:
        raise ValueError("samples must be a non-empty sequence of str")
    if not isinstance(max_len, int) or max_len < 2:
        raise ValueError(f"max_len must be an int >= 2, got {max_len!r}")
    seqs = []
    for r, s in enumerate(samples):
        if not isinstance(s, str):
            raise TypeError(f"samples[{r}] must be a str, got {type(s).__name__}")
        seqs.append(list(s.encode("utf-8")))
    return pack_sequences(seqs, boundary=BOS, pad=PAD, max_len=max_len)


def pack_sequences(
    sequences: Sequence[Sequence[int]], *, boundary: int, pad: int, max_len: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Token sequences as next-token LM rows: ``x = [boundary, t_1..]``, ``y = [t_1.., boundary]``, padded.

    Args:
        sequences: ``B`` token-id lists; each is cut to ``max_len - 1`` tokens.
        boundary: the token that starts and ends a text (BOS here, GPT-2's end-of-text).
        pad: the filler of ``x`` and ``y`` where ``mask`` is false.
        max_len: row length ``T >= 2``.

    Returns:
        ``(x, y, mask)``: int64 ``(B, T)``, int64 ``(B, T)``, bool ``(B, T)`` (true on real target positions).
    """
    b = len(sequences)
    x = torch.full((b, max_len), pad, dtype=torch.int64)
    y = torch.full((b, max_len), pad, dtype=torch.int64)
    mask = torch.zeros((b, max_len), dtype=torch.bool)
    for r, seq in enumerate(sequences):
        ids = list(seq)[: max_len - 1]
        n = len(ids) + 1
        x[r, :n] = torch.tensor([boundary, *ids])
        y[r, :n] = torch.tensor([*ids, boundary])
        mask[r, :n] = True
    return x, y, mask


class TinyCausalLM(nn.Module):
    """Pre-norm causal transformer over bytes: ``logits = head(blocks(embed(x) + pos))``.

    Args:
        config: an :class:`LMConfig`.

    Example:
        >>> m = TinyCausalLM(LMConfig())
        >>> m(torch.zeros(2, 5, dtype=torch.int64)).shape
        torch.Size([2, 5, 258])
    """

    def __init__(self, config: LMConfig) -> None:
        super().__init__()
        if not isinstance(config, LMConfig):
            raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
        self.config = config
        self.embed = nn.Embedding(VOCAB_SIZE, config.d_model)
        self.pos = nn.Parameter(torch.zeros(config.max_len, config.d_model))
        layer = nn.TransformerEncoderLayer(
            config.d_model, config.n_heads, config.d_ff, dropout=0.0, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, config.n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, VOCAB_SIZE)
        nn.init.normal_(self.pos, std=0.02)

    @property
    def max_len(self) -> int:
        """Longest token sequence the model takes."""
        return self.config.max_len

    def encode(self, samples: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(x, y, mask)`` of :func:`encode_samples` at this model's ``max_len``."""
        return encode_samples(samples, max_len=self.config.max_len)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, T, 258)`` for int64 tokens ``(B, T)``, ``T <= max_len``."""
        if x.ndim != 2 or x.shape[1] > self.config.max_len:
            raise ValueError(f"x must be (B, T) with T <= {self.config.max_len}, got {tuple(x.shape)}")
        t = x.shape[1]
        causal = nn.Transformer.generate_square_subsequent_mask(t, dtype=self.pos.dtype)
        h = self.blocks(self.embed(x) + self.pos[:t], mask=causal, is_causal=True)
        return self.head(self.norm(h))
