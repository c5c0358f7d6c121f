r"""The depth-model protocol and the simulated video depth models of the CPU experiment.

Any object with an ``output`` attribute and a ``predict(frames, *, views, fov)`` method is a
:class:`VideoDepthModel`: a real network (:mod:`nips25_st2360d.adapters`) ignores ``views`` and ``fov``; the
simulated models below use them to look up exact depth from a known scene and then corrupt it the way a real model
would:

* :class:`OracleVDE`: a temporally consistent *video* model. Its frame-to-frame scale error has std
  :math:`\sigma_t = \sigma_{min} + (\sigma_{max} - \sigma_{min})(1 - o_t)`, growing as the overlap :math:`o_t` of
  frames :math:`t-1, t` shrinks. With ``drift="window"`` (default, Video Depth Anything's structure) it is a
  deviation from one scale per 32-frame window, :math:`\log s_t = \log S_{w(t)} + \sigma_t \epsilon_t`, the
  window scales following :math:`\log S_j = a \log S_{j-1} + \sigma_{min} \eta_j`; with ``drift="frame"`` the
  per-frame log-scale itself follows an AR(1), :math:`\log s_t = a \log s_{t-1} + \sigma_t \epsilon_t`.
* :class:`IndependentOracle`: an *image* model run frame by frame, i.i.d. log-scale :math:`\mathcal N(0, \sigma^2)`.

Both carry a planar log tilt of the same size (a structural, non-scale error of the backbone) and per-pixel
log-normal noise. The image model's tilt is drawn per frame in frame coordinates, so overlapping frames disagree on
the same scene point; the video model's is one field over the sequence (``structure="sequence"``), so its frames
agree on every scene point they share: temporally consistent, not exact.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from nips25_st2360d._validation import check_array, check_choice, check_int, check_real
from nips25_st2360d.geometry import _pad_erp, _sample, perspective_grid, rays_to_erp_coords, view_rotation
from nips25_st2360d.video_windows import VDA_ANCHORS, VDA_INTERP, VDA_WINDOW
from nips25_st2360d.views import check_views, view_overlap

__all__ = [
    "OUTPUTS",
    "ErpDepthTruth",
    "IndependentOracle",
    "OracleVDE",
    "VideoDepthModel",
    "check_prediction",
    "frame_rays",
]

OUTPUTS = ("depth", "disparity")
STRUCTURES = ("sequence", "frame")
DRIFTS = ("smooth", "window", "frame")
N_FEATURES = 256  # random Fourier features of the smooth drift fields

RayDistance = Callable[[np.ndarray], np.ndarray]


@runtime_checkable
class VideoDepthModel(Protocol):
    """A depth model over a frame sequence.

    Attributes:
        output: ``"depth"`` (planar z-depth up to scale) or ``"disparity"`` (affine-invariant inverse depth).
    """

    output: str

    def predict(self, frames: np.ndarray, *, views: np.ndarray, fov: float) -> np.ndarray:
        """Predict ``(T, s, s)`` float32 depth or disparity for ``(T, s, s, 3)`` uint8 frames.

        ``views`` (``(T, 2)`` yaw/pitch degrees) and ``fov`` describe the frames; real networks ignore them.
        """
        ...


def check_prediction(pred: object, frames: np.ndarray) -> np.ndarray:
    """Validate a model's output against its input frames: ``(T, s, s)``, finite, strictly positive.

    Raises:
        ValueError: naming the model output when the shape is wrong or values are non-finite or not positive.
    """
    if not isinstance(pred, np.ndarray):
        raise TypeError(f"model output must be a numpy.ndarray, got {type(pred).__name__}")
    if pred.shape != frames.shape[:3]:
        raise ValueError(f"model output must have shape {frames.shape[:3]} (T, s, s), got {pred.shape}")
    if not np.isfinite(pred).all():
        raise ValueError("model output holds NaN or inf values")
    if (pred <= 0).any():
        raise ValueError("model output must be strictly positive depth or disparity")
    return pred.astype(np.float32, copy=False)


def frame_rays(views: np.ndarray, *, fov: float, size: int) -> tuple[np.ndarray, np.ndarray]:
    r"""World unit rays of every pixel of every frame, and :math:`\lVert (x_n, y_n, 1) \rVert` per pixel.

    Args:
        views: ``(T, 2)`` ``(yaw, pitch)`` degrees.
        fov: field of view in degrees.
        size: frame side in pixels.

    Returns:
        ``(rays (T, s, s, 3) float64 unit vectors, norm (s, s))``.
    """
    v = check_views(views)
    xn, yn = perspective_grid(fov, size)
    cam = np.stack([xn, yn, np.ones_like(xn)], axis=-1)
    norm = np.linalg.norm(cam, axis=-1)
    unit = cam / norm[..., None]
    rays = np.stack([unit @ view_rotation(float(y), float(p)).T for y, p in v])
    return rays, norm


class ErpDepthTruth:
    """Ray distance looked up (bilinearly, with wrap) from an equirectangular depth map.

    Args:
        depth: ``(H, W)`` ray distance, finite and positive.

    Example:
        >>> truth = ErpDepthTruth(np.full((8, 16), 2.0))
        >>> truth(np.array([[0.0, 0.0, 1.0]])).tolist()
        [2.0]
    """

    def __init__(self, depth: np.ndarray) -> None:
        depth = check_array("depth", depth, ndim=2)
        if (depth <= 0).any():
            raise ValueError("depth must be strictly positive ray distance")
        self.depth = depth.astype(np.float32)
        self._padded = _pad_erp(self.depth[..., None])

    def __call__(self, rays: np.ndarray) -> np.ndarray:
        """Distances along ``(..., 3)`` rays; returns ``rays.shape[:-1]`` float32."""
        h, w = self.depth.shape
        row, col = rays_to_erp_coords(rays, h, w)
        return _sample(self._padded, row + 1.0, col + 1.0, 1)[:, 0].reshape(rays.shape[:-1])


class _Oracle:
    """Exact per-frame depth from ``truth`` corrupted by per-frame log-scales, a tilt and pixel noise."""

    def __init__(self, truth: RayDistance, *, noise: float, tilt: float, output: str, seed: int) -> None:
        if not callable(truth):
            raise TypeError(f"truth must be a callable rays (N, 3) -> distances (N,), got {type(truth).__name__}")
        self.truth = truth
        self.noise = check_real("noise", noise, low=0.0, high=1.0)
        self.tilt = check_real("tilt", tilt, low=0.0, high=1.0)
        self.output = check_choice("output", output, OUTPUTS)
        self.seed = check_int("seed", seed, low=0)

    def _log_scales(self, views: np.ndarray, fov: float, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def frame_log_scales(self, views: np.ndarray, *, fov: float) -> np.ndarray:
        r"""The per-frame log-scale errors :math:`\log s_t` that :meth:`predict` applies to this view sequence.

        Args:
            views: ``(T, 2)`` ``(yaw, pitch)`` degrees, in sequence order.
            fov: field of view in degrees.

        Returns:
            ``(T,)`` float64, the same draws as :meth:`predict` with this ``seed``.
        """
        v = check_views(views)
        fov = check_real("fov", fov, low=0.0, high=180.0, open_low=True, open_high=True)
        return self._log_scales(v, fov, np.random.default_rng(self.seed))

    def _structure(self, views: np.ndarray, fov: float, size: int, rng: np.random.Generator) -> np.ndarray:
        r"""Per-frame planar log tilt :math:`g_t \cdot (x_n, y_n)`, :math:`g_t \sim \mathcal N(0, tilt^2 I_2)` i.i.d.

        Anchored to each frame: two overlapping frames disagree on the same scene point, an error that per-frame
        scale alignment cannot remove.
        """
        xn, yn = perspective_grid(fov, size)
        g = rng.normal(0.0, self.tilt, size=(len(views), 2)) if self.tilt > 0 else np.zeros((len(views), 2))
        return g[:, 0, None, None] * xn + g[:, 1, None, None] * yn

    def true_depth(self, views: np.ndarray, *, fov: float, size: int) -> np.ndarray:
        """Exact planar z-depth ``(T, s, s)`` float32 of the views."""
        rays, norm = frame_rays(views, fov=fov, size=size)
        rho = np.asarray(self.truth(rays.reshape(-1, 3)), dtype=np.float64).reshape(rays.shape[:3])
        if not np.isfinite(rho).all() or (rho <= 0).any():
            raise ValueError("truth must return finite, positive distances for every ray")
        return (rho / norm).astype(np.float32)

    def predict(self, frames: np.ndarray, *, views: np.ndarray, fov: float) -> np.ndarray:
        """Corrupted depth (or disparity) of the frames, deterministic for a given ``seed`` and view sequence.

        Args:
            frames: ``(T, s, s, 3)`` uint8 frames (only their shape is used: the oracle sees the scene).
            views: ``(T, 2)`` ``(yaw, pitch)`` degrees of the frames, in sequence order.
            fov: field of view in degrees.

        Returns:
            ``(T, s, s)`` float32 z-depth (``output="depth"``) or inverse z-depth (``"disparity"``).
        """
        frames = check_array("frames", frames, ndim=4, last=3, dtype="uint8")
        v = check_views(views)
        if len(v) != len(frames):
            raise ValueError(f"views must have one row per frame ({len(frames)}), got {len(v)}")
        fov = check_real("fov", fov, low=0.0, high=180.0, open_low=True, open_high=True)
        t, size = frames.shape[0], frames.shape[1]
        rng = np.random.default_rng(self.seed)
        log_s = self._log_scales(v, fov, rng)
        log_field = log_s[:, None, None] + self._structure(v, fov, size, rng)
        if self.noise > 0:
            log_field = log_field + rng.normal(0.0, self.noise, size=(t, size, size))
        z = self.true_depth(v, fov=fov, size=size) * np.exp(log_field)
        out = z if self.output == "depth" else 1.0 / z
        return out.astype(np.float32)


class OracleVDE(_Oracle):
    r"""Simulated video depth model: exact depth with a per-frame scale error that neighbouring frames share.

    * ``drift="smooth"`` (default since 0.2.0): the log-scale error is a smooth random function of the view
      direction :math:`d_t` (the optical axis of frame :math:`t`) and of the time :math:`t` (the frame index),
      :math:`\log s_t = f(d_t) + g(t)`, two independent Gaussian fields with squared-exponential covariances
      :math:`\operatorname{cov}(f(d), f(d')) = \sigma_{dir}^2 \exp(-\lVert d - d' \rVert^2 / 2 c^2)`,
      :math:`c = 2 \sin(\ell_{dir} / 2)` (the chord of the angle :math:`\ell_{dir}`), and
      :math:`\operatorname{cov}(g(t), g(t')) = \sigma_{time}^2 \exp(-(t - t')^2 / 2 \ell_{time}^2)`, drawn as
      256 random Fourier features each (Rahimi and Recht, 2007). Frames that look at the same part of the scene
      err alike (:math:`f`), and frames close in the sequence err alike (:math:`g`): in a scan where consecutive
      frames overlap, :math:`\operatorname{std}(\log s_t - \log s_{t-1}) < \operatorname{std}(\log s_t)`.
      Directions are taken relative to the first view, :math:`d_t \to R_0^\top d_t` (as the tilt of
      ``structure="sequence"``), so a panorama rolled with its views gives the same frames. Defaults:
      :math:`\sigma_{dir} = \sigma_{time} = 0.1 / \sqrt 2`, so the per-frame log-scale has the same marginal std
      (0.1) as :class:`IndependentOracle`'s and the two models differ only in how their errors correlate;
      :math:`\ell_{dir} = 90^\circ` (one field of view: the error changes on the scale of a frame) and
      :math:`\ell_{time} = 8` frames (one SUS equator ring).
    * ``drift="window"`` (the 0.1.0 default, kept as a named arm): Video Depth Anything's window structure, a
      deviation from one scale per ``window``-frame window, :math:`\log s_t = \log S_{w(t)} + \sigma_t
      \epsilon_t` with :math:`\sigma_t = \sigma_{min} + (\sigma_{max} - \sigma_{min})(1 - o_t)` and :math:`o_t`
      the overlap of frames :math:`t-1, t` (:func:`~nips25_st2360d.views.view_overlap`; :math:`o_0 = 1`); window
      scales :math:`\log S_0 \sim \mathcal N(0, \sigma_{max}^2)`, :math:`\log S_j = a \log S_{j-1} +
      \sigma_{min} \eta_j`; windows advance by ``window - 10`` frames. Its per-frame deviations are independent,
      so overlapping neighbours do **not** err alike (the review's finding).
    * ``drift="frame"``: an AR(1) along the frames, :math:`\log s_0 \sim \mathcal N(0, \sigma_{max}^2)`,
      :math:`\log s_t = a \log s_{t-1} + \sigma_t \epsilon_t` (the first reconstruction).

    Args:
        truth: callable mapping ``(N, 3)`` unit rays to ray distances (a scene's ``ray_distance`` or
            :class:`ErpDepthTruth`).
        sigma_dir: std of the direction field :math:`f` (log), ``drift="smooth"``.
        ell_dir: length scale :math:`\ell_{dir}` of :math:`f` in degrees, in ``(0, 180]``.
        sigma_time: std of the time field :math:`g` (log), ``drift="smooth"``.
        ell_time: length scale :math:`\ell_{time}` of :math:`g` in frames, ``> 0``.
        a: AR(1) coefficient in ``[0, 1]`` (``"window"``, ``"frame"``; default 0.95).
        sigma_min: scale error std (log) between fully overlapping frames (``"window"``, ``"frame"``; 0.005).
        sigma_max: scale error std (log) between frames with no overlap (``"window"``, ``"frame"``; 0.08).
        noise: per-pixel log-normal noise std (default 0.02).
        tilt: std of each component of the planar log tilt :math:`g` (default 0.03), see ``structure``.
        output: ``"depth"`` or ``"disparity"``.
        seed: seed of the scale and noise draws.
        structure: where the tilt lives. ``"sequence"`` (default): one planar log field
            :math:`g \cdot R_0^\top r` over the world ray :math:`r` of every pixel, :math:`g \sim \mathcal N(0,
            tilt^2 I_3)` drawn once per sequence, :math:`R_0` the first view's rotation: temporally consistent (a
            scene point gets the same relative error in every frame that sees it) but not exact, and no per-frame
            alignment can remove it. ``"frame"``: an independent tilt per frame in frame coordinates, as
            :class:`IndependentOracle`.
        drift: ``"smooth"``, ``"window"`` or ``"frame"``, see above.
        window: frames per jointly predicted window (VDA: 32), ``>= 11`` (``drift="window"``).

    Raises:
        ValueError: on out-of-range parameters. TypeError: if ``truth`` is not callable.

    References:
        Rahimi and Recht, "Random Features for Large-Scale Kernel Machines", NeurIPS 2007 (the field draws).

    Example:
        >>> from nips25_st2360d import lgs_order, sus_views
        >>> views = sus_views()[lgs_order(sus_views())]
        >>> s = OracleVDE(lambda r: np.ones(len(r)), seed=0).frame_log_scales(views, fov=90.0)
        >>> bool(np.std(np.diff(s)) < np.std(s))  # neighbouring frames err alike
        True
    """

    def __init__(
        self,
        truth: RayDistance,
        *,
        sigma_dir: float = 0.1 / np.sqrt(2.0),
        ell_dir: float = 90.0,
        sigma_time: float = 0.1 / np.sqrt(2.0),
        ell_time: float = 8.0,
        a: float = 0.95,
        sigma_min: float = 0.005,
        sigma_max: float = 0.08,
        noise: float = 0.02,
        tilt: float = 0.03,
        output: str = "depth",
        seed: int = 0,
        structure: str = "sequence",
        drift: str = "smooth",
        window: int = VDA_WINDOW,
    ) -> None:
        super().__init__(truth, noise=noise, tilt=tilt, output=output, seed=seed)
        self.structure = check_choice("structure", structure, STRUCTURES)
        self.drift = check_choice("drift", drift, DRIFTS)
        self.window = check_int("window", window, low=len(VDA_ANCHORS) + VDA_INTERP + 1)
        self.sigma_dir = check_real("sigma_dir", sigma_dir, low=0.0, high=2.0)
        self.ell_dir = check_real("ell_dir", ell_dir, low=0.0, high=180.0, open_low=True)
        self.sigma_time = check_real("sigma_time", sigma_time, low=0.0, high=2.0)
        self.ell_time = check_real("ell_time", ell_time, low=0.0, open_low=True)
        self.a = check_real("a", a, low=0.0, high=1.0)
        self.sigma_min = check_real("sigma_min", sigma_min, low=0.0, high=2.0)
        self.sigma_max = check_real("sigma_max", sigma_max, low=0.0, high=2.0)
        if self.sigma_max < self.sigma_min:
            raise ValueError(f"sigma_max must be >= sigma_min ({self.sigma_min}), got {self.sigma_max}")

    def _structure(self, views: np.ndarray, fov: float, size: int, rng: np.random.Generator) -> np.ndarray:
        if self.structure == "frame":
            return super()._structure(views, fov, size, rng)
        g = rng.normal(0.0, self.tilt, size=3) if self.tilt > 0 else np.zeros(3)
        rays, _ = frame_rays(views, fov=fov, size=size)
        first = view_rotation(float(views[0, 0]), float(views[0, 1]))
        return rays @ (first @ g)  # g . (R_0^T r) for every pixel of every frame

    def window_index(self, n_frames: int) -> np.ndarray:
        """Window of each frame, ``(T,)`` int: 0 for the first ``window`` frames, then one per ``window - 10``."""
        t = np.arange(check_int("n_frames", n_frames, low=1))
        stride = self.window - len(VDA_ANCHORS) - VDA_INTERP
        return np.where(t < self.window, 0, (t - self.window) // stride + 1)

    def _smooth_log_scales(self, views: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        omega = rng.normal(size=(N_FEATURES, 3)) / (2.0 * np.sin(np.deg2rad(self.ell_dir) / 2.0))
        phase_dir = rng.uniform(0.0, 2.0 * np.pi, size=N_FEATURES)
        nu = rng.normal(size=N_FEATURES) / self.ell_time
        phase_time = rng.uniform(0.0, 2.0 * np.pi, size=N_FEATURES)
        yaw, pitch = np.deg2rad(views[:, 0]), np.deg2rad(views[:, 1])
        axis = np.stack([np.cos(pitch) * np.sin(yaw), np.sin(pitch), np.cos(pitch) * np.cos(yaw)], axis=1)
        axis = axis @ view_rotation(float(views[0, 0]), float(views[0, 1]))  # R_0^T d_t: relative to the first view
        amp = np.sqrt(2.0 / N_FEATURES)
        f = self.sigma_dir * amp * np.cos(axis @ omega.T + phase_dir).sum(axis=1)
        t = np.arange(len(views), dtype=np.float64)
        g = self.sigma_time * amp * np.cos(t[:, None] * nu + phase_time).sum(axis=1)
        return f + g

    def _log_scales(self, views: np.ndarray, fov: float, rng: np.random.Generator) -> np.ndarray:
        if self.drift == "smooth":
            return self._smooth_log_scales(views, rng)
        eps = rng.normal(size=len(views))
        sigma = np.empty(len(views))
        sigma[0] = self.sigma_min if self.drift == "window" else self.sigma_max
        for t in range(1, len(views)):
            o = view_overlap(views[t - 1], views[t], fov=fov)
            sigma[t] = self.sigma_min + (self.sigma_max - self.sigma_min) * (1.0 - o)
        if self.drift == "window":
            win = self.window_index(len(views))
            eta = rng.normal(size=int(win[-1]) + 1)
            level = np.empty(len(eta))
            level[0] = self.sigma_max * eta[0]
            for j in range(1, len(eta)):
                level[j] = self.a * level[j - 1] + self.sigma_min * eta[j]
            return level[win] + sigma * eps
        out = np.empty(len(views))
        out[0] = sigma[0] * eps[0]
        for t in range(1, len(views)):
            out[t] = self.a * out[t - 1] + sigma[t] * eps[t]
        return out


class IndependentOracle(_Oracle):
    r"""Simulated image depth model run frame by frame: i.i.d. log-scale :math:`\log s_t \sim \mathcal N(0, \sigma^2)`.

    With ``sigma=noise=tilt=0`` it returns the exact depth of every frame.

    Args:
        truth: callable mapping ``(N, 3)`` unit rays to ray distances.
        sigma: std of the per-frame log-scale (default 0.1).
        noise: per-pixel log-normal noise std (default 0.02).
        tilt: std of the per-frame planar log tilt (default 0.03).
        output: ``"depth"`` or ``"disparity"``.
        seed: seed of the draws.
    """

    def __init__(
        self,
        truth: RayDistance,
        *,
        sigma: float = 0.1,
        noise: float = 0.02,
        tilt: float = 0.03,
        output: str = "depth",
        seed: int = 0,
    ) -> None:
        super().__init__(truth, noise=noise, tilt=tilt, output=output, seed=seed)
        self.sigma = check_real("sigma", sigma, low=0.0, high=2.0)

    def _log_scales(self, views: np.ndarray, fov: float, rng: np.random.Generator) -> np.ndarray:
        return self.sigma * rng.normal(size=len(views))
