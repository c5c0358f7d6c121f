r"""Video Depth Anything (VDA) in PyTorch: DINOv2 encoder, DPT head with temporal modules (needs ``[models]``).

The architecture, reconstructed from the facts of VDA's official code (module layout, state-dict key names and
shapes, default sizes; the code here is our own):

* **Encoder**: DINOv2 ViT (patch 14, 518-px position grid, layer scale, no register tokens), per frame, through
  ``transformers``' ``Dinov2Backbone``. The patch tokens of four blocks (VDA's ``intermediate_layer_idx``:
  ``[2, 5, 8, 11]`` for ViT-S/B, ``[4, 11, 17, 23]`` for ViT-L), after the final layer norm, feed the head.
* **DPT head**: ``transformers``' Depth Anything neck (1x1 projections, resampling by 4, 2, 1, 1/2, 3x3 convolutions
  to ``features`` channels, four fusion blocks) and depth head (conv, bilinear upsampling to the input size, conv,
  ReLU, 1x1 conv, ReLU: relative disparity, or metric depth for the metric checkpoints).
* **Temporal modules** (VDA's addition, :class:`TemporalModule`): four, after the reassembled features of the two
  deepest levels and after the two deepest fusion blocks. Each attends over the *frames* of a clip at every spatial
  position:

  .. math::

      y = x + W_{out}\,\mathrm{Block}\big(W_{in}\,\mathrm{GN}(x)\big),\qquad
      \mathrm{Block}(h) = h' + \mathrm{FF}(\mathrm{LN}(h')),\quad
      h' = h + \sum_{b=1}^{2} \mathrm{Attn}_b(\mathrm{LN}_b(\cdot) + P)

  with GroupNorm (32 groups), two self-attention blocks over time with absolute sinusoidal position encodings
  :math:`P` (8 heads, query/key/value without bias) applied sequentially with residuals, a GEGLU feed-forward (4x),
  and a zero-initialised output projection (so a fresh network is the per-frame image model).

:func:`official_vda_key_shapes` lists the state-dict keys and shapes of the official network for a configuration,
:func:`map_official_state_dict` maps an official state dict onto :class:`VideoDepthAnythingNet` (the fused ``qkv`` of
each ViT block is split into query, key and value), and ``nips25_st2360d.adapters.load_video_depth_anything`` loads
a local ``.pth`` strictly. References: Chen et al., *Video Depth Anything*, CVPR 2025; VDA's
``video_depth_anything/{video_depth,dpt,dpt_temporal,dinov2}.py`` and ``motion_module/``.
"""

from __future__ import annotations

import math
import re
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "VDA_ENCODERS",
    "TemporalModule",
    "VDAConfig",
    "VideoDepthAnythingNet",
    "map_official_state_dict",
    "official_vda_key_shapes",
]

_PATCH = 14
POS_INTERPOLATIONS = ("dinov2", "transformers")


