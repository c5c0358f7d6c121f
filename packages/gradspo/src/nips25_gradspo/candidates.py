r"""Per-step candidates, pair selection and the antithetic noise difference (GradSPO sampling, steps 2-5).

At a state :math:`x_t` the sampler draws :math:`K` DDIM (eta = 1) next states
:math:`x_{t'}^k = \mu_t + \sigma_t n_k`, scores them with a step-aware preference model, keeps the best/worst pair
when the softmax gap exceeds a threshold, and uses :math:`\tilde n_w = (n_w - n_l)/2 = -\tilde n_l` as the
reward-gradient estimate.
"""

from __future__ import annotations

import math

import torch
from diffusers.schedulers.scheduling_ddim import DDIMScheduler

from nips25_gradspo.schedule import ddim_coefficients

__all__ = ["antithetic_noise", "ddim_candidates", "ddim_mean", "select_pair", "validity_margin"]


def _check_finite(name: str, x: torch.Tensor) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.numel() == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(x.shape)}")
    if not torch.is_floating_point(x):
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} must be finite (no NaN/inf)")


def ddim_candidates(
    scheduler: DDIMScheduler,
    eps: torch.Tensor,
    x_t: torch.Tensor,
    t: int,
    *,
    k: int,
    generator: torch.Generator | None = None,
    noise: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""Draw ``k`` DDIM (eta = 1) next states from one predicted noise: :math:`x_{t'}^k = \mu_t + \sigma_t n_k`.

    Equals ``scheduler.step(eps, t, x_t, eta=1.0, variance_noise=n_k).prev_sample`` for every ``k`` (tested),
    including the scheduler's ``clip_sample`` setting.

    Args:
        scheduler: ``DDIMScheduler`` after ``set_timesteps`` (epsilon prediction).
        eps: ``(B, C, H, W)`` predicted noise at ``x_t`` (after classifier-free guidance).
        x_t: ``(B, C, H, W)`` current states.
        t: the current timestep (one of ``scheduler.timesteps``).
        k: number of candidates, ``>= 2``.
        generator: torch generator for the noise ``n_k ~ N(0, I)``.
        noise: ``(k, B, C, H, W)`` noise to inject instead of drawing it.

    Returns:
        ``(x_prev, noise, sigma_t)``: ``(k, B, C, H, W)`` candidates, the ``(k, B, C, H, W)`` noise used, and the
        scalar tensor :math:`\sigma_t`.

    Raises:
        ValueError: if ``k < 2``, shapes differ, inputs are empty or not finite, or ``t`` is out of range.
        TypeError: if an input is not a floating tensor or ``scheduler`` is not a ``DDIMScheduler``.

    References:
        Song et al., DDIM (ICLR 2021), Eq. 12; GradSPO/SPO multi-sample pipeline.

    Example:
        >>> s = DDIMScheduler(); s.set_timesteps(10)
        >>> x = torch.zeros(1, 1, 2, 2)
        >>> xp, n, sig = ddim_candidates(s, x, x, int(s.timesteps[0]), k=3, generator=torch.Generator().manual_seed(0))
        >>> tuple(xp.shape)
        (3, 1, 1, 2, 2)
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise ValueError(f"k must be an int >= 2 (candidates per step), got {k!r}")
    _check_finite("eps", eps)
    _check_finite("x_t", x_t)
    if eps.ndim != 4 or eps.shape != x_t.shape:
        raise ValueError(
            f"eps and x_t must both be (B, C, H, W) of one shape, got {tuple(eps.shape)}, {tuple(x_t.shape)}"
        )
    mean, sigma = ddim_mean(scheduler, eps, x_t, t)
    dtype = x_t.dtype
    if noise is None:
        noise = torch.randn((k, *x_t.shape), generator=generator, dtype=dtype, device=x_t.device)
    elif tuple(noise.shape) != (k, *x_t.shape):
        raise ValueError(f"noise must have shape {(k, *x_t.shape)}, got {tuple(noise.shape)}")
    return mean.unsqueeze(0) + sigma * noise, noise, sigma


def ddim_mean(
    scheduler: DDIMScheduler, eps: torch.Tensor, x_t: torch.Tensor, t: int
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The DDIM (eta = 1) step mean :math:`\mu_t` and standard deviation :math:`\sigma_t` (module docstring of
    :mod:`nips25_gradspo.schedule`), honouring the scheduler's ``clip_sample``.

    Args:
        scheduler: ``DDIMScheduler`` after ``set_timesteps`` (epsilon prediction).
        eps: ``(B, ...)`` predicted noise at ``x_t``.
        x_t: ``(B, ...)`` states, same shape as ``eps``.
        t: the current timestep.

    Returns:
        ``(mean, sigma_t)``: ``(B, ...)`` tensor and a scalar tensor, both of ``x_t``'s dtype.

    Raises:
        ValueError: if the shapes differ or ``t`` is out of range.
    """
    if eps.shape != x_t.shape:
        raise ValueError(f"eps and x_t must have one shape, got {tuple(eps.shape)}, {tuple(x_t.shape)}")
    co = ddim_coefficients(scheduler, int(t))
    dtype = x_t.dtype
    a_t, a_prev, sigma = (
        c.to(dtype).reshape(()).to(x_t.device) for c in (co.alpha_bar_t, co.alpha_bar_prev, co.sigma_t)
    )
    x0 = (x_t - (1 - a_t).sqrt() * eps) / a_t.sqrt()
    if scheduler.config["clip_sample"]:  # diffusers keeps the unclipped eps in the direction term
        r = scheduler.config["clip_sample_range"]
        x0 = x0.clamp(-r, r)
    return a_prev.sqrt() * x0 + (1 - a_prev - sigma**2).clamp(min=0).sqrt() * eps, sigma


def validity_margin(threshold: float) -> float:
    r"""The score gap above which a pair is valid: :math:`\mathrm{softmax}(s_w, s_l)_0 - \mathrm{softmax}_1 > thr
    \iff s_w - s_l > 2\,\mathrm{artanh}(thr)`.

    Raises:
        ValueError: if ``threshold`` is not in ``[0, 1)``.

    Example:
        >>> round(validity_margin(0.3), 5)
        0.61904
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 <= threshold < 1.0:
        raise ValueError(f"threshold must be in [0, 1), got {threshold!r}")
    return 2.0 * math.atanh(threshold)


def select_pair(
    scores: torch.Tensor, *, threshold: float, final_step: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""Best/worst candidate per sample and whether the pair is valid (SPO/GradSPO pair selection).

    A pair is valid iff :math:`\tanh((s_w - s_l)/2) > thr`, the softmax gap of the two scores; with
    ``final_step=True`` every pair is valid (GradSPO's last-step rule; SPO applies the threshold everywhere).

    Args:
        scores: ``(K, B)`` finite preference scores of ``K >= 2`` candidates.
        threshold: ``thr`` in ``[0, 1)`` (0.3 for SD1.5, 0.4 for SDXL).
        final_step: accept every pair.

    Returns:
        ``(idx_w, idx_l, valid)``: ``(B,)`` long indices of the best and worst candidates, ``(B,)`` bool.

    Raises:
        ValueError: if ``scores`` is not ``(K>=2, B>=1)``, is not finite, or ``threshold`` is out of range.

    Example:
        >>> select_pair(torch.tensor([[0.0], [0.61905]]), threshold=0.3)
        (tensor([1]), tensor([0]), tensor([True]))
    """
    _check_finite("scores", scores)
    if scores.ndim != 2 or scores.shape[0] < 2:
        raise ValueError(f"scores must be (K, B) with K >= 2, got shape {tuple(scores.shape)}")
    margin = validity_margin(threshold)
    idx_w = scores.argmax(dim=0)
    idx_l = scores.argmin(dim=0)
    gap = scores.max(dim=0).values - scores.min(dim=0).values
    valid = torch.ones_like(gap, dtype=torch.bool) if final_step else gap.to(torch.float64) > margin
    return idx_w, idx_l, valid


def antithetic_noise(noise: torch.Tensor, idx_w: torch.Tensor, idx_l: torch.Tensor) -> torch.Tensor:
    r"""The antithetic winner noise :math:`\tilde n_w = (n_w - n_l)/2` (the loser's is :math:`-\tilde n_w`).

    A shift common to every candidate's noise cancels, which is why the estimate is less noisy than the
    winner's own noise.

    Args:
        noise: ``(K, B, ...)`` candidate noise from :func:`ddim_candidates`.
        idx_w: ``(B,)`` winner indices in ``[0, K)``.
        idx_l: ``(B,)`` loser indices in ``[0, K)``.

    Returns:
        ``(B, ...)`` tensor :math:`\tilde n_w`.

    Raises:
        ValueError: on mismatched shapes, out-of-range indices or non-finite noise.

    Example:
        >>> n = torch.tensor([[[1.0]], [[3.0]]])
        >>> antithetic_noise(n, torch.tensor([1]), torch.tensor([0]))
        tensor([[1.]])
    """
    _check_finite("noise", noise)
    if noise.ndim < 2:
        raise ValueError(f"noise must be (K, B, ...), got shape {tuple(noise.shape)}")
    k, b = noise.shape[:2]
    for name, idx in (("idx_w", idx_w), ("idx_l", idx_l)):
        if not isinstance(idx, torch.Tensor) or idx.shape != (b,) or idx.dtype not in (torch.int64, torch.int32):
            raise ValueError(f"{name} must be a ({b},) integer tensor, got {getattr(idx, 'shape', idx)!r}")
        if bool(((idx < 0) | (idx >= k)).any()):
            raise ValueError(f"{name} must index candidates in [0, {k}), got {idx.tolist()}")
    ar = torch.arange(b, device=noise.device)
    return (noise[idx_w.long(), ar] - noise[idx_l.long(), ar]) / 2
