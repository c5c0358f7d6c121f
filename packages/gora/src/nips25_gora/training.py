"""Fine-tuning under ``accelerate`` with optional LoRA+ (the paper's training recipe), and evaluation."""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from nips25_shared import progress

__all__ = [
    "TensorDictDataset",
    "TrainConfig",
    "TrainLog",
    "evaluate_accuracy",
    "make_loader",
    "mean_loss",
    "train",
    "trim_padding",
]


class TensorDictDataset(Dataset[dict[str, torch.Tensor]]):
    """A dataset of rows of a dict of equally long tensors (``input_ids``, ``attention_mask``, ``labels``, ...)."""

    def __init__(self, tensors: Mapping[str, torch.Tensor]) -> None:
        if not tensors:
            raise ValueError("tensors must be a non-empty mapping of name -> tensor")
        lengths = {k: len(v) for k, v in tensors.items()}
        if len(set(lengths.values())) != 1 or next(iter(lengths.values())) == 0:
            raise ValueError(f"tensors must be non-empty and of equal length, got lengths {lengths}")
        self.tensors = dict(tensors)

    def __len__(self) -> int:
        return len(next(iter(self.tensors.values())))

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {k: v[i] for k, v in self.tensors.items()}


def trim_padding(rows: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Stack rows into a batch and drop the trailing columns that are padding in every row (``attention_mask``)."""
    batch = {k: torch.stack([r[k] for r in rows]) for k in rows[0]}
    mask = batch.get("attention_mask")
    if mask is not None and mask.ndim == 2:
        length = max(int(mask.sum(1).max()), 1)
        batch = {k: v[:, :length] if v.ndim == 2 and v.shape[1] == mask.shape[1] else v for k, v in batch.items()}
    return batch


def make_loader(data: Mapping[str, torch.Tensor], *, batch_size: int, seed: int, shuffle: bool = True) -> DataLoader:
    """A ``DataLoader`` over ``data`` whose order depends only on ``seed``; batches are trimmed of padding."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    gen = torch.Generator().manual_seed(seed)
    return DataLoader(
        TensorDictDataset(data), batch_size=batch_size, shuffle=shuffle, generator=gen, collate_fn=trim_padding
    )


@dataclass(frozen=True)
class TrainConfig:
    """Training hyper-parameters (paper: AdamW, cosine, warmup 3%, LoRA+ ratio 16).

    Attributes:
        steps: optimizer steps, ``>= 1``.
        batch_size: examples per step of the experiments' loaders (:func:`make_loader`); :func:`train` itself
            takes the batch size of the ``loader`` it is given and does not read this field.
        lr: learning rate of ``lora_A`` (and of every parameter when ``lora_plus_ratio == 1``).
        lora_plus_ratio: :math:`\\eta_B/\\eta_A` (LoRA+, peft's ``create_loraplus_optimizer``); 1 disables it.
        weight_decay: AdamW weight decay.
        warmup_ratio: share of ``steps`` with linear warmup before the cosine decay.
        max_grad_norm: gradient clipping (``None``: none).
    """

    steps: int = 100
    batch_size: int = 16
    lr: float = 5e-4
    lora_plus_ratio: float = 16.0
    weight_decay: float = 0.0
    warmup_ratio: float = 0.03
    max_grad_norm: float | None = 1.0

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {value!r}")
        for name in ("lr", "lora_plus_ratio", "weight_decay", "warmup_ratio", "max_grad_norm"):
            value = getattr(self, name)
            if name == "max_grad_norm" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite real number, got {value!r}")
        if self.steps < 1:
            raise ValueError(f"steps must be >= 1, got {self.steps}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if not math.isfinite(self.lr) or self.lr <= 0:
            raise ValueError(f"lr must be a finite number > 0, got {self.lr}")
        if not math.isfinite(self.lora_plus_ratio) or self.lora_plus_ratio < 1:
            raise ValueError(f"lora_plus_ratio must be >= 1, got {self.lora_plus_ratio}")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}")
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        if self.max_grad_norm is not None and self.max_grad_norm <= 0:
            raise ValueError(f"max_grad_norm must be None or > 0, got {self.max_grad_norm}")


@dataclass
class TrainLog:
    """Per-step training losses, the learning rate each step used (of the first parameter group), and wall time."""

    losses: list[float] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)
    seconds: float = 0.0
    seconds_per_step: float = 0.0


def _optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    from peft import PeftModel

    if isinstance(model, PeftModel) and config.lora_plus_ratio != 1:
        from peft.optimizers import create_loraplus_optimizer

        return create_loraplus_optimizer(
            model,
            torch.optim.AdamW,
            lr=config.lr,
            loraplus_lr_ratio=config.lora_plus_ratio,
            loraplus_weight_decay=config.weight_decay,
        )
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)


def _cycle(loader: DataLoader) -> Iterator[Any]:
    while True:
        yield from loader


