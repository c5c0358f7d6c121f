"""TS-GNN: a graph foundation model whose single parameter set runs on any graph, any F and any C.

The network lifts features ``x [N, F]`` and observed labels ``y_obs [N, C]`` to set tensors with one channel,
applies :class:`~nips25_gfm.layers.TSLayer` s of widths ``[1, h, ..., h, 1]`` with GELU on both streams between
layers, and reads the logits from the last label stream (paper, Sec. 4; official ``models/gfm.py``).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from nips25_gfm._validation import check_int
from nips25_gfm.layers import BACKBONES, TSLayer
from nips25_gfm.least_squares import Conversions

__all__ = ["TSGNN", "TSGNNConfig"]


@dataclass(frozen=True)
class TSGNNConfig:
    """Architecture of :class:`TSGNN` (defaults: official ``hid 16``, 2 layers, ``n_hops -1``, mean backbone).

    Attributes:
        hidden: channels of the hidden layers (>= 1).
        num_layers: number of :class:`TSLayer` (>= 1).
        n_hops: ``-1`` (pooled maps only) or ``L >= 0`` hop maps.
        backbone: ``"mean"`` (TS-Mean) or ``"gat"`` (TS-GAT).
    """

    hidden: int = 16
    num_layers: int = 2
    n_hops: int = -1
    backbone: str = "mean"

    def __post_init__(self) -> None:
        check_int(self.hidden, "hidden", low=1)
        check_int(self.num_layers, "num_layers", low=1)
        check_int(self.n_hops, "n_hops", low=-1)
        if self.backbone not in BACKBONES:
            raise ValueError(f"backbone: expected one of {BACKBONES}, got {self.backbone!r}")


class TSGNN(nn.Module):
    r"""Triple-symmetric GNN (TS-Mean / TS-GAT) for zero-shot node classification.

    .. math::
        (x^{0}, y^{0}) = (X[..., None], Y_{obs}[..., None]),\quad
        (x^{t+1}, y^{t+1}) = \sigma(\mathrm{TSLayer}_t(x^{t}, y^{t})),\quad
        \mathrm{logits} = y^{T}[..., 0]

    Args:
        hidden, num_layers, n_hops, backbone: see :class:`TSGNNConfig`.

    Shapes:
        ``forward(graph, x [N, F], y_obs [N, C], conv) -> logits [N, C]``.

    Example:
        >>> model = TSGNN(hidden=8)
        >>> sum(p.numel() for p in model.parameters())
        192
    """

    def __init__(self, *, hidden: int = 16, num_layers: int = 2, n_hops: int = -1, backbone: str = "mean") -> None:
        super().__init__()
        self.config = TSGNNConfig(hidden=hidden, num_layers=num_layers, n_hops=n_hops, backbone=backbone)
        widths = [1] + [hidden] * (num_layers - 1) + [1]
        self.layers = nn.ModuleList(
            TSLayer(k_in, k_out, n_hops=n_hops, backbone=backbone) for k_in, k_out in itertools.pairwise(widths)
        )

    def forward(self, graph: Any, x: torch.Tensor, y_obs: torch.Tensor, conv: Conversions) -> torch.Tensor:
        """Logits ``[N, C]`` of every node given features, observed labels (zero rows where unobserved), maps."""
        for name, t in (("x", x), ("y_obs", y_obs)):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
            if t.ndim != 2 or t.shape[0] != graph.num_nodes() or t.shape[1] == 0:
                raise ValueError(f"{name}: expected shape [{graph.num_nodes()}, >=1], got {tuple(t.shape)}")
        if graph.batch_size > 1:
            raise ValueError(
                f"graph: a batched DGLGraph ({graph.batch_size} graphs) would share one set of conversion maps; "
                "classify each component on its own (nips25_gfm.zero_shot does)"
            )
        if not bool(torch.isfinite(y_obs).all()):
            raise ValueError("y_obs: contains NaN or inf")
        observed = (y_obs == 0) | (y_obs == 1)
        if not bool(observed.all()) or bool((y_obs.sum(dim=1) > 1).any()):
            raise ValueError("y_obs: expected one-hot rows for observed labels and zero rows elsewhere")
        if not isinstance(conv, Conversions):
            raise TypeError(f"conv: expected Conversions (xy_conversions), got {type(conv).__name__}")
        if self.config.n_hops >= 0 and len(conv.ls2y) != self.config.n_hops + 1:
            raise ValueError(f"conv: fitted with another n_hops than the model's {self.config.n_hops}")
        xs, ys = x[..., None], y_obs.to(x.dtype)[..., None]
        for i, layer in enumerate(self.layers):
            xs, ys = layer(graph, xs, ys, conv)
            if i < len(self.layers) - 1:
                xs, ys = nn.functional.gelu(xs), nn.functional.gelu(ys)
        return ys[..., 0]

    def num_parameters(self) -> int:
        """Number of trainable scalars (independent of F and C)."""
        return sum(p.numel() for p in self.parameters())

    def save(self, path: str | Path) -> Path:
        """Write the configuration and weights to ``path`` (a ``torch.save`` file).

        Under a distributed launch every process holds the same weights after :func:`~nips25_gfm.training.fit`;
        call this on the main process only, after ``accelerator.wait_for_everyone()``, as ``nips25-gfm train``
        does.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"config": json.dumps(asdict(self.config)), "state_dict": self.state_dict()}, path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> TSGNN:
        """Read a model written by :meth:`save`.

        The file is read with ``torch.load(weights_only=True)``: no pickled code is executed.

        Raises:
            FileNotFoundError: no file at ``path``.
            ValueError: the file is not a saved TS-GNN (any other file, a corrupt or foreign pickle).
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"path: no saved model at {path}")
        try:
            # weights_only: a model file holds tensors and a JSON string, never code to unpickle.
            blob = torch.load(path, map_location="cpu", weights_only=True)
            model = cls(**json.loads(blob["config"]))
            model.load_state_dict(blob["state_dict"])
        except Exception as exc:  # any unreadable file: torch raises pickle, zip, runtime or value errors
            first = (str(exc).splitlines() or [""])[0]
            raise ValueError(f"path: {path} is not a saved TS-GNN ({type(exc).__name__}: {first})") from exc
        return model