@dataclass(frozen=True)
class VDAConfig:
    """Sizes of a Video Depth Anything network (defaults: ViT-S, the Apache-2.0 checkpoint).

    Args:
        embed_dim: ViT width ``D`` (384 ViT-S, 768 ViT-B, 1024 ViT-L).
        depth: ViT blocks (12, 12, 24).
        num_heads: ViT attention heads (6, 12, 16).
        layers: 0-based blocks whose outputs feed the head (VDA: ``(2, 5, 8, 11)``; ViT-L ``(4, 11, 17, 23)``).
        features: fusion width of the DPT head (64, 128, 256).
        out_channels: widths of the four reassembled levels (``(48, 96, 192, 384)`` for ViT-S).
        num_frames: clip length the temporal position encoding covers (VDA: 32).
        temporal_heads: attention heads of the temporal modules (VDA: 8).
        image_size: side of the ViT's position-embedding grid in pixels (VDA: 518, a 37 x 37 grid).
        head_hidden: width of the depth head's last hidden convolution (VDA: 32).
        pos_interpolation: resampling of the position embeddings at other input sizes: ``"dinov2"`` (DINOv2's and
            VDA's bicubic interpolation with a 0.1 patch offset) or ``"transformers"`` (``Dinov2Model``'s). They agree
            at 518 x 518 input, where nothing is resampled.

    Raises:
        ValueError: naming the field on an out-of-range value (the temporal widths ``out_channels[2]``,
            ``out_channels[3]`` and ``features`` must be multiples of 32 for the 32-group GroupNorm and of
            ``temporal_heads``).
    """

    embed_dim: int = 384
    depth: int = 12
    num_heads: int = 6
    layers: tuple[int, ...] = (2, 5, 8, 11)
    features: int = 64
    out_channels: tuple[int, ...] = (48, 96, 192, 384)
    num_frames: int = 32
    temporal_heads: int = 8
    image_size: int = 518
    head_hidden: int = 32
    pos_interpolation: str = "dinov2"

    def __post_init__(self) -> None:
        for name in ("embed_dim", "depth", "num_heads", "features", "num_frames", "temporal_heads", "head_hidden"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if self.embed_dim % self.num_heads:
            raise ValueError(f"embed_dim must be divisible by num_heads={self.num_heads}, got {self.embed_dim}")
        layers = tuple(self.layers)
        if len(layers) != 4 or list(layers) != sorted(set(layers)) or layers[0] < 0 or layers[-1] >= self.depth:
            raise ValueError(f"layers must be 4 increasing block indices in [0, depth={self.depth}), got {self.layers}")
        object.__setattr__(self, "layers", layers)
        oc = tuple(self.out_channels)
        if len(oc) != 4 or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in oc):
            raise ValueError(f"out_channels must be 4 positive ints, got {self.out_channels}")
        object.__setattr__(self, "out_channels", oc)
        for name, c in (("out_channels[2]", oc[2]), ("out_channels[3]", oc[3]), ("features", self.features)):
            if c % 32 or c % self.temporal_heads:
                raise ValueError(
                    f"{name} must be a multiple of 32 and of temporal_heads={self.temporal_heads}, got {c}"
                )
        if self.features % 2:
            raise ValueError(f"features must be even, got {self.features}")
        if isinstance(self.image_size, bool) or not isinstance(self.image_size, int) or self.image_size < _PATCH:
            raise ValueError(f"image_size must be an int >= {_PATCH}, got {self.image_size!r}")
        if self.image_size % _PATCH:
            raise ValueError(f"image_size must be a multiple of {_PATCH}, got {self.image_size}")
        if self.pos_interpolation not in POS_INTERPOLATIONS:
            raise ValueError(f"pos_interpolation must be one of {POS_INTERPOLATIONS}, got {self.pos_interpolation!r}")

    @property
    def grid(self) -> int:
        """Side of the position-embedding grid in patches (37 for 518 px)."""
        return self.image_size // _PATCH


# Default sizes of VDA's encoders (official run.py / video_depth.py / dinov2.py).
VDA_ENCODERS: dict[str, VDAConfig] = {
    "vits": VDAConfig(),
    "vitb": VDAConfig(embed_dim=768, depth=12, num_heads=12, features=128, out_channels=(96, 192, 384, 768)),
    "vitl": VDAConfig(
        embed_dim=1024,
        depth=24,
        num_heads=16,
        layers=(4, 11, 17, 23),
        features=256,
        out_channels=(256, 512, 1024, 1024),
    ),
}


