"""nips25-st2360d: training-free 360-degree depth from a video depth model (ST²360D, NeurIPS 2025).

An equirectangular panorama becomes a perspective frame sequence (spherical-uniform sampling, latitude-guided
scanning), a video depth model predicts the sequence, and the frames merge back into one 360-degree depth map with a
single global scale.
"""

from importlib.metadata import PackageNotFoundError, version

from nips25_st2360d.alignment import ALIGN_MODES, align, fit_alignment
from nips25_st2360d.geometry import (
    SamplingMap,
    check_erp_size,
    distance_to_z,
    e2p,
    e2p_map,
    erp_rays,
    frame_ray_norm,
    p2e,
    p2e_map,
    perspective_grid,
    rays_to_erp_coords,
    view_rotation,
    z_to_distance,
)
from nips25_st2360d.groundtruth import load_gt_depth
from nips25_st2360d.merge import (
    ST2360D,
    MergeResult,
    ST2360DConfig,
    blend_weights,
    frame_scales_global,
    make_views,
)
from nips25_st2360d.metrics import METRIC_NAMES, depth_metrics
from nips25_st2360d.models import ErpDepthTruth, IndependentOracle, OracleVDE, VideoDepthModel, frame_rays
from nips25_st2360d.scenes import Box, RoomScene, Sphere, render_room
from nips25_st2360d.video_windows import VDA_ANCHORS, VDA_INTERP, VDA_WINDOW, window_plan, windowed_inference
from nips25_st2360d.views import (
    coverage,
    cubemap_views,
    fibonacci_views,
    latlong_views,
    lgs_order,
    random_order,
    sus_ring_counts,
    sus_views,
    view_overlap,
)

try:
    __version__ = version("nips25-st2360d")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "ALIGN_MODES",
    "METRIC_NAMES",
    "ST2360D",
    "VDA_ANCHORS",
    "VDA_INTERP",
    "VDA_WINDOW",
    "Box",
    "ErpDepthTruth",
    "IndependentOracle",
    "MergeResult",
    "OracleVDE",
    "RoomScene",
    "ST2360DConfig",
    "SamplingMap",
    "Sphere",
    "VideoDepthModel",
    "__version__",
    "align",
    "blend_weights",
    "check_erp_size",
    "coverage",
    "cubemap_views",
    "depth_metrics",
    "distance_to_z",
    "e2p",
    "e2p_map",
    "erp_rays",
    "fibonacci_views",
    "fit_alignment",
    "frame_ray_norm",
    "frame_rays",
    "frame_scales_global",
    "latlong_views",
    "lgs_order",
    "load_gt_depth",
    "make_views",
    "p2e",
    "p2e_map",
    "perspective_grid",
    "random_order",
    "rays_to_erp_coords",
    "render_room",
    "sus_ring_counts",
    "sus_views",
    "view_overlap",
    "view_rotation",
    "window_plan",
    "windowed_inference",
    "z_to_distance",
]
