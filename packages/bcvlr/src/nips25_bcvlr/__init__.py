"""BCV-LR: behaviour cloning from action-free, reward-free videos via latent representations (NeurIPS 2025)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from nips25_bcvlr.agent import BCVLR, OnlineLog
from nips25_bcvlr.config import PRESETS, BCVLRConfig
from nips25_bcvlr.dynamics import IDM, LatentActionModel, LatentFDM
from nips25_bcvlr.encoder import ImpalaEncoder, ImpalaHead, scale_observations
from nips25_bcvlr.environments import (
    DMCPixels,
    MiniGridPixels,
    PointMassPixels,
    ProcgenPixels,
    make_dmc_pixels,
    make_minigrid_pixels,
)
from nips25_bcvlr.experts import BFSExpert, PDExpert, record_video
from nips25_bcvlr.online import ReplayBuffer, Rollout
from nips25_bcvlr.policy import ActionDecoder, LatentPolicy
from nips25_bcvlr.quantization import VQEMA, VQOutput
from nips25_bcvlr.representation import CurlObjective, ProtoTemporalObjective, curl_info_nce, random_shift, sinkhorn
from nips25_bcvlr.video import Video, load_video

try:
    __version__ = version("nips25-bcvlr")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "BCVLR",
    "IDM",
    "PRESETS",
    "VQEMA",
    "ActionDecoder",
    "BCVLRConfig",
    "BFSExpert",
    "CurlObjective",
    "DMCPixels",
    "ImpalaEncoder",
    "ImpalaHead",
    "LatentActionModel",
    "LatentFDM",
    "LatentPolicy",
    "MiniGridPixels",
    "OnlineLog",
    "PDExpert",
    "PointMassPixels",
    "ProcgenPixels",
    "ProtoTemporalObjective",
    "ReplayBuffer",
    "Rollout",
    "VQOutput",
    "Video",
    "__version__",
    "curl_info_nce",
    "load_video",
    "make_dmc_pixels",
    "make_minigrid_pixels",
    "random_shift",
    "record_video",
    "scale_observations",
    "sinkhorn",
]
