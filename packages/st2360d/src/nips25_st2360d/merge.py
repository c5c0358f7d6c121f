r"""The ST²360D pipeline: panorama → perspective frame sequence → video depth model → merged 360° depth.

1. Sample views on the sphere (SUS by default) and order them into a sequence (LGS by default).
2. Render the frames with :func:`~nips25_st2360d.geometry.e2p` and run the depth model over the whole sequence.
3. Convert each frame to ray distance, :math:`\rho = z \lVert (x_n, y_n, 1) \rVert` (for a disparity model the ray
   disparity :math:`d / \lVert (x_n, y_n, 1) \rVert`), project it back with
   :func:`~nips25_st2360d.geometry.p2e`, and blend :math:`D = \sum_t w_t \rho_t / \sum_t w_t` with
   :math:`w = \cos(\angle(r, \text{axis}))^p` (``blend="cos"``), the distance to the frame border (``"border"``)
   or 1 (``"uniform"``).

There is **no per-frame alignment**: the sequence shares one scale, which only the final global alignment fixes.
That is the method's point. ``frame_alignment="overlap"`` gives the independent-patch baseline instead: each frame is
rescaled to the panorama merged so far on their overlap (median log-ratio), as in a light 360MonoDepth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nips25_shared import get_logger, progress
from nips25_st2360d._validation import check_array, check_choice, check_int, check_real
from nips25_st2360d.geometry import (
    MAX_ERP_WIDTH,
    SamplingMap,
    _pad_erp,
    check_erp_size,
    e2p_map,
    erp_rays,
    p2e_map,
    perspective_grid,
)
from nips25_st2360d.models import VideoDepthModel, check_prediction
from nips25_st2360d.views import (
    cubemap_views,
    fibonacci_views,
    latlong_views,
    lgs_order,
    random_order,
    sus_views,
)

__all__ = ["ST2360D", "MergeResult", "ST2360DConfig", "blend_weights", "frame_scales_global", "make_views"]

_log = get_logger(__name__)

SAMPLERS = ("sus", "latlong", "cubemap", "fibonacci")
ORDERS = ("lgs", "random", "given")
BLENDS = ("cos", "border", "uniform")
FRAME_ALIGNMENTS = ("none", "overlap", "global")


@dataclass(frozen=True)
class ST2360DConfig:
    """Hyper-parameters of ST²360D. Defaults are the paper profile as far as it is known ([reconstructed] marks).

    Attributes:
        sampler: ``"sus"`` (spherical-uniform, the paper), ``"latlong"``, ``"cubemap"`` or ``"fibonacci"``.
        order: ``"lgs"`` (latitude-guided scan, the paper), ``"random"`` or ``"given"`` (sampler order).
        fov: field of view of every frame in degrees [reconstructed: 90].
        frame_size: frame side in pixels (518 for Video Depth Anything).
        n_eq: SUS views on the equator ring [reconstructed: 8]; also views per ring of ``latlong``.
        n_rings: SUS/latlong latitude rings [reconstructed: 5].
        n_views: number of Fibonacci views.
        blend: ``"cos"``, ``"border"`` or ``"uniform"`` blending weight [reconstructed: cos].
        power: exponent :math:`p` of the blending weight, ``>= 0`` [reconstructed: 2].
        frame_alignment: ``"none"`` (ST²360D: one scale for the sequence), ``"overlap"`` (each frame rescaled to
            the panorama merged so far, the per-patch baseline) or ``"global"`` (all frame scales fitted jointly
            to every pairwise overlap), see :func:`frame_scales_global`.
        hemispheres: LGS ring order, ``"interleave"`` or ``"north_first"``.
        direction: LGS sweep, ``"alternate"`` or ``"same"``.
        yaw_offset: degrees added to every view's yaw (and LGS start yaw).
        order_seed: seed of ``order="random"``.
        min_overlap: pixels needed for ``frame_alignment="overlap"``/``"global"`` to fit a frame's scale.
        cache_maps: keep the per-view sampling maps (:func:`~nips25_st2360d.geometry.e2p_map`,
            :func:`~nips25_st2360d.geometry.p2e_map`) of the last panorama size, so later panoramas of that size
            skip their construction (about 16 bytes per covered ERP pixel per view).
    """

    sampler: str = "sus"
    order: str = "lgs"
    fov: float = 90.0
    frame_size: int = 518
    n_eq: int = 8
    n_rings: int = 5
    n_views: int = 24
    blend: str = "cos"
    power: float = 2.0
    frame_alignment: str = "none"
    hemispheres: str = "interleave"
    direction: str = "alternate"
    yaw_offset: float = 0.0
    order_seed: int = 0
    min_overlap: int = 16
    cache_maps: bool = True

    def __post_init__(self) -> None:
        check_choice("sampler", self.sampler, SAMPLERS)
        check_choice("order", self.order, ORDERS)
        check_real("fov", self.fov, low=0.0, high=180.0, open_low=True, open_high=True)
        check_int("frame_size", self.frame_size, low=8, high=MAX_ERP_WIDTH)
        check_int("n_eq", self.n_eq, low=1, high=1024)
        check_int("n_rings", self.n_rings, low=1, high=512)
        check_int("n_views", self.n_views, low=1, high=100_000)
        check_choice("blend", self.blend, BLENDS)
        check_real("power", self.power, low=0.0, high=64.0)
        check_choice("frame_alignment", self.frame_alignment, FRAME_ALIGNMENTS)
        check_choice("hemispheres", self.hemispheres, ("interleave", "north_first"))
        check_choice("direction", self.direction, ("alternate", "same"))
        check_real("yaw_offset", self.yaw_offset)
        check_int("order_seed", self.order_seed, low=0)
        check_int("min_overlap", self.min_overlap, low=1)
        if not isinstance(self.cache_maps, bool):
            raise TypeError(f"cache_maps must be a bool, got {type(self.cache_maps).__name__}")
        if self.sampler == "cubemap" and self.fov < 90.0:
            raise ValueError(f"fov must be >= 90 for the cubemap sampler (else it leaves holes), got {self.fov}")


@dataclass(frozen=True)
class MergeResult:
    """Output of :meth:`ST2360D.predict`.

    Attributes:
        depth: ``(H, W)`` float32 merged ray distance (relative scale; 0 where no frame looks).
        valid: ``(H, W)`` bool, pixels seen by at least one frame.
        views: ``(T, 2)`` ``(yaw, pitch)`` degrees of the frames in sequence order.
        frame_depth: ``(T, s, s)`` float32 per-frame ray distance (after any per-frame alignment).
        frame_scales: ``(T,)`` per-frame scales applied (all 1 for ``frame_alignment="none"``).
    """

    depth: np.ndarray
    valid: np.ndarray
    views: np.ndarray
    frame_depth: np.ndarray
    frame_scales: np.ndarray


def make_views(config: ST2360DConfig) -> np.ndarray:
    """The frame sequence's views, ``(T, 2)`` ``(yaw, pitch)`` degrees, sampled and ordered as ``config`` says."""
    if not isinstance(config, ST2360DConfig):
        raise TypeError(f"config must be an ST2360DConfig, got {type(config).__name__}")
    if config.sampler == "sus":
        views = sus_views(n_eq=config.n_eq, n_rings=config.n_rings, yaw_offset=config.yaw_offset)
    elif config.sampler == "latlong":
        views = latlong_views(n_per_ring=config.n_eq, n_rings=config.n_rings, yaw_offset=config.yaw_offset)
    elif config.sampler == "cubemap":
        views = cubemap_views(yaw_offset=config.yaw_offset)
    else:
        views = fibonacci_views(n=config.n_views, yaw_offset=config.yaw_offset)
    if config.order == "lgs":
        order = lgs_order(views, start_yaw=config.yaw_offset, hemispheres=config.hemispheres,
                          direction=config.direction)  # fmt: skip
    elif config.order == "random":
        order = random_order(len(views), seed=config.order_seed)
    else:
        order = np.arange(len(views))
    return views[order]


