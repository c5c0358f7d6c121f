r"""Discrete Bayesian flow networks (Graves et al., arXiv:2308.07037) with TreeGen's consistent-entropy schedule.

A categorical variable with :math:`K` classes keeps a belief :math:`\theta \in \Delta^{K-1}` (prior uniform). The
sender reveals :math:`y \sim \mathcal N(\alpha(K e_x - 1), \alpha K I)`; the exact Bayesian update is
:math:`\theta \leftarrow \theta e^{y} / \sum_k \theta_k e^{y_k}`. Accumulated accuracy :math:`\beta(t)` gives the
Bayesian flow :math:`\theta = \mathrm{softmax}(y)`, :math:`y \sim \mathcal N(\beta(t)(K e_x - 1), \beta(t) K I)`.

TreeGen's rows have different :math:`K`; one shared :math:`\beta(t)` drains large :math:`K` much faster. The
:class:`EntropySchedule` tabulates :math:`h_K(\beta) = E[H(\theta)] / \log K` and inverts it so every row follows
one target :math:`h(t) = 1 - (1 - h_{min}) t`.

Rows of different width share one padded tensor ``(..., W)`` with a boolean ``mask`` of the valid classes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from nips25_shared import cached

__all__ = [
    "DiscreteBayesianFlow",
    "EntropySchedule",
    "bayesian_update",
    "entropy_ratio",
    "flow_sample",
    "sender_sample",
]


def _check_mask(mask: torch.Tensor, like: torch.Tensor, name: str) -> None:
    if mask.dtype != torch.bool or mask.shape != like.shape:
        raise ValueError(f"mask must be a bool tensor of shape {tuple(like.shape)} (like {name}), got {mask.shape}")


def _onehot(x: torch.Tensor, width: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(x.long(), width).to(torch.get_default_dtype())


def sender_sample(
    x: torch.Tensor, alpha: torch.Tensor, mask: torch.Tensor, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    r"""Sender sample :math:`y \sim \mathcal N(\alpha (K e_x - 1), \alpha K I)` on the valid classes (BFN eq. 143).

    Args:
        x: ``(...)`` long class indices (valid under ``mask``).
        alpha: ``(...)`` accuracies, >= 0.
        mask: ``(..., W)`` bool valid classes; :math:`K` is the row's count.
        generator: torch generator of the noise.

    Returns:
        ``(..., W)`` sender sample, ``-inf`` on masked classes.

    Raises:
        ValueError: for a non-bool mask, ``x`` of the wrong shape or outside the valid classes, or ``alpha`` < 0
            or non-finite.
    """
    _check_mask(mask, mask, "mask")
    if torch.any(alpha < 0) or not torch.all(torch.isfinite(alpha)):
        raise ValueError("alpha must be finite and >= 0")
    if x.shape != mask.shape[:-1]:
        raise ValueError(
            f"x must have shape {tuple(mask.shape[:-1])} (mask without its last axis), got {tuple(x.shape)}"
        )
    if torch.any((x < 0) | (x >= mask.shape[-1])) or not torch.all(mask.gather(-1, x.long()[..., None])):
        raise ValueError(f"x must hold valid class indices (in [0, {mask.shape[-1]}) and allowed by mask)")
    k = mask.sum(-1).to(alpha.dtype)
    mean = alpha[..., None] * (k[..., None] * _onehot(x, mask.shape[-1]).to(alpha.dtype) - 1.0)
    noise = torch.randn(mask.shape, generator=generator, dtype=alpha.dtype)
    y = mean + torch.sqrt(alpha * k)[..., None] * noise
    return y.masked_fill(~mask, -math.inf)


def bayesian_update(theta: torch.Tensor, y: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    r"""Exact Bayesian update :math:`\theta' = \theta e^y / \sum_k \theta_k e^{y_k}` (BFN eq. 151), in log space.

    Args:
        theta: ``(..., W)`` beliefs on the simplex of the valid classes.
        y: ``(..., W)`` sender sample (masked classes ignored).
        mask: ``(..., W)`` bool valid classes.

    Returns:
        ``(..., W)`` updated beliefs (zero on masked classes, rows sum to 1).
    """
    _check_mask(mask, theta, "theta")
    logits = torch.log(theta.clamp_min(1e-300)) + y.masked_fill(~mask, 0.0)
    return torch.softmax(logits.masked_fill(~mask, -math.inf), dim=-1)


def flow_sample(
    x: torch.Tensor, beta: torch.Tensor, mask: torch.Tensor, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    r"""Bayesian flow sample :math:`\theta = \mathrm{softmax}(y)`, :math:`y \sim N(\beta(K e_x - 1), \beta K I)`.

    At :math:`\beta = 0` this is the uniform prior over the valid classes.

    Args:
        x: ``(...)`` long true classes.
        beta: ``(...)`` accumulated accuracies :math:`\beta(t) \ge 0`.
        mask: ``(..., W)`` bool valid classes.

    Returns:
        ``(..., W)`` beliefs on the simplex.
    """
    return torch.softmax(sender_sample(x, beta, mask, generator=generator), dim=-1)


def entropy_ratio(beta: float, k: int, *, n_mc: int = 20000, seed: int = 0) -> float:
    r"""Monte Carlo :math:`h_K(\beta) = E[H(\theta)] / \log K` of the Bayesian flow at accuracy :math:`\beta`.

    Args:
        beta: accumulated accuracy (>= 0).
        k: number of classes (>= 2).
        n_mc: Monte Carlo samples.
        seed: seed of the noise.

    Returns:
        The normalised expected entropy in [0, 1].

    Example:
        >>> round(entropy_ratio(0.0, 4), 6)
        1.0
    """
    if not isinstance(k, (int, np.integer)) or k < 2:
        raise ValueError(f"k must be an int >= 2, got {k!r}")
    if not (math.isfinite(beta) and beta >= 0):
        raise ValueError(f"beta must be finite and >= 0, got {beta!r}")
    if not isinstance(n_mc, int) or n_mc < 1:
        raise ValueError(f"n_mc must be an int >= 1, got {n_mc!r}")
    eps = np.random.default_rng(seed).standard_normal((n_mc, k))
    return float(_entropy_table(np.array([beta]), k, eps)[0])


def _entropy_table(betas: np.ndarray, k: int, eps: np.ndarray) -> np.ndarray:
    """h_K on a grid of betas with common random numbers ``eps`` (n_mc, K); class 0 is the truth (symmetry).

    Float64 torch on one CPU thread (its vectorised ``exp`` is several times faster than numpy's), in blocks of
    betas.
    """
    e0 = torch.full((k,), -1.0, dtype=torch.float64)
    e0[0] = k - 1.0
    noise = torch.from_numpy(np.ascontiguousarray(eps, dtype=np.float64))
    out = np.empty(len(betas))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the blocks are small: one thread is fastest, and fastest on a shared machine
    try:
        _entropy_blocks(betas, k, e0, noise, out)
    finally:
        torch.set_num_threads(threads)
    return out / math.log(k)


def _entropy_blocks(betas: np.ndarray, k: int, e0: torch.Tensor, noise: torch.Tensor, out: np.ndarray) -> None:
    with torch.no_grad():
        for start in range(0, len(betas), 8):
            b = torch.from_numpy(np.ascontiguousarray(betas[start : start + 8], dtype=np.float64))[:, None, None]
            y = b * e0 + torch.sqrt(b * k) * noise
            y = y - y.amax(dim=-1, keepdim=True)
            e = torch.exp(y)
            s = e.sum(dim=-1)
            # H = -sum p log p with log p = y - log s, i.e. log s - sum(p y): one exp per element
            out[start : start + 8] = (torch.log(s) - (e * y).sum(dim=-1) / s).mean(dim=-1).numpy()


@dataclass(frozen=True)
class EntropySchedule:
    r"""Per-class-count accuracy schedules :math:`\beta_K(t)` with a shared normalised-entropy decay (TreeGen).

    :math:`\beta_K(t) = h_K^{-1}(h(t))` with :math:`h(t) = 1 - (1 - h_{min}) t`; :math:`h_K` is tabulated once by
    Monte Carlo on a log grid of :math:`\beta` (common random numbers, made monotone) and cached on disk through
    ``nips25_shared.cached``; the inverse interpolates :math:`\log\beta` linearly in :math:`h`.

    Attributes:
        k_max: largest class count tabulated (>= 2).
        h_min: target normalised entropy at :math:`t = 1`, in (0, 1).
        beta_max: top of the :math:`\beta` grid (must reach :math:`h_{min}` for every K).
        n_grid: grid points.
        n_mc: Monte Carlo samples per grid point.
        seed: seed of the Monte Carlo noise.
    """

    k_max: int = 32
    h_min: float = 0.02
    beta_max: float = 200.0
    n_grid: int = 128
    n_mc: int = 4000
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.k_max, int) or self.k_max < 2:
            raise ValueError(f"k_max must be an int >= 2, got {self.k_max!r}")
        if not 0.0 < self.h_min < 1.0:
            raise ValueError(f"h_min must be in (0, 1), got {self.h_min!r}")
        if not (math.isfinite(self.beta_max) and self.beta_max > 1e-3):
            raise ValueError(f"beta_max must be finite and > 1e-3, got {self.beta_max!r}")
        if not isinstance(self.n_grid, int) or self.n_grid < 16:
            raise ValueError(f"n_grid must be an int >= 16, got {self.n_grid!r}")
        if not isinstance(self.n_mc, int) or self.n_mc < 100:
            raise ValueError(f"n_mc must be an int >= 100, got {self.n_mc!r}")
        tab = self.table()
        reached = tab["h"][:, -1]
        if np.any(reached > self.h_min):
            k_bad = int(np.flatnonzero(reached > self.h_min)[0]) + 2
            raise ValueError(f"beta_max={self.beta_max} does not reach h_min={self.h_min} for K={k_bad}")

    def table(self) -> dict[str, np.ndarray]:
        """``{"beta": (G,), "h": (k_max-1, G)}``: the tabulated :math:`h_K(\\beta)` for K = 2..k_max (cached)."""
        key = f"treegen-entropy-k{self.k_max}-b{self.beta_max:g}-g{self.n_grid}-m{self.n_mc}-s{self.seed}"
        if key not in _TABLES:
            _TABLES[key] = cached(key, self._build, kind="npz")
        return _TABLES[key]

    def _build(self) -> dict[str, np.ndarray]:
        betas = np.concatenate([[0.0], np.geomspace(1e-4, self.beta_max, self.n_grid - 1)])
        rng = np.random.default_rng(self.seed)
        rows = []
        for k in range(2, self.k_max + 1):
            h = _entropy_table(betas, k, rng.standard_normal((self.n_mc, k)))
            rows.append(np.minimum.accumulate(h))
        return {"beta": betas, "h": np.stack(rows)}

    def target(self, t: Any) -> np.ndarray:
        r"""Target normalised entropy :math:`h(t) = 1 - (1 - h_{min}) t`."""
        return 1.0 - (1.0 - self.h_min) * np.asarray(t, dtype=np.float64)

    def beta(self, k: Any, t: Any) -> np.ndarray:
        r""":math:`\beta_K(t)` for class counts ``k`` (2..k_max) and times ``t`` in [0, 1] (broadcast).

        Raises:
            ValueError: for ``k`` outside [2, k_max] or ``t`` outside [0, 1].
        """
        k_arr, t_arr = np.broadcast_arrays(np.asarray(k), np.asarray(t, dtype=np.float64))
        if np.any((k_arr < 2) | (k_arr > self.k_max)):
            raise ValueError(f"k must lie in [2, {self.k_max}]")
        if not np.all(np.isfinite(t_arr)) or np.any((t_arr < 0) | (t_arr > 1)):
            raise ValueError("t must lie in [0, 1]")
        tab = self.table()
        target = self.target(t_arr)
        out = np.empty(t_arr.shape)
        log_b = np.log(np.maximum(tab["beta"], 1e-12))
        for kk in np.unique(k_arr):
            sel = k_arr == kk
            h = tab["h"][int(kk) - 2]
            # h is non-increasing in beta: interpolate log beta against -h
            lb = np.interp(-target[sel], -h, log_b)
            out[sel] = np.where(target[sel] >= h[0] - 1e-12, 0.0, np.exp(lb))
        return out

    def dbeta_dt(self, k: Any, t: Any, *, dt: float = 1e-3) -> np.ndarray:
        r""":math:`\mathrm d\beta_K/\mathrm dt` by a central difference (one-sided at the ends)."""
        t_arr = np.asarray(t, dtype=np.float64)
        lo = np.clip(t_arr - dt, 0.0, 1.0)
        hi = np.clip(t_arr + dt, 0.0, 1.0)
        return (self.beta(k, hi) - self.beta(k, lo)) / (hi - lo)


_TABLES: dict[str, dict[str, np.ndarray]] = {}


@dataclass(frozen=True)
class DiscreteBayesianFlow:
    r"""Accuracy schedule of a discrete BFN over rows with different class counts.

    ``schedule="consistent"`` uses :class:`EntropySchedule` (TreeGen); ``"quadratic"`` is the standard
    :math:`\beta(t) = \beta_1 t^2` shared by every row (Graves et al.).

    Attributes:
        schedule: ``"consistent"`` or ``"quadratic"``.
        beta1: :math:`\beta_1` of the quadratic schedule (> 0).
        entropy: the consistent schedule's tables.
    """

    schedule: str = "consistent"
    beta1: float = 3.0
    entropy: EntropySchedule | None = None

    def __post_init__(self) -> None:
        if self.schedule not in ("consistent", "quadratic"):
            raise ValueError(f"schedule must be 'consistent' or 'quadratic', got {self.schedule!r}")
        if not (math.isfinite(self.beta1) and self.beta1 > 0):
            raise ValueError(f"beta1 must be finite and > 0, got {self.beta1!r}")
        if self.schedule == "consistent" and self.entropy is None:
            object.__setattr__(self, "entropy", EntropySchedule())

    def beta(self, k: Any, t: Any) -> np.ndarray:
        """:math:`\\beta_K(t)`; rows with K = 1 get 0 (they are deterministic)."""
        k_arr, t_arr = np.broadcast_arrays(np.asarray(k), np.asarray(t, dtype=np.float64))
        if self.schedule == "quadratic":
            return np.where(k_arr >= 2, self.beta1 * t_arr**2, 0.0)
        assert self.entropy is not None
        out = np.zeros(t_arr.shape)
        sel = k_arr >= 2
        out[sel] = self.entropy.beta(k_arr[sel], t_arr[sel])
        return out

    def dbeta_dt(self, k: Any, t: Any) -> np.ndarray:
        """:math:`\\beta_K'(t)` (0 for K = 1)."""
        k_arr, t_arr = np.broadcast_arrays(np.asarray(k), np.asarray(t, dtype=np.float64))
        if self.schedule == "quadratic":
            return np.where(k_arr >= 2, 2 * self.beta1 * t_arr, 0.0)
        assert self.entropy is not None
        out = np.zeros(t_arr.shape)
        sel = k_arr >= 2
        out[sel] = self.entropy.dbeta_dt(k_arr[sel], t_arr[sel])
        return out

    def loss(self, x: torch.Tensor, probs: torch.Tensor, mask: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        r"""Continuous-time loss :math:`L^\infty = \tfrac K2 \beta_K'(t) \lVert e_x - \hat e \rVert^2` (per row).

        Args:
            x: ``(..., R)`` long true classes.
            probs: ``(..., R, W)`` network output distribution :math:`\hat e`.
            mask: ``(R, W)`` or ``(..., R, W)`` bool valid classes.
            t: ``(...)`` times in [0, 1].

        Returns:
            ``(..., R)`` per-row losses (0 for rows with K <= 1).
        """
        mask = mask.expand_as(probs)
        k = mask.sum(-1)
        rate = self.dbeta_dt(k.cpu().numpy(), np.broadcast_to(t.detach().cpu().numpy()[..., None], k.shape))
        rate_t = torch.as_tensor(rate, dtype=probs.dtype, device=probs.device)
        sq = ((_onehot(x, probs.shape[-1]).to(probs.dtype) - probs) ** 2 * mask).sum(-1)
        return 0.5 * k.to(probs.dtype) * rate_t * sq
