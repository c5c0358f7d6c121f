"""The minibatch loop every stage shares, run under ``accelerate`` (device placement, backward, clipping)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from nips25_bcvlr._validation import check_int
from nips25_shared import progress

__all__ = ["StageLog", "fit"]


@dataclass
class StageLog:
    """Losses and wall-clock seconds of every update of one training stage."""

    losses: list[float] = field(default_factory=list)
    step_times: list[float] = field(default_factory=list)

    def extend(self, other: StageLog) -> None:
        """Append another log's updates (the online loop calls a stage once per iteration)."""
        self.losses += other.losses
        self.step_times += other.step_times


def fit(
    loss_fn: Callable[[torch.Tensor], torch.Tensor],
    optimizer: Any,
    params: Sequence[torch.nn.Parameter],
    *,
    accelerator: Any,
    n_steps: int,
    n_items: int,
    batch_size: int,
    generator: torch.Generator,
    grad_clip: float | None = None,
    after_step: Callable[[int], None] | None = None,
    desc: str = "",
    show_progress: bool = False,
) -> StageLog:
    """Run ``n_steps`` Adam updates of ``loss_fn`` on uniformly sampled minibatch indices.

    Data parallelism: every process draws the same *global* minibatch of ``batch_size * num_processes`` indices
    from ``generator`` (seeded identically on every process) and keeps its own slice of ``batch_size``; DDP averages
    the gradients, so ``N`` processes at ``batch_size`` take the same step as one process at ``N * batch_size``
    (tested). Every process runs every step (no rank skips ``backward``).

    Args:
        loss_fn: maps ``(batch_size,)`` int64 item indices to a scalar loss (batched; no per-sample loop).
        optimizer: an optimizer already passed through ``accelerator.prepare``.
        params: the parameters to clip.
        accelerator: the ``accelerate.Accelerator`` that runs the loop.
        n_steps: updates, ``>= 0``.
        n_items: size of the pool the indices are drawn from, ``>= 1``.
        batch_size: indices per update and process, ``>= 1``.
        generator: torch generator for the indices, in the same state on every process (seeded runs are
            bit-reproducible).
        grad_clip: max global gradient norm, or ``None``.
        after_step: called with the step number after each update (e.g. a target-network EMA).
        desc: progress-bar label; show_progress: show a bar (silent under ``-q``).

    Returns:
        The :class:`StageLog` of the updates.
    """
    check_int("n_steps", n_steps, minimum=0)
    check_int("n_items", n_items)
    check_int("batch_size", batch_size)
    log = StageLog()
    rank, world = accelerator.process_index, accelerator.num_processes
    steps = progress(range(n_steps), total=n_steps, desc=desc) if show_progress else range(n_steps)
    for step in steps:
        start = time.perf_counter()
        idx = torch.randint(n_items, (batch_size * world,), generator=generator)[rank * batch_size :][:batch_size]
        loss = loss_fn(idx)
        optimizer.zero_grad(set_to_none=True)
        accelerator.backward(loss)
        if grad_clip is not None:
            accelerator.clip_grad_norm_(params, grad_clip)
        optimizer.step()
        if after_step is not None:
            after_step(step)
        log.losses.append(float(loss.detach()))
        log.step_times.append(time.perf_counter() - start)
    return log
