r"""DDIM (eta = 1) coefficients of a diffusers ``DDIMScheduler`` and the per-step weight each method implies.

For a step :math:`t \to t' = t - T/S`, with :math:`\bar\alpha` the cumulative product of the scheduler
(``final_alpha_cumprod`` when :math:`t' < 0`):

.. math::
    \sigma_t^2 = \frac{1-\bar\alpha_{t'}}{1-\bar\alpha_t}\Big(1-\frac{\bar\alpha_t}{\bar\alpha_{t'}}\Big), \qquad
    \mu_t = \sqrt{\bar\alpha_{t'}}\,\hat x_0 + \sqrt{1-\bar\alpha_{t'}-\sigma_t^2}\,\epsilon, \qquad
    \hat x_0 = \frac{x_t - \sqrt{1-\bar\alpha_t}\,\epsilon}{\sqrt{\bar\alpha_t}}.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from diffusers.schedulers.scheduling_ddim import DDIMScheduler

__all__ = ["DDIMCoefficients", "Method", "ddim_coefficients", "step_weights"]

Method = Literal["gradspo", "spo", "dpo"]


@dataclass(frozen=True)
class DDIMCoefficients:
    """Per-sample DDIM quantities at timesteps ``t`` (each a float64 tensor of shape ``(B,)``)."""

    alpha_bar_t: torch.Tensor
    alpha_bar_prev: torch.Tensor
    sigma_t: torch.Tensor


def _check_scheduler(scheduler: DDIMScheduler) -> None:
    if not isinstance(scheduler, DDIMScheduler):
        raise TypeError(f"scheduler must be a diffusers DDIMScheduler, got {type(scheduler).__name__}")
    if scheduler.num_inference_steps is None:
        raise ValueError("scheduler: call scheduler.set_timesteps(num_inference_steps) first")
    if scheduler.config["prediction_type"] != "epsilon":
        raise ValueError(f"scheduler: prediction_type must be 'epsilon', got {scheduler.config['prediction_type']!r}")
    if scheduler.config["thresholding"]:
        raise ValueError("scheduler: dynamic thresholding is not supported (set thresholding=False)")


def ddim_coefficients(scheduler: DDIMScheduler, t: torch.Tensor | int) -> DDIMCoefficients:
    r""":math:`\bar\alpha_t`, :math:`\bar\alpha_{t'}` and the eta = 1 :math:`\sigma_t` of DDIM at timesteps ``t``.

    Args:
        scheduler: a ``DDIMScheduler`` after ``set_timesteps``.
        t: ``(B,)`` integer timesteps (or one int) of the scheduler's training range.

    Returns:
        :class:`DDIMCoefficients` with float64 ``(B,)`` tensors.

    Raises:
        TypeError: if ``scheduler`` is not a ``DDIMScheduler``.
        ValueError: if ``set_timesteps`` was not called or a timestep is out of range.
    """
    _check_scheduler(scheduler)
    tt = torch.as_tensor(t, dtype=torch.long).reshape(-1)
    n_train = scheduler.config["num_train_timesteps"]
    if tt.numel() == 0 or bool(((tt < 0) | (tt >= n_train)).any()):
        raise ValueError(f"t must be non-empty integer timesteps in [0, {n_train}), got {tt.tolist()}")
    ac = scheduler.alphas_cumprod.to(torch.float64)
    prev = tt - n_train // scheduler.num_inference_steps
    a_t = ac[tt]
    a_prev = torch.where(prev >= 0, ac[prev.clamp(min=0)], torch.as_tensor(float(scheduler.final_alpha_cumprod)))
    var = (1 - a_prev) / (1 - a_t) * (1 - a_t / a_prev)
    return DDIMCoefficients(a_t, a_prev, var.clamp(min=0).sqrt())


def step_weights(scheduler: DDIMScheduler, *, method: Method, grad_scale: float = 0.5) -> torch.Tensor:
    r"""The weight :math:`w_t` on :math:`\langle \epsilon_\theta - \epsilon_{ref}, n_w - n_l\rangle / D` in the
    log-ratio difference :math:`\log\rho_w - \log\rho_l = -w_t \langle\cdot\rangle/D` (unclipped), per DDIM step.

    * GradSPO: :math:`w_t = 2 c_t = 2 g \sqrt{1-\bar\alpha_t}` (score-matching target, antithetic pair).
    * SPO: :math:`w_t = k_t/\sigma_t`, :math:`k_t = \sqrt{\bar\alpha_{t'}}\sqrt{1-\bar\alpha_t}/\sqrt{\bar\alpha_t}
      - \sqrt{1-\bar\alpha_{t'}-\sigma_t^2}` (Gaussian log-likelihood of the DDIM step).
    * Diffusion-DPO: :math:`w_t = 1` (the epsilon-MSE difference, timesteps drawn uniformly).

    Args:
        scheduler: a ``DDIMScheduler`` after ``set_timesteps``.
        method: ``"gradspo"``, ``"spo"`` or ``"dpo"``.
        grad_scale: GradSPO's guidance scale :math:`g` (> 0).

    Returns:
        ``(S,)`` float64 weights in the order of ``scheduler.timesteps``.

    Raises:
        ValueError: for an unknown method or ``grad_scale <= 0``.

    References:
        Tee et al., "A Gradient Guidance Perspective on Stepwise Preference Optimization for Diffusion Models",
        NeurIPS 2025 (OpenReview d6lIOnvOX2); closed forms reconstructed in the package README.

    Example:
        >>> s = DDIMScheduler(beta_schedule="scaled_linear", beta_start=0.00085, beta_end=0.012,
        ...                   set_alpha_to_one=False, steps_offset=1, clip_sample=False)
        >>> s.set_timesteps(20)
        >>> r = step_weights(s, method="spo") / step_weights(s, method="gradspo")
        >>> round(float(r[0]), 3)
        0.856
    """
    if method not in ("gradspo", "spo", "dpo"):
        raise ValueError(f"method must be 'gradspo', 'spo' or 'dpo', got {method!r}")
    if not grad_scale > 0:
        raise ValueError(f"grad_scale must be > 0, got {grad_scale}")
    _check_scheduler(scheduler)
    co = ddim_coefficients(scheduler, scheduler.timesteps)
    if method == "gradspo":
        return 2 * grad_scale * (1 - co.alpha_bar_t).sqrt()
    if method == "dpo":
        return torch.ones_like(co.alpha_bar_t)
    k = (co.alpha_bar_prev.sqrt() * (1 - co.alpha_bar_t).sqrt() / co.alpha_bar_t.sqrt()) - (
        1 - co.alpha_bar_prev - co.sigma_t**2
    ).clamp(min=0).sqrt()
    return k / co.sigma_t