def blend_weights(*, fov: float, size: int, blend: str = "cos", power: float = 2.0) -> np.ndarray:
    r"""Per-pixel blending weight of a frame.

    ``"cos"``: :math:`w = \cos(\theta)^p = \lVert (x_n, y_n, 1) \rVert^{-p}` with :math:`\theta` the angle to the
    optical axis; ``"border"``: :math:`w = (\min(1 - |x_n|/t, 1 - |y_n|/t) + \epsilon)^p` with
    :math:`t = \tan(f/2)`; ``"uniform"``: :math:`w = 1`.

    Args:
        fov: field of view in degrees.
        size: frame side in pixels.
        blend: ``"cos"``, ``"border"`` or ``"uniform"``.
        power: exponent ``p >= 0``.

    Returns:
        ``(size, size)`` float32 positive weights.
    """
    check_choice("blend", blend, BLENDS)
    power = check_real("power", power, low=0.0, high=64.0)
    xn, yn = perspective_grid(fov, size)
    if blend == "uniform":
        w = np.ones_like(xn)
    elif blend == "cos":
        w = (xn * xn + yn * yn + 1.0) ** (-0.5 * power)
    else:
        t = np.tan(np.deg2rad(fov) / 2.0)
        w = (np.minimum(1.0 - np.abs(xn) / t, 1.0 - np.abs(yn) / t) + 1.0 / size) ** power
    return w.astype(np.float32)


