"""Universal temporal pretraining (FactoST Stage 1, "UTP") on univariate series pooled across domains.

Objective [reconstructed]: for each window and each frequency ``m`` in ``freqs``, the view ``v_m`` is the window
average-pooled by ``m`` (plus a learned frequency embedding); 40% of its context patches are replaced by a learned
mask token and all future patches are placeholders; the loss is the pinball loss of the quantile head
[official code, v2] (or, with ``UTPConfig(loss="mse")``, the MSE of the median) on masked context patches and future
values, in instance-normalised units, averaged over views. One objective gives multi-frequency reconstruction and
zero-shot forecasting.
"""

from __future__ import annotations

import functools
import io
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from accelerate import Accelerator
from torch.utils.data import TensorDataset

from nips25_factost.backbone import BackboneConfig, TemporalBackbone, instance_normalize, patchify
from nips25_factost.quantiles import pinball_loss
from nips25_factost.replay import ReplayBuffer
from nips25_factost.training import draw_local, resolve_accelerator, train_steps

__all__ = [
    "UTPConfig",
    "average_pool",
    "load_pretrained",
    "patch_mask",
    "pool_windows",
    "save_pretrained",
    "utp_loss",
    "utp_pretrain",
]


@dataclass(frozen=True)
class UTPConfig:
    """Stage-1 hyper-parameters [reconstructed]: windows of ``(context + horizon) * max(freqs)`` raw steps.

    ``loss``: ``"pinball"`` (default; v2's quantile loss over the backbone's quantile levels, robust to windows whose
    context is nearly constant, which give huge normalised targets) or ``"mse"`` (the MSE of the median output; the
    default before 0.1.0's finisher pass).
    """

    context: int = 12
    horizon: int = 12
    freqs: tuple[int, ...] = (1, 2, 4)
    mask_ratio: float = 0.4
    steps: int = 400
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 1e-4
    loss: str = "pinball"

    def __post_init__(self) -> None:
        if self.loss not in ("pinball", "mse"):
            raise ValueError(f"loss must be 'pinball' or 'mse', got {self.loss!r}")
        if self.context < 1 or self.horizon < 1:
            raise ValueError(f"context and horizon must be >= 1, got {self.context}, {self.horizon}")
        if not self.freqs or any(isinstance(m, bool) or not isinstance(m, int) or m < 1 for m in self.freqs):
            raise ValueError(f"freqs must be a non-empty tuple of integers >= 1, got {self.freqs!r}")
        if len(set(self.freqs)) != len(self.freqs):
            raise ValueError(f"freqs must be distinct, got {self.freqs}")
        if not 0.0 <= self.mask_ratio < 1.0:
            raise ValueError(f"mask_ratio must be in [0, 1), got {self.mask_ratio}")
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError(f"steps and batch_size must be >= 1, got {self.steps}, {self.batch_size}")
        if not self.lr > 0 or not self.weight_decay >= 0:
            raise ValueError(f"lr must be > 0 and weight_decay >= 0, got {self.lr}, {self.weight_decay}")

    @property
    def window(self) -> int:
        """Raw window length ``(context + horizon) * max(freqs)``."""
        return (self.context + self.horizon) * max(self.freqs)


def average_pool(x: torch.Tensor, m: int) -> torch.Tensor:
    """Non-overlapping mean over ``m`` consecutive steps, ignoring NaNs: ``(B, W) -> (B, W // m)``.

    The last ``W // m * m`` steps are used (the pooled view ends at the same time as the input). A bin without
    observations is NaN.
    """
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ValueError(f"m must be an integer >= 1, got {m!r}")
    if x.ndim != 2 or x.shape[1] < m:
        raise ValueError(f"x must be (B, W) with W >= m={m}, got {tuple(x.shape)}")
    n = x.shape[1] // m
    return torch.nanmean(x[:, x.shape[1] - n * m :].reshape(x.shape[0], n, m), dim=-1)


