"""Exponential moving average of the trainable (LoRA) parameters; GradSPO samples with it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import torch

__all__ = ["EMA"]


class EMA:
    r"""EMA :math:`\bar\theta \leftarrow d\,\bar\theta + (1-d)\,\theta` of named parameters, updated after every
    optimiser step (GradSPO, decay 0.9 in the official config).

    Args:
        params: ``{name: parameter}`` to track (the LoRA parameters).
        decay: :math:`d \in [0, 1)`.

    Raises:
        ValueError: if ``decay`` is outside ``[0, 1)`` or ``params`` is empty.

    Example:
        >>> p = {"w": torch.nn.Parameter(torch.zeros(2))}
        >>> ema = EMA(p, decay=0.5)
        >>> with torch.no_grad():
        ...     _ = p["w"].fill_(2.0)
        >>> ema.update(p)
        >>> ema.shadow["w"].tolist()
        [1.0, 1.0]
    """

    def __init__(self, params: Mapping[str, torch.Tensor], *, decay: float = 0.9) -> None:
        if isinstance(decay, bool) or not isinstance(decay, (int, float)) or not 0.0 <= decay < 1.0:
            raise ValueError(f"decay must be in [0, 1), got {decay!r}")
        if not params:
            raise ValueError("params must name at least one parameter")
        self.decay = float(decay)
        self.shadow = {k: v.detach().clone() for k, v in params.items()}

    def _same_keys(self, params: Mapping[str, torch.Tensor]) -> None:
        if set(params) != set(self.shadow):
            raise ValueError("params must have the same names as the tracked parameters")

    @torch.no_grad()
    def update(self, params: Mapping[str, torch.Tensor]) -> None:
        """One EMA step towards the current ``params``."""
        self._same_keys(params)
        for k, v in params.items():
            self.shadow[k].mul_(self.decay).add_(v.detach(), alpha=1 - self.decay)

    @contextmanager
    def applied(self, params: Mapping[str, torch.Tensor]) -> Iterator[None]:
        """Temporarily load the EMA values into ``params`` (restored on exit)."""
        self._same_keys(params)
        saved = {k: v.detach().clone() for k, v in params.items()}
        with torch.no_grad():
            for k, v in params.items():
                v.copy_(self.shadow[k])
        try:
            yield
        finally:
            with torch.no_grad():
                for k, v in params.items():
                    v.copy_(saved[k])
