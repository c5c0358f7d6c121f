"""Mean gradients of the target weights over a few batches, before any adapter exists (GoRA, Sec. 3.1)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import torch
from peft.tuners.tuners_utils import BaseTunerLayer
from torch import nn

from nips25_gora.config import IMPORTANCE_KINDS, ImportanceKind
from nips25_gora.importance import importance
from nips25_shared import get_logger, progress

__all__ = ["LossFn", "accumulate_gradients", "default_loss", "find_target_linears"]

log = get_logger(__name__)

LossFn = Callable[[nn.Module, Any], torch.Tensor]


def default_loss(model: nn.Module, batch: Any) -> torch.Tensor:
    """``model(**batch).loss``: the loss a Hugging Face model computes when the batch holds ``labels``."""
    if not isinstance(batch, Mapping):
        raise TypeError(f"batch must be a mapping of model inputs (with labels), got {type(batch).__name__}")
    out = model(**batch)
    loss = getattr(out, "loss", None)
    if loss is None:
        raise ValueError("the model returned no loss: the batch must hold 'labels', or pass loss_fn")
    return loss


def find_target_linears(model: nn.Module, target_modules: Sequence[str]) -> dict[str, nn.Linear]:
    """The ``nn.Linear`` modules whose name equals a target or ends with ``"." + target`` (peft's list semantics).

    Raises:
        ValueError: if a target matches no module, or ``target_modules`` is empty.
        TypeError: if a matched module is not an ``nn.Linear`` (GPT-2's ``Conv1D`` stores the transposed weight and
            is rejected rather than silently mis-read).
    """
    if isinstance(target_modules, str) or not target_modules:
        raise ValueError(f"target_modules must be a non-empty sequence of names, got {target_modules!r}")
    found: dict[str, nn.Linear] = {}
    used: set[str] = set()
    for name, module in model.named_modules():
        hits = [t for t in target_modules if name == t or name.endswith("." + t)]
        if not hits:
            continue
        if isinstance(module, BaseTunerLayer):
            raise TypeError(
                f"model: {name!r} is already a peft {type(module).__module__.rsplit('.', 1)[-1]}."
                f"{type(module).__name__} layer; apply_gora (or get_peft_model) was already applied to this model, "
                "and peft injects its layers in place. Pass a fresh base model (reload it, or copy.deepcopy it "
                "before the first call)"
            )
        if not isinstance(module, nn.Linear):
            raise TypeError(
                f"target_modules: {name!r} is a {type(module).__name__}; GoRA supports nn.Linear layers only"
            )
        found[name] = module
        used.update(hits)
    unmatched = [t for t in target_modules if t not in used]
    if unmatched:
        raise ValueError(f"target_modules: {unmatched} match no module of the model")
    return found


def accumulate_gradients(
    model: nn.Module,
    batches: Iterable[Any],
    *,
    target_modules: Sequence[str],
    n_steps: int = 32,
    loss_fn: LossFn | None = None,
    accelerator: Any = None,
    early_stop_tol: float | None = None,
    importance_kind: ImportanceKind = "union_mean",
    offload_to_cpu: bool = False,
) -> dict[str, torch.Tensor]:
    r"""Mean gradient :math:`\bar G_i = \frac1N\sum_{s=1}^N \partial L_s/\partial W_i` of every target weight.

    Only the target weights require gradients while this runs (everything else is frozen, and restored after).
    Each weight's gradient is added into a float32 accumulator by a post-accumulate-grad hook and ``p.grad`` is
    freed at once. The accumulators live on the weight's device (no host transfer per layer and step; costs one
    float32 copy of every target weight in accelerator memory); ``offload_to_cpu=True`` keeps them in host memory
    instead (the official code's choice, for models whose targets do not fit twice on the device), at the price
    of a device-to-host copy per layer per step. Memory on top of the model: the float32 accumulators
    (``4 * sum(numel)`` bytes) plus one target gradient at a time; the returned means are the accumulators
    divided in place (no second copy). Under a multi-process ``accelerate`` run the sums and step counts
    are added across processes (each process feeds its own batches), so the result is the mean over every batch
    of every process. The model runs in eval mode (no dropout), so the result is deterministic; the previous mode
    is restored.

    Early stop (official code): when ``early_stop_tol`` is set, stop after step :math:`t\ge 3` once every layer has
    :math:`|I_t - I_{t-1}|/I_{t-1} < \mathrm{tol}` for the importance of the running mean.

    Args:
        model: a ``torch.nn.Module`` (e.g. a Hugging Face model) holding the target ``nn.Linear`` layers.
        batches: iterable of batches; ``loss_fn(model, batch)`` gives a scalar loss. The first ``n_steps`` are used.
        target_modules: names (peft list semantics: exact or dotted suffix) of the target layers.
        n_steps: :math:`N`, the number of batches, ``>= 1``.
        loss_fn: ``(model, batch) -> scalar loss``; default ``model(**batch).loss``.
        accelerator: an ``accelerate.Accelerator`` (optional): moves batches to its device, uses its ``backward``
            and averages the result across processes.
        early_stop_tol: relative importance change below which accumulation stops (None: run all steps).
        importance_kind: importance used by the early-stop rule.
        offload_to_cpu: keep the float32 accumulators in host memory (default: on the weight's device).

    Returns:
        ``{module_name: G_i}`` with ``G_i`` a ``(out_features, in_features)`` float32 tensor on the weight's device
        (on the CPU with ``offload_to_cpu=True``).

    Raises:
        ValueError: if ``n_steps < 1``, ``batches`` is empty, a target matches nothing, or a gradient is not finite.
        TypeError: if a target is not an ``nn.Linear`` or ``batches`` is not iterable.

    An exception raised by ``loss_fn`` (e.g. the model's own error for out-of-vocabulary ids or mismatched labels)
    propagates with a note naming the index of the offending batch in ``batches``.

    References:
        He et al., "GoRA: Gradient-driven Adaptive Low Rank Adaptation", NeurIPS 2025, arXiv:2502.12171, Sec. 3.1;
        official code ``common/lora_modules/grad_utils.py``.

    Example:
        >>> net = nn.Sequential(nn.Linear(3, 2))
        >>> g = accumulate_gradients(net, [torch.ones(1, 3)], target_modules=["0"], n_steps=1,
        ...                          loss_fn=lambda m, x: m(x).sum())
        >>> g["0"]
        tensor([[1., 1., 1.],
                [1., 1., 1.]])
    """
    if isinstance(n_steps, bool) or not isinstance(n_steps, int) or n_steps < 1:
        raise ValueError(f"n_steps must be an int >= 1, got {n_steps!r}")
    if early_stop_tol is not None and (not math.isfinite(early_stop_tol) or early_stop_tol <= 0):
        raise ValueError(f"early_stop_tol must be None or a finite number > 0, got {early_stop_tol!r}")
    if importance_kind not in IMPORTANCE_KINDS:
        raise ValueError(f"importance_kind must be one of {IMPORTANCE_KINDS}, got {importance_kind!r}")
    try:
        batch_iter = iter(batches)
    except TypeError:
        raise TypeError(
            f"batches must be an iterable of batches (a list or a DataLoader), got {type(batches).__name__}"
        ) from None
    loss_fn = loss_fn or default_loss
    targets = find_target_linears(model, target_modules)
    params = {name: mod.weight for name, mod in targets.items()}
    if not isinstance(offload_to_cpu, bool):
        raise TypeError(f"offload_to_cpu must be a bool, got {offload_to_cpu!r}")
    acc = {
        name: torch.zeros(p.shape, dtype=torch.float32, device="cpu" if offload_to_cpu else p.device)
        for name, p in params.items()
    }
    saved_flags = {id(p): p.requires_grad for p in model.parameters()}
    was_training = model.training
    hooks = []

    def make_hook(name: str) -> Callable[[torch.Tensor], None]:
        def hook(p: torch.Tensor) -> None:
            assert p.grad is not None
            grad = p.grad.detach()
            if grad.device != acc[name].device:  # offloaded: copy in the gradient's own dtype (fewer bytes)
                grad = grad.to(acc[name].device)
            acc[name].add_(grad)  # in place, float32 (a bf16 gradient is promoted element-wise, no float32 copy)
            p.grad = None

        return hook

    steps = 0
    try:
        for param in model.parameters():
            param.requires_grad_(False)
        for name, weight in params.items():
            weight.requires_grad_(True)
            hooks.append(weight.register_post_accumulate_grad_hook(make_hook(name)))
        model.eval()
        previous: dict[str, float] | None = None
        for batch in progress(batch_iter, total=n_steps, desc="GoRA gradients"):
            if steps >= n_steps:
                break
            if accelerator is not None:
                from accelerate.utils import send_to_device

                batch = send_to_device(batch, accelerator.device)
            try:
                loss = loss_fn(model, batch)
            except Exception as e:  # a model error (bad ids, label shape) says nothing about which input it came from
                e.add_note(f"GoRA gradient pass: raised by loss_fn(model, batch) on batch {steps} of `batches`")
                raise
            if not isinstance(loss, torch.Tensor) or loss.ndim != 0:
                raise ValueError(f"loss_fn must return a scalar tensor, got {loss!r}")
            if not loss.requires_grad:
                raise ValueError(
                    "loss_fn returned a loss that does not require grad: it must be computed from the model's output "
                    "with autograd on (not under torch.no_grad(), not detached, not .item())"
                )
            if not bool(torch.isfinite(loss)):
                raise ValueError(f"the loss of batch {steps} is not finite ({loss.item()})")
            if accelerator is not None:
                accelerator.backward(loss)
            else:
                loss.backward()
            steps += 1
            if early_stop_tol is not None:
                current = {
                    n: importance(p.detach().to(acc[n].device), acc[n] / steps, kind=importance_kind)
                    for n, p in params.items()
                }
                if previous is not None and steps >= 3:
                    change = max(abs(current[n] - previous[n]) / max(previous[n], 1e-30) for n in current)
                    if change < early_stop_tol:
                        log.info("GoRA gradient accumulation stopped early after %d steps", steps)
                        break
                previous = current
    finally:
        for h in hooks:
            h.remove()
        for p in model.parameters():
            p.requires_grad_(saved_flags[id(p)])
            p.grad = None
        model.train(was_training)
    if steps == 0:
        raise ValueError("batches must yield at least one batch, got an empty iterable")
    if steps < n_steps and early_stop_tol is None:
        log.warning("batches ran out after %d of n_steps=%d batches", steps, n_steps)
    distributed = accelerator is not None and getattr(accelerator, "num_processes", 1) > 1
    total_steps: float = steps
    if distributed:  # the mean over every batch of every process, also when processes stopped at different steps
        count = torch.tensor(float(steps), device=accelerator.device)
        total_steps = float(accelerator.reduce(count, reduction="sum"))
    # The mean is formed in the accumulators themselves (divided in place, checked by min/max): no second copy of
    # every target gradient exists at the end (0.2.2 held sum and mean at once: twice the accumulator memory).
    mean = {}
    for name in list(acc):
        total = acc.pop(name)
        if distributed:  # accelerate's reduce returns a copy; the popped sum is freed when ``total`` is rebound
            total = accelerator.reduce(total.to(accelerator.device), reduction="sum").to(total.device)
        total.div_(total_steps)
        if total.numel() and not all(math.isfinite(float(v)) for v in torch.aminmax(total)):  # NaN propagates
            raise ValueError(f"the accumulated gradient of {name!r} holds NaN or inf")
        mean[name] = total
    return mean
