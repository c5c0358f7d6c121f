"""One training loop for every model of the package, data-parallel under ``accelerate`` (AdamW + OneCycle,
gradient clipping)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import torch
from accelerate import Accelerator
from torch import nn
from torch.utils.data import TensorDataset

from nips25_factost.panel import STPanel, make_windows
from nips25_shared import progress

__all__ = [
    "FitConfig",
    "PanelForecaster",
    "draw_local",
    "loss_scale",
    "resolve_accelerator",
    "shard_bounds",
    "train_steps",
]

_Drawn = TypeVar("_Drawn", np.ndarray, torch.Tensor, tuple)


def resolve_accelerator(accelerator: Accelerator | None) -> Accelerator:
    """The caller's :class:`~accelerate.Accelerator`, or a default one (device and processes from the launcher).

    Raises:
        TypeError: if ``accelerator`` is neither ``None`` nor an ``Accelerator``.
    """
    if accelerator is None:
        return Accelerator()
    if not isinstance(accelerator, Accelerator):
        raise TypeError(f"accelerator must be an accelerate.Accelerator or None, got {type(accelerator).__name__}")
    return accelerator


def shard_bounds(global_size: int, accelerator: Accelerator) -> slice:
    """This process's rows of a global batch of ``global_size`` rows (contiguous, equal when divisible).

    Everything random that a training step draws (the mini-batch, UTP masks, replay windows) is drawn for the
    *global* batch from a generator that every process seeds alike; each process takes its slice. So ``P``
    processes see disjoint rows and reproduce one process at the same global batch.

    Example:
        >>> from accelerate import Accelerator
        >>> shard_bounds(8, Accelerator())  # one process holds every row
        slice(0, 8, None)
    """
    world, rank = accelerator.num_processes, accelerator.process_index
    return slice(rank * global_size // world, (rank + 1) * global_size // world)


def draw_local(draw: Callable[[int], _Drawn], local_size: int, accelerator: Accelerator | None) -> _Drawn:
    """Draw ``local_size`` random rows per process as one process would draw them for the global batch.

    ``draw(local_size * P)`` is called on every process (its generator seeded alike everywhere, so every process
    draws the same global rows) and this process's :func:`shard_bounds` slice is returned; a tuple of arrays is
    sliced element-wise. With one process (or ``accelerator=None``) this is ``draw(local_size)``. The UTP patch
    masks and FactoST's replay windows are drawn this way.

    Example:
        >>> from accelerate import Accelerator
        >>> draw_local(lambda n: np.arange(n), 3, Accelerator())
        array([0, 1, 2])
    """
    world = 1 if accelerator is None else accelerator.num_processes
    drawn = draw(local_size * world)
    if world == 1:
        return drawn
    assert accelerator is not None
    mine = shard_bounds(local_size * world, accelerator)
    return tuple(part[mine] for part in drawn) if isinstance(drawn, tuple) else drawn[mine]  # type: ignore[return-value]


def _average_gradients(params: list[nn.Parameter], loss: torch.Tensor, accelerator: Accelerator) -> torch.Tensor:
    """Average the gradients (and ``loss``) over processes in one all-reduce; returns the mean loss.

    A parameter without a gradient on some process counts as a zero gradient there; one without a gradient on
    every process keeps ``grad = None`` (AdamW then skips it, as in a single process).
    """
    sizes = [p.numel() for p in params]
    grads = [(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params]
    has = torch.tensor([p.grad is not None for p in params], dtype=grads[0].dtype, device=grads[0].device)
    flat = accelerator.reduce(torch.cat([*grads, has, loss.reshape(1).to(grads[0])]), reduction="mean")
    parts = flat.split([*sizes, len(params), 1])
    for p, g, used in zip(params, parts[:-2], parts[-2]):
        p.grad = g.view_as(p).clone() if used > 0 else None
    return parts[-1][0]


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
    accelerator: Accelerator | None = None,
) -> list[float]:
    """Train the parameters of ``module`` that require gradients for ``steps`` mini-batches, data-parallel.

    Data parallelism under ``accelerate`` (``accelerate launch`` on several processes or GPUs): every process
    draws the same global mini-batch of ``batch_size`` examples from a permutation seeded by ``seed`` (reshuffled
    each pass, the incomplete last batch of a pass dropped) and computes the loss on its own contiguous slice
    (:func:`shard_bounds`); the gradients are averaged over processes by one all-reduce per step, so that ``P``
    processes give the same update as one process at the same global batch (exactly, up to float summation order,
    when every process's loss averages the same number of entries). The module is not wrapped in DDP: a step's
    loss may call any sub-module (the UTP loss, replayed source tokens), and parameters that a step leaves unused
    get a zero gradient on every process. The OneCycle schedule (``pct_start = 0.3``) is stepped once per
    optimiser step on every process (it is not ``prepare``-d, which would step it once per process).

    Args:
        module: the model; only parameters with ``requires_grad`` enter the optimiser. Moved to
            ``accelerator.device``.
        step_loss: ``(module, batch) -> scalar loss``; ``batch`` is this process's slice of the global batch (a
            tuple of the dataset's tensors, on ``accelerator.device``).
        dataset: training examples.
        steps: optimiser steps, ``>= 1``.
        batch_size: examples per step summed over processes (the global batch), ``>= 1`` and divisible by the
            number of processes; clipped to the dataset's size (rounded down to a multiple of the processes).
        lr: peak learning rate of the OneCycle schedule, ``> 0``.
        weight_decay: AdamW's decoupled weight decay, ``>= 0``.
        grad_clip: maximum global gradient norm, ``> 0``.
        seed: seed of the shuffling generator (the same on every process).
        desc: progress-bar label (shown by the main process only).
        accelerator: the :class:`~accelerate.Accelerator` to run under (default: a new one, which takes its device
            and processes from ``accelerate launch``).

    Returns:
        The training loss of every step (averaged over processes).

    Raises:
        ValueError: on out-of-range hyper-parameters, an empty dataset, no trainable parameter, or a global batch
            smaller than (or not divisible by) the number of processes.
        TypeError: if ``accelerator`` is not an ``Accelerator``.
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
    accelerator = resolve_accelerator(accelerator)
    world = accelerator.num_processes
    if batch_size % world:
        raise ValueError(f"batch_size={batch_size} (the global batch) must be divisible by the {world} processes")
    n = len(dataset)
    global_batch = min(batch_size, n - n % world)
    if global_batch < world:
        raise ValueError(f"the dataset has {n} examples, fewer than the {world} processes")
    module.to(accelerator.device)
    optimizer = accelerator.prepare_optimizer(torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay))
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps, pct_start=0.3)
    generator = torch.Generator().manual_seed(seed)
    mine = shard_bounds(global_batch, accelerator)
    module.train()
    losses: list[float] = []
    order, pos = torch.randperm(n, generator=generator), 0
    bar = progress(range(steps), total=steps, desc=desc) if accelerator.is_main_process else range(steps)
    for _ in bar:
        if pos + global_batch > n:
            order, pos = torch.randperm(n, generator=generator), 0
        idx = order[pos : pos + global_batch][mine]
        pos += global_batch
        batch = tuple(t[idx].to(accelerator.device) for t in dataset.tensors)
        optimizer.zero_grad()
        with accelerator.autocast():
            loss = step_loss(module, batch)
        accelerator.backward(loss)
        mean_loss = _average_gradients(params, loss.detach(), accelerator) if world > 1 else loss.detach()
        accelerator.clip_grad_norm_(params, grad_clip)
        optimizer.step()
        scheduler.step()
        losses.append(float(mean_loss))
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

    def on_fit_start(self, panel: STPanel, config: FitConfig, accelerator: Accelerator) -> None:
        """Hook before training (e.g. fit a scaler, remember the process layout); nothing by default."""

    def fit(
        self,
        panel: STPanel,
        *,
        config: FitConfig | None = None,
        seed: int = 0,
        accelerator: Accelerator | None = None,
    ) -> PanelForecaster:
        """Train on every window of ``panel`` (``config.context -> config.horizon``), data-parallel under
        ``accelerate`` (:func:`train_steps`; ``config.batch_size`` is the global batch).

        Args:
            panel: training panel with ``N`` equal to the model's node count, ``T >= L + H``.
            config: :class:`FitConfig` (defaults when ``None``).
            seed: seed of the shuffling (and of replay sampling where used); the same on every process.
            accelerator: the :class:`~accelerate.Accelerator` to train under (default: a new one).

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
        accelerator = resolve_accelerator(accelerator)
        windows = make_windows(panel, context=config.context, horizon=config.horizon)
        self.on_fit_start(panel, config, accelerator)
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
                                    desc=f"fit {type(self).__name__}", accelerator=accelerator)  # fmt: skip
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