def frame_scales_global(index: list[np.ndarray], values: list[np.ndarray], *, n_pixels: int,
                        min_overlap: int = 16) -> np.ndarray:  # fmt: skip
    r"""Per-frame scales fitted jointly to every pairwise overlap (global scale alignment of patches).

    For every pair of frames :math:`(i, j)` sharing at least ``min_overlap`` ERP pixels,
    :math:`r_{ij} = \operatorname{med}(\log v_i - \log v_j)` on the shared pixels; the log-scales
    :math:`x = \log s` solve :math:`\min_x \sum_{ij} (x_i - x_j + r_{ij})^2` with :math:`\sum_t x_t = 0`
    (least squares, minimum norm on frames no overlap connects). This is the scale-only version of 360MonoDepth's
    global alignment (Rey-Area et al., CVPR 2022), here without its deformable fields.

    Args:
        index: per frame, ``(N_t,)`` unique flat ERP indices of the pixels it covers.
        values: per frame, ``(N_t,)`` positive values there (ray distance, or ray disparity).
        n_pixels: ``H * W`` of the panorama.
        min_overlap: shared pixels needed for a pair to count, ``>= 1``.

    Returns:
        ``(T,)`` float64 scales :math:`s_t` (geometric mean 1); multiply frame :math:`t` by :math:`s_t`.

    Raises:
        ValueError: if ``index`` and ``values`` differ in length or in a frame's size, or a value is not positive.

    Example:
        >>> idx = [np.arange(0, 60), np.arange(40, 100)]
        >>> s = frame_scales_global(idx, [np.full(60, 2.0), np.full(60, 4.0)], n_pixels=100)
        >>> [round(float(v), 4) for v in s]  # frame 0 up, frame 1 down by sqrt(2): both read 2 sqrt(2)
        [1.4142, 0.7071]
    """
    if len(index) != len(values):
        raise ValueError(f"index and values must have one entry per frame, got {len(index)} and {len(values)}")
    n_pixels = check_int("n_pixels", n_pixels, low=1)
    min_overlap = check_int("min_overlap", min_overlap, low=1)
    logs = []
    for t, (idx, val) in enumerate(zip(index, values)):
        if idx.shape != val.shape:
            raise ValueError(f"values[{t}] must match index[{t}] in shape, got {val.shape} and {idx.shape}")
        if (val <= 0).any() or not np.isfinite(val).all():
            raise ValueError(f"values[{t}] must be finite and positive")
        logs.append(np.log(val.astype(np.float64)))
    n = len(index)
    rows: list[np.ndarray] = []
    rhs: list[float] = []
    dense = np.full(n_pixels, np.nan)
    for i in range(n):
        dense[index[i]] = logs[i]
        for j in range(i + 1, n):
            shared = dense[index[j]]
            ok = np.isfinite(shared)
            if ok.sum() >= min_overlap:
                row = np.zeros(n)
                row[i], row[j] = 1.0, -1.0
                rows.append(row)
                rhs.append(-float(np.median(shared[ok] - logs[j][ok])))
        dense[index[i]] = np.nan
    rows.append(np.ones(n))
    rhs.append(0.0)
    x, *_ = np.linalg.lstsq(np.stack(rows), np.asarray(rhs), rcond=None)
    return np.exp(x)


