r"""Real depth networks behind the :class:`~nips25_st2360d.models.VideoDepthModel` protocol (needs ``[models]``).

* :class:`DepthAnythingV2`: Depth Anything V2 through ``transformers`` (``DepthAnythingForDepthEstimation``) from a
  local directory; an image model, run frame by frame. Relative checkpoints predict affine-invariant disparity
  (``output="disparity"``), metric ones depth in metres (``output="depth"``).
* :class:`TorchVideoModel`: any ``torch.nn.Module`` mapping a clip ``(1, T, 3, s, s)`` to ``(1, T, s, s)``.
* :func:`load_video_depth_anything`: Video Depth Anything (our own port,
  :mod:`nips25_st2360d.video_depth_anything`) with a local official ``.pth`` checkpoint mapped and loaded strictly,
  as a :class:`TorchVideoModel`.

Install with ``pip install 'nips25-st2360d[models]'``. Nothing is downloaded: weights come from a local path.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from nips25_st2360d._validation import check_array, check_choice, check_int
from nips25_st2360d.models import OUTPUTS
from nips25_st2360d.video_windows import VDA_WINDOW, WINDOW_ALIGNMENTS, window_plan, windowed_inference

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "DepthAnythingV2",
    "TorchVideoModel",
    "frames_to_tensor",
    "load_video_depth_anything",
]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _torch() -> Any:
    try:
        import torch
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError("the model adapters need PyTorch: pip install 'nips25-st2360d[models]'") from err
    return torch


def frames_to_tensor(frames: np.ndarray, *, multiple: int = 14, device: str = "cpu") -> Any:
    """uint8 frames ``(T, s, s, 3)`` to a normalised float tensor ``(T, 3, s', s')`` with ``s'`` a multiple of 14.

    Frames are resized (bicubic) to the nearest multiple of ``multiple`` (the ViT patch size) and normalised with the
    ImageNet mean and standard deviation, as Depth Anything (V2 and Video) do.
    """
    torch = _torch()
    frames = check_array("frames", frames, ndim=4, last=3, dtype="uint8")
    multiple = check_int("multiple", multiple, low=1)
    x = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).float().div(255.0)
    size = max(multiple, round(frames.shape[1] / multiple) * multiple)
    if size != frames.shape[1]:
        x = torch.nn.functional.interpolate(x, size=(size, size), mode="bicubic", align_corners=False)
    mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    return ((x - mean) / std).to(device)


def _positive(pred: Any, size: int, eps: float) -> np.ndarray:
    """Resize ``(T, h, w)`` back to ``size`` and clip to ``eps`` (relative disparity may touch 0)."""
    torch = _torch()
    if pred.shape[-1] != size:
        pred = torch.nn.functional.interpolate(pred[:, None], size=(size, size), mode="bilinear",
                                               align_corners=False)[:, 0]  # fmt: skip
    out = pred.detach().float().cpu().numpy()
    return np.maximum(out, eps * max(float(out.max()), eps)).astype(np.float32)


class DepthAnythingV2:
    """Depth Anything V2 (``transformers``) from a local directory, as a frame-by-frame sequence model.

    Args:
        path: local directory holding ``config.json`` and the weights (``save_pretrained`` layout), e.g. a download
            of ``depth-anything/Depth-Anything-V2-Small-hf``.
        device: torch device string.
        batch_size: frames per forward pass, ``>= 1``.
        eps: relative floor applied to the output (disparity may reach 0 on the far background).

    Raises:
        ValueError: if ``path`` is not a directory with a ``config.json``.
        ImportError: without PyTorch/transformers.

    Example:
        >>> model = DepthAnythingV2("/models/Depth-Anything-V2-Small-hf")  # doctest: +SKIP
        >>> depth = ST2360D(model).predict(panorama).depth  # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str], *, device: str = "cpu", batch_size: int = 8,
                 eps: float = 1e-3) -> None:  # fmt: skip
        p = Path(path)
        if not (p.is_dir() and (p / "config.json").is_file()):
            raise ValueError(f"path must be a local Depth Anything V2 directory with config.json, got {str(p)!r}")
        _torch()
        from transformers import DepthAnythingForDepthEstimation

        net: Any = DepthAnythingForDepthEstimation.from_pretrained(str(p), local_files_only=True)
        self.net = net.to(device).eval()
        self.device = device
        self.batch_size = check_int("batch_size", batch_size, low=1)
        self.eps = float(eps)
        kind = getattr(self.net.config, "depth_estimation_type", "relative")
        self.output = "depth" if kind == "metric" else "disparity"

    def predict(self, frames: np.ndarray, *, views: np.ndarray | None = None, fov: float | None = None) -> np.ndarray:
        """``(T, s, s)`` float32 disparity (relative checkpoints) or metric depth of ``(T, s, s, 3)`` uint8 frames."""
        torch = _torch()
        x = frames_to_tensor(frames, device=self.device)
        outs = []
        with torch.inference_mode():
            for i in range(0, len(x), self.batch_size):
                outs.append(self.net(pixel_values=x[i : i + self.batch_size]).predicted_depth)
        return _positive(torch.cat(outs), frames.shape[1], self.eps)


