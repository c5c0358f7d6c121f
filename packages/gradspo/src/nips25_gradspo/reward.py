r"""Step-aware preference models: the protocol the trainer scores candidates with, and the digits stand-in.

The digits stand-in is a time-conditioned classifier :math:`p(c \mid x_t, t)` trained on noised digits; the reward
of a candidate is :math:`r(x, t, c) = \log p(c \mid x, t)`. Its input gradient is available by autograd, which is
what lets the package measure how well the winner/loser noise difference estimates a reward gradient.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

import torch
from diffusers.schedulers.scheduling_ddpm import DDPMScheduler
from torch import nn

from nips25_shared import progress, seed_everything

__all__ = ["DigitReward", "NoisyDigitClassifier", "StepAwareReward", "load_noisy_classifier", "train_noisy_classifier"]


@runtime_checkable
class StepAwareReward(Protocol):
    """A step-aware preference model: ``reward(x, t, cond) -> (B,)`` scores of states ``x`` at timesteps ``t``.

    ``x`` is ``(B, C, H, W)``: the noisy candidate state or its Tweedie estimate (see ``TrainerConfig.reward_input``);
    ``t`` is ``(B,)`` long; ``cond`` is the batch's conditioning mapping (every value with leading dimension ``B``).
    """

    def __call__(self, x: torch.Tensor, t: torch.Tensor, cond: Mapping[str, torch.Tensor]) -> torch.Tensor: ...


def _timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([args.sin(), args.cos()], dim=1)


class NoisyDigitClassifier(nn.Module):
    """A small CNN :math:`p(c \\mid x_t, t)` over 10 digit classes for ``(B, 1, 8, 8)`` noisy digits.

    The timestep enters as a sinusoidal embedding added to every feature map (FiLM bias).
    """

    def __init__(self, *, width: int = 32, n_classes: int = 10) -> None:
        super().__init__()
        if width < 8 or n_classes < 2:
            raise ValueError(f"width must be >= 8 and n_classes >= 2, got {width}, {n_classes}")
        self.width = width
        self.temb = nn.Sequential(nn.Linear(width, 2 * width), nn.SiLU(), nn.Linear(2 * width, 3 * width))
        self.c1 = nn.Conv2d(1, width, 3, padding=1)
        self.c2 = nn.Conv2d(width, width, 3, padding=1, stride=2)
        self.c3 = nn.Conv2d(width, width, 3, padding=1, stride=2)
        self.head = nn.Linear(width * 4, n_classes)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, n_classes)`` for images ``x`` ``(B, 1, 8, 8)`` at timesteps ``t`` ``(B,)``."""
        if x.ndim != 4 or x.shape[1:] != (1, 8, 8):
            raise ValueError(f"x must be (B, 1, 8, 8), got {tuple(x.shape)}")
        if t.shape != (x.shape[0],):
            raise ValueError(f"t must be ({x.shape[0]},), got {tuple(t.shape)}")
        e1, e2, e3 = self.temb(_timestep_embedding(t, self.width)).chunk(3, dim=1)
        h = torch.nn.functional.silu(self.c1(x) + e1[:, :, None, None])
        h = torch.nn.functional.silu(self.c2(h) + e2[:, :, None, None])
        h = torch.nn.functional.silu(self.c3(h) + e3[:, :, None, None])
        return self.head(h.flatten(1))


