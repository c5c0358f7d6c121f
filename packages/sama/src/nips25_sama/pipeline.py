r"""End-to-end SAMA chat (Sun et al., NeurIPS 2025, Sec. 3 and Fig. 2): frames -> vision tokens -> aggregator ->
LLM with context tokens -> answer, and one mask track per ``[SEG]`` through SAM2.

The wiring follows the official ``InternVL_Slowfast`` / ``VideoLLaVASAMModel`` (facts read from
``sunye23/SAMA``, commit 7c75e44; no code copied):

* the ``T`` sparse frames go through the vision encoder (InternViT + pixel shuffle + MLP projector) to
  :math:`V \in \mathbb{R}^{T \times N \times C}` (``N = 256``, ``C`` = the LLM width);
* the LLM prompt is ``<img><IMG_CONTEXT>*N</img>`` for each of the ``T_d`` dense frames (joined by new lines),
  then ``<IMG_CONTEXT>*T`` (the context tokens), then the question, each region ``<mask>`` written
  ``<vp><IMG_CONTEXT><IMG_CONTEXT></vp>``;
* the ``<IMG_CONTEXT>`` embeddings are replaced, in order of appearance, by the dense frames' tokens, the
  aggregator's ``T`` context tokens and the two LLM tokens of each region (pooled visual, shape);
* the last-layer hidden state at each ``[SEG]`` is mapped by the grounding head (official ``text_hidden_fcs``,
  Linear-ReLU-Linear, :class:`~nips25_sama.grounding.GroundingHead`) to SAM2's
  prompt width and appended to SAM2's sparse prompt embeddings (an empty point, label -1, as SAM2 pads); SAM2's
  mask decoder then gives three masks per frame and the one with the highest predicted IoU is kept (SAM2's
  multimask rule for a prompt without points), upsampled bilinearly to the frame size and thresholded at 0.

Every part except the aggregator comes from transformers: :class:`transformers.InternVLForConditionalGeneration`
(vision encoder, projector and LLM) and :class:`transformers.Sam2Model`; any vision encoder returning
``(T, N, C)`` tokens and any causal LM taking ``inputs_embeds`` work through :class:`SamaPipeline` directly.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from nips25_sama._validation import check_int, check_tensor
from nips25_sama.aggregator import SpatioTemporalAggregator
from nips25_sama.grounding import GroundingHead, seg_hidden_states
from nips25_sama.loading import encode_prompts
from nips25_sama.region import prepare_region_inputs

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "InternVLVisionTokens",
    "SamaChatOutput",
    "SamaPipeline",
    "SamaPipelineConfig",
    "dense_frame_indices",
    "sama_prompt",
]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def dense_frame_indices(n_frames: int, n_dense: int) -> list[int]:
    """Which of the ``n_frames`` sparse frames are also given to the LLM in full (official ``get_dense_indices``).

    The range ``[0, n_frames - 1]`` is cut at ``int(linspace(0, n_frames - 1, n_dense + 1))`` and the middle
    ``(a + b - 1) // 2`` of each cut ``[a, b - 1]`` is taken. With fewer than ``2 * n_dense`` frames that rule can
    repeat a frame or give -1; then ``n_dense`` evenly spaced distinct frames are taken instead (all frames when
    ``n_frames <= n_dense``).

    Args:
        n_frames: number of sparse frames ``T`` (>= 1).
        n_dense: number of dense frames ``T_d`` (>= 1; 5 in SAMA).

    Returns:
        ``min(n_frames, n_dense)`` increasing frame indices.

    Example:
        >>> dense_frame_indices(32, 5)
        [2, 8, 14, 20, 27]
        >>> dense_frame_indices(3, 5)
        [0, 1, 2]
    """
    check_int("n_frames", n_frames, minimum=1)
    check_int("n_dense", n_dense, minimum=1)
    if n_frames <= n_dense:
        return list(range(n_frames))
    cuts = [int(v) for v in torch.linspace(0, n_frames - 1, n_dense + 1, dtype=torch.float64).tolist()]
    picks = [(a + b - 1) // 2 for a, b in itertools.pairwise(cuts)]
    if picks[0] >= 0 and len(set(picks)) == n_dense:
        return picks
    return sorted({round(v) for v in torch.linspace(0, n_frames - 1, n_dense, dtype=torch.float64).tolist()})


@dataclass(frozen=True)
class SamaPipelineConfig:
    """Prompt layout and decoding settings of :class:`SamaPipeline` (defaults: the official SAMA layout).

    Attributes:
        n_dense_frames: frames whose ``N`` tokens the LLM reads in full (5).
        vision_image_size: side the frames are resized to for the vision encoder (448 for InternVL2.5).
        image_token, image_start_token, image_end_token: the InternVL image placeholders.
        vp_start_token, vp_end_token: the brackets of a region's two tokens.
        region_token: how a region is written in a question (``<mask>``).
        seg_token: the segmentation token (``[SEG]``).
        prompt_template: the chat template around one user turn, with one ``{input}`` (default: InternVL2.5's
            Qwen2 turn without a system prompt).
        stop_tokens: tokens that end the answer (besides the tokenizer's ``eos_token``).
        max_new_tokens: generation budget (greedy decoding).
        temporal_max_length: truncation length of the temporal Q-Former's question (256, official).
    """

    n_dense_frames: int = 5
    vision_image_size: int = 448
    image_token: str = "<IMG_CONTEXT>"
    image_start_token: str = "<img>"
    image_end_token: str = "</img>"
    vp_start_token: str = "<vp>"
    vp_end_token: str = "</vp>"
    region_token: str = "<mask>"
    seg_token: str = "[SEG]"
    prompt_template: str = "<|im_start|>user\n{input}<|im_end|>\n<|im_start|>assistant\n"
    stop_tokens: tuple[str, ...] = ("<|im_end|>",)
    max_new_tokens: int = 128
    temporal_max_length: int = 256

    def __post_init__(self) -> None:
        for name in ("n_dense_frames", "vision_image_size", "max_new_tokens", "temporal_max_length"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"SamaPipelineConfig.{name} must be a positive int, got {value!r}")
        for name in ("image_token", "image_start_token", "image_end_token", "vp_start_token", "vp_end_token",
                     "region_token", "seg_token"):  # fmt: skip
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"SamaPipelineConfig.{name} must be a non-empty string, got {value!r}")
        if not isinstance(self.prompt_template, str) or self.prompt_template.count("{input}") != 1:
            raise ValueError("SamaPipelineConfig.prompt_template must contain '{input}' exactly once")
        if not isinstance(self.stop_tokens, tuple) or not all(isinstance(t, str) and t for t in self.stop_tokens):
            raise ValueError(f"SamaPipelineConfig.stop_tokens must be a tuple of non-empty strings, got "
                             f"{self.stop_tokens!r}")  # fmt: skip


@dataclass
class SamaChatOutput:
    """One answer of :meth:`SamaPipeline.chat`.

    Attributes:
        answer: the decoded answer (``[SEG]`` kept, the stop token dropped).
        token_ids: ``(L_a,)`` long, the answer's token ids (stop token dropped).
        masks: ``(K, T, H, W)`` bool, one mask track per ``[SEG]`` in the answer, at the frames' size.
        mask_logits: ``(K, T, H, W)`` float, the upsampled SAM2 logits behind ``masks`` (``masks = logits > 0``).
        iou_scores: ``(K, T)`` SAM2's predicted IoU of each kept mask.
        seg_embeddings: ``(K, D_sam)`` the ``[SEG]`` prompts given to SAM2 (grounding head outputs).
        context_tokens: ``(T, C)`` the aggregator's context tokens for this question.
    """

    answer: str
    token_ids: torch.Tensor
    masks: torch.Tensor
    mask_logits: torch.Tensor
    iou_scores: torch.Tensor
    seg_embeddings: torch.Tensor
    context_tokens: torch.Tensor


class InternVLVisionTokens(nn.Module):
    """Vision tokens of a transformers InternVL model: InternViT, pixel shuffle and the MLP projector (``mlp1``).

    Args:
        vlm: a :class:`transformers.InternVLForConditionalGeneration` (or its ``InternVLModel``).

    The adapter holds no parameters of its own (the VLM is registered once, as :class:`SamaPipeline`'s
    ``language_model``). Shapes: ``pixel_values (T, 3, S, S)`` normalised -> ``(T, N, C)`` with
    ``N = (S / patch * ratio)^2`` and ``C`` the LLM width (``N = 256`` for ``S = 448``, patch 14, ratio 0.5).
    """

    def __init__(self, vlm: Any) -> None:
        super().__init__()
        model = getattr(vlm, "model", vlm)
        if not hasattr(model, "get_image_features"):
            raise TypeError(f"vlm must be a transformers InternVL model with get_image_features, got "
                            f"{type(vlm).__name__}")  # fmt: skip
        self._model: list[Any] = [model]  # a view: the VLM stays registered once (as language_model)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        model = self._model[0]
        cfg = model.config
        out = model.get_image_features(
            pixel_values,
            vision_feature_layer=cfg.vision_feature_layer,
            vision_feature_select_strategy=cfg.vision_feature_select_strategy,
        )
        return out.pooler_output if hasattr(out, "pooler_output") else out


def _token_id(tokenizer: Any, token: str, name: str) -> int:
    ids = tokenizer.convert_tokens_to_ids([token])
    unk = getattr(tokenizer, "unk_token_id", None)
    if not ids or ids[0] is None or (unk is not None and ids[0] == unk and token != tokenizer.unk_token):
        raise ValueError(f"tokenizer has no token {token!r} ({name}); add it (tokenizer.add_special_tokens) and "
                         "resize the LLM's embeddings, as the released SAMA tokenizer does")  # fmt: skip
    return int(ids[0])


class SamaPipeline(nn.Module):
    r"""SAMA's referential grounded video chat: answer a question about a clip and segment every ``[SEG]``.

    Args:
        vision_encoder: maps normalised ``(T, 3, S, S)`` frames (``S = config.vision_image_size``) to ``(T, N, C)``
            tokens in the LLM width (:class:`InternVLVisionTokens` for transformers' InternVL).
        language_model: a transformers causal LM accepting ``inputs_embeds`` (``generate``, ``output_hidden_states``).
        aggregator: the :class:`~nips25_sama.aggregator.SpatioTemporalAggregator` (``vis_dim = C``,
            ``tokens_per_frame = N``).
        sam2: a :class:`transformers.Sam2Model` (its vision encoder, prompt encoder and mask decoder are used).
        tokenizer: the LLM tokenizer, holding the placeholder tokens of ``config`` and ``[SEG]``.
        temporal_tokenizer: the temporal Q-Former's tokenizer
            (:func:`~nips25_sama.loading.build_temporal_tokenizer`).
        grounding_head: ``[SEG]`` hidden state (LLM width) -> SAM2 prompt width (official ``text_hidden_fcs``);
            default a fresh :class:`~nips25_sama.grounding.GroundingHead` ``(h, D_sam)``.
        config: a :class:`SamaPipelineConfig`.

    Raises:
        TypeError, ValueError: when a component is missing a needed method, the widths disagree, or a token of
            ``config`` is not in ``tokenizer``.
    """

    vision_encoder: Any
    language_model: Any
    sam2: Any
    grounding_head: GroundingHead
    aggregator: SpatioTemporalAggregator

    def __init__(
        self,
        *,
        vision_encoder: Callable[[torch.Tensor], torch.Tensor],
        language_model: Any,
        aggregator: SpatioTemporalAggregator,
        sam2: Any,
        tokenizer: Any,
        temporal_tokenizer: Any,
        grounding_head: GroundingHead | None = None,
        config: SamaPipelineConfig | None = None,
    ) -> None:
        super().__init__()
        config = SamaPipelineConfig() if config is None else config
        if not isinstance(config, SamaPipelineConfig):
            raise TypeError(f"config must be a SamaPipelineConfig, got {type(config).__name__}")
        if not isinstance(aggregator, SpatioTemporalAggregator):
            raise TypeError(f"aggregator must be a SpatioTemporalAggregator, got {type(aggregator).__name__}")
        if not callable(vision_encoder):
            raise TypeError(f"vision_encoder must be callable, got {type(vision_encoder).__name__}")
        for method in ("get_input_embeddings", "generate"):
            if not hasattr(language_model, method):
                raise TypeError(f"language_model must be a transformers causal LM (no {method}), got "
                                f"{type(language_model).__name__}")  # fmt: skip
        for method in ("get_image_embeddings", "get_image_wide_positional_embeddings", "prompt_encoder",
                       "mask_decoder"):  # fmt: skip
            if not hasattr(sam2, method):
                raise TypeError(f"sam2 must be a transformers Sam2Model (no {method}), got {type(sam2).__name__}")
        hidden = language_model.get_input_embeddings().embedding_dim
        if hidden != aggregator.config.vis_dim:
            raise ValueError(f"aggregator.config.vis_dim ({aggregator.config.vis_dim}) must equal the LLM width "
                             f"({hidden})")  # fmt: skip
        sam_dim = sam2.config.mask_decoder_config.hidden_size
        grounding_head = GroundingHead(hidden, sam_dim) if grounding_head is None else grounding_head
        if not isinstance(grounding_head, GroundingHead) or grounding_head.hidden_size != hidden:
            raise ValueError(f"grounding_head must be a GroundingHead({hidden}, {sam_dim})")
        self.config = config
        self.vision_encoder = vision_encoder
        self.language_model = language_model
        self.aggregator = aggregator
        self.sam2 = sam2
        self.grounding_head = grounding_head
        self.tokenizer = tokenizer
        self.temporal_tokenizer = temporal_tokenizer
        self.image_token_id = _token_id(tokenizer, config.image_token, "image_token")
        self.seg_token_id = _token_id(tokenizer, config.seg_token, "seg_token")
        for name in ("image_start_token", "image_end_token", "vp_start_token", "vp_end_token"):
            _token_id(tokenizer, getattr(config, name), name)
        stops = [_token_id(tokenizer, t, "stop_tokens") for t in config.stop_tokens]
        if getattr(tokenizer, "eos_token_id", None) is not None:
            stops.append(int(tokenizer.eos_token_id))
        self.stop_token_ids = sorted(set(stops))

    @classmethod
    def from_components(
        cls,
        vlm: Any,
        *,
        aggregator: SpatioTemporalAggregator,
        sam2: Any,
        tokenizer: Any,
        temporal_tokenizer: Any,
        grounding_head: GroundingHead | None = None,
        config: SamaPipelineConfig | None = None,
    ) -> SamaPipeline:
        """Build the pipeline from a transformers InternVL model (vision encoder, projector and LLM in one).

        ``config.vision_image_size`` is taken from ``vlm.config.vision_config.image_size`` when ``config`` is
        ``None``.

        Args:
            vlm: a :class:`transformers.InternVLForConditionalGeneration`.
            aggregator, sam2, tokenizer, temporal_tokenizer, grounding_head, config: as in :class:`SamaPipeline`.
        """
        if config is None:
            size = getattr(getattr(getattr(vlm, "config", None), "vision_config", None), "image_size", 448)
            config = SamaPipelineConfig(vision_image_size=int(size[0] if isinstance(size, list | tuple) else size))
        return cls(
            vision_encoder=InternVLVisionTokens(vlm),
            language_model=vlm,
            aggregator=aggregator,
            sam2=sam2,
            tokenizer=tokenizer,
            temporal_tokenizer=temporal_tokenizer,
            grounding_head=grounding_head,
            config=config,
        )

    # ------------------------------------------------------------------ inputs
    @property
    def _device(self) -> torch.device:
        return self.language_model.get_input_embeddings().weight.device

    @staticmethod
    def _check_frames(frames: object) -> torch.Tensor:
        check_tensor("frames", frames, ndim=4, floating=None)
        assert isinstance(frames, torch.Tensor)
        if frames.shape[1] != 3:
            raise ValueError(f"frames must be (T, 3, H, W) RGB, got shape {tuple(frames.shape)}")
        if frames.dtype == torch.uint8:
            return frames.float() / 255.0
        if not frames.is_floating_point():
            raise TypeError(f"frames must be uint8 in [0, 255] or float in [0, 1], got dtype {frames.dtype}")
        if not bool(torch.isfinite(frames).all()) or frames.min() < 0 or frames.max() > 1:
            raise ValueError("frames must be float in [0, 1] (or uint8 in [0, 255])")
        return frames

    def _normalise(self, frames: torch.Tensor, size: int, dtype: torch.dtype) -> torch.Tensor:
        x = F.interpolate(frames.to(self._device, torch.float32), size=(size, size), mode="bicubic",
                          align_corners=False).clamp(0, 1)  # fmt: skip
        mean = torch.tensor(IMAGENET_MEAN, device=x.device)[:, None, None]
        std = torch.tensor(IMAGENET_STD, device=x.device)[:, None, None]
        return ((x - mean) / std).to(dtype)

    def encode_frames(self, frames: torch.Tensor) -> torch.Tensor:
        """Vision tokens of the sparse frames.

        Args:
            frames: ``(T, 3, H, W)`` RGB, float in [0, 1] or uint8.

        Returns:
            ``(T, N, C)`` tokens (``N = aggregator.config.tokens_per_frame``, ``C`` the LLM width).

        Raises:
            ValueError: if the encoder's output is not ``(T, N, C)``.
        """
        frames = self._check_frames(frames)
        dtype = self.language_model.get_input_embeddings().weight.dtype
        tokens = self.vision_encoder(self._normalise(frames, self.config.vision_image_size, dtype))
        cfg = self.aggregator.config
        expected = (frames.shape[0], cfg.tokens_per_frame, cfg.vis_dim)
        if not isinstance(tokens, torch.Tensor) or tuple(tokens.shape) != expected:
            got = tuple(tokens.shape) if isinstance(tokens, torch.Tensor) else type(tokens).__name__
            raise ValueError(f"vision_encoder must return (T, N, C) = {expected} tokens, got {got}")
        return tokens

    def _regions(
        self, tokens: torch.Tensor, question: str, region_masks: torch.Tensor | None, region_frame: int | None
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        n_regions = question.count(self.config.region_token)
        if region_masks is None:
            if n_regions:
                raise ValueError(f"question holds {n_regions} {self.config.region_token} but region_masks is None")
            return None, None
        check_tensor("region_masks", region_masks, ndim=3, floating=None)
        if region_masks.shape[0] != n_regions:
            raise ValueError(f"region_masks has {region_masks.shape[0]} masks but the question holds {n_regions} "
                             f"{self.config.region_token}")  # fmt: skip
        dense = dense_frame_indices(tokens.shape[0], self.config.n_dense_frames)
        frame = dense[0] if region_frame is None else check_int("region_frame", region_frame, minimum=0)
        if frame >= tokens.shape[0]:
            raise ValueError(f"region_frame must be < T={tokens.shape[0]}, got {frame}")
        return prepare_region_inputs(tokens, region_masks.to(tokens.device), frame_index=frame,
                                     mask_size=self.aggregator.config.region_mask_size)  # fmt: skip

    def context_tokens(
        self,
        tokens: torch.Tensor,
        questions: Sequence[str],
        *,
        region_visual: Sequence[torch.Tensor | None] | None = None,
        region_shape: Sequence[torch.Tensor | None] | None = None,
    ) -> torch.Tensor:
        """The aggregator's context tokens, the frame tokens held once for all questions.

        Args:
            tokens: ``(T, N, C)`` vision tokens.
            questions: ``P`` questions (regions written ``config.region_token``).
            region_visual, region_shape: per question ``(R, C)`` / ``(R, S, S)`` region inputs or ``None``.

        Returns:
            ``(P, T, C)``.
        """
        ids, mask = encode_prompts(self.temporal_tokenizer, list(questions), max_length=self.config.temporal_max_length)
        ids, mask = ids.to(tokens.device), mask.to(tokens.device)
        vis = region_visual or [None] * len(questions)
        shp = region_shape or [None] * len(questions)
        if all(v is None for v in vis):
            return self.aggregator(tokens, ids, mask)
        # Questions with regions go one by one (the aggregator takes the same region count for every prompt).
        out = [
            self.aggregator(
                tokens,
                ids[i : i + 1],
                mask[i : i + 1],
                region_visual=None if v is None else v[None],
                region_shape=None if s is None else s[None],
            )[0]
            for i, (v, s) in enumerate(zip(vis, shp, strict=True))
        ]
        return torch.stack(out)

    def prompt_text(self, question: str, n_frames: int) -> str:
        """The LLM prompt of a first turn (:func:`sama_prompt` with this pipeline's settings)."""
        return sama_prompt(question, n_frames=n_frames, tokens_per_frame=self.aggregator.config.tokens_per_frame,
                           config=self.config)  # fmt: skip

    def build_inputs(
        self,
        tokens: torch.Tensor,
        context: torch.Tensor,
        question: str,
        region_llm_tokens: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """LLM input ids and embeddings with the ``<IMG_CONTEXT>`` rows replaced (official order).

        Args:
            tokens: ``(T, N, C)`` vision tokens.
            context: ``(T, C)`` context tokens of this question.
            question: the question.
            region_llm_tokens: ``(R, 2, C)`` LLM tokens of the question's regions, or ``None``.

        Returns:
            ``(input_ids (L,) long, inputs_embeds (L, C))``.

        Raises:
            ValueError: if the prompt's placeholder count differs from the rows to fill (e.g. the question itself
                holds ``<IMG_CONTEXT>``).
        """
        t = tokens.shape[0]
        text = self.prompt_text(question, t)
        ids = self.tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"][0].to(tokens.device)
        dense = dense_frame_indices(t, self.config.n_dense_frames)
        rows = [tokens[dense].reshape(-1, tokens.shape[-1]), context.reshape(t, -1)]
        if region_llm_tokens is not None:
            rows.append(region_llm_tokens.reshape(-1, tokens.shape[-1]))
        fill = torch.cat(rows).to(self.language_model.get_input_embeddings().weight.dtype)
        slots = ids == self.image_token_id
        if int(slots.sum()) != fill.shape[0]:
            raise ValueError(f"the prompt holds {int(slots.sum())} {self.config.image_token} tokens but "
                             f"{fill.shape[0]} rows are to be filled; does the question contain "
                             f"{self.config.image_token}?")  # fmt: skip
        embeds = self.language_model.get_input_embeddings()(ids).clone()
        embeds[slots] = fill
        return ids, embeds

    # ------------------------------------------------------------------ SAM2
    def segment(self, frames: torch.Tensor, seg_embeddings: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """SAM2 masks of every frame for every ``[SEG]`` prompt (each frame decoded on its own, no memory).

        Args:
            frames: ``(T, 3, H, W)`` RGB, float in [0, 1] or uint8.
            seg_embeddings: ``(K, D_sam)`` prompts (grounding head outputs).

        Returns:
            ``(mask_logits (K, T, H, W), iou_scores (K, T))``; ``masks = mask_logits > 0``.

        Raises:
            ValueError: if ``seg_embeddings`` is not ``(K, D_sam)``.
        """
        frames = self._check_frames(frames)
        check_tensor("seg_embeddings", seg_embeddings, ndim=2, allow_empty=True)
        sam = self.sam2
        d_sam = sam.config.mask_decoder_config.hidden_size
        if seg_embeddings.shape[1] != d_sam:
            raise ValueError(f"seg_embeddings must be (K, {d_sam}), got {tuple(seg_embeddings.shape)}")
        t, (h, w), k = frames.shape[0], frames.shape[-2:], seg_embeddings.shape[0]
        if k == 0:
            return frames.new_zeros(0, t, h, w), frames.new_zeros(0, t)
        dtype = sam.no_memory_embedding.dtype
        size = sam.config.prompt_encoder_config.image_size
        image_emb = sam.get_image_embeddings(self._normalise(frames, size, dtype))  # levels of (T, C_l, h_l, w_l)
        image_emb = [e.repeat_interleave(k, dim=0) for e in image_emb]  # frame-major, then prompt
        n = t * k
        points = torch.zeros(n, 1, 1, 2, dtype=dtype, device=image_emb[-1].device)
        labels = -torch.ones(n, 1, 1, dtype=torch.int32, device=points.device)
        sparse, dense = sam.prompt_encoder(input_points=points, input_labels=labels, input_boxes=None, input_masks=None)
        lang = seg_embeddings.to(dtype).to(points.device).repeat(t, 1)[:, None, None, :]  # (T*K, 1, 1, D)
        sparse = torch.cat([sparse, lang], dim=2)
        pos = sam.get_image_wide_positional_embeddings().repeat(n, 1, 1, 1)
        low_res, iou, _, _ = sam.mask_decoder(
            image_embeddings=image_emb[-1], image_positional_embeddings=pos, sparse_prompt_embeddings=sparse,
            dense_prompt_embeddings=dense, multimask_output=True, high_resolution_features=image_emb[:-1],
        )  # fmt: skip
        iou = iou[:, 0]  # (T*K, 3)
        best = iou.argmax(dim=-1)
        picked = low_res[:, 0][torch.arange(n, device=best.device), best]  # (T*K, h4, w4)
        logits = F.interpolate(picked[:, None].float(), size=(h, w), mode="bilinear", align_corners=False)[:, 0]
        logits = logits.reshape(t, k, h, w).transpose(0, 1)
        scores = iou.gather(1, best[:, None])[:, 0].reshape(t, k).transpose(0, 1)
        return logits, scores.float()

    # ------------------------------------------------------------------ chat
    def _generate(self, embeds: torch.Tensor, max_new_tokens: int) -> torch.Tensor:
        lm = self.language_model
        attn = torch.ones(1, embeds.shape[0], dtype=torch.long, device=embeds.device)
        out = lm.generate(inputs_embeds=embeds[None], attention_mask=attn, max_new_tokens=max_new_tokens,
                          do_sample=False, num_beams=1, eos_token_id=self.stop_token_ids,
                          pad_token_id=self.stop_token_ids[0])  # fmt: skip
        seq = out[0] if isinstance(out, torch.Tensor) else out.sequences[0]
        return seq[-max_new_tokens:] if seq.shape[0] > max_new_tokens else seq

    def _answer_ids(self, answer: str | None, embeds: torch.Tensor, max_new_tokens: int) -> torch.Tensor:
        if answer is None:
            ids = self._generate(embeds, max_new_tokens)
        else:
            if not isinstance(answer, str):
                raise TypeError(f"answer must be a string or None, got {type(answer).__name__}")
            ids = self.tokenizer(answer, add_special_tokens=False, return_tensors="pt")["input_ids"][0]
        ids = ids.to(embeds.device)
        stop = torch.isin(ids, torch.tensor(self.stop_token_ids, device=ids.device))
        return ids[: int(stop.nonzero()[0]) if bool(stop.any()) else ids.shape[0]]

    def _one(self, frames: torch.Tensor, tokens: torch.Tensor, question: str, context: torch.Tensor,
             region_llm: torch.Tensor | None, answer: str | None, max_new_tokens: int) -> SamaChatOutput:  # fmt: skip
        _, embeds = self.build_inputs(tokens, context, question, region_llm)
        ans = self._answer_ids(answer, embeds, max_new_tokens)
        if bool((ans == self.seg_token_id).any()):
            full = torch.cat([embeds, self.language_model.get_input_embeddings()(ans)])
            out = self.language_model(inputs_embeds=full[None], output_hidden_states=True)
            answer_states = out.hidden_states[-1][:, embeds.shape[0] :]  # last layer, answer positions
            hidden = seg_hidden_states(answer_states.float(), ans[None], seg_token_id=self.seg_token_id)
        else:
            hidden = embeds.new_zeros(0, embeds.shape[-1])
        seg_emb = self.grounding_head(hidden.to(embeds.dtype))[:, 0]
        logits, iou = self.segment(frames, seg_emb)
        text = self.tokenizer.decode(ans.tolist(), skip_special_tokens=False).strip()
        return SamaChatOutput(answer=text, token_ids=ans.cpu(), masks=logits > 0, mask_logits=logits,
                              iou_scores=iou, seg_embeddings=seg_emb, context_tokens=context)  # fmt: skip

    @torch.no_grad()
    def chat(
        self,
        frames: torch.Tensor,
        question: str | Sequence[str],
        *,
        region_masks: torch.Tensor | Sequence[torch.Tensor | None] | None = None,
        region_frame: int | None = None,
        answer: str | Sequence[str] | None = None,
        max_new_tokens: int | None = None,
    ) -> SamaChatOutput | list[SamaChatOutput]:
        """Answer one or several questions about a clip (one first turn each) and segment every ``[SEG]``.

        The frames are encoded once; with several questions the aggregator holds the frame tokens once for all of
        them and each question is answered on its own (no shared conversation).

        Args:
            frames: ``(T, 3, H, W)`` RGB sparse frames of the clip (32 in SAMA), float in [0, 1] or uint8.
            question: a question (regions written ``<mask>``) or a list of them.
            region_masks: ``(R, H, W)`` masks of the question's ``R`` regions on ``region_frame`` (a list with one
                entry per question for a list of questions).
            region_frame: the frame whose tokens the regions pool (default the first dense frame).
            answer: a given answer (or one per question) to teacher-force instead of generating, e.g. to segment a
                reference answer's ``[SEG]``.
            max_new_tokens: generation budget (default ``config.max_new_tokens``).

        Returns:
            A :class:`SamaChatOutput` (a list of them for a list of questions).

        Raises:
            TypeError, ValueError: on malformed frames, questions, region masks or answers (the message names the
                argument).
        """
        single = isinstance(question, str)
        raw: list[Any] = [question] if single else list(question) if isinstance(question, Sequence) else []
        if not raw or not all(isinstance(q, str) and q.strip() for q in raw):
            raise ValueError("question must be a non-empty string or a non-empty list of them")
        questions: list[str] = raw
        p = len(questions)
        masks: list[Any] = [region_masks] if single else [None] * p if region_masks is None else list(region_masks)
        answers: list[Any] = [answer] if single else [None] * p if answer is None else list(answer)
        if len(masks) != p:
            raise ValueError(f"region_masks must have one entry per question ({p}), got {len(masks)}")
        if len(answers) != p:
            raise ValueError(f"answer must have one entry per question ({p}), got {len(answers)}")
        budget = self.config.max_new_tokens if max_new_tokens is None else check_int(
            "max_new_tokens", max_new_tokens, minimum=1)  # fmt: skip
        frames = self._check_frames(frames)
        tokens = self.encode_frames(frames)
        regions = [self._regions(tokens, q, m, region_frame) for q, m in zip(questions, masks, strict=True)]
        context = self.context_tokens(tokens, questions, region_visual=[r[0] for r in regions],
                                      region_shape=[r[1] for r in regions])  # fmt: skip
        outs = []
        for i, (q, (vis, shp)) in enumerate(zip(questions, regions, strict=True)):
            region_llm = None if vis is None or shp is None else self.aggregator.region_tokens_for_llm(vis, shp)
            outs.append(self._one(frames, tokens, q, context[i], region_llm, answers[i], budget))
        return outs[0] if single else outs


def sama_prompt(question: str, *, n_frames: int, tokens_per_frame: int, config: SamaPipelineConfig) -> str:
    """The LLM prompt of a first turn: the dense frames, ``n_frames`` context placeholders, then the question.

    Each dense frame is ``<img><IMG_CONTEXT>*N</img>`` (joined by new lines), each region ``<mask>`` becomes
    ``<vp><IMG_CONTEXT><IMG_CONTEXT></vp>``, and the whole goes into ``config.prompt_template`` (official
    ``prepare_text``).

    Args:
        question: the question, regions written ``config.region_token``.
        n_frames: the number ``T`` of sparse frames (= context tokens).
        tokens_per_frame: ``N``.
        config: the layout.

    Example:
        >>> cfg = SamaPipelineConfig(n_dense_frames=1, prompt_template="{input}", image_token="<I>")
        >>> sama_prompt("Is <mask> moving?", n_frames=2, tokens_per_frame=3, config=cfg)
        '<img><I><I><I></img><I><I>Is <vp><I><I></vp> moving?'
    """
    if not isinstance(question, str):
        raise TypeError(f"question must be a string, got {type(question).__name__}")
    check_int("n_frames", n_frames, minimum=1)
    check_int("tokens_per_frame", tokens_per_frame, minimum=1)
    c = config
    frame = f"{c.image_start_token}{c.image_token * tokens_per_frame}{c.image_end_token}"
    dense = "\n".join([frame] * len(dense_frame_indices(n_frames, c.n_dense_frames)))
    body = question.replace(c.region_token, f"{c.vp_start_token}{c.image_token * 2}{c.vp_end_token}")
    return c.prompt_template.replace("{input}", dense + c.image_token * n_frames + body)
