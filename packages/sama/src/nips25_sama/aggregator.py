r"""SAMA's prompt-conditioned spatio-temporal context aggregator (Sun et al., NeurIPS 2025, Sec. 3.2).

Per sparse frame :math:`V_t \in \mathbb{R}^{256 \times C}`: a spatial Q-Former gives :math:`S_t \in
\mathbb{R}^{32 \times 768}`; the :math:`32T` spatial tokens are cut into windows of 512 (stride 512); a temporal
Q-Former reads each window with the question (region features injected at ``<mask>``/``<pos>``) and the window
outputs are concatenated into :math:`Q`; context injection turns every frame into one LLM token
:math:`\mathrm{ctx}_t = W_f\,\mathrm{mean}_{256}\big(W_p\,\mathrm{softmax}(W_qV_t (W_kQ)^\top/\sqrt{C})
\,W_vQ + V_t\big)`.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from nips25_sama._validation import check_int, check_tensor, main_process
from nips25_sama.config import SAMAConfig
from nips25_sama.qformer import QFormer
from nips25_sama.region import RegionEncoder

__all__ = ["ContextInjector", "SpatioTemporalAggregator", "TokenBudget", "split_windows", "token_budget"]


def split_windows(n_tokens: int, *, window_size: int = 512, stride: int = 512) -> list[tuple[int, int]]:
    r"""Windows ``[start, end)`` over ``n_tokens`` flattened spatial tokens (the last one may be shorter).

    Starts are :math:`0, s, 2s, \dots < n` and ends :math:`\min(\text{start} + w, n)`; with :math:`s = w` there are
    :math:`\lceil n / w \rceil` windows.

    Args:
        n_tokens: number of spatial tokens ``32 T``, >= 1.
        window_size: window length ``w`` (512).
        stride: step ``s`` (512), ``1 <= s <= w``.

    Returns:
        The list of ``(start, end)`` pairs.

    Raises:
        ValueError: for non-positive arguments or ``stride > window_size``.

    Example:
        >>> split_windows(1280)
        [(0, 512), (512, 1024), (1024, 1280)]
    """
    check_int("n_tokens", n_tokens, minimum=1)
    check_int("window_size", window_size, minimum=1)
    check_int("stride", stride, minimum=1)
    if stride > window_size:
        raise ValueError(f"stride ({stride}) must be <= window_size ({window_size})")
    return [(s, min(s + window_size, n_tokens)) for s in range(0, n_tokens, stride)]


@dataclass(frozen=True)
class TokenBudget:
    """Visual tokens the LLM reads per turn."""

    all_frames: int
    sama: int
    dense: int
    sparse_context: int

    @property
    def ratio(self) -> float:
        """``sama / all_frames``."""
        return self.sama / self.all_frames


def token_budget(config: SAMAConfig, *, n_sparse_frames: int | None = None) -> TokenBudget:
    r"""LLM visual tokens per turn: all sparse frames in full vs SAMA's dense frames plus one token per sparse frame.

    :math:`\text{all} = T_s \cdot N`, :math:`\text{SAMA} = T_d (N + e) + T_s` with :math:`N` tokens per frame, :math:`e`
    the image start/end tokens of a dense frame, :math:`T_d` dense and :math:`T_s` sparse frames.

    Args:
        config: the aggregator configuration.
        n_sparse_frames: override of ``config.n_sparse_frames``.

    Returns:
        A :class:`TokenBudget` (1B defaults: 8,192 vs 1,322).
    """
    if not isinstance(config, SAMAConfig):
        raise TypeError(f"config must be a SAMAConfig, got {type(config).__name__}")
    ts = config.n_sparse_frames if n_sparse_frames is None else check_int("n_sparse_frames", n_sparse_frames, minimum=1)
    dense = config.n_dense_frames * (config.tokens_per_frame + config.dense_frame_extra_tokens)
    return TokenBudget(all_frames=ts * config.tokens_per_frame, sama=dense + ts, dense=dense, sparse_context=ts)


class ContextInjector(nn.Module):
    r"""Temporal context injection: one token per (prompt, frame) from the frame tokens and the temporal queries.

    :math:`A_t = \mathrm{softmax}\big((W_qV_t)(W_kQ)^\top/\sqrt{C}\big)W_vQ`,
    :math:`\mathrm{ctx}_t = W_f\,\mathrm{mean}_{N}(W_pA_t + V_t)`; :math:`W_q, W_p, W_f: C \to C`,
    :math:`W_k, W_v: 768 \to C` (single head, scale :math:`\sqrt{C}`).

    Args:
        vis_dim: ``C``.
        query_dim: width of :math:`Q` (768).
    """

    def __init__(self, vis_dim: int, query_dim: int) -> None:
        super().__init__()
        check_int("vis_dim", vis_dim, minimum=1)
        check_int("query_dim", query_dim, minimum=1)
        self.attn_q = nn.Linear(vis_dim, vis_dim)
        self.attn_k = nn.Linear(query_dim, vis_dim)
        self.attn_v = nn.Linear(query_dim, vis_dim)
        self.proj = nn.Linear(vis_dim, vis_dim)
        self.final_proj = nn.Linear(vis_dim, vis_dim)

    def _inject(self, frames: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        # frames (P, T, N, C), q (P, M, D) -> (P, T, C)
        key, value = self.attn_k(q), self.attn_v(q)  # (P, M, C)
        scores = torch.einsum("ptnc,pmc->ptnm", self.attn_q(frames), key) / math.sqrt(key.shape[-1])
        attended = torch.einsum("ptnm,pmc->ptnc", scores.softmax(dim=-1), value)
        return self.final_proj((self.proj(attended) + frames).mean(dim=2))

    def forward(self, frame_tokens: torch.Tensor, q: torch.Tensor, *, chunk: int = 16) -> torch.Tensor:
        """Context tokens for every prompt and frame.

        Args:
            frame_tokens: ``(P*T, N, C)`` frame tokens repeated per prompt (prompt-major), the official layout;
                :meth:`inject_shared` takes them once for all prompts.
            q: ``(P, M, D)`` temporal Q-Former outputs, one set per prompt.
            chunk: prompts processed at once (16 in SAMA; memory only, the result does not depend on it).

        Returns:
            ``(P*T, 1, C)`` context tokens.

        Raises:
            ValueError: on shape mismatches, NaN/inf or ``chunk < 1``.
        """
        check_tensor("frame_tokens", frame_tokens, ndim=3)
        check_tensor("q", q, ndim=3)
        check_int("chunk", chunk, minimum=1)
        p = q.shape[0]
        if q.shape[2] != self.attn_k.in_features:
            raise ValueError(f"q must have last dim {self.attn_k.in_features}, got {tuple(q.shape)}")
        if frame_tokens.shape[2] != self.attn_q.in_features:
            raise ValueError(
                f"frame_tokens must have last dim {self.attn_q.in_features}, got {tuple(frame_tokens.shape)}"
            )
        if frame_tokens.shape[0] % p:
            raise ValueError(f"frame_tokens has {frame_tokens.shape[0]} rows, not a multiple of P={p} prompts in q")
        t = frame_tokens.shape[0] // p
        frames = frame_tokens.view(p, t, *frame_tokens.shape[1:])
        out = [self._inject(frames[s : s + chunk], q[s : s + chunk]) for s in range(0, p, chunk)]
        return torch.cat(out, dim=0).reshape(p * t, 1, -1)

    def inject_shared(self, frames: torch.Tensor, q: torch.Tensor, *, chunk: int = 16) -> torch.Tensor:
        r""":meth:`forward` with the frame tokens held once for all prompts (no per-prompt copy).

        :math:`W_qV_t` and :math:`\mathrm{mean}_N V_t` are computed once per frame; as :math:`W_p` is affine,
        :math:`\mathrm{mean}_N(W_pA_t + V_t) = W_p\,\mathrm{mean}_N A_t + \mathrm{mean}_N V_t`, so only the
        attention itself is evaluated per prompt (in chunks of ``chunk`` prompts).

        Args:
            frames: ``(B, T, N, C)`` frame tokens.
            q: ``(B, P, M, D)`` temporal Q-Former outputs.
            chunk: prompts processed at once (memory only).

        Returns:
            ``(B, P, T, C)`` context tokens, equal to :meth:`forward` on the repeated frames.

        Raises:
            ValueError: on shape mismatches or ``chunk < 1``.
        """
        check_tensor("frames", frames, ndim=4)
        check_tensor("q", q, ndim=4)
        check_int("chunk", chunk, minimum=1)
        if frames.shape[0] != q.shape[0] or frames.shape[-1] != self.attn_q.in_features:
            raise ValueError(f"frames (B, T, N, {self.attn_q.in_features}) and q (B, P, M, D) must share B, got "
                             f"{tuple(frames.shape)} and {tuple(q.shape)}")  # fmt: skip
        if q.shape[-1] != self.attn_k.in_features:
            raise ValueError(f"q must have last dim {self.attn_k.in_features}, got {tuple(q.shape)}")
        query = self.attn_q(frames)  # (B, T, N, C), once for all prompts
        frame_mean = frames.mean(dim=2)  # (B, T, C)
        scale = math.sqrt(self.attn_k.out_features)
        out = []
        for s in range(0, q.shape[1], chunk):
            qc = q[:, s : s + chunk]
            key, value = self.attn_k(qc), self.attn_v(qc)  # (B, p, M, C)
            scores = torch.einsum("btnc,bpmc->bptnm", query, key) / scale
            attended = torch.einsum("bptnm,bpmc->bptc", scores.softmax(dim=-1), value) / frames.shape[2]
            out.append(self.final_proj(self.proj(attended) + frame_mean.unsqueeze(1)))
        return torch.cat(out, dim=1)


class SpatioTemporalAggregator(nn.Module):
    r"""SAMA's spatio-temporal context aggregator with region prompts (Sec. 3.2, official ``InternVL_Slowfast``).

    Frame tokens :math:`V_t` go through ``Linear(C -> 1408) -> LayerNorm -> spatial Q-Former`` (32 queries); the
    flattened spatial tokens are windowed; each window and each prompt goes through the temporal Q-Former with the
    question ids, whose ``<mask>``/``<pos>`` embeddings are replaced by the region's projected visual/shape features;
    the window outputs are concatenated into :math:`Q`, and :class:`ContextInjector` gives one token per frame.

    Args:
        config: a :class:`~nips25_sama.config.SAMAConfig` (defaults: the 1B model's shapes).

    Example:
        >>> cfg = SAMAConfig(vis_dim=8, tokens_per_frame=4, spatial_width=8, qformer_hidden=8, qformer_heads=2,
        ...                  qformer_intermediate=16, spatial_layers=1, temporal_layers=1, spatial_queries=2,
        ...                  temporal_queries=2, vocab_size=40, visual_token_id=30, shape_token_id=31,
        ...                  window_size=4, stride=4, region_mask_size=4, region_hidden=8, dropout=0.0)
        >>> agg = SpatioTemporalAggregator(cfg).eval()
        >>> agg(torch.randn(3, 4, 8), torch.tensor([[1, 30, 31, 2]]), region_visual=torch.randn(1, 1, 8),
        ...     region_shape=torch.ones(1, 1, 4, 4)).shape
        torch.Size([1, 3, 8])
    """

    def __init__(self, config: SAMAConfig | None = None) -> None:
        super().__init__()
        config = SAMAConfig() if config is None else config
        if not isinstance(config, SAMAConfig):
            raise TypeError(f"config must be a SAMAConfig, got {type(config).__name__}")
        self.config = config
        self.vlm2spatial_proj = nn.Linear(config.vis_dim, config.spatial_width)
        self.spatial_ln = nn.LayerNorm(config.spatial_width)
        self.spatial_qformer = QFormer(config.spatial_qformer())
        self.temporal_qformer = QFormer(config.temporal_qformer())
        hidden = dict(mask_size=config.region_mask_size, hidden=config.region_hidden)
        self.region_encoder = RegionEncoder(config.vis_dim, config.qformer_hidden, **hidden)
        self.llm_region_encoder = RegionEncoder(config.vis_dim, config.vis_dim, **hidden)
        self.context_injector = ContextInjector(config.vis_dim, config.qformer_hidden)

    def spatial_tokens(self, frame_tokens: torch.Tensor) -> torch.Tensor:
        """Spatial Q-Former outputs ``(..., T, M_s, 768)`` of frame tokens ``(..., T, N, C)``."""
        lead = frame_tokens.shape[:-2]
        x = self.spatial_ln(self.vlm2spatial_proj(frame_tokens.reshape(-1, *frame_tokens.shape[-2:])))
        s = self.spatial_qformer(encoder_hidden_states=x)
        return s.reshape(*lead, *s.shape[-2:])

    def temporal_queries(
        self,
        spatial: torch.Tensor,
        text_ids: torch.Tensor,
        text_mask: torch.Tensor,
        region: dict[int, torch.Tensor] | None,
    ) -> torch.Tensor:
        """Temporal Q-Former over windows: ``spatial (B, T, M_s, H)``, ``text_ids (B*P, L)`` -> ``(B*P, n_w M_t, H)``.

        Windows are cut by :func:`split_windows` over the flattened ``T * M_s`` spatial tokens.
        """
        b, t, m, h = spatial.shape
        p = text_ids.shape[0] // b
        flat = spatial.reshape(b, t * m, h)
        outputs = []
        for start, end in split_windows(t * m, window_size=self.config.window_size, stride=self.config.stride):
            window = flat[:, start:end].repeat_interleave(p, dim=0)  # (B*P, w, H)
            outputs.append(
                self.temporal_qformer(
                    encoder_hidden_states=window, input_ids=text_ids, attention_mask=text_mask, region_features=region
                )
            )
        return torch.cat(outputs, dim=1)

    def forward(
        self,
        frame_tokens: torch.Tensor,
        text_ids: torch.Tensor,
        text_mask: torch.Tensor | None = None,
        *,
        region_visual: torch.Tensor | None = None,
        region_shape: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """One context token per prompt and sparse frame.

        Args:
            frame_tokens: ``(T, N, C)`` (or batched ``(B, T, N, C)``) ViT+MLP tokens of the sparse frames.
            text_ids: ``(P, L)`` (or ``(B, P, L)``) temporal-tokenizer ids of the prompts, regions written
                ``<vp><mask><pos></vp>``.
            text_mask: same shape as ``text_ids``, 1 = token, 0 = padding (default all ones).
            region_visual: ``(P, R, C)`` (or ``(B, P, R, C)``) box-mask pooled ViT tokens of each region (see
                :func:`~nips25_sama.region.prepare_region_inputs`), in order of appearance; ``None`` for no regions.
            region_shape: ``(P, R, S, S)`` (or batched) box shape masks; given together with ``region_visual``.

        Returns:
            ``(P, T, C)`` (or ``(B, P, T, C)``) context tokens, the 32 ``<IMG_CONTEXT>`` slots after the dense frames.

        Raises:
            ValueError: on shape mismatches, NaN/inf, a non-0/1 ``text_mask``, only one of the two region inputs, or
                region inputs with no ``<mask>``/``<pos>`` token in ``text_ids`` (they would be silently unused).
                Prompts with ``<mask>`` tokens and no region inputs are allowed (the no-injection ablation).
            TypeError: on wrong dtypes.
        """
        cfg = self.config
        check_tensor("frame_tokens", frame_tokens, ndim=(3, 4))
        check_tensor("text_ids", text_ids, ndim=(2, 3), floating=False)
        batched = frame_tokens.ndim == 4
        if text_ids.ndim != frame_tokens.ndim - 1:
            raise ValueError(
                f"text_ids must have {frame_tokens.ndim - 1} dims for frame_tokens of shape {tuple(frame_tokens.shape)}"
                f", got {tuple(text_ids.shape)}"
            )
        frames = frame_tokens if batched else frame_tokens.unsqueeze(0)
        ids = text_ids if batched else text_ids.unsqueeze(0)
        b, c = frames.shape[0], frames.shape[-1]
        if c != cfg.vis_dim:
            raise ValueError(f"frame_tokens must have last dim vis_dim={cfg.vis_dim}, got {tuple(frame_tokens.shape)}")
        param = next(self.parameters())
        if frame_tokens.dtype != param.dtype:
            raise TypeError(f"frame_tokens has dtype {frame_tokens.dtype} but the aggregator's parameters are "
                            f"{param.dtype}: cast one to the other (aggregator.to({frame_tokens.dtype}))")  # fmt: skip
        if ids.shape[0] != b:
            raise ValueError(f"text_ids must have batch size {b}, got {tuple(text_ids.shape)}")
        _, p, length = ids.shape
        if text_mask is None:
            mask = torch.ones_like(ids)
        else:
            check_tensor("text_mask", text_mask, ndim=(2, 3), floating=None)
            if tuple(text_mask.shape) != tuple(text_ids.shape):
                raise ValueError(f"text_mask must have shape {tuple(text_ids.shape)}, got {tuple(text_mask.shape)}")
            if text_mask.numel() and not bool(((text_mask == 0) | (text_mask == 1)).all()):
                raise ValueError("text_mask must hold only 0 (padding) and 1 (token)")
            mask = text_mask if batched else text_mask.unsqueeze(0)
        region = None
        if (region_visual is None) != (region_shape is None):
            raise ValueError("region_visual and region_shape must be given together (or both None)")
        if region_visual is not None and region_shape is not None:
            check_tensor("region_visual", region_visual, ndim=4 if batched else 3)
            if region_visual.dtype != frame_tokens.dtype:
                raise TypeError(f"region_visual has dtype {region_visual.dtype}, frame_tokens {frame_tokens.dtype}: "
                                "give both in the aggregator's dtype")  # fmt: skip
            rv = region_visual if batched else region_visual.unsqueeze(0)
            rs = region_shape if batched else region_shape.unsqueeze(0)
            if tuple(rv.shape[:2]) != (b, p):
                raise ValueError(f"region_visual must start with {(b, p) if batched else (p,)}, got "
                                 f"{tuple(region_visual.shape)}")  # fmt: skip
            vis, shp = self.region_encoder(rv, rs)  # (B, P, R, H)
            if not bool((ids == cfg.visual_token_id).any()) or not bool((ids == cfg.shape_token_id).any()):
                raise ValueError(
                    f"region_visual/region_shape were given but text_ids hold no <mask> ({cfg.visual_token_id}) and "
                    f"<pos> ({cfg.shape_token_id}) tokens to carry them: write each region as <vp><mask><pos></vp>"
                )
            region = {
                cfg.visual_token_id: vis.reshape(b * p, *vis.shape[2:]),
                cfg.shape_token_id: shp.reshape(b * p, *shp.shape[2:]),
            }
        spatial = self.spatial_tokens(frames)  # (B, T, M_s, H)
        q = self.temporal_queries(spatial, ids.reshape(b * p, length), mask.reshape(b * p, length), region)
        ctx = self.context_injector.inject_shared(frames, q.reshape(b, p, *q.shape[1:]), chunk=cfg.prompt_chunk)
        return ctx if batched else ctx[0]

    def region_tokens_for_llm(self, region_visual: torch.Tensor, region_shape: torch.Tensor) -> torch.Tensor:
        """The two LLM embeddings of each region prompt (``<vp><IMG_CONTEXT>x2</vp>``): ``(..., R, 2, C)``.

        Args:
            region_visual: ``(..., R, C)`` pooled tokens.
            region_shape: ``(..., R, S, S)`` box masks.
        """
        vis, shp = self.llm_region_encoder(region_visual, region_shape)
        return torch.stack([vis, shp], dim=-2)

    def save_pretrained(self, directory: str | os.PathLike[str], *, is_main_process: bool | None = None) -> Path:
        """Write ``config.json`` and ``model.safetensors`` (our key names) into ``directory``.

        Args:
            directory: target folder (created).
            is_main_process: whether this process writes (under ``accelerate launch``: call
                ``accelerator.wait_for_everyone()`` and pass ``accelerator.is_main_process``); default: only rank 0
                of a launch (``RANK``/``LOCAL_RANK`` unset or 0). Other processes write nothing.

        Returns:
            ``directory`` as a :class:`~pathlib.Path`.
        """
        from safetensors.torch import save_file

        out = Path(directory)
        if not main_process(is_main_process):
            return out
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.json").write_text(json.dumps(self.config.to_dict(), indent=2) + "\n")
        save_file({k: v.contiguous() for k, v in self.state_dict().items()}, str(out / "model.safetensors"))
        return out

    @classmethod
    def from_pretrained(cls, directory: str | os.PathLike[str]) -> SpatioTemporalAggregator:
        """Rebuild an aggregator written by :meth:`save_pretrained`.

        Raises:
            FileNotFoundError: if ``config.json`` or ``model.safetensors`` is missing.
        """
        from safetensors.torch import load_file

        root = Path(directory)
        for name in ("config.json", "model.safetensors"):
            if not (root / name).is_file():
                raise FileNotFoundError(f"directory {root} has no {name} (expected save_pretrained's layout)")
        model = cls(SAMAConfig(**json.loads((root / "config.json").read_text())))
        model.load_state_dict(load_file(str(root / "model.safetensors")))
        return model
