"""nips25-factost: FactoST, factorised spatio-temporal foundation models (PyTorch).

Zhong et al., "Learning to Factorize Spatio-Temporal Foundation Models", NeurIPS 2025 (Spotlight),
OpenReview d4CZoiaXeC. Stage 1 pretrains a space-agnostic temporal backbone on univariate series from many
domains; stage 2 fits a light spatio-temporal adapter per target domain with few data.
"""

from importlib.metadata import PackageNotFoundError, version

from nips25_factost.adapter import STAdapter, alignment_penalty, topk_interaction
from nips25_factost.backbone import (
    BackboneConfig,
    TemporalBackbone,
    instance_denormalize,
    instance_normalize,
    patchify,
    unpatchify,
)
from nips25_factost.baselines import STID, JointSTTransformer, historical_average, last_value, seasonal_naive
from nips25_factost.datasets import (
    load_chicago_ridership,
    load_irish_wind,
    load_pretraining_pool,
    parse_dms,
    wind_panel_from_frames,
)
from nips25_factost.factost import FactoST
from nips25_factost.metrics import masked_mae, masked_mape, masked_rmse
from nips25_factost.panel import STPanel, Windows, calendar_features, make_windows, split_panel
from nips25_factost.pretraining import (
    UTPConfig,
    average_pool,
    load_pretrained,
    patch_mask,
    pool_windows,
    save_pretrained,
    utp_loss,
    utp_pretrain,
)
from nips25_factost.quantiles import V2_QUANTILES, check_quantiles, pinball_loss
from nips25_factost.replay import ReplayBuffer
from nips25_factost.training import FitConfig, PanelForecaster, loss_scale

try:
    __version__ = version("nips25-factost")
except PackageNotFoundError:  # pragma: no cover - source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "STID",
    "V2_QUANTILES",
    "BackboneConfig",
    "FactoST",
    "FitConfig",
    "JointSTTransformer",
    "PanelForecaster",
    "ReplayBuffer",
    "STAdapter",
    "STPanel",
    "TemporalBackbone",
    "UTPConfig",
    "Windows",
    "__version__",
    "alignment_penalty",
    "average_pool",
    "calendar_features",
    "check_quantiles",
    "historical_average",
    "instance_denormalize",
    "instance_normalize",
    "last_value",
    "load_chicago_ridership",
    "load_irish_wind",
    "load_pretrained",
    "load_pretraining_pool",
    "loss_scale",
    "make_windows",
    "masked_mae",
    "masked_mape",
    "masked_rmse",
    "parse_dms",
    "patch_mask",
    "patchify",
    "pinball_loss",
    "pool_windows",
    "save_pretrained",
    "seasonal_naive",
    "split_panel",
    "topk_interaction",
    "unpatchify",
    "utp_loss",
    "utp_pretrain",
    "wind_panel_from_frames",
]
