"""nips25-sama: SAMA's spatio-temporal context aggregator, checkpoint key mapping and SAMA-Bench evaluation.

Sun et al., "SAMA: Towards Multi-Turn Referential Grounded Video Chat with Large Language Models", NeurIPS 2025,
arXiv:2505.18812.
"""

from importlib.metadata import PackageNotFoundError, version

from nips25_sama.aggregator import ContextInjector, SpatioTemporalAggregator, TokenBudget, split_windows, token_budget
from nips25_sama.config import MODEL_WIDTHS, QFormerConfig, SAMAConfig
from nips25_sama.grounding import GroundingHead, GroundingLoss, GroundingLossConfig
from nips25_sama.pipeline import SamaChatOutput, SamaPipeline, SamaPipelineConfig
from nips25_sama.qformer import QFormer, inject_region_features
from nips25_sama.region import RegionEncoder, mask_pooling, mask_to_box, prepare_region_inputs, shape_mask

try:
    __version__ = version("nips25-sama")
except PackageNotFoundError:  # pragma: no cover - source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "MODEL_WIDTHS",
    "ContextInjector",
    "GroundingHead",
    "GroundingLoss",
    "GroundingLossConfig",
    "QFormer",
    "QFormerConfig",
    "RegionEncoder",
    "SAMAConfig",
    "SamaChatOutput",
    "SamaPipeline",
    "SamaPipelineConfig",
    "SpatioTemporalAggregator",
    "TokenBudget",
    "__version__",
    "inject_region_features",
    "mask_pooling",
    "mask_to_box",
    "prepare_region_inputs",
    "shape_mask",
    "split_windows",
    "token_budget",
]
