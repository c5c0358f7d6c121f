"""FactoST: a pretrained temporal backbone plus a spatio-temporal adapter, fitted per target domain (Stage 2)."""

from __future__ import annotations

import numpy as np
import torch
from accelerate import Accelerator

from nips25_factost.adapter import STAdapter, alignment_penalty
from nips25_factost.backbone import TemporalBackbone
from nips25_factost.panel import STPanel, split_panel
from nips25_factost.pretraining import UTPConfig, utp_loss
from nips25_factost.replay import ReplayBuffer
from nips25_factost.training import FitConfig, PanelForecaster, draw_local

__all__ = ["FactoST"]


class FactoST(PanelForecaster):
    r"""Factorised spatio-temporal forecaster: frozen (or fine-tuned) :class:`TemporalBackbone` + :class:`STAdapter`.

    Each node's context is embedded by the backbone alone (space-agnostic tokens); the adapter injects node and
    calendar metadata, filters them, and mixes nodes through a top-k interaction; the target prompt is prepended and
    the backbone's encoder and head produce ``(B, H, N)``. Training minimises the masked MAE plus
    ``align_weight`` times :func:`alignment_penalty` between pooled target tokens and replayed source tokens, plus,
    when the backbone is not frozen, the UTP loss on a replay batch of ``replay_ratio * batch_size * N`` windows
    (continual memory replay against forgetting).

    Args:
        backbone: the (pretrained) temporal backbone.
        adapter: an :class:`STAdapter` whose ``d_model`` and ``n_source_domains`` match the backbone.
        freeze_backbone: train the adapter (and target prompt) only; the backbone stays byte-identical.
        replay: pretraining windows (see :func:`~nips25_factost.pretraining.pool_windows`); without it alignment
            and replay are off.
        utp_config: the UTP configuration of the replay loss (default :class:`UTPConfig`).

    Example:
        >>> bb = TemporalBackbone(d_model=16, n_heads=2, n_layers=1, d_ff=32)
        >>> model = FactoST(bb, STAdapter(n_nodes=3, d_model=16, emb_dim=4, rank=2, topk=2))
        >>> model.trainable_parameters() < sum(p.numel() for p in model.parameters())
        True
    """

    def __init__(
        self,
        backbone: TemporalBackbone,
        adapter: STAdapter,
        *,
        freeze_backbone: bool = True,
        replay: ReplayBuffer | None = None,
        utp_config: UTPConfig | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(backbone, TemporalBackbone):
            raise TypeError(f"backbone must be a TemporalBackbone, got {type(backbone).__name__}")
        if not isinstance(adapter, STAdapter):
            raise TypeError(f"adapter must be an STAdapter, got {type(adapter).__name__}")
        if adapter.d_model != backbone.config.d_model:
            raise ValueError(f"adapter.d_model={adapter.d_model} differs from the backbone's {backbone.config.d_model}")
        if adapter.n_source_domains != backbone.config.n_domains:
            raise ValueError(f"adapter mixes {adapter.n_source_domains} source prompts, the backbone has "
                             f"{backbone.config.n_domains} domains")  # fmt: skip
        if replay is not None and not isinstance(replay, ReplayBuffer):
            raise TypeError(f"replay must be a ReplayBuffer, got {type(replay).__name__}")
        self.backbone = backbone
        self.adapter = adapter
        self.n_nodes = adapter.n_nodes
        self.freeze_backbone = bool(freeze_backbone)
        self.replay = replay
        self.utp_config = UTPConfig() if utp_config is None else utp_config
        self._fit_config = FitConfig()
        self._generator = torch.Generator().manual_seed(0)
        self._accelerator: Accelerator | None = None
        self.backbone.requires_grad_(not self.freeze_backbone)

    def train(self, mode: bool = True) -> FactoST:
        """Training mode for the adapter; a frozen backbone stays in eval mode (no dropout)."""
        super().train(mode)
        if self.freeze_backbone:
            self.backbone.eval()
        return self

    def _forward(self, x: torch.Tensor, calendar: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Quantile forecasts ``(B, H, N, Q)`` and the pooled adapted context tokens ``(B N, d)``."""
        if x.ndim != 3 or x.shape[2] != self.n_nodes:
            raise ValueError(f"x must be (B, L, N={self.n_nodes}), got {tuple(x.shape)}")
        b, length, n = x.shape
        horizon = calendar.shape[1] - length
        if calendar.ndim != 3 or calendar.shape[0] != b or horizon < 1:
            raise ValueError(f"calendar must be (B={b}, L + H > {length}, C), got {tuple(calendar.shape)}")
        series = x.permute(0, 2, 1).reshape(b * n, length)
        tokens, mean, std = self.backbone.prepare(series)
        n_ctx = tokens.shape[1]
        seq = self.backbone.assemble(tokens, horizon)
        s, d = seq.shape[1], seq.shape[2]
        seq = seq.reshape(b, n, s, d).permute(0, 2, 1, 3)
        seq = self.adapter(seq, calendar, context=length, horizon=horizon, patch_len=self.backbone.config.patch_len)
        seq = seq.permute(0, 2, 1, 3).reshape(b * n, s, d)
        prompt = self.adapter.target_prompt(self.backbone.domain_prompts()).expand(b * n, -1, -1)
        out = self.backbone.encode(seq, prompt)
        z = self.backbone.decode_quantiles(out, n_ctx, horizon)  # (B N, H, Q)
        q = (z * std[..., None] + mean[..., None]).reshape(b, n, horizon, -1).permute(0, 2, 1, 3)
        return q, seq[:, :n_ctx].mean(1)

    def forward(self, x: torch.Tensor, calendar: torch.Tensor) -> torch.Tensor:
        """Forecast ``(B, H, N)`` (the median) from contexts ``(B, L, N)`` and calendar codes ``(B, L + H, C)``."""
        quantiles, pooled = self._forward(x, calendar)
        self._pooled = pooled if self.training else None
        return quantiles[..., self.backbone.config.median_index]

    @torch.no_grad()
    def predict_quantiles(
        self, x: object, calendar: object, *, batch_size: int = 256, rearrange: bool = True
    ) -> np.ndarray:
        """Quantile forecasts ``(B, H, N, Q)`` (levels ``backbone.config.quantiles``; float64 numpy).

        The few-shot fit trains the median (MAE); in frozen mode the other levels come from the pretrained head
        through the adapted tokens, with no quantile training on the target (no calibration guarantee). The levels
        are separate outputs and can cross: ``rearrange=True`` (default) sorts them per step and node (monotone
        rearrangement), so where they crossed the returned median can differ from :meth:`predict` (the raw median,
        which ``rearrange=False`` returns at ``backbone.config.median_index``).

        Raises:
            TypeError, ValueError: as :meth:`~nips25_factost.training.PanelForecaster.predict`.
        """
        out = self._predict_batches(x, calendar, batch_size=batch_size, forward=lambda a, c: self._forward(a, c)[0])
        return np.sort(out, axis=-1) if rearrange else out

    def on_fit_start(self, panel: STPanel, config: FitConfig, accelerator: Accelerator) -> None:
        """Remember the fit configuration (replay batch size, weights) and the process layout (replay shards)."""
        self._fit_config = config
        self._accelerator = accelerator

    def auxiliary_loss(self, x: torch.Tensor, calendar: torch.Tensor, pred: torch.Tensor) -> torch.Tensor | None:
        """Alignment penalty (HDA prompts only) on the last training forward and (unfrozen backbone only) the UTP
        replay loss.

        The replay batch holds ``max(2, round(replay_ratio * B * N))`` windows per process (``B``: this process's
        batch). Under several processes the windows are drawn for all of them at once from the buffer's generator
        (seeded alike on every process) and each process takes its own slice
        (:func:`~nips25_factost.training.draw_local`): distinct windows per process, the same draws as one
        process at the same global batch.
        """
        cfg = self._fit_config
        if self.replay is None or len(self.replay) < 2 or (cfg.align_weight == 0 and cfg.replay_ratio == 0):
            return None
        accelerator = self._accelerator
        length, horizon = x.shape[1], calendar.shape[1] - x.shape[1]
        n_replay = max(2, round(cfg.replay_ratio * x.shape[0] * self.n_nodes))
        windows, domains = draw_local(self.replay.sample, n_replay, accelerator)
        w = torch.as_tensor(windows, dtype=torch.float32, device=x.device)
        loss = x.new_zeros(())
        pooled = getattr(self, "_pooled", None)
        if cfg.align_weight > 0 and pooled is not None and self.adapter.prompt_mode == "hda":
            context = w[:, -(length + horizon) : w.shape[1] - horizon]
            with torch.set_grad_enabled(not self.freeze_backbone):
                tokens = self.backbone.tokens(context)
                source = self.backbone.assemble(tokens, horizon)[:, : tokens.shape[1]].mean(1)
            loss = loss + cfg.align_weight * alignment_penalty(pooled, source)
        if not self.freeze_backbone and cfg.replay_ratio > 0:
            loss = loss + utp_loss(self.backbone, w, torch.as_tensor(domains, device=x.device), config=self.utp_config,
                                   generator=self._generator, accelerator=accelerator)  # fmt: skip
        return loss

    def fit_few_shot(
        self,
        panel: STPanel,
        *,
        frac: float = 0.1,
        train: float = 0.7,
        val: float = 0.1,
        config: FitConfig | None = None,
        seed: int = 0,
        accelerator: Accelerator | None = None,
    ) -> FactoST:
        """Fit on the first ``frac`` of the training span (the first ``train`` fraction of ``panel``'s steps).

        ``accelerator`` as in :meth:`fit`.

        Raises:
            ValueError: if ``frac`` is not in ``(0, 1]`` or the few-shot span is shorter than ``L + H``.
        """
        config = FitConfig() if config is None else config
        if not 0.0 < frac <= 1.0:
            raise ValueError(f"frac must be in (0, 1], got {frac}")
        train_part = split_panel(panel, train=train, val=val)[0]
        n = round(frac * train_part.n_times)
        if n < config.context + config.horizon:
            raise ValueError(f"frac={frac} of {train_part.n_times} training steps leaves {n} < L + H = "
                             f"{config.context + config.horizon}")  # fmt: skip
        self.fit(train_part.slice(0, n), config=config, seed=seed, accelerator=accelerator)
        return self

    def fit(
        self,
        panel: STPanel,
        *,
        config: FitConfig | None = None,
        seed: int = 0,
        accelerator: Accelerator | None = None,
    ) -> FactoST:
        """Train on every window of ``panel``, data-parallel under ``accelerate`` (see
        :meth:`PanelForecaster.fit`; ``config.batch_size`` is the global batch, replay drawn per process)."""
        self._generator = torch.Generator().manual_seed(seed + 2)
        if self.replay is not None:
            self.replay.reseed(seed + 3)
        try:
            super().fit(panel, config=config, seed=seed, accelerator=accelerator)
        finally:
            self._accelerator = None  # the model keeps no handle on the process group
        return self