class DigitReward:
    r"""The digits step-aware reward :math:`r(x, t, c) = \log p(c \mid x, t)` (a :class:`StepAwareReward`).

    Args:
        classifier: a trained :class:`NoisyDigitClassifier`.
        label_key: key of the ``(B,)`` class labels in ``cond`` (used when ``target`` is ``None``).
        target: a fixed preferred digit in ``0..9`` (the prompt is then ignored): the reproduction aligns the
            unconditional model to draw this digit.

    Example:
        >>> r = DigitReward(NoisyDigitClassifier())
        >>> r(torch.zeros(2, 1, 8, 8), torch.tensor([0, 500]), {"class_labels": torch.tensor([3, 4])}).shape
        torch.Size([2])
    """

    def __init__(
        self, classifier: NoisyDigitClassifier, *, label_key: str = "class_labels", target: int | None = None
    ) -> None:
        if not isinstance(classifier, NoisyDigitClassifier):
            raise TypeError(f"classifier must be a NoisyDigitClassifier, got {type(classifier).__name__}")
        if target is not None and (isinstance(target, bool) or not isinstance(target, int) or not 0 <= target <= 9):
            raise ValueError(f"target must be None or a digit in 0..9, got {target!r}")
        self.classifier = classifier.eval()
        self.label_key = label_key
        self.target = target

    def __call__(self, x: torch.Tensor, t: torch.Tensor, cond: Mapping[str, torch.Tensor]) -> torch.Tensor:
        if self.target is not None:
            logp = torch.log_softmax(self.classifier(x, t), dim=1)
            return logp[:, self.target]
        if self.label_key not in cond:
            raise ValueError(f"cond must hold {self.label_key!r}, got keys {sorted(cond)}")
        c = cond[self.label_key]
        if c.shape != (x.shape[0],) or bool(((c < 0) | (c > 9)).any()):
            raise ValueError(f"cond[{self.label_key!r}] must be ({x.shape[0]},) digit labels in 0..9")
        logp = torch.log_softmax(self.classifier(x, t), dim=1)
        return logp.gather(1, c.long()[:, None]).squeeze(1)


def train_noisy_classifier(
    x: torch.Tensor,
    y: torch.Tensor,
    scheduler: DDPMScheduler,
    *,
    steps: int = 2000,
    batch_size: int = 256,
    lr: float = 2e-3,
    seed: int = 0,
) -> NoisyDigitClassifier:
    """Train :class:`NoisyDigitClassifier` by cross-entropy on :math:`x_t = \\sqrt{\\bar\\alpha_t}x_0 +
    \\sqrt{1-\\bar\\alpha_t}\\epsilon` with :math:`t` uniform over the scheduler's training range (t = 0 included).

    Args:
        x: ``(N, 1, 8, 8)`` clean images in ``[-1, 1]``.
        y: ``(N,)`` labels in ``0..9``.
        scheduler: the diffusion's noise schedule (``add_noise``).
        steps, batch_size, lr, seed: optimisation settings (positive).

    Returns:
        The trained classifier in eval mode.

    Raises:
        ValueError: on mismatched or empty data or non-positive settings.
    """
    if x.ndim != 4 or x.shape[0] == 0 or y.shape != (x.shape[0],):
        raise ValueError(f"x must be (N>0, 1, 8, 8) and y (N,), got {tuple(x.shape)}, {tuple(y.shape)}")
    if steps < 1 or batch_size < 1 or not lr > 0:
        raise ValueError(f"steps, batch_size and lr must be positive, got {steps}, {batch_size}, {lr}")
    seed_everything(seed)
    gen = torch.Generator().manual_seed(seed)
    model = NoisyDigitClassifier()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    for _ in progress(range(steps), desc="train noisy-digit classifier"):
        idx = torch.randint(0, x.shape[0], (batch_size,), generator=gen)
        t = torch.randint(0, scheduler.config["num_train_timesteps"], (batch_size,), generator=gen)
        xt = scheduler.add_noise(x[idx], torch.randn(x[idx].shape, generator=gen), t)  # type: ignore[arg-type]
        loss = nn.functional.cross_entropy(model(xt, t), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    return model.eval()


def load_noisy_classifier(path: str | Path | None = None) -> NoisyDigitClassifier:
    """Load :class:`NoisyDigitClassifier` weights from a safetensors file (default: the shipped one).

    Raises:
        FileNotFoundError: if ``path`` does not exist.
    """
    from importlib.resources import files

    from safetensors.torch import load_file

    p = Path(str(files("nips25_gradspo") / "data" / "noisy_classifier.safetensors")) if path is None else Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: no classifier weights at {p}; run `nips25-gradspo pretrain`")
    model = NoisyDigitClassifier()
    model.load_state_dict(load_file(str(p)))
    return model.eval()
