"""nips25-gora: GoRA, gradient-driven adaptive low-rank adaptation as an ordinary peft LoRA adapter.

He et al., "GoRA: Gradient-driven Adaptive Low Rank Adaptation", NeurIPS 2025, arXiv:2502.12171.
"""

from importlib.metadata import PackageNotFoundError, version

from nips25_gora.adapter import (
    GoraInit,
    apply_gora,
    check_rank_pattern,
    export_rank_json,
    rank_pattern_keys,
    save_adapter,
)
from nips25_gora.allocation import allocate_ranks, lora_budget, realised_budget
from nips25_gora.config import GoraConfig, ImportanceKind
from nips25_gora.gradients import accumulate_gradients, default_loss, find_target_linears
from nips25_gora.importance import importance
from nips25_gora.initialization import compress_init, lora_scaling, projection

try:
    __version__ = version("nips25-gora")
except PackageNotFoundError:  # pragma: no cover - source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "GoraConfig",
    "GoraInit",
    "ImportanceKind",
    "__version__",
    "accumulate_gradients",
    "allocate_ranks",
    "apply_gora",
    "check_rank_pattern",
    "compress_init",
    "default_loss",
    "export_rank_json",
    "find_target_linears",
    "importance",
    "lora_budget",
    "lora_scaling",
    "projection",
    "rank_pattern_keys",
    "realised_budget",
    "save_adapter",
]
