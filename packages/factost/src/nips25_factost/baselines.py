"""Baselines in one harness: naive forecasts, STID (a compact expert) and a joint space-time Transformer.

All follow the ``(B, L, N) -> (B, H, N)`` convention of :class:`~nips25_factost.training.PanelForecaster`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from accelerate import Accelerator
from torch import nn

from nips25_factost.backbone import instance_normalize, patchify
from nips25_factost.panel import STPanel
from nips25_factost.training import FitConfig, PanelForecaster

__all__ = ["STID", "JointSTTransformer", "historical_average", "last_value", "seasonal_naive"]


def _check_context(x: np.ndarray, horizon: int) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"x must be numeric, got dtype {arr.dtype}")
    if arr.ndim != 3 or 0 in arr.shape:
        raise ValueError(f"x must be a non-empty (B, L, N) array, got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError("x must not contain inf (NaN marks a missing value)")
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
        raise ValueError(f"horizon must be an integer >= 1, got {horizon!r}")
    return arr.astype(np.float64)


def last_value(x: np.ndarray, horizon: int) -> np.ndarray:
    """Naive forecast: repeat each node's last observed context value ``(B, L, N) -> (B, H, N)``.

    Example:
        >>> last_value(np.array([[[1.0], [2.0]]]), 2)[0, :, 0].tolist()
        [2.0, 2.0]
    """
    arr = _check_context(x, horizon)
    filled = arr.copy()
    for t in range(1, filled.shape[1]):  # forward-fill missing values along time
        filled[:, t] = np.where(np.isnan(filled[:, t]), filled[:, t - 1], filled[:, t])
    return np.repeat(filled[:, -1:], horizon, axis=1)


def seasonal_naive(x: np.ndarray, horizon: int, *, period: int = 7) -> np.ndarray:
    r"""Seasonal naive forecast :math:`\hat y_{t+h} = x_{t+h-s\lceil h/s \rceil}` with season ``s = period``.

    Args:
        x: ``(B, L, N)`` contexts with ``L >= period``.
        horizon: ``H >= 1``.
        period: season length ``s >= 1`` (7 for daily data with a weekly cycle).

    Raises:
        ValueError: if ``L < period`` or an argument is out of range.

    Example:
        >>> seasonal_naive(np.arange(4.0).reshape(1, 4, 1), 3, period=2)[0, :, 0].tolist()
        [2.0, 3.0, 2.0]
    """
    arr = _check_context(x, horizon)
    if isinstance(period, bool) or not isinstance(period, (int, np.integer)) or period < 1:
        raise ValueError(f"period must be an integer >= 1, got {period!r}")
    if arr.shape[1] < period:
        raise ValueError(f"x has L={arr.shape[1]} context steps, fewer than period={period}")
    idx = arr.shape[1] - period + (np.arange(horizon) % period)
    return arr[:, idx]


def historical_average(train: STPanel, n_windows: int, horizon: int) -> np.ndarray:
    """Historical average: each node's mean over the training panel, ``(n_windows, H, N)``.

    Raises:
        TypeError: if ``train`` is not an :class:`STPanel`. ValueError: for ``n_windows`` or ``horizon`` < 1.
    """
    if not isinstance(train, STPanel):
        raise TypeError(f"train must be an STPanel, got {type(train).__name__}")
    for name, value in (("n_windows", n_windows), ("horizon", horizon)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    mean = np.nanmean(train.values, axis=0)
    return np.broadcast_to(mean, (n_windows, horizon, train.n_nodes)).copy()


def _check_dims(**dims: int) -> None:
    for name, value in dims.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


class STID(PanelForecaster):
    r"""STID (Shao et al., CIKM 2022): an MLP over each node's z-scored context plus node and calendar embeddings.

    :math:`\hat Y_n = W_o\,\mathrm{MLP}([W_x x_n \,\|\, E_n \,\|\, T_{dow} \,\|\, T_{month}])`, with residual MLP
    layers; the calendar embeddings are those of the last context step. Inputs are z-scored per node with the
    training panel's mean and standard deviation (fitted in :meth:`fit`).

    Args:
        n_nodes: ``N``.
        context: ``L``.
        horizon: ``H``.
        calendar: ``{feature: n_categories}`` in the calendar codes' column order.
        d_model: hidden width (32); emb_dim: embedding size (32); n_layers: residual MLP layers (3).
    """

    def __init__(
        self,
        *,
        n_nodes: int,
        context: int,
        horizon: int,
        calendar: Mapping[str, int] | None = None,
        d_model: int = 32,
        emb_dim: int = 32,
        n_layers: int = 3,
    ) -> None:
        super().__init__()
        self.mean: torch.Tensor
        self.std: torch.Tensor
        _check_dims(n_nodes=n_nodes, context=context, horizon=horizon, d_model=d_model, emb_dim=emb_dim,
                    n_layers=n_layers)  # fmt: skip
        calendar = {"day_of_week": 7, "month": 12} if calendar is None else dict(calendar)
        self.n_nodes, self.context, self.horizon = n_nodes, context, horizon
        self.input_proj = nn.Linear(context, d_model)
        self.node_emb = nn.Parameter(torch.randn(n_nodes, emb_dim) * 0.1)
        self.time_emb = nn.ModuleList(nn.Embedding(size, emb_dim) for size in calendar.values())
        width = d_model + emb_dim * (1 + len(calendar))
        self.layers = nn.ModuleList(
            nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Dropout(0.15), nn.Linear(width, width))
            for _ in range(n_layers)
        )
        self.output = nn.Linear(width, horizon)
        self.register_buffer("mean", torch.zeros(n_nodes))
        self.register_buffer("std", torch.ones(n_nodes))

    def on_fit_start(self, panel: STPanel, config: FitConfig, accelerator: Accelerator) -> None:
        """Fit the per-node z-score scaler on the training panel; check ``L`` and ``H``."""
        if (config.context, config.horizon) != (self.context, self.horizon):
            raise ValueError(f"config has L, H = {config.context}, {config.horizon}; STID was built for "
                             f"{self.context}, {self.horizon}")  # fmt: skip
        self.mean.copy_(torch.as_tensor(np.nanmean(panel.values, axis=0)))
        self.std.copy_(torch.as_tensor(np.nanstd(panel.values, axis=0)).clamp(min=1e-6))

    def forward(self, x: torch.Tensor, calendar: torch.Tensor) -> torch.Tensor:
        """Forecast ``(B, H, N)`` from ``x`` ``(B, L, N)`` and calendar codes ``(B, L + H, C)``."""
        if x.ndim != 3 or x.shape[1:] != (self.context, self.n_nodes):
            raise ValueError(f"x must be (B, L={self.context}, N={self.n_nodes}), got {tuple(x.shape)}")
        b = x.shape[0]
        z = torch.nan_to_num((x - self.mean) / self.std).transpose(1, 2)  # (B, N, L)
        last = calendar[:, self.context - 1]
        parts = [self.input_proj(z), self.node_emb.expand(b, -1, -1)]
        parts += [table(last[:, j]).unsqueeze(1).expand(-1, self.n_nodes, -1) for j, table in enumerate(self.time_emb)]
        h = torch.cat(parts, dim=-1)
        for layer in self.layers:
            h = h + layer(h)
        y = self.output(h).transpose(1, 2)  # (B, H, N)
        return y * self.std + self.mean


class JointSTTransformer(PanelForecaster):
    """Efficiency reference: the FactoST token layout with joint attention over all nodes' tokens at once.

    Each node contributes the same ``S = n_tok + P + 1 + ceil(H/p)`` tokens as in FactoST (prompt, context patches,
    REG, future placeholders), with the same width, depth, heads and FFN; but the ``N * S`` tokens of a window form
    one sequence, so attention costs ``O((N S)^2)`` per window against FactoST's ``O(N S^2)``.
    """

    def __init__(
        self,
        *,
        n_nodes: int,
        context: int,
        horizon: int,
        patch_len: int = 4,
        d_model: int = 64,
        n_layers: int = 3,
        n_heads: int = 4,
        d_ff: int = 128,
        n_prompt_tokens: int = 3,
    ) -> None:
        super().__init__()
        _check_dims(n_nodes=n_nodes, context=context, horizon=horizon, patch_len=patch_len, d_model=d_model,
                    n_layers=n_layers, n_heads=n_heads, d_ff=d_ff, n_prompt_tokens=n_prompt_tokens)  # fmt: skip
        self.n_nodes, self.context, self.horizon, self.patch_len = n_nodes, context, horizon, patch_len
        self.n_patches = -(-context // patch_len)
        self.n_future = -(-horizon // patch_len)
        n_tokens = n_prompt_tokens + self.n_patches + 1 + self.n_future
        self.embed = nn.Linear(2 * patch_len, d_model)
        self.extra = nn.Parameter(torch.randn(n_prompt_tokens + 1 + self.n_future, d_model) * 0.02)
        self.position = nn.Parameter(torch.randn(1, n_tokens, d_model) * 0.02)
        self.node_emb = nn.Parameter(torch.randn(n_nodes, 1, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, d_ff, 0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, patch_len)

    def forward(self, x: torch.Tensor, calendar: torch.Tensor) -> torch.Tensor:
        """Forecast ``(B, H, N)`` from ``x`` ``(B, L, N)`` (the calendar is unused)."""
        if x.ndim != 3 or x.shape[1:] != (self.context, self.n_nodes):
            raise ValueError(f"x must be (B, L={self.context}, N={self.n_nodes}), got {tuple(x.shape)}")
        b, n = x.shape[0], self.n_nodes
        series = x.permute(0, 2, 1).reshape(b * n, self.context)
        z, observed, mean, std = instance_normalize(series)
        values, mask = patchify(z, observed, self.patch_len)
        ctx = self.embed(torch.cat([values, mask.to(values.dtype)], dim=-1))
        n_pr = self.extra.shape[0] - 1 - self.n_future
        extra = self.extra.expand(b * n, -1, -1)
        tokens = torch.cat([extra[:, :n_pr], ctx, extra[:, n_pr:]], dim=1) + self.position
        s, d = tokens.shape[1], tokens.shape[2]
        tokens = tokens.reshape(b, n, s, d) + self.node_emb
        out = self.encoder(tokens.reshape(b, n * s, d)).reshape(b * n, s, d)
        fut = self.head(out[:, s - self.n_future :]).reshape(b * n, -1)[:, : self.horizon]
        return (fut * std + mean).reshape(b, n, self.horizon).permute(0, 2, 1)
