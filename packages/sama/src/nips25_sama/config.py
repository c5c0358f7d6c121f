"""Configurations of the Q-Formers and of SAMA's spatio-temporal context aggregator (frozen, validated)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

__all__ = ["MODEL_WIDTHS", "QFormerConfig", "SAMAConfig"]

# Width C of InternVL2.5's projected ViT tokens for the released SAMA sizes (official configs sama_{1b,4b,8b}_base).
MODEL_WIDTHS: dict[str, int] = {"1b": 896, "4b": 2048, "8b": 4096}


def _positive(obj: object, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{type(obj).__name__}.{name} must be a positive int, got {value!r}")


@dataclass(frozen=True)
class QFormerConfig:
    """One BERT Q-Former (LAVIS layout): learned queries, self-attention over [queries; text], cross-attention
    from the queries to encoder states every ``cross_attention_freq`` layers, separate query/text feed-forwards.

    Defaults are bert-base (InstructBLIP's Q-Former); ``vocab_size=0`` drops the word/position embeddings and
    ``text_ffn=False`` the text feed-forward (SAMA's spatial Q-Former keeps neither).
    """

    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    cross_attention_freq: int = 2
    encoder_width: int = 1408
    num_query_tokens: int = 32
    vocab_size: int = 30530
    max_position_embeddings: int = 512
    text_ffn: bool = True
    layer_norm_eps: float = 1e-12
    dropout: float = 0.1

    def __post_init__(self) -> None:
        _positive(self, "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
        _positive(self, "cross_attention_freq", "encoder_width", "num_query_tokens", "max_position_embeddings")
        if isinstance(self.vocab_size, bool) or not isinstance(self.vocab_size, int) or self.vocab_size < 0:
            raise ValueError(f"QFormerConfig.vocab_size must be an int >= 0, got {self.vocab_size!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"QFormerConfig.hidden_size ({self.hidden_size}) must be divisible by num_attention_heads "
                f"({self.num_attention_heads})"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"QFormerConfig.dropout must be in [0, 1), got {self.dropout}")
        if not self.layer_norm_eps > 0:
            raise ValueError(f"QFormerConfig.layer_norm_eps must be > 0, got {self.layer_norm_eps}")


@dataclass(frozen=True)
class SAMAConfig:
    """Hyper-parameters of SAMA's spatio-temporal context aggregator (Sun et al., NeurIPS 2025, Sec. 3.2).

    Defaults are the official 1B configuration (``vis_dim=896``): a 12-layer spatial Q-Former (32 queries, width
    1408 input), a 2-layer temporal Q-Former (32 queries) over windows of 512 spatial tokens with stride 512,
    context injection in chunks of 16 prompts, region shape masks of 112x112, 5 dense and 32 sparse frames.
    """

    vis_dim: int = 896
    tokens_per_frame: int = 256
    spatial_width: int = 1408
    qformer_hidden: int = 768
    qformer_heads: int = 12
    qformer_intermediate: int = 3072
    spatial_layers: int = 12
    spatial_cross_attention_freq: int = 2
    spatial_queries: int = 32
    temporal_layers: int = 2
    temporal_cross_attention_freq: int = 1
    temporal_queries: int = 32
    vocab_size: int = 30530
    max_position_embeddings: int = 512
    window_size: int = 512
    stride: int = 512
    prompt_chunk: int = 16
    region_mask_size: int = 112
    region_hidden: int = 1024
    visual_token_id: int = 30523
    shape_token_id: int = 30524
    n_dense_frames: int = 5
    n_sparse_frames: int = 32
    dense_frame_extra_tokens: int = 2
    region_llm_tokens: int = 2
    dropout: float = 0.1
    layer_norm_eps: float = 1e-12

    def __post_init__(self) -> None:
        _positive(self, "vis_dim", "tokens_per_frame", "spatial_width", "qformer_hidden", "qformer_heads")
        _positive(self, "qformer_intermediate", "spatial_layers", "spatial_cross_attention_freq", "spatial_queries")
        _positive(self, "temporal_layers", "temporal_cross_attention_freq", "temporal_queries", "vocab_size")
        _positive(self, "max_position_embeddings", "window_size", "stride", "prompt_chunk", "region_mask_size")
        _positive(self, "region_hidden", "n_dense_frames", "n_sparse_frames", "region_llm_tokens")
        if self.qformer_hidden % self.qformer_heads:
            raise ValueError(
                f"SAMAConfig.qformer_hidden ({self.qformer_hidden}) must be divisible by qformer_heads "
                f"({self.qformer_heads})"
            )
        if self.stride > self.window_size:
            raise ValueError(
                f"SAMAConfig.stride ({self.stride}) must be <= window_size ({self.window_size}) or tokens are skipped"
            )
        for name in ("visual_token_id", "shape_token_id"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 0 <= value < self.vocab_size:
                raise ValueError(f"SAMAConfig.{name} must be in [0, vocab_size={self.vocab_size}), got {value!r}")
        if self.visual_token_id == self.shape_token_id:
            raise ValueError("SAMAConfig.visual_token_id and shape_token_id must differ")
        if not isinstance(self.dense_frame_extra_tokens, int) or self.dense_frame_extra_tokens < 0:
            raise ValueError(
                f"SAMAConfig.dense_frame_extra_tokens must be an int >= 0, got {self.dense_frame_extra_tokens}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"SAMAConfig.dropout must be in [0, 1), got {self.dropout}")

    @classmethod
    def for_model(cls, size: str, **overrides: Any) -> SAMAConfig:
        """The configuration of a released SAMA size (``"1b"``, ``"4b"`` or ``"8b"``), with optional overrides.

        Raises:
            ValueError: if ``size`` is not a released size.
        """
        key = str(size).lower()
        if key not in MODEL_WIDTHS:
            raise ValueError(f"size must be one of {sorted(MODEL_WIDTHS)}, got {size!r}")
        return cls(vis_dim=MODEL_WIDTHS[key], **overrides)

    def spatial_qformer(self) -> QFormerConfig:
        """The spatial Q-Former: queries only (no word embeddings, no text feed-forward)."""
        return QFormerConfig(
            hidden_size=self.qformer_hidden,
            num_hidden_layers=self.spatial_layers,
            num_attention_heads=self.qformer_heads,
            intermediate_size=self.qformer_intermediate,
            cross_attention_freq=self.spatial_cross_attention_freq,
            encoder_width=self.spatial_width,
            num_query_tokens=self.spatial_queries,
            vocab_size=0,
            max_position_embeddings=self.max_position_embeddings,
            text_ffn=False,
            layer_norm_eps=self.layer_norm_eps,
            dropout=self.dropout,
        )

    def temporal_qformer(self) -> QFormerConfig:
        """The temporal Q-Former: [queries; question text], cross-attention to spatial tokens in every layer."""
        return QFormerConfig(
            hidden_size=self.qformer_hidden,
            num_hidden_layers=self.temporal_layers,
            num_attention_heads=self.qformer_heads,
            intermediate_size=self.qformer_intermediate,
            cross_attention_freq=self.temporal_cross_attention_freq,
            encoder_width=self.qformer_hidden,
            num_query_tokens=self.temporal_queries,
            vocab_size=self.vocab_size,
            max_position_embeddings=self.max_position_embeddings,
            text_ffn=True,
            layer_norm_eps=self.layer_norm_eps,
            dropout=self.dropout,
        )

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-serialisable dict (``SAMAConfig(**d)`` rebuilds it)."""
        return dataclasses.asdict(self)
