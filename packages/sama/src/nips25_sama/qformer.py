r"""The BERT Q-Former of BLIP-2/InstructBLIP (LAVIS layout) with SAMA's region-prompt injection.

Parameter names mirror LAVIS' ``BertModel`` (``embeddings.*``, ``encoder.layer.{i}.attention.self.query`` ...), so
released checkpoints map onto it by a prefix change (see :mod:`nips25_sama.loading`). The learned queries live in
``query_tokens``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from nips25_sama._validation import check_tensor
from nips25_sama.config import QFormerConfig

__all__ = ["QFormer", "QFormerEmbeddings", "inject_region_features"]


def inject_region_features(
    embeddings: torch.Tensor, input_ids: torch.Tensor, features: torch.Tensor, *, token_id: int
) -> torch.Tensor:
    r"""Replace the embedding at the k-th occurrence of ``token_id`` in each row by ``features[b, k]``.

    SAMA (Sec. 3.2, "region prompts"): a region in the question is written ``<vp><mask><pos></vp>``; the embedding
    of ``<mask>`` (id 30523) becomes the region's visual feature and that of ``<pos>`` (id 30524) its shape
    feature, before the embedding LayerNorm: :math:`e_{b,j} \leftarrow f_{b,k}` where :math:`j` is the position of
    the k-th ``token_id`` in row :math:`b`.

    Args:
        embeddings: ``(B, L, H)`` text embeddings (word + position), float.
        input_ids: ``(B, L)`` token ids, integer.
        features: ``(B, R, H)`` one feature per region, in order of appearance.
        token_id: the placeholder id.

    Returns:
        ``(B, L, H)`` embeddings with the placeholders replaced (a new tensor; gradients flow to ``features``).

    Raises:
        ValueError: if shapes disagree or a row holds more placeholders than ``features`` has regions.

    Example:
        >>> e = torch.zeros(1, 3, 2); ids = torch.tensor([[1, 7, 1]])
        >>> inject_region_features(e, ids, torch.ones(1, 1, 2), token_id=7)[0, 1].tolist()
        [1.0, 1.0]
    """
    check_tensor("embeddings", embeddings, ndim=3)
    check_tensor("input_ids", input_ids, ndim=2, floating=False)
    check_tensor("features", features, ndim=3)
    b, length, h = embeddings.shape
    if tuple(input_ids.shape) != (b, length):
        raise ValueError(f"input_ids must have shape {(b, length)}, got {tuple(input_ids.shape)}")
    if features.shape[0] != b or features.shape[2] != h:
        raise ValueError(f"features must have shape ({b}, R, {h}), got {tuple(features.shape)}")
    hit = input_ids == token_id
    counts = hit.sum(dim=1)
    if int(counts.max()) > features.shape[1]:
        raise ValueError(
            f"features holds {features.shape[1]} regions per row but a row of input_ids has {int(counts.max())} "
            f"tokens with id {token_id}"
        )
    if not bool(hit.any()):
        return embeddings
    order = (torch.cumsum(hit.long(), dim=1) - 1).clamp(min=0)  # (B, L): index of the region at each position
    gathered = torch.gather(features, 1, order.unsqueeze(-1).expand(-1, -1, h))
    return torch.where(hit.unsqueeze(-1), gathered.to(embeddings.dtype), embeddings)


class QFormerEmbeddings(nn.Module):
    """Word + absolute position embeddings of the text, prefixed by the query embeddings, then LayerNorm."""

    def __init__(self, config: QFormerConfig) -> None:
        super().__init__()
        self.config = config
        self.word_embeddings: nn.Embedding | None = None
        self.position_embeddings: nn.Embedding | None = None
        if config.vocab_size > 0:
            self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
            self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.dropout)

    def pre_norm(
        self,
        query_embeds: torch.Tensor,
        input_ids: torch.Tensor | None = None,
        region_features: dict[int, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """``[queries ; word + position embeddings]`` with region features injected, before the LayerNorm.

        Args:
            query_embeds: ``(B, M, H)``.
            input_ids: ``(B, L)`` or ``None`` (queries only).
            region_features: ``{token_id: (B, R, H)}`` placeholders to replace (see :func:`inject_region_features`).

        Returns:
            ``(B, M + L, H)``.
        """
        if input_ids is None:
            return query_embeds
        if self.word_embeddings is None or self.position_embeddings is None:
            raise ValueError("input_ids given to a Q-Former built without word embeddings (vocab_size=0)")
        if input_ids.shape[1] > self.config.max_position_embeddings:
            raise ValueError(
                f"input_ids has length {input_ids.shape[1]} > max_position_embeddings "
                f"{self.config.max_position_embeddings}"
            )
        if int(input_ids.min()) < 0 or int(input_ids.max()) >= self.config.vocab_size:
            raise ValueError(f"input_ids must lie in [0, {self.config.vocab_size}), got range "
                             f"[{int(input_ids.min())}, {int(input_ids.max())}]")  # fmt: skip
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        text = self.word_embeddings(input_ids) + self.position_embeddings(positions)[None]
        for token_id, feats in (region_features or {}).items():
            text = inject_region_features(text, input_ids, feats, token_id=token_id)
        return torch.cat([query_embeds.to(text.dtype), text], dim=1)

    def forward(
        self,
        query_embeds: torch.Tensor,
        input_ids: torch.Tensor | None = None,
        region_features: dict[int, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """LayerNorm and dropout of :meth:`pre_norm`."""
        return self.dropout(self.LayerNorm(self.pre_norm(query_embeds, input_ids, region_features)))


class _SelfAttention(nn.Module):
    def __init__(self, config: QFormerConfig, kv_width: int) -> None:
        super().__init__()
        self.heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(kv_width, config.hidden_size)
        self.value = nn.Linear(kv_width, config.hidden_size)
        self.dropout_p = config.dropout

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(*x.shape[:2], self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor, context: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        q, k, v = self._split(self.query(x)), self._split(self.key(context)), self._split(self.value(context))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        if mask is not None:  # (B, Lk) with 1 = attend
            scores = scores.masked_fill(~mask.bool()[:, None, None, :], torch.finfo(scores.dtype).min)
        probs = F.dropout(scores.softmax(dim=-1), p=self.dropout_p, training=self.training)
        out = (probs @ v).transpose(1, 2).reshape(x.shape[0], x.shape[1], -1)
        return out


class _AddNorm(nn.Module):
    def __init__(self, in_features: int, config: QFormerConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(in_features, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class _Attention(nn.Module):
    def __init__(self, config: QFormerConfig, kv_width: int) -> None:
        super().__init__()
        self.self = _SelfAttention(config, kv_width)
        self.output = _AddNorm(config.hidden_size, config)

    def forward(self, x: torch.Tensor, context: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        return self.output(self.self(x, context, mask), x)


class _Intermediate(nn.Module):
    def __init__(self, config: QFormerConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.dense(x))


class _Layer(nn.Module):
    def __init__(self, config: QFormerConfig, index: int) -> None:
        super().__init__()
        self.attention = _Attention(config, config.hidden_size)
        self.crossattention: _Attention | None = None
        if index % config.cross_attention_freq == 0:
            self.crossattention = _Attention(config, config.encoder_width)
        self.intermediate: _Intermediate | None = None
        self.output: _AddNorm | None = None
        if config.text_ffn:
            self.intermediate = _Intermediate(config)
            self.output = _AddNorm(config.intermediate_size, config)
        self.intermediate_query = _Intermediate(config)
        self.output_query = _AddNorm(config.intermediate_size, config)

    def forward(
        self,
        h: torch.Tensor,
        mask: torch.Tensor | None,
        encoder_states: torch.Tensor,
        encoder_mask: torch.Tensor | None,
        n_query: int,
    ) -> torch.Tensor:
        h = self.attention(h, h, mask)
        query = h[:, :n_query]
        if self.crossattention is not None:  # cross-attention reads the frames for the query positions only
            query = self.crossattention(query, encoder_states, encoder_mask)
        query = self.output_query(self.intermediate_query(query), query)
        if h.shape[1] == n_query:
            return query
        if self.intermediate is None or self.output is None:
            raise ValueError("text tokens given to a Q-Former built without the text feed-forward (text_ffn=False)")
        text = h[:, n_query:]
        text = self.output(self.intermediate(text), text)
        return torch.cat([query, text], dim=1)


class _Encoder(nn.Module):
    def __init__(self, config: QFormerConfig) -> None:
        super().__init__()
        self.layer = nn.ModuleList(_Layer(config, i) for i in range(config.num_hidden_layers))


class QFormer(nn.Module):
    r"""BERT Q-Former: learned queries read encoder states through cross-attention (Li et al., BLIP-2, 2023).

    SAMA uses two (Sec. 3.2): a spatial Q-Former (12 layers, queries only, cross-attention every 2nd layer) that
    compresses each frame to 32 tokens, and a temporal Q-Former (2 layers, cross-attention in every layer) whose
    queries attend jointly to the question text (self-attention over ``[queries ; text]``) and read a window of
    spatial tokens. Cross-attention and the query feed-forward act on the query positions only, as in LAVIS.

    Args:
        config: the :class:`~nips25_sama.config.QFormerConfig`.

    Example:
        >>> cfg = QFormerConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
        ...                     encoder_width=4, num_query_tokens=3, vocab_size=0, text_ffn=False, dropout=0.0)
        >>> QFormer(cfg)(encoder_hidden_states=torch.randn(2, 5, 4)).shape
        torch.Size([2, 3, 8])
    """

    def __init__(self, config: QFormerConfig) -> None:
        super().__init__()
        if not isinstance(config, QFormerConfig):
            raise TypeError(f"config must be a QFormerConfig, got {type(config).__name__}")
        self.config = config
        self.query_tokens = nn.Parameter(torch.randn(1, config.num_query_tokens, config.hidden_size) * 0.02)
        self.embeddings = QFormerEmbeddings(config)
        self.encoder = _Encoder(config)

    def forward(
        self,
        *,
        encoder_hidden_states: torch.Tensor,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        query_embeds: torch.Tensor | None = None,
        region_features: dict[int, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """Run the Q-Former and return the last hidden states of the query positions.

        Args:
            encoder_hidden_states: ``(B, N, encoder_width)`` states the queries read (frame or spatial tokens).
            input_ids: ``(B, L)`` text token ids, or ``None``.
            attention_mask: ``(B, L)`` text mask (1 = token, 0 = padding); the queries are always attended.
            encoder_attention_mask: ``(B, N)`` mask of the encoder states (default all ones).
            query_embeds: ``(B, M, H)``; default the learned ``query_tokens`` expanded over the batch.
            region_features: ``{token_id: (B, R, H)}`` injected at the placeholder tokens.

        Returns:
            ``(B, M, H)`` query outputs.

        Raises:
            ValueError: on shape mismatches or NaN/inf inputs.
        """
        cfg = self.config
        check_tensor("encoder_hidden_states", encoder_hidden_states, ndim=3)
        b = encoder_hidden_states.shape[0]
        if encoder_hidden_states.shape[2] != cfg.encoder_width:
            raise ValueError(
                f"encoder_hidden_states must have last dim encoder_width={cfg.encoder_width}, "
                f"got {tuple(encoder_hidden_states.shape)}"
            )
        if query_embeds is None:
            query_embeds = self.query_tokens.expand(b, -1, -1)
        check_tensor("query_embeds", query_embeds, ndim=3)
        n_query = query_embeds.shape[1]
        mask = None
        if input_ids is not None:
            check_tensor("input_ids", input_ids, ndim=2, floating=False)
            if input_ids.shape[0] != b:
                raise ValueError(f"input_ids must have batch size {b}, got {tuple(input_ids.shape)}")
            if attention_mask is None:
                attention_mask = torch.ones_like(input_ids)
            check_tensor("attention_mask", attention_mask, ndim=2, floating=None)
            if attention_mask.shape != input_ids.shape:
                raise ValueError(f"attention_mask must have shape {tuple(input_ids.shape)}, got "
                                 f"{tuple(attention_mask.shape)}")  # fmt: skip
            ones = torch.ones(b, n_query, dtype=attention_mask.dtype, device=attention_mask.device)
            mask = torch.cat([ones, attention_mask], dim=1)
        if encoder_attention_mask is not None:
            check_tensor("encoder_attention_mask", encoder_attention_mask, ndim=2, floating=None)
            if tuple(encoder_attention_mask.shape) != tuple(encoder_hidden_states.shape[:2]):
                raise ValueError(f"encoder_attention_mask must have shape {tuple(encoder_hidden_states.shape[:2])}")
        h = self.embeddings(query_embeds, input_ids, region_features)
        for layer in self.encoder.layer:
            h = layer(h, mask, encoder_hidden_states, encoder_attention_mask, n_query)
        return h[:, :n_query]
