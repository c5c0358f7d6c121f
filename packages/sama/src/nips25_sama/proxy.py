r"""The CPU proxy of SAMA's architectural claim: tiny aggregators trained on referring clips from real images.

A fixed, weight-free patch encoder stands in for InternViT (each 16x16 patch -> its 4x4 RGB thumbnail plus a 2-D
sine position code); a small "answer head" stands in for the LLM (it reads the per-frame context tokens in order
and the question type). Each clip holds two objects moving in different directions; a question refers to one of
them through a region prompt (its box mask in frame 0): "which way does <mask> move?" (4 answers) or "what is
<mask>?" (5 answers). Four aggregators are compared: mean pooling, spatial-only (spatial Q-Former, no temporal
Q-Former), spatio-temporal without region injection, and the full SAMA aggregator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from nips25_sama.aggregator import SpatioTemporalAggregator
from nips25_sama.config import SAMAConfig
from nips25_sama.region import prepare_region_inputs
from nips25_sama.synthetic import BACKGROUNDS, MOTIONS, OBJECTS, make_scene

__all__ = [
    "AGGREGATORS",
    "QUESTIONS",
    "ProxyData",
    "ProxyModel",
    "ProxyTrainConfig",
    "encode_frames",
    "evaluate_proxy",
    "make_proxy_data",
    "proxy_accelerator",
    "proxy_config",
    "train_proxy",
]

AGGREGATORS = ("mean_pool", "spatial_only", "spatio_temporal", "sama")
QUESTIONS = ("which way does <mask> move?", "what is <mask>?")
N_CLASSES = len(MOTIONS) + len(OBJECTS)


def encode_frames(frames: np.ndarray, *, patch: int = 16, thumb: int = 4, pos_dim: int = 16) -> np.ndarray:
    """Fixed patch tokens of ``(..., H, W, 3)`` uint8 frames: ``(..., (H/patch)^2, 3*thumb^2 + pos_dim)`` float32.

    Each patch is average-pooled to ``thumb x thumb`` RGB (scaled to [-1, 1]) and concatenated with a 2-D sine/cosine
    code of its grid position.
    """
    f = np.asarray(frames, dtype=np.float32) / 127.5 - 1.0
    *lead, h, w, _ = f.shape
    if h % patch or w % patch or patch % thumb:
        raise ValueError(f"frame size ({h}, {w}) must be divisible by patch={patch}, and patch by thumb={thumb}")
    gh, gw, s = h // patch, w // patch, patch // thumb
    x = f.reshape(*lead, gh, thumb, s, gw, thumb, s, 3).mean(axis=(-5, -2))  # (..., gh, thumb, gw, thumb, 3)
    x = np.moveaxis(x, -3, -4).reshape(*lead, gh * gw, thumb * thumb * 3)
    yy, xx = np.meshgrid(np.arange(gh), np.arange(gw), indexing="ij")
    freqs = np.arange(1, pos_dim // 4 + 1) * np.pi / max(gh, gw)
    pos = np.concatenate([np.sin(yy[..., None] * freqs), np.cos(yy[..., None] * freqs),
                          np.sin(xx[..., None] * freqs), np.cos(xx[..., None] * freqs)], axis=-1)  # fmt: skip
    pos = np.broadcast_to(pos.reshape(gh * gw, -1), (*lead, gh * gw, pos.shape[-1]))
    return np.concatenate([x, pos], axis=-1).astype(np.float32)


@dataclass
class ProxyData:
    """Encoded clips and questions: tokens ``(n, T, N, C)``, region inputs, text ids ``(n, 2, L)`` and answers."""

    tokens: torch.Tensor
    region_visual: torch.Tensor  # (n, 2, 1, C)
    region_shape: torch.Tensor  # (n, 2, 1, S, S)
    text_ids: torch.Tensor  # (n, 2, L)
    text_mask: torch.Tensor  # (n, 2, L)
    answers: torch.Tensor  # (n, 2) class index (motion 0..3, object 4..8)
    meta: list[dict[str, Any]]

    def __len__(self) -> int:
        return int(self.tokens.shape[0])


def proxy_config(*, vis_dim: int, mask_size: int = 16, window: int = 16) -> SAMAConfig:
    """The tiny aggregator configuration of the proxy (width 64, 2+2 layers, 4 spatial and 8 temporal queries)."""
    return SAMAConfig(
        vis_dim=vis_dim, tokens_per_frame=64, spatial_width=64, qformer_hidden=64, qformer_heads=4,
        qformer_intermediate=128, spatial_layers=2, spatial_queries=4, temporal_layers=2, temporal_queries=8,
        max_position_embeddings=32, window_size=window, stride=window, region_mask_size=mask_size,
        region_hidden=64, dropout=0.0,
    )  # fmt: skip


def make_proxy_data(
    n_clips: int,
    *,
    tokenizer: Any,
    n_frames: int = 8,
    size: int = 128,
    seed: int = 0,
    mask_size: int = 16,
    control: bool = False,
) -> ProxyData:
    """Two-object clips, encoded, with one motion and one identity question about a random object of each clip.

    Both objects move at 3 px/frame in different directions. ``control=True`` gives the positive-control variant
    (the motion made trivially readable): the asked-about object alone moves, at 9 px/frame (3x), the other stays
    still; the random draws are the same as without it.
    """
    from nips25_sama.loading import encode_prompts

    rng = np.random.default_rng(seed)
    ids, mask = encode_prompts(tokenizer, list(QUESTIONS))
    tokens, rvis, rshape, answers, meta = [], [], [], [], []
    for k in range(n_clips):
        objs = [str(o) for o in rng.choice(OBJECTS, size=2, replace=False)]
        motions = [str(m) for m in rng.choice(MOTIONS, size=2, replace=False)]
        bg = str(rng.choice(BACKGROUNDS))
        scene_seed = int(rng.integers(1 << 31))
        target = int(rng.integers(2))
        speed: float | list[float] = [9.0 if i == target else 0.0 for i in range(2)] if control else 3.0
        frames, masks = make_scene(objs, motions, bg, n_frames=n_frames, size=size, object_size=40, speed=speed,
                                   seed=scene_seed)  # fmt: skip
        tok = torch.from_numpy(encode_frames(frames))
        v, s = prepare_region_inputs(tok, torch.from_numpy(masks[target : target + 1]), frame_index=0,
                                     mask_size=mask_size)  # fmt: skip
        tokens.append(tok)
        rvis.append(v.expand(2, 1, -1))
        rshape.append(s.expand(2, 1, -1, -1))
        answers.append([MOTIONS.index(motions[target]), len(MOTIONS) + OBJECTS.index(objs[target])])
        meta.append({"objects": objs, "motions": motions, "background": bg, "target": target, "index": k,
                     "control": control})  # fmt: skip
    return ProxyData(
        tokens=torch.stack(tokens),
        region_visual=torch.stack(rvis),
        region_shape=torch.stack(rshape),
        text_ids=ids.expand(n_clips, -1, -1).clone(),
        text_mask=mask.expand(n_clips, -1, -1).clone(),
        answers=torch.tensor(answers),
        meta=meta,
    )


class ProxyModel(nn.Module):
    """An aggregator variant plus the answer head (the LLM's stand-in).

    Args:
        kind: one of :data:`AGGREGATORS`.
        config: the aggregator configuration (:func:`proxy_config`).
        n_frames: ``T``.
    """

    def __init__(self, kind: str, config: SAMAConfig, *, n_frames: int) -> None:
        super().__init__()
        if kind not in AGGREGATORS:
            raise ValueError(f"kind must be one of {AGGREGATORS}, got {kind!r}")
        self.kind = kind
        self.aggregator = SpatioTemporalAggregator(config)
        self.pool_proj = nn.Linear(config.vis_dim, config.vis_dim)
        self.spatial_proj = nn.Linear(config.qformer_hidden, config.vis_dim)
        self.head = nn.Sequential(
            nn.Linear(n_frames * config.vis_dim + len(QUESTIONS), 128), nn.GELU(), nn.Linear(128, N_CLASSES)
        )

    def context(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Per-prompt, per-frame context tokens ``(B, P, T, C)``."""
        tok = batch["tokens"]
        b, p = batch["text_ids"].shape[:2]
        if self.kind == "mean_pool":
            return self.pool_proj(tok.mean(dim=2)).unsqueeze(1).expand(b, p, -1, -1)
        if self.kind == "spatial_only":
            s = self.aggregator.spatial_tokens(tok).mean(dim=2)  # (B, T, H)
            return self.spatial_proj(s).unsqueeze(1).expand(b, p, -1, -1)
        regions: dict[str, torch.Tensor] = {}
        if self.kind == "sama":
            regions = {"region_visual": batch["region_visual"], "region_shape": batch["region_shape"]}
        return self.aggregator(tok, batch["text_ids"], batch["text_mask"], **regions)

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Logits ``(B, P, n_classes)``."""
        ctx = self.context(batch)
        b, p = ctx.shape[:2]
        qtype = torch.eye(len(QUESTIONS), device=ctx.device)[:p].expand(b, -1, -1)
        return self.head(torch.cat([ctx.flatten(2), qtype], dim=-1))


@dataclass(frozen=True)
class ProxyTrainConfig:
    """Training of a proxy model (AdamW, as SAMA; lr scaled up for the tiny model)."""

    epochs: int = 30
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.05

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError(f"epochs and batch_size must be >= 1, got {self.epochs}, {self.batch_size}")
        if not self.lr > 0 or self.weight_decay < 0:
            raise ValueError(f"lr must be > 0 and weight_decay >= 0, got {self.lr}, {self.weight_decay}")


def _batches(data: ProxyData, idx: np.ndarray, bs: int) -> list[dict[str, torch.Tensor]]:
    out = []
    for s in range(0, len(idx), bs):
        sel = torch.from_numpy(idx[s : s + bs])
        out.append({k: getattr(data, k)[sel] for k in
                    ("tokens", "region_visual", "region_shape", "text_ids", "text_mask", "answers")})  # fmt: skip
    return out


def _mask_logits(logits: torch.Tensor) -> torch.Tensor:
    """Restrict prompt 0 to the motion classes and prompt 1 to the object classes."""
    bias = torch.full_like(logits, float("-inf"))
    bias[:, 0, : len(MOTIONS)] = 0.0
    bias[:, 1, len(MOTIONS) :] = 0.0
    return logits + bias


def proxy_accelerator(**kwargs: Any) -> Any:
    """An ``accelerate.Accelerator`` fit for :func:`train_proxy`: DDP with ``find_unused_parameters=True``.

    Every proxy variant leaves parameters without a gradient (mean pooling never calls the aggregator; the last
    temporal Q-Former layer's text feed-forward never reaches the output; the region encoder idles without
    region inputs), which DDP refuses at the second step unless it looks for unused parameters.

    Args:
        **kwargs: passed to ``Accelerator`` (``kwargs_handlers`` is set here).
    """
    from accelerate import Accelerator, DistributedDataParallelKwargs

    return Accelerator(kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)], **kwargs)


def train_proxy(
    kind: str,
    train: ProxyData,
    config: SAMAConfig,
    tc: ProxyTrainConfig,
    *,
    seed: int,
    accelerator: Any = None,
) -> ProxyModel:
    r"""Train one proxy model with ``accelerate``: data-parallel under ``accelerate launch``, same result as 1 process.

    Minimises :math:`\frac1B\sum_{i\in\text{batch}}\sum_{p}\mathrm{CE}(\ell_{ip}, y_{ip})/P` with AdamW and
    gradient clipping at 1 (SAMA's optimiser, Sec. 4). Every process draws the same epoch permutation (same
    ``seed``) and takes its contiguous share of each global batch of ``tc.batch_size`` clips; its loss is the sum
    over its rows divided by the global row count, times the world size (DDP averages gradients), so the update
    equals one process at the same global batch up to float32 summation order. A process whose share is empty
    (a last batch smaller than the world) runs a zero-loss step on one row so that it still joins the all-reduce.

    Args:
        kind: one of :data:`AGGREGATORS`.
        train: the training clips (:func:`make_proxy_data`), on the CPU; batches move to ``accelerator.device``.
        config: the aggregator configuration (:func:`proxy_config`).
        tc: optimisation settings.
        seed: seeds initialisation (``nips25_shared.seed_everything``) and the epoch permutations.
        accelerator: an ``accelerate.Accelerator`` (default :func:`proxy_accelerator`); with more than one process
            it must have been built with ``DistributedDataParallelKwargs(find_unused_parameters=True)``.

    Returns:
        The trained, unwrapped :class:`ProxyModel` in eval mode (on ``accelerator.device``).

    Raises:
        ValueError: for an unknown ``kind``, or a multi-process ``accelerator`` without ``find_unused_parameters``.
    """
    from nips25_shared import progress, seed_everything

    acc = accelerator if accelerator is not None else proxy_accelerator()
    world, rank = acc.num_processes, acc.process_index
    handler = getattr(acc, "ddp_handler", None)
    if world > 1 and not getattr(handler, "find_unused_parameters", False):
        raise ValueError(
            "accelerator: with several processes it must be built with "
            "DistributedDataParallelKwargs(find_unused_parameters=True) (see proxy_accelerator)"
        )
    seed_everything(seed)
    model = ProxyModel(kind, config, n_frames=int(train.tokens.shape[1]))
    opt = torch.optim.AdamW(model.parameters(), lr=tc.lr, weight_decay=tc.weight_decay)
    model, opt = acc.prepare(model, opt)
    rng = np.random.default_rng(seed)
    model.train()
    epochs = range(tc.epochs)
    for _ in progress(epochs, desc=f"train {kind}") if acc.is_main_process else epochs:
        for batch in _batches(train, rng.permutation(len(train)), tc.batch_size):
            n = int(batch["answers"].shape[0])
            lo, hi = rank * n // world, (rank + 1) * n // world
            weight = 1.0 if hi > lo else 0.0
            local = {k: v[lo:hi] if hi > lo else v[:1] for k, v in batch.items()}
            local = {k: v.to(acc.device) for k, v in local.items()}
            logits = _mask_logits(model(local))
            ce = F.cross_entropy(logits.flatten(0, 1), local["answers"].flatten(), reduction="sum")
            loss = ce * (weight * world / (n * logits.shape[1]))
            opt.zero_grad()
            acc.backward(loss)
            acc.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
    out: ProxyModel = acc.unwrap_model(model)
    return out.eval()


@torch.no_grad()
def evaluate_proxy(model: ProxyModel, data: ProxyData) -> dict[str, float]:
    """Accuracy on the motion questions, the identity questions, and both (``"referring"``)."""
    model.eval()
    correct = []
    device = next(model.parameters()).device
    for batch in _batches(data, np.arange(len(data)), 64):
        batch = {k: v.to(device) for k, v in batch.items()}
        pred = _mask_logits(model(batch)).argmax(dim=-1)
        correct.append((pred == batch["answers"]).cpu())
    c = torch.cat(correct).float()
    return {"motion": float(c[:, 0].mean()), "identity": float(c[:, 1].mean()), "referring": float(c.mean())}
