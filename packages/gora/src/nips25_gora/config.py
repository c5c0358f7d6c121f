"""GoRA's hyper-parameters as one frozen, validated config (defaults: the official Llama run scripts)."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["GoraConfig", "ImportanceKind"]

ImportanceKind = Literal[
    "union_mean", "union_frobenius", "union_nuclear", "grad_mean", "grad_frobenius", "grad_nuclear"
]
IMPORTANCE_KINDS: tuple[str, ...] = (
    "union_mean", "union_frobenius", "union_nuclear", "grad_mean", "grad_frobenius", "grad_nuclear",
)  # fmt: skip


@dataclass(frozen=True)
class GoraConfig:
    """Hyper-parameters of GoRA (He et al., NeurIPS 2025, Sec. 3). Defaults are the official run scripts'.

    Attributes:
        target_modules: names (peft semantics: exact name or dotted suffix) of the ``nn.Linear`` layers to adapt.
        r_ref: rank plain LoRA would use everywhere; sets the budget :math:`B=\\sum_i r_{ref}(m_i+n_i)`.
            ``r_ref > r_max`` warns (``UserWarning``): no layer can exceed ``r_max``, so the budget is not reached.
        r_min: smallest rank a layer may get (scripts: 4).
        r_max: largest rank a layer may get (scripts: 32).
        lora_alpha: LoRA's :math:`\\alpha`; the scaling is :math:`\\alpha/\\sqrt{r_i}` (rsLoRA) or :math:`\\alpha/r_i`.
        xi: size of the compressed gradient-descent step of the initialisation (``--gora-lr``, 5e-2).
        n_steps: number of batches the gradient is averaged over (32 in the LLM scripts).
        importance: importance score; ``union_mean`` (:math:`\\mathrm{mean}|W\\odot\\bar G|`) is the scripts' choice.
        rank_stabilized: rsLoRA scaling :math:`\\alpha/\\sqrt{r_i}` (True, the paper's) or :math:`\\alpha/r_i`.
        early_stop_tol: stop accumulating once every layer's importance changes by less than this relative amount
            between two steps (after at least 3 steps); ``None`` disables it.
        lora_plus_ratio: LoRA+ learning-rate ratio :math:`\\eta_B/\\eta_A` used by :func:`nips25_gora.train`;
            1 disables LoRA+.
        ridge: ``None`` (default): :math:`B` by least squares (``lstsq``), exact at any conditioning of ``lora_A``;
            a number: the Tikhonov term added to :math:`AA^\\top` in the official form (official: ``1e-8``).
        offload_gradients: keep the gradient accumulators in host memory (the official code's choice, for models
            whose target weights do not fit twice on the accelerator); default False: on the weight's device.
        renormalize: rescale the ranks once after clipping so that the realised budget is nearer to :math:`B`
            (the official code does not; default False).
        modules_to_save: extra modules trained in full and saved with the adapter (e.g. a new classifier head).
        lora_dropout: dropout of the LoRA branch (peft's ``lora_dropout``).

    Example:
        >>> GoraConfig(target_modules=("query", "value"), r_ref=4).r_max
        32
        >>> GoraConfig(r_min=0)
        Traceback (most recent call last):
        ...
        ValueError: r_min must be >= 1, got 0
    """

    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    r_ref: int = 8
    r_min: int = 4
    r_max: int = 32
    lora_alpha: float = 16.0
    xi: float = 5e-2
    n_steps: int = 32
    importance: ImportanceKind = "union_mean"
    rank_stabilized: bool = True
    early_stop_tol: float | None = None
    lora_plus_ratio: float = 16.0
    ridge: float | None = None
    renormalize: bool = False
    modules_to_save: tuple[str, ...] = field(default_factory=tuple)
    lora_dropout: float = 0.0
    offload_gradients: bool = False

    def __post_init__(self) -> None:
        for name in ("target_modules", "modules_to_save"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Sequence):
                raise TypeError(f"{name} must be a sequence of module names, got {value!r}")
            if not all(isinstance(v, str) and v for v in value):
                raise TypeError(f"{name} must hold non-empty strings, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        if not self.target_modules:
            raise ValueError("target_modules must name at least one module, got an empty sequence")
        for name in ("r_ref", "r_min", "r_max", "n_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {value!r}")
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if self.r_min > self.r_max:
            raise ValueError(f"r_min must be <= r_max, got r_min={self.r_min} > r_max={self.r_max}")
        if self.r_ref > self.r_max:
            warnings.warn(
                f"r_ref={self.r_ref} > r_max={self.r_max}: no layer may take more than r_max, so the realised "
                f"budget stays below LoRA-{self.r_ref}'s; raise r_max to let GoRA use the whole budget",
                UserWarning,
                stacklevel=3,
            )
        for name in ("lora_alpha", "xi", "lora_plus_ratio", "ridge", "lora_dropout"):
            value = getattr(self, name)
            if name == "ridge" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
            object.__setattr__(self, name, float(value))
        for name in ("lora_alpha", "xi", "lora_plus_ratio"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        if self.ridge is not None and (not math.isfinite(self.ridge) or self.ridge < 0):
            raise ValueError(f"ridge must be None or a finite number >= 0, got {self.ridge!r}")
        for name in ("rank_stabilized", "renormalize", "offload_gradients"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.importance not in IMPORTANCE_KINDS:
            raise ValueError(f"importance must be one of {IMPORTANCE_KINDS}, got {self.importance!r}")
        if self.early_stop_tol is not None and (
            isinstance(self.early_stop_tol, bool)
            or not isinstance(self.early_stop_tol, numbers.Real)
            or not math.isfinite(self.early_stop_tol)
            or self.early_stop_tol <= 0
        ):
            raise ValueError(f"early_stop_tol must be None or a finite number > 0, got {self.early_stop_tol!r}")
        if not 0.0 <= self.lora_dropout < 1.0:
            raise ValueError(f"lora_dropout must be in [0, 1), got {self.lora_dropout}")
