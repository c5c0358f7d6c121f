"""LoRA on a diffusers UNet through peft: add, list, switch off (the reference), save as a plain diffusers LoRA."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import torch
from peft import LoraConfig
from peft.tuners.tuners_utils import BaseTunerLayer

__all__ = ["SD_TARGETS", "adapters_disabled", "add_unet_lora", "lora_parameters", "save_lora"]

SD_TARGETS = ("to_q", "to_k", "to_v", "to_out.0")


def add_unet_lora(
    unet: torch.nn.Module,
    *,
    r: int = 4,
    alpha: float = 4.0,
    init: Literal["gaussian", "default"] = "gaussian",
    target_modules: Sequence[str] = SD_TARGETS,
) -> dict[str, torch.nn.Parameter]:
    """Add a LoRA adapter to ``unet`` and freeze every other weight (GradSPO/SPO: r 4, alpha 4, gaussian init).

    ``UNet2DConditionModel`` gets it through diffusers' ``add_adapter`` (so ``save_lora`` writes a checkpoint that
    ``pipe.load_lora_weights`` reads); other modules (``UNet2DModel``) through ``peft.inject_adapter_in_model``.
    peft's "gaussian" init draws A and zeroes B, so the adapted UNet starts equal to the base.

    Args:
        unet: the UNet.
        r: rank (>= 1).
        alpha: LoRA alpha (> 0).
        init: peft ``init_lora_weights``: ``"gaussian"`` or ``"default"``.
        target_modules: module-name suffixes to adapt.

    Returns:
        ``{name: parameter}`` of the trainable LoRA parameters.

    Raises:
        ValueError: if ``r < 1``, ``alpha <= 0``, ``init`` is unknown or no module matches ``target_modules``.
    """
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise ValueError(f"r must be an int >= 1, got {r!r}")
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha!r}")
    if init not in ("gaussian", "default"):
        raise ValueError(f"init must be 'gaussian' or 'default', got {init!r}")
    names = [n for n, _ in unet.named_modules()]
    if not target_modules or not any(n.endswith(tuple(target_modules)) for n in names):
        raise ValueError(f"target_modules {list(target_modules)} match no module of the UNet")
    config = LoraConfig(
        r=r, lora_alpha=alpha,  # type: ignore[arg-type]
        init_lora_weights=True if init == "default" else "gaussian",
        target_modules=list(target_modules),
    )  # fmt: skip
    unet.requires_grad_(False)
    add_adapter = getattr(unet, "add_adapter", None)
    if callable(add_adapter):
        add_adapter(config)
    else:
        from peft import inject_adapter_in_model

        inject_adapter_in_model(config, unet)
    params = lora_parameters(unet)
    for p in params.values():
        p.requires_grad_(True)
    return params


def lora_parameters(unet: torch.nn.Module) -> dict[str, torch.nn.Parameter]:
    """``{name: parameter}`` of every LoRA weight (``lora_A``/``lora_B``) in ``unet``.

    Raises:
        ValueError: if ``unet`` has no LoRA adapter.
    """
    params = {n: p for n, p in unet.named_parameters() if "lora_" in n}
    if not params:
        raise ValueError("unet has no LoRA adapter; call add_unet_lora first")
    return params


@contextmanager
def adapters_disabled(unet: torch.nn.Module) -> Iterator[None]:
    """Within the block the UNet computes with its base weights only (the reference model; no weight copy)."""
    layers = [m for m in unet.modules() if isinstance(m, BaseTunerLayer)]
    if not layers:
        raise ValueError("unet has no LoRA adapter; call add_unet_lora first")
    for m in layers:
        m.enable_adapters(False)
    try:
        yield
    finally:
        for m in layers:
            m.enable_adapters(True)


def save_lora(pipe: Any, out_dir: str | Path, *, is_main_process: bool = True) -> Path:
    """Save the UNet LoRA of a diffusers pipeline so that vanilla ``pipe.load_lora_weights(out_dir)`` loads it.

    The peft adapter config (rank, ``lora_alpha``, target modules, ...) is written into the safetensors header as
    ``unet_lora_adapter_metadata``, so a LoRA with ``alpha != r`` reloads with its own scale ``alpha / r`` (without
    it diffusers infers ``alpha = r`` from the weight shapes).

    Args:
        pipe: a ``StableDiffusionPipeline`` or ``StableDiffusionXLPipeline`` whose UNet has a LoRA (the UNet may be
            wrapped by ``accelerate``/DDP; it is unwrapped).
        out_dir: directory to write ``pytorch_lora_weights.safetensors`` into.
        is_main_process: write only when ``True`` (pass ``accelerator.is_main_process`` under data parallelism, after
            ``accelerator.wait_for_everyone()``).

    Returns:
        ``out_dir`` as a ``Path``.

    Raises:
        TypeError: if ``pipe`` has no ``save_lora_weights``.
        ValueError: if the UNet has no LoRA adapter.
    """
    from diffusers.utils import convert_state_dict_to_diffusers
    from peft.utils import get_peft_model_state_dict

    if not hasattr(type(pipe), "save_lora_weights") or not hasattr(pipe, "unet"):
        raise TypeError(f"pipe must be a diffusers SD/SDXL pipeline, got {type(pipe).__name__}")
    unet = getattr(pipe.unet, "module", pipe.unet)
    lora_parameters(unet)
    out = Path(out_dir)
    if not is_main_process:
        return out
    peft_config = getattr(unet, "peft_config", None)
    if not peft_config:
        raise ValueError("pipe.unet has no peft adapter config; add the LoRA with add_unet_lora")
    adapter = next(iter(peft_config))
    layers = convert_state_dict_to_diffusers(get_peft_model_state_dict(unet, adapter_name=adapter))
    type(pipe).save_lora_weights(
        str(out), unet_lora_layers=layers, safe_serialization=True,
        unet_lora_adapter_metadata=peft_config[adapter].to_dict(),
    )  # fmt: skip
    return out
