"""A small multi-view contrastive encoder trained on CPU, standing in for the paper's learned models A and B.

The paper's Sec. 5.1 scores a multi-view CRL learner (Yao et al., ICLR 2024) trained for 50,001 steps (model A)
and for 51 steps (model B). Here two MLP encoders, one per view, are trained with the symmetric InfoNCE loss so
that their 1-D outputs agree on the content shared by the views (:math:`z_0`). PyTorch runs under
``accelerate`` (``pip install 'nips25-tmex[learn]'``).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from nips25_shared import progress, seed_everything
from nips25_tmex.simulation import FiveLatentSCM, MultiViewMixing

__all__ = ["ContentEncoder", "EncoderConfig", "train_content_encoder"]

_MISSING = "the content encoder needs PyTorch and accelerate: pip install 'nips25-tmex[learn]'"


@dataclass(frozen=True)
class EncoderConfig:
    """Hyper-parameters of the multi-view contrastive encoder (ours; the paper's learner is larger).

    Attributes:
        steps: optimisation steps (each on a fresh batch from the simulator).
        batch_size: samples per step (and negatives per positive, minus one).
        hidden: width of the two hidden layers of each encoder.
        lr: Adam learning rate.
        temperature: :math:`\\tau` of the InfoNCE logits :math:`-\\lVert f_1(v_1) - f_2(v_2)\\rVert^2/\\tau`.
        cosine_decay: anneal the learning rate to 0 with a cosine schedule over ``steps``.
    """

    steps: int = 3000
    batch_size: int = 512
    hidden: int = 64
    lr: float = 1e-3
    temperature: float = 0.2
    cosine_decay: bool = False

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "hidden"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if self.batch_size < 2:
            raise ValueError(f"batch_size must be >= 2 (InfoNCE needs negatives), got {self.batch_size}")
        for name in ("lr", "temperature"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive finite float, got {v!r}")


@dataclass
class ContentEncoder:
    """The trained view-1 encoder :math:`f_1`, standardised on a reference sample; ``encode`` gives z0_hat."""

    network: Any
    mixing: MultiViewMixing
    mean: float
    std: float
    losses: list[float]

    def encode(self, latents: NDArray[np.float64]) -> NDArray[np.float64]:
        """:math:`\\hat z_0` ``(n,)`` of view 1 rendered from latents ``(n, 5)`` ``[z0, z1, z2, x, y]``."""
        import torch

        v1, _ = self.mixing.views(latents)
        with torch.no_grad():
            out = self.network(torch.as_tensor(v1, dtype=torch.float32)).numpy()[:, 0].astype(np.float64)
        return (out - self.mean) / self.std


def _two_view_encoder(hidden: int) -> Any:
    """``f_1`` and ``f_2`` in one module whose ``forward(v1, v2)`` gives both codes (one DDP-wrapped call)."""
    import torch

    def mlp() -> Any:
        return torch.nn.Sequential(
            torch.nn.Linear(3, hidden),
            torch.nn.LeakyReLU(0.2),
            torch.nn.Linear(hidden, hidden),
            torch.nn.LeakyReLU(0.2),
            torch.nn.Linear(hidden, 1),
        )

    class TwoViewEncoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.f1, self.f2 = mlp(), mlp()

        def forward(self, v1: Any, v2: Any) -> tuple[Any, Any]:
            return self.f1(v1), self.f2(v2)

    return TwoViewEncoder()


def _gather_rows(t: Any, world: int) -> Any:
    """All processes' rows in rank order, with gradients flowing back to each process's own rows."""
    if world == 1:
        return t
    import torch
    import torch.distributed.nn.functional as dist_fn

    return torch.cat(dist_fn.all_gather(t), dim=0)


def train_content_encoder(
    config: EncoderConfig,
    *,
    scm: FiveLatentSCM | None = None,
    mixing: MultiViewMixing | None = None,
    seed: int = 0,
    accelerator: Any = None,
) -> ContentEncoder:
    r"""Train two view encoders with the symmetric InfoNCE loss and return the view-1 encoder.

    .. math::
        \mathcal L = -\frac{1}{2b}\sum_a \Big[\log\frac{e^{s_{aa}}}{\sum_c e^{s_{ac}}} +
        \log\frac{e^{s_{aa}}}{\sum_c e^{s_{ca}}}\Big],\qquad s_{ac} = -\frac{(f_1(v_{1a}) - f_2(v_{2c}))^2}{\tau}

    Data-parallel under ``accelerate launch``: every process draws the same global batch of ``batch_size`` rows
    (same seed), encodes its contiguous ``batch_size / world`` rows, and the codes are all-gathered (with
    gradients) so that every negative of the global batch is used, as on one process; the loss is scaled by the
    world size because DDP averages the gradients. The learning-rate schedule steps once per optimiser step (it is
    not handed to ``accelerator.prepare``). The result equals one process at the same global batch up to float32
    summation order.

    Args:
        config: :class:`EncoderConfig`.
        scm: simulator of the latents (default :class:`~nips25_tmex.simulation.FiveLatentSCM`).
        mixing: the two views (default :class:`~nips25_tmex.simulation.MultiViewMixing`).
        seed: seeds torch (through ``nips25_shared.seed_everything``) and the data stream.
        accelerator: an ``accelerate.Accelerator`` (default: a new one; its device placement is used).

    Returns:
        :class:`ContentEncoder`, standardised to mean 0 and unit variance on 4096 fresh samples (on the CPU).

    Raises:
        ImportError: if PyTorch or accelerate is missing.
        ValueError: if ``batch_size`` is not divisible by the number of processes.

    References:
        Yao et al., "Multi-View Causal Representation Learning with Partial Observability", ICLR 2024;
        Yao et al., NeurIPS 2025, Sec. 5.1 (models A and B).
    """
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("accelerate") is None:
        raise ImportError(_MISSING)
    import torch
    from accelerate import Accelerator

    scm = scm or FiveLatentSCM()
    mixing = mixing or MultiViewMixing()
    rng = seed_everything(seed)
    torch.set_num_threads(1)
    accelerator = accelerator if accelerator is not None else Accelerator()
    world, rank = accelerator.num_processes, accelerator.process_index
    if config.batch_size % world:
        raise ValueError(f"batch_size ({config.batch_size}) must be divisible by the number of processes ({world})")
    local = slice(rank * config.batch_size // world, (rank + 1) * config.batch_size // world)
    model = _two_view_encoder(config.hidden)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: 0.5 * (1 + np.cos(np.pi * step / config.steps)) if config.cosine_decay else 1.0
    )
    model, optimizer = accelerator.prepare(model, optimizer)  # the schedule steps once per real step, below
    device = accelerator.device
    labels = torch.arange(config.batch_size, device=device)
    losses: list[float] = []
    for _ in progress(range(config.steps), total=config.steps, desc="contrastive encoder"):
        v1, v2 = mixing.views(scm.sample(config.batch_size, rng))  # the same global batch on every process
        h1, h2 = model(
            torch.as_tensor(v1[local], dtype=torch.float32, device=device),
            torch.as_tensor(v2[local], dtype=torch.float32, device=device),
        )
        h1, h2 = _gather_rows(h1, world), _gather_rows(h2, world)
        logits = -((h1 - h2.T) ** 2) / config.temperature
        loss = 0.5 * (
            torch.nn.functional.cross_entropy(logits, labels) + torch.nn.functional.cross_entropy(logits.T, labels)
        )
        optimizer.zero_grad()
        accelerator.backward(loss * world)  # DDP averages over processes; each holds only its rows' gradient
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
    net = accelerator.unwrap_model(model).f1.eval().cpu()
    ref_v1, _ = mixing.views(scm.sample(4096, rng))
    with torch.no_grad():
        ref = net(torch.as_tensor(ref_v1, dtype=torch.float32)).numpy()[:, 0].astype(np.float64)
    std = float(ref.std())
    return ContentEncoder(
        network=net, mixing=mixing, mean=float(ref.mean()), std=std if std > 0 else 1.0, losses=losses
    )