class TorchVideoModel:
    """Wrap a PyTorch video depth network (a whole clip per forward pass) as a :class:`VideoDepthModel`.

    Args:
        module: ``torch.nn.Module`` mapping ``(1, T, 3, s', s')`` normalised frames to ``(1, T, s', s')``.
        output: ``"disparity"`` (Video Depth Anything's relative models) or ``"depth"``.
        device: torch device string.
        multiple: input side is rounded to a multiple of this (14 for ViT backbones).
        eps: relative floor applied to the output.
        window: frames the network takes at once; longer sequences run window by window through
            :func:`~nips25_st2360d.video_windows.windowed_inference` (VDA: 32). ``None``: the whole clip at once.
        window_align: alignment between windows, ``"affine"`` (relative disparity), ``"scale"`` or ``"none"``
            (metric depth).

    Raises:
        TypeError: if ``module`` is not a ``torch.nn.Module``. ValueError: on an unknown ``output``, a bad
        ``window`` or ``window_align``.
    """

    def __init__(self, module: Any, *, output: str = "disparity", device: str = "cpu", multiple: int = 14,
                 eps: float = 1e-3, window: int | None = None, window_align: str = "affine") -> None:  # fmt: skip
        torch = _torch()
        if not isinstance(module, torch.nn.Module):
            raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
        self.output = check_choice("output", output, OUTPUTS)
        self.module = module.to(device).eval()
        self.device = device
        self.multiple = check_int("multiple", multiple, low=1)
        self.eps = float(eps)
        if window is not None:
            window_plan(window + 1, window=window)  # validates window against VDA's anchors and interpolation
        self.window = window
        self.window_align = check_choice("window_align", window_align, WINDOW_ALIGNMENTS)

    def _clip(self, frames: np.ndarray) -> np.ndarray:
        torch = _torch()
        x = frames_to_tensor(frames, multiple=self.multiple, device=self.device)
        with torch.inference_mode():
            y = self.module(x[None])
        if y.ndim != 4 or y.shape[:2] != (1, len(frames)):
            raise ValueError(f"module output must have shape (1, T={len(frames)}, h, w), got {tuple(y.shape)}")
        return _positive(y[0], frames.shape[1], self.eps)

    def predict(self, frames: np.ndarray, *, views: np.ndarray | None = None, fov: float | None = None) -> np.ndarray:
        """``(T, s, s)`` float32 prediction for ``(T, s, s, 3)`` uint8 frames (one pass, or window by window)."""
        frames = check_array("frames", frames, ndim=4, last=3, dtype="uint8")
        if self.window is None or len(frames) <= self.window:
            return self._clip(frames)
        return windowed_inference(self._clip, frames, window=self.window, align=self.window_align)


def load_video_depth_anything(
    ckpt_path: str | os.PathLike[str],
    *,
    encoder: str = "vits",
    metric: bool = False,
    config: Any = None,
    device: str = "cpu",
) -> TorchVideoModel:
    """Video Depth Anything from a local checkpoint, strictly loaded into our own port, as a sequence model.

    The network is :class:`~nips25_st2360d.video_depth_anything.VideoDepthAnythingNet` (DINOv2 and the DPT head from
    ``transformers``, VDA's temporal modules our own); the official state dict is mapped onto it by
    :func:`~nips25_st2360d.video_depth_anything.map_official_state_dict` and loaded with ``strict=True``. A state
    dict already in our layout (keys ``backbone.*``) loads as is. Nothing is downloaded. Sequences longer than one
    VDA window (32 frames; the default SUS sequence has 24) run window by window with VDA's keyframe overlap and
    scale/shift alignment (:func:`~nips25_st2360d.video_windows.windowed_inference`; no alignment for the metric
    variant).

    Args:
        ckpt_path: local ``video_depth_anything_<encoder>.pth`` (or ``metric_video_depth_anything_<encoder>.pth``).
        encoder: ``"vits"`` (Apache-2.0 weights), ``"vitb"`` or ``"vitl"``: VDA's sizes (``VDA_ENCODERS``).
        metric: the metric-depth variant (output depth) instead of the relative one (output disparity).
        config: a :class:`~nips25_st2360d.video_depth_anything.VDAConfig` overriding ``encoder`` (other sizes).
        device: torch device string.

    Returns:
        A :class:`TorchVideoModel` around the loaded network (window 32 or ``config.num_frames``).

    Raises:
        ValueError: if ``ckpt_path`` is not a file, ``encoder`` is unknown, or the checkpoint has keys outside VDA's
            layout. TypeError: on a ``config`` that is not a ``VDAConfig`` or a checkpoint that is not a state dict.
        RuntimeError: if the checkpoint does not match the network (strict loading: missing/unexpected keys, shapes).

    Example:
        >>> model = load_video_depth_anything("video_depth_anything_vits.pth", encoder="vits")  # doctest: +SKIP
        >>> depth = ST2360D(model).predict(panorama).depth  # doctest: +SKIP
    """
    torch = _torch()
    from nips25_st2360d.video_depth_anything import (
        VDA_ENCODERS,
        VDAConfig,
        VideoDepthAnythingNet,
        map_official_state_dict,
    )

    ckpt = Path(ckpt_path)
    if not ckpt.is_file():
        raise ValueError(f"ckpt_path must be a local Video Depth Anything checkpoint (.pth), got {str(ckpt)!r}")
    if config is None:
        config = VDA_ENCODERS[check_choice("encoder", encoder, tuple(VDA_ENCODERS))]
    elif not isinstance(config, VDAConfig):
        raise TypeError(f"config must be a VDAConfig, got {type(config).__name__}")
    state = torch.load(str(ckpt), map_location="cpu", weights_only=True)
    if not isinstance(state, dict):
        raise TypeError(f"ckpt_path must hold a state dict, got {type(state).__name__}")
    net = VideoDepthAnythingNet(config)
    if not any(str(k).startswith("backbone.") for k in state):
        state = map_official_state_dict(state, net)
    net.load_state_dict(state, strict=True)
    window = min(VDA_WINDOW, config.num_frames)
    return TorchVideoModel(net, output="depth" if metric else "disparity", device=device, window=window,
                           window_align="none" if metric else "affine")  # fmt: skip