def _sinusoid(length: int, dim: int) -> torch.Tensor:
    """Absolute sinusoidal position encoding ``(1, length, dim)``: sin on even channels, cos on odd ones."""
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(1, length, dim)
    pe[0, :, 0::2] = torch.sin(pos * freq)
    pe[0, :, 1::2] = torch.cos(pos * freq)[:, : dim // 2]
    return pe


class _PositionEncoding(nn.Module):
    def __init__(self, length: int, dim: int) -> None:
        super().__init__()
        self.register_buffer("pe", _sinusoid(length, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pe = self.get_buffer("pe")
        return x + pe[:, : x.shape[1]].to(x.dtype)


class _TimeAttention(nn.Module):
    """Multi-head self-attention over the frame axis of ``(N, T, C)`` tokens, with sinusoidal positions."""

    def __init__(self, dim: int, heads: int, length: int) -> None:
        super().__init__()
        self.heads = heads
        self.pos_encoder = _PositionEncoding(length, dim)
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(dim, dim, bias=False)
        self.to_v = nn.Linear(dim, dim, bias=False)
        self.to_out = nn.ModuleList([nn.Linear(dim, dim), nn.Dropout(0.0)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, t, c = x.shape
        h = self.pos_encoder(x)
        q, k, v = (proj(h).view(n, t, self.heads, c // self.heads).transpose(1, 2) for proj in
                   (self.to_q, self.to_k, self.to_v))  # fmt: skip
        y = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(n, t, c)
        for layer in self.to_out:
            y = layer(y)
        return y


class _GEGLU(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, 2 * hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        value, gate = self.proj(x).chunk(2, dim=-1)
        return value * F.gelu(gate)


class _FeedForward(nn.Module):
    def __init__(self, dim: int, mult: int = 4) -> None:
        super().__init__()
        self.net = nn.ModuleList([_GEGLU(dim, mult * dim), nn.Dropout(0.0), nn.Linear(mult * dim, dim)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.net:
            x = layer(x)
        return x


class _TemporalBlock(nn.Module):
    def __init__(self, dim: int, heads: int, length: int, n_attention: int = 2) -> None:
        super().__init__()
        self.attention_blocks = nn.ModuleList([_TimeAttention(dim, heads, length) for _ in range(n_attention)])
        self.norms = nn.ModuleList([nn.LayerNorm(dim) for _ in range(n_attention)])
        self.ff = _FeedForward(dim)
        self.ff_norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for attention, norm in zip(self.attention_blocks, self.norms, strict=True):
            x = x + attention(norm(x))
        return x + self.ff(self.ff_norm(x))


class TemporalModule(nn.Module):
    r"""VDA's temporal module: self-attention across the frames of a clip at every spatial position.

    :math:`y = x + W_{out}\,B(W_{in}\,\mathrm{GN}_{32}(x))` with one block :math:`B` of two temporal attentions and a
    GEGLU feed-forward (pre-norm, residual); :math:`W_{out}` is zero-initialised, so a fresh module is the identity.

    Args:
        channels: feature width ``C`` (a multiple of 32 and of ``heads``).
        heads: attention heads (VDA: 8).
        num_frames: longest clip the position encoding covers (VDA: 32).
        zero_init: zero the output projection (VDA's initialisation).

    Shapes:
        ``(B, T, C, h, w) -> (B, T, C, h, w)``, ``T <= num_frames``.

    Example:
        >>> m = TemporalModule(32, heads=8, num_frames=4)
        >>> x = torch.randn(1, 3, 32, 2, 2)
        >>> bool(torch.equal(m(x), x))
        True
    """

    def __init__(self, channels: int, *, heads: int = 8, num_frames: int = 32, zero_init: bool = True) -> None:
        super().__init__()
        if channels % 32 or channels % heads:
            raise ValueError(f"channels must be a multiple of 32 and of heads={heads}, got {channels}")
        self.num_frames = num_frames
        self.norm = nn.GroupNorm(32, channels, eps=1e-6)
        self.proj_in = nn.Linear(channels, channels)
        self.transformer_blocks = nn.ModuleList([_TemporalBlock(channels, heads, num_frames)])
        self.proj_out = nn.Linear(channels, channels)
        if zero_init:
            nn.init.zeros_(self.proj_out.weight)
            nn.init.zeros_(self.proj_out.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 5:
            raise ValueError(f"x must have shape (B, T, C, h, w), got {tuple(x.shape)}")
        b, t, c, h, w = x.shape
        if t > self.num_frames:
            raise ValueError(f"x holds {t} frames, more than num_frames={self.num_frames}")
        y = self.norm(x.reshape(b * t, c, h, w)).reshape(b, t, c, h * w).permute(0, 3, 1, 2).reshape(-1, t, c)
        y = self.proj_in(y)
        for block in self.transformer_blocks:
            y = block(y)
        y = self.proj_out(y).reshape(b, h * w, t, c).permute(0, 2, 3, 1).reshape(b, t, c, h, w)
        return x + y


def _dinov2_pos_interpolation(self: Any, embeddings: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """DINOv2's resampling of the position grid (bicubic, scale factor from the patch count plus 0.1)."""
    pos = self.position_embeddings
    n, grid = embeddings.shape[1] - 1, pos.shape[1] - 1
    if n == grid and height == width:
        return pos
    side = round(math.sqrt(grid))
    h0, w0 = height // _PATCH, width // _PATCH
    patch = pos[:, 1:].reshape(1, side, side, -1).permute(0, 3, 1, 2).float()
    patch = F.interpolate(patch, scale_factor=((h0 + 0.1) / side, (w0 + 0.1) / side), mode="bicubic",
                          antialias=False)  # fmt: skip
    if patch.shape[-2:] != (h0, w0):  # pragma: no cover - guarded by the 0.1 offset
        raise RuntimeError(f"position grid resampled to {tuple(patch.shape[-2:])}, expected {(h0, w0)}")
    patch = patch.to(pos.dtype).permute(0, 2, 3, 1).reshape(1, h0 * w0, -1)
    return torch.cat([pos[:, :1], patch], dim=1)


class VideoDepthAnythingNet(nn.Module):
    """Video Depth Anything: per-frame DINOv2 features, a DPT head with four temporal modules, one depth per frame.

    Args:
        config: network sizes (:data:`VDA_ENCODERS` holds VDA's ViT-S/B/L).

    Shapes:
        ``(B, T, 3, H, W)`` ImageNet-normalised frames, ``H`` and ``W`` multiples of 14, ``T <= num_frames`` ->
        ``(B, T, H, W)`` non-negative relative disparity (or metric depth for the metric checkpoints).

    Raises:
        ValueError: on a bad input shape (in ``forward``). ImportError: without ``transformers``.

    Example:
        >>> cfg = VDAConfig(embed_dim=32, depth=4, num_heads=2, layers=(0, 1, 2, 3), features=32,
        ...                 out_channels=(16, 16, 32, 32), num_frames=4, image_size=28)
        >>> net = VideoDepthAnythingNet(cfg).eval()
        >>> tuple(net(torch.randn(1, 3, 3, 28, 42)).shape)
        (1, 3, 28, 42)
    """

    def __init__(self, config: VDAConfig | None = None) -> None:
        super().__init__()
        from transformers import DepthAnythingConfig, DepthAnythingForDepthEstimation, Dinov2Config

        cfg = VDA_ENCODERS["vits"] if config is None else config
        if not isinstance(cfg, VDAConfig):
            raise TypeError(f"config must be a VDAConfig, got {type(cfg).__name__}")
        self.config = cfg
        backbone = Dinov2Config(  # type: ignore[call-arg]
            hidden_size=cfg.embed_dim, num_hidden_layers=cfg.depth, num_attention_heads=cfg.num_heads, mlp_ratio=4,
            image_size=cfg.image_size, patch_size=_PATCH, layerscale_value=1.0, layer_norm_eps=1e-6,
            hidden_act="gelu", qkv_bias=True, out_indices=[i + 1 for i in cfg.layers], apply_layernorm=True,
            reshape_hidden_states=False,
        )  # fmt: skip
        dpt = DepthAnythingConfig(
            backbone_config=backbone, patch_size=_PATCH, reassemble_hidden_size=cfg.embed_dim,
            reassemble_factors=[4, 2, 1, 0.5], neck_hidden_sizes=list(cfg.out_channels),
            fusion_hidden_size=cfg.features, head_hidden_size=cfg.head_hidden, depth_estimation_type="relative",
            max_depth=1,
        )  # fmt: skip
        self.image_config = dpt
        image_model = DepthAnythingForDepthEstimation(dpt)
        self.backbone = image_model.backbone
        self.neck = image_model.neck
        self.head = image_model.head
        if cfg.pos_interpolation == "dinov2":
            emb = self.backbone.embeddings
            emb.interpolate_pos_encoding = types.MethodType(_dinov2_pos_interpolation, emb)
        widths = (cfg.out_channels[2], cfg.out_channels[3], cfg.features, cfg.features)
        self.temporal = nn.ModuleList(
            [TemporalModule(c, heads=cfg.temporal_heads, num_frames=cfg.num_frames) for c in widths]
        )

    def _time(self, i: int, x: torch.Tensor, b: int, t: int) -> torch.Tensor:
        y: torch.Tensor = self.temporal[i](x.unflatten(0, (b, t)))
        return y.flatten(0, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 5 or x.shape[2] != 3:
            raise ValueError(f"x must have shape (B, T, 3, H, W), got {tuple(x.shape)}")
        b, t, _, height, width = x.shape
        if height % _PATCH or width % _PATCH or height == 0 or width == 0:
            raise ValueError(f"x's H and W must be positive multiples of {_PATCH}, got {height} x {width}")
        if not 1 <= t <= self.config.num_frames:
            raise ValueError(f"x must hold 1..{self.config.num_frames} frames, got {t}")
        ph, pw = height // _PATCH, width // _PATCH
        tokens = self.backbone(pixel_values=x.flatten(0, 1)).feature_maps
        level = self.neck.reassemble_stage(list(tokens), ph, pw)
        level[2] = self._time(0, level[2], b, t)
        level[3] = self._time(1, level[3], b, t)
        rn = [conv(f) for conv, f in zip(self.neck.convs, level, strict=True)]
        fusion = self.neck.fusion_stage.layers
        path = self._time(2, fusion[0](rn[3], size=rn[2].shape[2:]), b, t)
        path = self._time(3, fusion[1](path, rn[2], size=rn[1].shape[2:]), b, t)
        path = fusion[2](path, rn[1], size=rn[0].shape[2:])
        path = fusion[3](path, rn[0])
        depth: torch.Tensor = self.head([path], ph, pw)
        return F.relu(depth).reshape(b, t, height, width)


def official_vda_key_shapes(config: VDAConfig) -> dict[str, tuple[int, ...]]:
    """State-dict keys and shapes of the official Video Depth Anything network for ``config``.

    Derived from VDA's code (``VideoDepthAnything``: ``pretrained`` = DINOv2, ``head`` = ``DPTHeadTemporal``), so a
    checkpoint written in VDA's layout can be generated for tests without VDA's code or weights.

    Args:
        config: network sizes.

    Returns:
        ``{key: shape}`` in VDA's layout (parameters and the temporal position-encoding buffers ``pos_encoder.pe``).
    """
    if not isinstance(config, VDAConfig):
        raise TypeError(f"config must be a VDAConfig, got {type(config).__name__}")
    d, f, oc = config.embed_dim, config.features, config.out_channels
    s: dict[str, tuple[int, ...]] = {
        "pretrained.cls_token": (1, 1, d),
        "pretrained.pos_embed": (1, config.grid**2 + 1, d),
        "pretrained.mask_token": (1, d),
        "pretrained.patch_embed.proj.weight": (d, 3, _PATCH, _PATCH),
        "pretrained.patch_embed.proj.bias": (d,),
    }
    for i in range(config.depth):
        p = f"pretrained.blocks.{i}."
        for norm in ("norm1", "norm2"):
            s[p + norm + ".weight"] = s[p + norm + ".bias"] = (d,)
        s[p + "attn.qkv.weight"], s[p + "attn.qkv.bias"] = (3 * d, d), (3 * d,)
        s[p + "attn.proj.weight"], s[p + "attn.proj.bias"] = (d, d), (d,)
        s[p + "ls1.gamma"] = s[p + "ls2.gamma"] = (d,)
        s[p + "mlp.fc1.weight"], s[p + "mlp.fc1.bias"] = (4 * d, d), (4 * d,)
        s[p + "mlp.fc2.weight"], s[p + "mlp.fc2.bias"] = (d, 4 * d), (d,)
    s["pretrained.norm.weight"] = s["pretrained.norm.bias"] = (d,)
    kernels = {0: 4, 1: 2, 3: 3}
    for i, c in enumerate(oc):
        s[f"head.projects.{i}.weight"], s[f"head.projects.{i}.bias"] = (c, d, 1, 1), (c,)
        if i in kernels:
            s[f"head.resize_layers.{i}.weight"] = (c, c, kernels[i], kernels[i])
            s[f"head.resize_layers.{i}.bias"] = (c,)
        s[f"head.scratch.layer{i + 1}_rn.weight"] = (f, c, 3, 3)
    for j in range(1, 5):
        p = f"head.scratch.refinenet{j}."
        s[p + "out_conv.weight"], s[p + "out_conv.bias"] = (f, f, 1, 1), (f,)
        for u in (1, 2):
            for v in (1, 2):
                s[p + f"resConfUnit{u}.conv{v}.weight"], s[p + f"resConfUnit{u}.conv{v}.bias"] = (f, f, 3, 3), (f,)
    s["head.scratch.output_conv1.weight"], s["head.scratch.output_conv1.bias"] = (f // 2, f, 3, 3), (f // 2,)
    hh = config.head_hidden
    s["head.scratch.output_conv2.0.weight"], s["head.scratch.output_conv2.0.bias"] = (hh, f // 2, 3, 3), (hh,)
    s["head.scratch.output_conv2.2.weight"], s["head.scratch.output_conv2.2.bias"] = (1, hh, 1, 1), (1,)
    for k, c in enumerate((oc[2], oc[3], f, f)):
        p = f"head.motion_modules.{k}.temporal_transformer."
        s[p + "norm.weight"] = s[p + "norm.bias"] = (c,)
        for lin in ("proj_in", "proj_out"):
            s[p + lin + ".weight"], s[p + lin + ".bias"] = (c, c), (c,)
        q = p + "transformer_blocks.0."
        for a in (0, 1):
            for name in ("to_q", "to_k", "to_v"):
                s[q + f"attention_blocks.{a}.{name}.weight"] = (c, c)
            s[q + f"attention_blocks.{a}.to_out.0.weight"], s[q + f"attention_blocks.{a}.to_out.0.bias"] = (c, c), (c,)
            s[q + f"attention_blocks.{a}.pos_encoder.pe"] = (1, config.num_frames, c)
            s[q + f"norms.{a}.weight"] = s[q + f"norms.{a}.bias"] = (c,)
        s[q + "ff.net.0.proj.weight"], s[q + "ff.net.0.proj.bias"] = (8 * c, c), (8 * c,)
        s[q + "ff.net.2.weight"], s[q + "ff.net.2.bias"] = (c, 4 * c), (c,)
        s[q + "ff_norm.weight"] = s[q + "ff_norm.bias"] = (c,)
    return s


_HEAD_RULES: tuple[tuple[str, str], ...] = (
    (r"^head\.projects\.(\d)\.", r"neck.reassemble_stage.layers.\1.projection."),
    (r"^head\.resize_layers\.(\d)\.", r"neck.reassemble_stage.layers.\1.resize."),
    (r"^head\.scratch\.output_conv1\.", "head.conv1."),
    (r"^head\.scratch\.output_conv2\.0\.", "head.conv2."),
    (r"^head\.scratch\.output_conv2\.2\.", "head.conv3."),
    (r"^head\.motion_modules\.(\d)\.temporal_transformer\.", r"temporal.\1."),
    (r"^pretrained\.cls_token$", "backbone.embeddings.cls_token"),
    (r"^pretrained\.pos_embed$", "backbone.embeddings.position_embeddings"),
    (r"^pretrained\.mask_token$", "backbone.embeddings.mask_token"),
    (r"^pretrained\.patch_embed\.proj\.", "backbone.embeddings.patch_embeddings.projection."),
    (r"^pretrained\.norm\.", "backbone.layernorm."),
    (r"^pretrained\.blocks\.(\d+)\.(norm1|norm2|mlp\.fc1|mlp\.fc2)\.", r"backbone.encoder.layer.\1.\2."),
    (r"^pretrained\.blocks\.(\d+)\.ls([12])\.gamma$", r"backbone.encoder.layer.\1.layer_scale\2.lambda1"),
)


def _rename(key: str, attention: Mapping[str, str]) -> str | None:
    m = re.match(r"^head\.scratch\.layer([1-4])_rn\.(.+)$", key)
    if m:
        return f"neck.convs.{int(m.group(1)) - 1}.{m.group(2)}"
    m = re.match(r"^head\.scratch\.refinenet([1-4])\.(.+)$", key)
    if m:
        rest = m.group(2).replace("out_conv.", "projection.")
        rest = re.sub(r"resConfUnit(\d)\.conv(\d)\.", r"residual_layer\1.convolution\2.", rest)
        return f"neck.fusion_stage.layers.{4 - int(m.group(1))}.{rest}"
    m = re.match(r"^pretrained\.blocks\.(\d+)\.attn\.proj\.(weight|bias)$", key)
    if m:
        return f"backbone.encoder.layer.{m.group(1)}.{attention['out']}.{m.group(2)}"
    for pattern, repl in _HEAD_RULES:
        if re.match(pattern, key):
            return re.sub(pattern, repl, key)
    return None


def _attention_names(target: Sequence[str]) -> dict[str, str]:
    """Names of the DINOv2 attention projections in the installed ``transformers`` (they changed in v5)."""
    if any(k.endswith("attention.q_proj.weight") for k in target):
        return {"q": "attention.q_proj", "k": "attention.k_proj", "v": "attention.v_proj", "out": "attention.o_proj"}
    return {"q": "attention.attention.query", "k": "attention.attention.key", "v": "attention.attention.value",
            "out": "attention.output.dense"}  # fmt: skip


def map_official_state_dict(state_dict: Mapping[str, torch.Tensor], model: VideoDepthAnythingNet) -> dict[str, Any]:
    """Map an official Video Depth Anything state dict onto ``model``'s keys (for ``load_state_dict(strict=True)``).

    ``pretrained.*`` (DINOv2) goes to ``backbone.*`` (``transformers``' ``Dinov2Backbone``; each fused
    ``attn.qkv`` is split into query, key and value), ``head.projects/resize_layers/scratch.*`` to the Depth Anything
    ``neck.*``/``head.*`` (``refinenet4..1`` are fusion layers ``0..3``), ``head.motion_modules.k`` to ``temporal.k``.

    Args:
        state_dict: the official checkpoint (``torch.load`` of ``video_depth_anything_<encoder>.pth``).
        model: the network to load into (its key names decide the attention naming of the installed
            ``transformers``).

    Returns:
        A new state dict in ``model``'s layout (tensors are shared, not copied, except the split ``qkv``).

    Raises:
        TypeError: if ``state_dict`` is not a mapping of tensors. ValueError: on a key that is not part of VDA's
        layout (named in the message).
    """
    if not isinstance(state_dict, Mapping) or not all(isinstance(v, torch.Tensor) for v in state_dict.values()):
        raise TypeError("state_dict must be a mapping from str to torch.Tensor")
    names = _attention_names(list(model.state_dict()))
    out: dict[str, Any] = {}
    unknown = []
    for key, value in state_dict.items():
        m = re.match(r"^pretrained\.blocks\.(\d+)\.attn\.qkv\.(weight|bias)$", key)
        if m:
            for part, chunk in zip("qkv", value.chunk(3, dim=0), strict=True):
                out[f"backbone.encoder.layer.{m.group(1)}.{names[part]}.{m.group(2)}"] = chunk.clone()
            continue
        new = _rename(key, names)
        if new is None:
            unknown.append(key)
        else:
            out[new] = value
    if unknown:
        raise ValueError(f"state_dict has keys outside Video Depth Anything's layout: {unknown[:5]}")
    return out
