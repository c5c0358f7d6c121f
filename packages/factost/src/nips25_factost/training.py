"""One training loop for every model of the package, under ``accelerate`` (AdamW + OneCycle, gradient clipping)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from accelerate import Accelerator
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from nips25_factost.panel import STPanel, make_windows
from nips25_shared import progress

__all__ = ["FitConfig", "PanelForecaster", "loss_scale", "train_steps"]


def train_steps(
    module: nn.Module,
    step_loss: Callable[[nn.Module, tuple[torch.Tensor, ...]], torch.Tensor],
    dataset: TensorDataset,
    *,
    steps: int,
    batch_size: int,
    lr: float,
    weight_decay: float = 1e-4,
    grad_clip: float = 1.0,
    seed: int = 0,
    desc: str = "train",
) -> list[float]:
    """Train the parameters of ``module`` that require gradients for ``steps`` mini-batches.

    ``accelerate`` prepares the module, optimiser, scheduler and loader (``accelerate launch`` takes the loop to
    many devices); batches are reshuffled each pass with a generator seeded by ``seed``.

    Args:
        module: the model; only parameters with ``requires_grad`` enter the optimiser.
        step_loss: ``(module, batch) -> scalar loss``; ``batch`` is a tuple of the dataset's tensors.
        dataset: training examples.
        steps: optimiser steps, ``>= 1``.
        batch_size: examples per step, ``>= 1``.
        lr: peak learning rate of the OneCycle schedule (``pct_start = 0.3``), ``> 0``.
        weight_decay: AdamW's decoupled weight decay, ``>= 0``.
        grad_clip: maximum global gradient norm, ``> 0``.
        seed: seed of the shuffling generator.
        desc: progress-bar label.

    Returns:
        The training loss of every step.

    Raises:
        ValueError: on out-of-range hyper-parameters, an empty dataset or no trainable parameter.
    """
    if steps < 1 or batch_size < 1:
        raise ValueError(f"steps and batch_size must be >= 1, got {steps}, {batch_size}")
    if not lr > 0 or weight_decay < 0 or not grad_clip > 0:
        raise ValueError(f"need lr > 0, weight_decay >= 0, grad_clip > 0; got {lr}, {weight_decay}, {grad_clip}")
    if len(dataset) == 0:
        raise ValueError("dataset must not be empty")
    params = [p for p in module.parameters() if p.requires_grad]
    if not params:
        raise ValueError("module has no trainable parameter")
    accelerator = Accelerator(cpu=not torch.cuda.is_available())
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps, pct_start=0.3)
    generator = torch.Generator().manual_seed(seed)
    loader = DataLoader(dataset, batch_size=min(batch_size, len(dataset)), shuffle=True, generator=generator)
    module, optimizer, loader, scheduler = accelerator.prepare(module, optimizer, loader, scheduler)
    module.train()
    losses: list[float] = []
    batches = iter(loader)
    for _ in progress(range(steps), total=steps, desc=desc):
        try:
            batch = next(batches)
        except StopIteration:
            batches = iter(loader)
            batch = next(batches)
        loss = step_loss(module, tuple(batch))
        optimizer.zero_grad()
        accelerator.backward(loss)
        accelerator.clip_grad_norm_(params, grad_clip)
        optimizer.step()
        scheduler.step()
        losses.append(float(loss.detach()))
    module.eval()
    return losses


@dataclass(frozen=True)
class FitConfig:
    """Few-shot training hyper-parameters shared by FactoST and the trained baselines [reconstructed].

    ``replay_ratio`` and ``align_weight`` are used by :class:`~nips25_factost.FactoST` only.
    """

    context: int = 12
    horizon: int = 12
    steps: int = 300
    batch_size: int = 16
    lr: float = 3e-3
    weight_decay: float = 1e-4
    grad_clip: float = 1.0
    replay_ratio: float = 0.25
    align_weight: float = 0.1

    def __post_init__(self) -> None:
        for name in ("context", "horizon", "steps", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if not self.weight_decay >= 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}")
        if not self.grad_clip > 0:
            raise ValueError(f"grad_clip must be > 0, got {self.grad_clip}")
        if not 0.0 <= self.replay_ratio <= 1.0:
            raise ValueError(f"replay_ratio must be in [0, 1], got {self.replay_ratio}")
        if not self.align_weight >= 0:
            raise ValueError(f"align_weight must be >= 0, got {self.align_weight}")


def _as_tensor(value: object, name: str, ndim: int, *, integer: bool = False) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        t = value
    else:
        arr = np.asarray(value)
        if arr.dtype.kind not in ("iu" if integer else "fiu"):
            raise TypeError(f"{name} must be {'integer' if integer else 'numeric'}, got dtype {arr.dtype}")
        t = torch.tensor(arr)  # a copy: panels hold read-only arrays
    if integer and t.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"{name} must hold integer codes, got {t.dtype}")
    if t.ndim != ndim or t.numel() == 0:
        raise ValueError(f"{name} must be a non-empty {ndim}-D array, got shape {tuple(t.shape)}")
    return t.long() if integer else t.float()


def loss_scale(panel: STPanel) -> torch.Tensor:
    r"""Per-node scale ``(N,)`` of the training loss: each node's standard deviation over ``panel``.

    The training loss is the masked MAE divided by this scale, :math:`\frac{1}{|\Omega|}\sum_{(b,h,n) \in \Omega}
    |\hat y_{bhn} - y_{bhn}| / \sigma_n`, so that it does not depend on the data's units: the unit-free alignment
    and replay terms of :class:`~nips25_factost.FactoST` keep their intended weights, gradient clipping acts the same
    on ridership in entries or in thousands, and fitting ``a X + b`` (``a > 0``) gives ``a`` times the forecasts of
    fitting ``X``, plus ``b``. A constant node gets scale 1.

    Args:
        panel: the training panel.

    Returns:
        ``(N,)`` float32 tensor of positive scales.
    """
    if not isinstance(panel, STPanel):
        raise TypeError(f"panel must be an STPanel, got {type(panel).__name__}")
    std = np.nanstd(np.asarray(panel.values, dtype=np.float64), axis=0)
    std = np.where(np.isfinite(std) & (std > 0), std, 1.0)
    return torch.as_tensor(std, dtype=torch.float32)


class PanelForecaster(nn.Module):
    """A trainable ``(B, L, N) -> (B, H, N)`` forecaster with ``fit``/``predict`` on :class:`STPanel` data.

    Subclasses implement ``forward(x, calendar)`` (``calendar`` ``(B, L + H, C)``; ``H`` follows from it) and may
    add a regulariser through :meth:`auxiliary_loss`. The training loss is the masked MAE in units of each node's
    standard deviation over the training panel (:func:`loss_scale`).
    """

    n_nodes: int
    history_: list[float]

    def trainable_parameters(self) -> int:
        """Number of parameters that ``fit`` trains."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def auxiliary_loss(self, x: torch.Tensor, calendar: torch.Tensor, pred: torch.Tensor) -> torch.Tensor | None:
        """Extra training loss of a batch (none by default)."""
        return None

    def on_fit_start(self, panel: STPanel, config: FitConfig) -> None:
        """Hook before training (e.g. fit a scaler); nothing by default."""

    def fit(self, panel: STPanel, *, config: FitConfig | None = None, seed: int = 0) -> PanelForecaster:
        """Train on every window of ``panel`` (``config.context -> config.horizon``) under ``accelerate``.

        Args:
            panel: training panel with ``N`` equal to the model's node count, ``T >= L + H``.
            config: :class:`FitConfig` (defaults when ``None``).
            seed: seed of the shuffling (and of replay sampling where used).

        Returns:
            ``self``, with ``history_`` the per-step losses.

        Raises:
            TypeError, ValueError: on a non-panel, a node-count mismatch or a panel shorter than ``L + H``.
        """
        config = FitConfig() if config is None else config
        if not isinstance(panel, STPanel):
            raise TypeError(f"panel must be an STPanel, got {type(panel).__name__}")
        if panel.n_nodes != self.n_nodes:
            raise ValueError(f"panel has N={panel.n_nodes} nodes, the model was built for {self.n_nodes}")
        windows = make_windows(panel, context=config.context, horizon=config.horizon)
        self.on_fit_start(panel, config)
        x = torch.as_tensor(windows.x, dtype=torch.float32)
        data = TensorDataset(x, torch.as_tensor(windows.y, dtype=torch.float32), torch.as_tensor(windows.calendar))
        scale = loss_scale(panel)

        def step(module: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
            x, y, cal = batch
            pred = module(x, cal)
            observed = ~torch.isnan(y)
            err = (pred - torch.nan_to_num(y)).abs() / scale.to(pred.device)
            loss = torch.where(observed, err, 0.0).sum() / observed.sum().clamp(min=1)
            extra = self.auxiliary_loss(x, cal, pred)
            return loss if extra is None else loss + extra

        self.history_ = train_steps(self, step, data, steps=config.steps, batch_size=config.batch_size, lr=config.lr,
                                    weight_decay=config.weight_decay, grad_clip=config.grad_clip, seed=seed,
                                    desc=f"fit {type(self).__name__}")  # fmt: skip
        return self

    @torch.no_grad()
    def predict(self, x: object, calendar: object, *, batch_size: int = 256) -> np.ndarray:
        """Forecasts ``(B, H, N)`` (float64 numpy) for contexts ``x`` ``(B, L, N)`` (NaN = missing).

        Args:
            x: ``(B, L, N)`` contexts.
            calendar: ``(B, L + H, C)`` integer calendar codes of the context and future steps
                (:func:`~nips25_factost.calendar_features`).
            batch_size: windows per forward pass.

        Raises:
            TypeError, ValueError: on wrong dtype, shape, node count, inf, or ``L + H`` mismatch.
        """
        return self._predict_batches(x, calendar, batch_size=batch_size)

    def _predict_batches(
        self,
        x: object,
        calendar: object,
        *,
        batch_size: int,
        forward: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    ) -> np.ndarray:
        """Validate ``x``/``calendar`` and run ``forward`` (default: the module) in eval mode, batch by batch."""
        xt = _as_tensor(x, "x", 3)
        cal = _as_tensor(calendar, "calendar", 3, integer=True)
        if xt.shape[2] != self.n_nodes:
            raise ValueError(f"x has N={xt.shape[2]} nodes, the model was built for {self.n_nodes}")
        if torch.isinf(xt).any():
            raise ValueError("x must not contain inf (NaN marks a missing value)")
        if cal.shape[0] != xt.shape[0] or cal.shape[1] <= xt.shape[1]:
            raise ValueError(f"calendar must be (B={xt.shape[0]}, L + H > {xt.shape[1]}, C), got {tuple(cal.shape)}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        was_training = self.training
        self.eval()
        device = next((p.device for p in self.parameters()), torch.device("cpu"))  # fit may have left it on a GPU
        run = self if forward is None else forward
        out = []
        with torch.no_grad():
            for i in range(0, xt.shape[0], batch_size):
                out.append(run(xt[i : i + batch_size].to(device), cal[i : i + batch_size].to(device)).cpu())
        self.train(was_training)
        return torch.cat(out).double().numpy()