def train(model: nn.Module, loader: DataLoader, config: TrainConfig, *, accelerator: Any = None) -> TrainLog:
    """Fine-tune ``model`` (a ``PeftModel`` or a plain model for full fine-tuning) for ``config.steps`` steps.

    The loop runs under ``accelerate`` (``accelerate launch`` takes it to many processes and GPUs): model,
    optimizer and loader go through ``accelerator.prepare``, so each process draws its own share of every global
    batch (``loader.batch_size`` rows per process; global batch ``num_processes * batch_size``) and the gradients
    are averaged across processes. The learning-rate schedule (linear warmup, cosine decay over ``config.steps``)
    is *not* prepared: accelerate steps a prepared scheduler once per process per optimizer step, which under
    ``N`` processes ends the cosine at step ``steps / N`` and climbs back. It is stepped here once per real
    optimizer step (skipped steps of mixed precision do not count). A ``PeftModel`` gets LoRA+ (``lora_B`` and
    1-D parameters at ``lr * lora_plus_ratio``). The loop writes no files.

    Args:
        model: the model; ``model(**batch).loss`` is minimised.
        loader: ``DataLoader`` of batches with ``labels`` (cycled when shorter than ``steps``).
        config: :class:`TrainConfig`.
        accelerator: an ``accelerate.Accelerator`` (device placement, processes, mixed precision); a default one
            is made when ``None``.

    Returns:
        :class:`TrainLog` with the loss of each step (averaged over processes) and the loop's wall time. The
        trained model is updated in place (take attributes through ``accelerator.unwrap_model``).

    Raises:
        TypeError: if ``config`` is not a :class:`TrainConfig`.
        ValueError: if a step's loss is not finite (the message names the step; nothing is trained further).

    Example:
        >>> from torch import nn
        >>> class Regressor(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.lin = nn.Linear(2, 1)
        ...     def forward(self, x, labels):
        ...         return type("Out", (), {"loss": ((self.lin(x)[:, 0] - labels) ** 2).mean()})()
        >>> _ = torch.manual_seed(0)
        >>> data = {"x": torch.randn(16, 2), "labels": torch.randn(16)}
        >>> log = train(Regressor(), make_loader(data, batch_size=4, seed=0),
        ...             TrainConfig(steps=8, batch_size=4, lr=1e-2, lora_plus_ratio=1.0))
        >>> len(log.losses)
        8
    """
    from accelerate import Accelerator
    from transformers import get_cosine_schedule_with_warmup

    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    accelerator = accelerator or Accelerator()
    optimizer = _optimizer(model, config)
    scheduler = get_cosine_schedule_with_warmup(optimizer, math.ceil(config.warmup_ratio * config.steps), config.steps)
    # The scheduler stays outside ``prepare``: a prepared scheduler steps once per process per optimizer step.
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    model.train()
    log = TrainLog()
    params = [p for p in model.parameters() if p.requires_grad]
    batches = _cycle(loader)
    start = time.perf_counter()
    steps = range(config.steps)
    for _ in progress(steps, desc="train") if accelerator.is_main_process else steps:
        batch = next(batches)
        loss = model(**batch).loss
        if not bool(torch.isfinite(loss.detach())):
            raise ValueError(
                f"the training loss is not finite ({float(loss.detach())}) at step {len(log.losses)} of "
                f"{config.steps}: "
                "lower config.lr, or check the loader's batches for NaN/inf inputs or out-of-range labels"
            )
        accelerator.backward(loss)
        if config.max_grad_norm is not None:
            accelerator.clip_grad_norm_(params, config.max_grad_norm)
        log.lrs.append(float(optimizer.param_groups[0]["lr"]))
        optimizer.step()
        if not accelerator.optimizer_step_was_skipped:
            scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        log.losses.append(float(accelerator.reduce(loss.detach(), reduction="mean")))
    log.seconds = time.perf_counter() - start
    log.seconds_per_step = log.seconds / config.steps
    return log


@torch.no_grad()
def evaluate_accuracy(model: nn.Module, data: Mapping[str, torch.Tensor], *, batch_size: int = 64) -> float:
    """Accuracy of ``argmax(model(**inputs).logits)`` against ``data["labels"]`` (eval mode, no dropout).

    Args:
        data: ``{name: tensor}`` of model inputs plus ``labels`` (``(n,)`` int64), all with ``n >= 1`` rows.
        batch_size: rows per forward pass, ``>= 1``.

    Returns:
        The share of rows whose arg-max logit equals the label, in [0, 1].

    Raises:
        ValueError: if ``labels`` is missing or empty, the tensors differ in length, or ``batch_size < 1``.
    """
    if "labels" not in data:
        raise ValueError("data must hold 'labels'")
    lengths = {k: len(v) for k, v in data.items()}
    if len(set(lengths.values())) != 1 or lengths["labels"] == 0:
        raise ValueError(f"data must hold non-empty tensors of equal length, got lengths {lengths}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    correct = 0
    n = len(data["labels"])
    for i in range(0, n, batch_size):
        batch = {k: v[i : i + batch_size].to(device) for k, v in data.items() if k != "labels"}
        pred = model(**batch).logits.argmax(-1).cpu()
        correct += int((pred == data["labels"][i : i + batch_size]).sum())
    model.train(was_training)
    return correct / n


@torch.no_grad()
def mean_loss(model: nn.Module, batches: list[Mapping[str, torch.Tensor]]) -> float:
    """Mean of ``model(**batch).loss`` over ``batches`` in eval mode (no dropout)."""
    if not batches:
        raise ValueError("batches must be non-empty")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    total = sum(float(model(**{k: v.to(device) for k, v in b.items()}).loss) for b in batches)
    model.train(was_training)
    return total / len(batches)