class ST2360D:
    r"""Training-free 360° depth from a video depth model (ST²360D).

    Args:
        model: a :class:`~nips25_st2360d.models.VideoDepthModel` (``output`` ``"depth"`` or ``"disparity"``).
        config: hyper-parameters (default :class:`ST2360DConfig`).

    Raises:
        TypeError: if ``model`` does not follow the protocol or ``config`` is not an :class:`ST2360DConfig`.

    References:
        Cao, Zhu, Ai, Jiang, Lyu, Xiong, "ST²360D: Spatial-to-Temporal Consistency for Training-free 360 Monocular
        Depth Estimation", NeurIPS 2025 (OpenReview d0bm4upnQ8), Sec. 3.

    Example:
        >>> from nips25_st2360d import IndependentOracle, ST2360D, ST2360DConfig
        >>> oracle = IndependentOracle(lambda r: np.full(len(r), 3.0), sigma=0.0, noise=0.0, tilt=0.0)
        >>> out = ST2360D(oracle, ST2360DConfig(frame_size=32)).predict(np.zeros((32, 64, 3), np.uint8))
        >>> bool(np.allclose(out.depth, 3.0, rtol=1e-4))
        True
    """

    def __init__(self, model: VideoDepthModel, config: ST2360DConfig | None = None) -> None:
        if not isinstance(model, VideoDepthModel):
            raise TypeError(f"model must have an 'output' attribute and a predict() method, got {type(model).__name__}")
        check_choice("model.output", model.output, ("depth", "disparity"))
        if config is None:
            config = ST2360DConfig()
        if not isinstance(config, ST2360DConfig):
            raise TypeError(f"config must be an ST2360DConfig, got {type(config).__name__}")
        self.model = model
        self.config = config
        self._maps: dict[str, tuple[tuple[int, int], list[SamplingMap]]] = {}

    def sampling_maps(self, h: int, w: int) -> tuple[list[SamplingMap], list[SamplingMap]]:
        """The per-view sampling maps for an ``h x w`` panorama: ``(e2p maps, p2e maps)``, one per frame.

        They depend only on the view set, the frame size and the panorama size, so with ``config.cache_maps`` they
        are built once and reused for every later panorama of that size (the cache holds one size).

        Raises:
            ValueError: if ``(h, w)`` is not a 2:1 equirectangular size.
        """
        h, w = check_erp_size(h, w, name="panorama (h, w)")
        return self._cached("e2p", h, w), self._cached("p2e", h, w)

    def _cached(self, kind: str, h: int, w: int) -> list[SamplingMap]:
        hit = self._maps.get(kind)
        if hit is not None and hit[0] == (h, w):
            return hit[1]
        cfg = self.config
        views = make_views(cfg)
        if kind == "e2p":
            maps = [e2p_map(h, w, yaw=float(y), pitch=float(p), fov=cfg.fov, size=cfg.frame_size) for y, p in views]
        else:
            rays = erp_rays(h, w)
            maps = [p2e_map(h, w, yaw=float(y), pitch=float(p), fov=cfg.fov, size=cfg.frame_size, rays=rays)
                    for y, p in views]  # fmt: skip
        if cfg.cache_maps:
            self._maps[kind] = ((h, w), maps)
        return maps

    def frames(self, erp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The perspective frame sequence of a panorama: ``((T, s, s, 3) uint8 frames, (T, 2) views)``.

        Raises:
            ValueError: on a wrong shape or a panorama whose width is not twice its height. TypeError: non-uint8.
        """
        erp = _check_erp(erp)
        cfg = self.config
        views = make_views(cfg)
        fwd = self._cached("e2p", erp.shape[0], erp.shape[1])
        padded = _pad_erp(erp.astype(np.float32))  # once for all views (e2p pads per call)
        size = cfg.frame_size
        frames = np.stack([m.sample(padded).reshape(size, size, 3) for m in fwd])
        return np.clip(np.rint(frames), 0, 255).astype(np.uint8), views

    def predict(
        self, erp: np.ndarray, *, out_hw: tuple[int, int] | None = None, show_progress: bool = True
    ) -> MergeResult:
        """Estimate the 360° depth of an equirectangular RGB panorama.

        Args:
            erp: ``(H, W, 3)`` uint8 RGB panorama with ``W = 2 H``, ``W`` up to 8192 (4K and 8K inputs work;
                frames are ``frame_size``).
            out_hw: output ``(H, W)`` with ``W = 2 H``; defaults to the input size.
            show_progress: show a progress bar over the frames (silenced anyway by ``-q``).

        Returns:
            A :class:`MergeResult`; ``depth`` is relative ray distance (align it globally for metric depth).

        Raises:
            ValueError: on a wrong shape, a panorama or ``out_hw`` that is not 2:1, empty input, or a model output
                of the wrong shape or with NaN/inf.
            TypeError: on a non-uint8 panorama.
        """
        erp = _check_erp(erp)
        cfg = self.config
        if out_hw is None:
            out_hw = (erp.shape[0], erp.shape[1])
        if len(out_hw) != 2:
            raise ValueError(f"out_hw must be (H, W), got {out_hw}")
        h, w = check_erp_size(out_hw[0], out_hw[1], name="out_hw")
        frames, views = self.frames(erp)
        _log.debug("running the depth model on %d frames of %d px", len(frames), cfg.frame_size)
        pred = check_prediction(self.model.predict(frames, views=views, fov=cfg.fov), frames)
        norm = np.sqrt(sum(g * g for g in perspective_grid(cfg.fov, cfg.frame_size)) + 1.0)
        disparity = self.model.output == "disparity"
        # Merge in the model's own space: ray distance for depth models, ray disparity for disparity models.
        frame_val = (pred / norm if disparity else pred * norm).astype(np.float32)
        weight = blend_weights(fov=cfg.fov, size=cfg.frame_size, blend=cfg.blend, power=cfg.power)
        back = self._cached("p2e", h, w)
        num = np.zeros(h * w, dtype=np.float64)
        den = np.zeros(h * w, dtype=np.float64)
        samples = [m.sample(np.stack([frame_val[t], weight], axis=-1)) for t, m in enumerate(back)]
        scales = np.ones(len(views))
        if cfg.frame_alignment == "global":
            scales = frame_scales_global([m.index for m in back], [v[:, 0] for v in samples], n_pixels=h * w,
                                         min_overlap=cfg.min_overlap)  # fmt: skip
        steps = (
            progress(range(len(views)), total=len(views), desc="merge frames") if show_progress else range(len(views))
        )
        for t in steps:
            idx = back[t].index
            val, wt = samples[t][:, 0].astype(np.float64) * scales[t], samples[t][:, 1]
            if cfg.frame_alignment == "overlap":
                ov = den[idx] > 0
                if ov.sum() >= cfg.min_overlap:
                    ratio = np.log(num[idx][ov] / den[idx][ov]) - np.log(val[ov])
                    scales[t] = float(np.exp(np.median(ratio)))
                    val = val * scales[t]
            num[idx] += wt * val
            den[idx] += wt
        covered = den > 0
        merged = np.zeros(h * w, dtype=np.float32)
        merged[covered] = num[covered] / den[covered]
        if disparity:
            merged[covered] = 1.0 / merged[covered]
        scaled = frame_val * scales[:, None, None].astype(np.float32)
        frame_depth = 1.0 / scaled if disparity else scaled
        return MergeResult(merged.reshape(h, w), covered.reshape(h, w), views, frame_depth, scales)

    def __call__(self, erp: np.ndarray) -> np.ndarray:
        """Shorthand for ``predict(erp).depth``."""
        return self.predict(erp).depth


def _check_erp(erp: object) -> np.ndarray:
    arr = check_array("erp", erp, ndim=3, last=3, dtype="uint8")
    check_erp_size(arr.shape[0], arr.shape[1], name="erp")
    return arr
