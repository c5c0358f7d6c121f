"""GoRA and its baselines behind one call, at the same trainable-parameter budget (GoRA, Sec. 4)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from nips25_gora.adapter import apply_gora
from nips25_gora.config import GoraConfig

__all__ = ["METHODS", "build_method"]

#: Methods the harness knows: GoRA, peft's LoRA family (incl. data-driven inits) and full fine-tuning.
METHODS: tuple[str, ...] = ("gora", "lora", "rslora", "pissa", "loraga", "eva", "full")


def _token_mask(inputs: dict[str, torch.Tensor], config: Any) -> torch.Tensor:
    """EVA's rows: the attention mask's tokens, every token without one, every row for ``(batch, features)`` input."""
    mask = inputs.get("attention_mask")
    if mask is None and "input_ids" in inputs:
        mask = torch.ones_like(inputs["input_ids"])
    if mask is None:  # e.g. digits-transfer's ``pixels``: each row is one input vector
        first = next(v for k, v in inputs.items() if k != "labels")
        return torch.arange(len(first))[:, None]
    return mask.bool().nonzero()


def build_method(
    method: str,
    model: nn.Module,
    *,
    gora: GoraConfig,
    grad_batches: Sequence[dict[str, torch.Tensor]],
) -> tuple[nn.Module, float]:
    """Wrap ``model`` for ``method``; the LoRA family uses ``gora.r_ref``, ``gora.lora_alpha`` and its targets.

    * ``gora``: :func:`~nips25_gora.apply_gora` on ``grad_batches``.
    * ``lora``: peft LoRA, rank ``r_ref``, scaling :math:`\\alpha/r`;
      ``rslora``: the same with :math:`\\alpha/\\sqrt r`.
    * ``pissa``: peft's PiSSA init (changes the base weights); ``loraga``: peft's LoRA-GA on ``grad_batches``;
      ``eva``: peft's EVA on ``grad_batches`` (rank redistribution, ``rho=2``).
    * ``full``: every parameter trainable (no adapter).

    Returns:
        ``(model, init_seconds)``: the wrapped model and the wall time of its initialisation.

    Raises:
        ValueError: if ``method`` is unknown.
    """
    from peft import EvaConfig, LoraConfig, LoraGAConfig, get_peft_model, initialize_lora_eva_weights
    from peft.tuners.lora.loraga import preprocess_loraga

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    start = time.perf_counter()
    if method == "gora":
        out: nn.Module = apply_gora(model, grad_batches, replace(gora, n_steps=len(grad_batches)))
        return out, time.perf_counter() - start
    if method == "full":
        for p in model.parameters():
            p.requires_grad_(True)
        return model, 0.0
    kwargs: dict[str, Any] = {
        "r": gora.r_ref,
        "lora_alpha": gora.lora_alpha,
        "target_modules": list(gora.target_modules),
        "modules_to_save": list(gora.modules_to_save) or None,
        "lora_dropout": gora.lora_dropout,
    }
    if method == "rslora":
        kwargs["use_rslora"] = True
    elif method == "pissa":
        kwargs["init_lora_weights"] = "pissa"
    elif method == "loraga":
        kwargs.update(init_lora_weights="lora_ga", lora_ga_config=LoraGAConfig())
    elif method == "eva":
        kwargs.update(init_lora_weights="eva", eva_config=EvaConfig(rho=2.0))
    config = LoraConfig(**kwargs)
    if method == "loraga":

        def train_step() -> None:
            for batch in grad_batches:
                (model(**batch).loss / len(grad_batches)).backward()

        preprocess_loraga(model, config, train_step)
    out = get_peft_model(model, config, low_cpu_mem_usage=method == "eva")
    if method == "eva":
        initialize_lora_eva_weights(
            out, dataloader=list(grad_batches), prepare_model_inputs_fn=_token_mask, show_progress_bar=False
        )
    return out, time.perf_counter() - start