def patch_mask(batch: int, n_patches: int, ratio: float, *, generator: torch.Generator | None = None) -> torch.Tensor:
    """Boolean ``(batch, n_patches)`` mask with exactly ``round(ratio * n_patches)`` masked patches per row.

    Rounding is half-up; the masked patches of each row are a uniform random subset.
    """
    if batch < 1 or n_patches < 1:
        raise ValueError(f"batch and n_patches must be >= 1, got {batch}, {n_patches}")
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"ratio must be in [0, 1), got {ratio}")
    k = math.floor(ratio * n_patches + 0.5)
    order = torch.rand(batch, n_patches, generator=generator).argsort(dim=1)
    return order < k


def pool_windows(
    series: Sequence[np.ndarray],
    domains: np.ndarray,
    *,
    length: int,
    per_domain: int = 2000,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Cut random windows of ``length`` steps from each series, at most ``per_domain`` per domain.

    Windows whose first half has no observation are skipped. Domains are balanced by the cap; within a domain the
    windows are spread over its series in proportion to their lengths.

    Returns:
        ``(windows (n, length) float64, domains (n,) int64)``.

    Warns:
        UserWarning: naming every domain id none of whose series has ``length`` steps (it contributes no window;
            0.2.1 dropped such a domain silently).

    Raises:
        ValueError: on empty input, mismatched lengths or no series long enough.
    """
    domains = np.asarray(domains)
    if len(series) == 0 or domains.shape != (len(series),):
        raise ValueError(f"series must be non-empty and domains of shape ({len(series)},), got {domains.shape}")
    if length < 2 or per_domain < 1:
        raise ValueError(f"length must be >= 2 and per_domain >= 1, got {length}, {per_domain}")
    rng = np.random.default_rng(seed)
    out_w: list[np.ndarray] = []
    out_d: list[int] = []
    too_short: list[str] = []
    for dom in np.unique(domains):
        members = [np.asarray(series[int(i)], dtype=np.float64) for i in np.flatnonzero(domains == dom)]
        longest = max((s.size for s in members if s.ndim == 1), default=0)
        members = [s for s in members if s.ndim == 1 and s.size >= length]
        if not members:
            too_short.append(f"{dom} (longest series {longest} steps)")
            continue
        spans = np.array([s.size - length + 1 for s in members], dtype=np.float64)
        counts = rng.multinomial(min(per_domain, int(spans.sum())), spans / spans.sum())
        for s, c in zip(members, counts):
            for start in rng.choice(s.size - length + 1, size=min(c, s.size - length + 1), replace=False):
                w = s[start : start + length]
                if np.isfinite(w[: length // 2]).any() and not np.isinf(w).any():
                    out_w.append(w)
                    out_d.append(int(dom))
    if not out_w:
        raise ValueError(f"no series has {length} steps")
    if too_short:
        warnings.warn(f"domains: no series of domain {', '.join(too_short)} has length={length} steps; it gives no "
                      "windows", UserWarning, stacklevel=2)  # fmt: skip
    return np.stack(out_w), np.asarray(out_d, dtype=np.int64)


def utp_loss(
    backbone: TemporalBackbone,
    windows: torch.Tensor,
    domains: torch.Tensor,
    *,
    config: UTPConfig,
    generator: torch.Generator | None = None,
    accelerator: Accelerator | None = None,
) -> torch.Tensor:
    r"""The UTP objective on a batch of raw windows ``(B, W)`` with domain ids ``(B,)``.

    :math:`\mathcal{L} = \frac{1}{|F|}\sum_{m \in F} \ell_{masked}(v_m)` over masked context patches and all
    future steps of each pooled view, in instance-normalised units (context statistics); :math:`\ell` is the pinball
    loss averaged over the backbone's quantile levels (``config.loss == "pinball"``) or the squared error of the
    median (``"mse"``).

    Args:
        backbone: the :class:`TemporalBackbone`.
        windows: ``(B, W)`` float raw windows, ``W >= config.window`` (NaN = missing).
        domains: ``(B,)`` int64 domain ids.
        config: the :class:`UTPConfig`.
        generator: the generator of the patch masks.
        accelerator: under several processes, ``windows`` is this process's slice of a global batch of
            ``B * num_processes`` rows; the masks are drawn for the global batch (the same ``generator`` state on
            every process) and sliced alike (:func:`~nips25_factost.training.draw_local`), so every process masks
            its own rows as one process would.

    Returns:
        Scalar loss.
    """
    if windows.ndim != 2 or windows.shape[1] < config.window:
        raise ValueError(f"windows must be (B, W) with W >= {config.window}, got {tuple(windows.shape)}")
    p = backbone.config.patch_len
    if len(config.freqs) > backbone.config.n_freqs:
        raise ValueError(f"config.freqs has {len(config.freqs)} entries; backbone n_freqs={backbone.config.n_freqs}")
    quantiles, median = backbone.config.quantiles, backbone.config.median_index
    total = windows.new_zeros(())
    prompt = backbone.prompt(domains)
    for i, m in enumerate(config.freqs):
        view = average_pool(windows[:, -(config.context + config.horizon) * m :], m)
        ctx, fut = view[:, : config.context], view[:, config.context :]
        z, observed, mean, std = instance_normalize(ctx, eps=backbone.config.eps)
        values, obs = patchify(z, observed, p)
        tokens = backbone.patch_embed(torch.cat([values, obs.to(values.dtype)], dim=-1))
        draw = functools.partial(patch_mask, n_patches=tokens.shape[1], ratio=config.mask_ratio, generator=generator)
        masked = draw_local(draw, tokens.shape[0], accelerator).to(tokens.device)
        tokens = torch.where(masked[..., None], backbone.mask_token.expand_as(tokens), tokens)
        out = backbone.encode(backbone.assemble(tokens, config.horizon, i), prompt)
        rec = backbone.reconstruct(out, tokens.shape[1])  # (B, P, p, Q)
        fc = backbone.decode_quantiles(out, tokens.shape[1], config.horizon)  # (B, H, Q)
        zf = (fut - mean) / std
        sel_c = masked[..., None] & obs
        target_c = torch.where(sel_c, values, torch.nan)
        n_c, n_f = sel_c.sum(), (~torch.isnan(zf)).sum()
        if config.loss == "pinball":
            err_c = pinball_loss(rec, target_c, quantiles) * n_c
            err_f = pinball_loss(fc, zf, quantiles) * n_f
        else:
            err_c = (torch.where(sel_c, rec[..., median] - values, 0.0) ** 2).sum()
            err_f = (torch.where(torch.isnan(zf), 0.0, fc[..., median] - torch.nan_to_num(zf)) ** 2).sum()
        total = total + (err_c + err_f) / (n_c + n_f).clamp(min=1)
    return total / len(config.freqs)


def utp_pretrain(
    backbone: TemporalBackbone,
    windows: np.ndarray,
    domains: np.ndarray,
    *,
    config: UTPConfig | None = None,
    seed: int = 0,
    accelerator: Accelerator | None = None,
) -> list[float]:
    """Pretrain ``backbone`` in place with the UTP objective (:func:`utp_loss`), data-parallel under ``accelerate``
    (:func:`~nips25_factost.training.train_steps`; ``config.batch_size`` is the global batch).

    Args:
        backbone: the :class:`TemporalBackbone` (``n_domains`` > max domain id, ``n_freqs >= len(freqs)``).
        windows: ``(n, W)`` raw pool windows, ``W >= config.window`` (see :func:`pool_windows`).
        domains: ``(n,)`` domain ids.
        config: :class:`UTPConfig` (default values when ``None``).
        seed: seed of shuffling and masking (the same on every process).
        accelerator: the :class:`~accelerate.Accelerator` to train under (default: a new one).

    Returns:
        The loss of every step.

    Raises:
        ValueError: on wrong shapes, inf, or domain ids out of range.
    """
    config = UTPConfig() if config is None else config
    w = np.asarray(windows, dtype=np.float64)
    d = np.asarray(domains)
    if w.ndim != 2 or w.shape[0] == 0 or w.shape[1] < config.window:
        raise ValueError(f"windows must be (n >= 1, W >= {config.window}), got {w.shape}")
    if d.shape != (w.shape[0],) or d.dtype.kind not in "iu":
        raise ValueError(f"domains must be integer ids of shape ({w.shape[0]},), got {d.shape} {d.dtype}")
    if np.isinf(w).any():
        raise ValueError("windows must not contain inf")
    if d.min() < 0 or d.max() >= backbone.config.n_domains:
        raise ValueError(f"domains must be in [0, {backbone.config.n_domains}), got [{d.min()}, {d.max()}]")
    accelerator = resolve_accelerator(accelerator)
    generator = torch.Generator().manual_seed(seed + 1)
    data = TensorDataset(torch.as_tensor(w, dtype=torch.float32), torch.as_tensor(d, dtype=torch.long))

    def step(module: torch.nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        return utp_loss(module, batch[0], batch[1], config=config, generator=generator,  # type: ignore[arg-type]
                        accelerator=accelerator)  # fmt: skip

    return train_steps(backbone, step, data, steps=config.steps, batch_size=config.batch_size, lr=config.lr,
                       weight_decay=config.weight_decay, seed=seed, desc="UTP pretraining",
                       accelerator=accelerator)  # fmt: skip


def save_pretrained(backbone: TemporalBackbone, replay: ReplayBuffer | None = None) -> bytes:
    """Serialise a pretrained backbone (config + weights) and its replay buffer to bytes (``torch.save``).

    Write the bytes to a file (``Path(...).write_bytes``) or a cache entry; :func:`load_pretrained` reads them.
    """
    if not isinstance(backbone, TemporalBackbone):
        raise TypeError(f"backbone must be a TemporalBackbone, got {type(backbone).__name__}")
    payload: dict = {"format": "nips25-factost-backbone/1", "config": backbone.config_dict(),
                     "state_dict": backbone.state_dict()}  # fmt: skip
    if replay is not None and len(replay):
        windows, domains = replay.contents()
        payload["replay"] = {"capacity": replay.capacity, "windows": torch.as_tensor(windows),
                             "domains": torch.as_tensor(domains)}  # fmt: skip
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


def load_pretrained(data: bytes, *, seed: int = 0) -> tuple[TemporalBackbone, ReplayBuffer | None]:
    """Inverse of :func:`save_pretrained`: ``(backbone in eval mode, replay buffer or None)``.

    Raises:
        ValueError: if ``data`` is not a FactoST backbone checkpoint.
    """
    if not isinstance(data, (bytes, bytearray)) or not data:
        raise TypeError("data must be the non-empty bytes written by save_pretrained")
    try:
        payload = torch.load(io.BytesIO(data), weights_only=True)
    except Exception as err:  # torch raises several types for corrupt files
        raise ValueError(f"data is not a FactoST backbone checkpoint: {err}") from err
    if not isinstance(payload, dict) or payload.get("format") != "nips25-factost-backbone/1":
        raise ValueError("data is not a FactoST backbone checkpoint (format tag missing)")
    config = dict(payload["config"])
    config.setdefault("quantiles", [0.5])  # checkpoints written before the quantile head had a point head
    backbone = TemporalBackbone(BackboneConfig(**config))
    backbone.load_state_dict(payload["state_dict"])
    backbone.eval()
    replay = None
    if "replay" in payload:
        rep = payload["replay"]
        replay = ReplayBuffer(int(rep["capacity"]), seed=seed)
        replay.add_batch(rep["windows"].numpy(), rep["domains"].numpy())
    return backbone, replay
