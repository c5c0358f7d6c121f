"""One preprocessing call that turns a model into a GoRA-initialised peft LoRA ``PeftModel`` (GoRA, Alg. 1)."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from peft.tuners.lora import LoraLayer
from torch import nn

from nips25_gora.allocation import allocate_ranks, lora_budget, realised_budget
from nips25_gora.config import GoraConfig
from nips25_gora.gradients import LossFn, accumulate_gradients, find_target_linears
from nips25_gora.importance import importance
from nips25_gora.initialization import compress_init, lora_scaling
from nips25_shared import get_logger
from nips25_shared.logs import is_main_rank

__all__ = ["GoraInit", "apply_gora", "check_rank_pattern", "export_rank_json", "rank_pattern_keys", "save_adapter"]

log = get_logger(__name__)
ADAPTER = "default"


@dataclass(frozen=True)
class GoraInit:
    """What :func:`apply_gora` decided and how long it took (attached to the model as ``model.gora_init``).

    Attributes:
        ranks: ``{module_name: r_i}``.
        importances: ``{module_name: I_i}``.
        shapes: ``{module_name: (m_i, n_i)}``.
        budget: LoRA's budget :math:`B=\\sum_i r_{ref}(m_i+n_i)` in parameters.
        realised: :math:`\\sum_i r_i(m_i+n_i)`.
        grad_seconds: wall time of the gradient accumulation.
        init_seconds: wall time of everything after it (allocation, peft wrapping, solves).
        relative_error: ``{module_name: ||s B A + xi G||_F / (xi ||G||_F)}``; 0 at full rank.
    """

    ranks: dict[str, int]
    importances: dict[str, float]
    shapes: dict[str, tuple[int, int]]
    budget: int
    realised: int
    grad_seconds: float
    init_seconds: float
    relative_error: dict[str, float]

    @property
    def total_seconds(self) -> float:
        """Gradient accumulation plus initialisation, in seconds."""
        return self.grad_seconds + self.init_seconds


def rank_pattern_keys(ranks: Mapping[str, int]) -> dict[str, int]:
    """peft ``rank_pattern`` whose keys match exactly one module each: ``"^" + re.escape(full module name)``.

    peft matches a key with ``re.match(rf"(.*\\.)?({key})$", name)`` and silently falls back to ``r`` when no key
    matches; a bare suffix such as ``"layer.1.query"`` would also match ``"layer.11.query"``'s neighbours.

    Example:
        >>> rank_pattern_keys({"fc1": 12, "fc2": 3})
        {'^fc1': 12, '^fc2': 3}
    """
    return {"^" + re.escape(name): int(r) for name, r in ranks.items()}


def check_rank_pattern(model: nn.Module, rank_pattern: Mapping[str, int]) -> dict[str, str]:
    """Check that each ``rank_pattern`` key matches exactly one LoRA layer of ``model`` and that its rank is used.

    Matching follows ``peft.utils.other.get_pattern_key``. Returns ``{key: module_name}``.

    Raises:
        ValueError: if a key matches no LoRA module or several, or a matched layer's ``lora_A`` has another rank.
    """
    layers = {name: mod for name, mod in model.named_modules() if isinstance(mod, LoraLayer)}
    # PeftModel prefixes names with "base_model.model."; peft matches against the name inside the wrapped model.
    prefix = "base_model.model."
    inner = {(n[len(prefix) :] if n.startswith(prefix) else n): m for n, m in layers.items()}
    out = {}
    for key, r in rank_pattern.items():
        hits = [n for n in inner if re.match(rf"(.*\.)?({key})$", n)]
        if len(hits) != 1:
            raise ValueError(f"rank_pattern key {key!r} matches {len(hits)} modules ({hits[:3]}), expected exactly 1")
        layer = inner[hits[0]]
        got = layer.r.get(ADAPTER) if hasattr(layer, "r") else None
        if got != r:
            raise ValueError(f"rank_pattern key {key!r}: module {hits[0]!r} has rank {got}, expected {r}")
        out[key] = hits[0]
    return out


def export_rank_json(
    info: GoraInit, path: str | os.PathLike[str], *, is_main_process: bool | None = None
) -> Path | None:
    """Write ``rank.json`` (as the official code does): ranks, importances, shapes, budget, timings.

    Only the main process writes: under a distributed launch the other ranks return ``None`` without touching
    the file system (the caller should have the ranks wait for each other before reading the file).

    Args:
        info: the :class:`GoraInit` of :func:`apply_gora` (``model.gora_init``).
        path: a file path, or an existing directory (then ``path / "rank.json"``).
        is_main_process: whether this process writes; ``None`` decides from the launch environment
            (``nips25_shared.logs.is_main_rank``: ``RANK``/``LOCAL_RANK`` unset or 0). Pass
            ``accelerator.is_main_process`` when an ``Accelerator`` is at hand.

    Returns:
        The path written, or ``None`` on a non-main process.

    Example:
        >>> import tempfile
        >>> info = GoraInit(ranks={"0": 2}, importances={"0": 1.0}, shapes={"0": (4, 4)}, budget=16, realised=16,
        ...                 grad_seconds=0.0, init_seconds=0.0, relative_error={"0": 0.0})
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     export_rank_json(info, tmp).name, export_rank_json(info, tmp, is_main_process=False)
        ('rank.json', None)
    """
    if not (is_main_rank() if is_main_process is None else is_main_process):
        return None
    p = Path(path)
    if p.is_dir():
        p = p / "rank.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(asdict(info), indent=2) + "\n")
    return p


def save_adapter(model: nn.Module, out_dir: str | os.PathLike[str], *, accelerator: Any = None) -> Path | None:
    """Save a GoRA ``PeftModel`` (adapter weights + ``adapter_config.json``) and its ``rank.json`` to ``out_dir``.

    Safe under a multi-process ``accelerate`` run: every process waits for the others
    (``accelerator.wait_for_everyone()``), then only the main process writes, from the unwrapped model
    (``accelerator.unwrap_model``, so a DDP-wrapped model saves like the plain one). Without an ``accelerator``
    the main process is read from the launch environment (``RANK``/``LOCAL_RANK`` unset or 0,
    ``nips25_shared.logs.is_main_rank``): the other ranks write nothing (they do not wait; pass the accelerator
    for that). The files load with ``PeftModel.from_pretrained(base, out_dir)`` without this package.

    Args:
        model: the ``PeftModel`` returned by :func:`apply_gora` (possibly prepared by ``accelerator``).
        out_dir: output directory (created).
        accelerator: the run's ``accelerate.Accelerator``; ``None`` for a single process.

    Returns:
        ``out_dir`` as a ``Path`` on the process that wrote, ``None`` on the others.

    Raises:
        TypeError: if the (unwrapped) model is not a ``PeftModel``.

    Example:
        >>> import tempfile
        >>> from peft import LoraConfig, get_peft_model
        >>> peft_model = get_peft_model(nn.Sequential(nn.Linear(4, 4)), LoraConfig(r=2, target_modules=["0"]))
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     out = save_adapter(peft_model, tmp)
        ...     sorted(f.name for f in out.iterdir())
        ['README.md', 'adapter_config.json', 'adapter_model.safetensors']
    """
    inner = accelerator.unwrap_model(model) if accelerator is not None else model
    if not isinstance(inner, PeftModel):
        raise TypeError(f"model must be a peft PeftModel (from apply_gora), got {type(inner).__name__}")
    if accelerator is not None:
        accelerator.wait_for_everyone()
        if not accelerator.is_main_process:
            return None
    elif not is_main_rank():
        return None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    inner.save_pretrained(str(out))
    info = getattr(inner, "gora_init", None)
    if isinstance(info, GoraInit):
        export_rank_json(info, out, is_main_process=True)
    return out


def _check_modules_to_save(model: nn.Module, modules_to_save: tuple[str, ...]) -> None:
    """Raise if a ``modules_to_save`` name matches no module (peft would silently train and save nothing for it)."""
    names = [name for name, _ in model.named_modules(remove_duplicate=False)]
    missing = [m for m in modules_to_save if not any(n.endswith(m) for n in names)]  # peft: ``key.endswith(name)``
    if missing:
        raise ValueError(
            f"modules_to_save: {missing} match no module of the model (peft would silently leave them out of "
            "training and of the saved adapter)"
        )


def apply_gora(
    model: nn.Module,
    batches: Iterable[Any],
    config: GoraConfig,
    *,
    loss_fn: LossFn | None = None,
    accelerator: Any = None,
) -> PeftModel:
    r"""Wrap ``model`` in a peft LoRA adapter with GoRA's ranks and initialisation (GoRA, Alg. 1).

    1. :func:`~nips25_gora.accumulate_gradients`: :math:`\bar G_i` over ``config.n_steps`` batches.
    2. :func:`~nips25_gora.importance` and :func:`~nips25_gora.allocate_ranks`: :math:`r_i` under LoRA's budget.
    3. ``get_peft_model`` with ``LoraConfig(r=r_ref, use_rslora=rank_stabilized, rank_pattern={^name: r_i})``;
       peft draws ``lora_A`` (kaiming-uniform); :func:`~nips25_gora.compress_init` overwrites ``lora_B`` so that
       :math:`\Delta W_i(0) = -\xi\sqrt{n_i/r_i}\,\bar G_i P_{A_i}`.

    The base weights are not modified, so ``disable_adapter()`` gives the base model exactly, and the saved adapter
    is an ordinary peft LoRA adapter that loads with ``PeftModel.from_pretrained`` without this package.
    Under a multi-process ``accelerate`` run, :math:`\bar G` is averaged over processes and ``lora_A`` is broadcast
    from the main process, so every process holds the same adapter.

    Args:
        model: the base model (e.g. ``AutoModelForCausalLM`` / ``BertForSequenceClassification``); modified in
            place by peft's wrapping (its base weights stay bit-identical).
        batches: iterable of batches for the gradient pass (see :func:`~nips25_gora.accumulate_gradients`).
        config: the :class:`~nips25_gora.GoraConfig`.
        loss_fn: ``(model, batch) -> scalar loss``; default ``model(**batch).loss``.
        accelerator: optional ``accelerate.Accelerator``.

    Returns:
        The ``PeftModel``; its ``gora_init`` attribute is a :class:`GoraInit` (ranks, importances, timings).

    Raises:
        TypeError: if ``config`` is not a :class:`GoraConfig`, a target is not an ``nn.Linear``, or ``batches``
            is not iterable. An error raised by the model on a batch carries a note naming that batch's index.
        ValueError: if a ``target_modules`` or ``modules_to_save`` name matches nothing, ``batches`` is empty, or
            a loss/gradient is not finite.

    References:
        He et al., "GoRA: Gradient-driven Adaptive Low Rank Adaptation", NeurIPS 2025, arXiv:2502.12171, Alg. 1.

    Example:
        A two-layer regression net; at full rank (``r_i = n_i``) the adapter is exactly one SGD step of size xi:

        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))
        >>> batches = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(2)]
        >>> mse = lambda m, b: ((m(b[0]) - b[1]) ** 2).mean()
        >>> config = GoraConfig(target_modules=("0",), r_ref=4, r_min=4, r_max=4, n_steps=2, xi=0.1)
        >>> peft_model = apply_gora(net, batches, config, loss_fn=mse)
        >>> peft_model.gora_init.ranks
        {'0': 4}
        >>> peft_model.gora_init.relative_error["0"] < 1e-6
        True
    """
    if not isinstance(config, GoraConfig):
        raise TypeError(f"config must be a GoraConfig, got {type(config).__name__}")
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if isinstance(model, PeftModel):
        raise TypeError("model is already a PeftModel: pass the base model")
    targets = find_target_linears(model, config.target_modules)
    _check_modules_to_save(model, config.modules_to_save)
    t0 = time.perf_counter()
    grads = accumulate_gradients(
        model,
        batches,
        target_modules=config.target_modules,
        n_steps=config.n_steps,
        loss_fn=loss_fn,
        accelerator=accelerator,
        early_stop_tol=config.early_stop_tol,
        importance_kind=config.importance,
        offload_to_cpu=config.offload_gradients,
    )
    t1 = time.perf_counter()
    shapes = {name: (mod.out_features, mod.in_features) for name, mod in targets.items()}
    importances = {name: importance(targets[name].weight, grads[name], kind=config.importance) for name in targets}
    ranks = allocate_ranks(
        shapes, importances, r_ref=config.r_ref, r_min=config.r_min, r_max=config.r_max, renormalize=config.renormalize
    )
    pattern = rank_pattern_keys(ranks)
    lora_config = LoraConfig(
        r=config.r_ref,
        lora_alpha=config.lora_alpha,  # type: ignore[arg-type]  # peft annotates int; floats work
        lora_dropout=config.lora_dropout,
        use_rslora=config.rank_stabilized,
        target_modules=list(config.target_modules),
        rank_pattern=pattern,
        modules_to_save=list(config.modules_to_save) or None,
        init_lora_weights=True,
    )
    peft_model = get_peft_model(model, lora_config)
    key_to_name = check_rank_pattern(peft_model, pattern)
    modules = dict(model.named_modules())  # peft wraps ``model`` in place
    errors = {}
    for key, name in key_to_name.items():
        layer = modules[name]
        a = layer.lora_A[ADAPTER].weight
        if accelerator is not None and getattr(accelerator, "num_processes", 1) > 1:
            from accelerate.utils import broadcast

            with torch.no_grad():
                a.copy_(broadcast(a.detach().clone()))
        s = lora_scaling(ranks[name], lora_alpha=config.lora_alpha, rank_stabilized=config.rank_stabilized)
        if abs(layer.scaling[ADAPTER] - s) > 1e-9 * s:
            raise RuntimeError(f"peft's scaling of {name!r} is {layer.scaling[ADAPTER]}, expected {s} ({key})")
        grad = grads.pop(name)  # each mean gradient is freed once its B is solved
        b = compress_init(
            grad,
            a,
            xi=config.xi,
            lora_alpha=config.lora_alpha,
            rank_stabilized=config.rank_stabilized,
            ridge=config.ridge,
        )
        with torch.no_grad():
            layer.lora_B[ADAPTER].weight.copy_(b)
        delta = s * b.double().cpu() @ a.detach().double().cpu()
        g = grad.detach().to("cpu", torch.float64)
        g_norm = float(torch.linalg.matrix_norm(g))
        errors[name] = float(torch.linalg.matrix_norm(delta + config.xi * g)) / (config.xi * g_norm) if g_norm else 0.0
    info = GoraInit(
        ranks=ranks,
        importances=importances,
        shapes=shapes,
        budget=lora_budget(shapes, r_ref=config.r_ref),
        realised=realised_budget(shapes, ranks),
        grad_seconds=t1 - t0,
        init_seconds=time.perf_counter() - t1,
        relative_error=errors,
    )
    setattr(peft_model, "gora_init", info)  # noqa: B010 - nn.Module annotates attributes as Tensor | Module
    log.info(
        "GoRA: %d layers, ranks %d..%d, budget %d/%d (%.3f), %.2f s gradients + %.2f s init",
        len(ranks), min(ranks.values()), max(ranks.values()), info.realised, info.budget,
        info.realised / info.budget, info.grad_seconds, info.init_seconds,
    )  # fmt: skip
    return peft_model
