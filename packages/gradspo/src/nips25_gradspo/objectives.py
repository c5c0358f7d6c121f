r"""The three preference losses in one form: GradSPO, SPO and Diffusion-DPO.

GradSPO and SPO share the clipped-ratio structure

.. math::
    \rho_k = \mathrm{clamp}\big(e^{\ell_k(\theta) - \ell_k(\mathrm{ref})}, 1-\varepsilon, 1+\varepsilon\big), \qquad
    L = -\log\sigma\big(\beta\log\rho_w - \beta\log\rho_l\big),

and differ only in the per-pair score :math:`\ell_k`: GradSPO's score-matching target
:math:`\ell_k = -\overline{\|\epsilon_\theta - \mathrm{sg}[\epsilon_{ema} - c_t\tilde n_k]\|^2}` with
:math:`c_t = g\sqrt{1-\bar\alpha_t}`, SPO's Gaussian log-likelihood of the DDIM step
:math:`\ell_k = \overline{\log\mathcal N(x^k_{t'}; \mu_\theta(x_t), \sigma_t^2 I)}` (bars: means over pixels).
Diffusion-DPO compares the epsilon-MSE of noised final winner/loser images against the reference.
Every loss reduces over pixels per sample first, then over the batch (cf. diffusers issue #6702).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

__all__ = ["clipped_ratio_loss", "diffusion_dpo_loss", "gradspo_loss", "spo_loss"]


def _check(name: str, x: torch.Tensor, shape: tuple[int, ...] | None = None) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.numel() == 0 or x.ndim < 1:
        raise ValueError(f"{name} must be a non-empty (B, ...) tensor, got shape {tuple(x.shape)}")
    if not torch.is_floating_point(x):
        raise TypeError(f"{name} must be floating point, got {x.dtype}")
    if shape is not None and tuple(x.shape) != shape:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(x.shape)}")
    if not bool(torch.isfinite(x.detach()).all()):
        raise ValueError(f"{name} must be finite (no NaN/inf)")


def _check_hyper(beta: float, clip: float) -> None:
    if not (isinstance(beta, (int, float)) and math.isfinite(beta) and beta > 0):
        raise ValueError(f"beta must be a finite float > 0, got {beta!r}")
    if not (isinstance(clip, (int, float)) and 0 < clip < 1):
        raise ValueError(f"clip must be in (0, 1), got {clip!r}")


def _pixel_mean(x: torch.Tensor) -> torch.Tensor:
    return x.flatten(1).mean(dim=1)


def clipped_ratio_loss(
    log_ratio_w: torch.Tensor, log_ratio_l: torch.Tensor, *, beta: float, clip: float
) -> tuple[torch.Tensor, dict[str, float]]:
    r""":math:`L = -\log\sigma(\beta\log\rho_w - \beta\log\rho_l)` with :math:`\rho = \mathrm{clamp}(e^{r},
    1-\varepsilon, 1+\varepsilon)`, averaged over the batch.

    Args:
        log_ratio_w: ``(B,)`` :math:`\ell_w(\theta) - \ell_w(\mathrm{ref})`.
        log_ratio_l: ``(B,)`` :math:`\ell_l(\theta) - \ell_l(\mathrm{ref})`.
        beta: inverse temperature :math:`\beta > 0` (10 in GradSPO/SPO).
        clip: :math:`\varepsilon \in (0, 1)` (0.1).

    Returns:
        ``(loss, stats)``: scalar loss; ``stats`` with ``accuracy`` (share of pairs with
        :math:`\log\rho_w > \log\rho_l`), ``mean_ratio`` and ``clip_fraction``.
    """
    _check("log_ratio_w", log_ratio_w)
    _check("log_ratio_l", log_ratio_l, tuple(log_ratio_w.shape))
    _check_hyper(beta, clip)
    lo, hi = math.log(1 - clip), math.log(1 + clip)
    # clamp(exp(r), 1-eps, 1+eps) in log space: identical value and gradient (zero outside the band)
    lw, ll = log_ratio_w.clamp(lo, hi), log_ratio_l.clamp(lo, hi)
    loss = -F.logsigmoid(beta * (lw - ll)).mean()
    both = torch.cat([log_ratio_w.detach(), log_ratio_l.detach()])
    stats = {
        "accuracy": float((lw > ll).float().mean()),
        "mean_ratio": float(both.exp().mean()),
        "clip_fraction": float(((both < lo) | (both > hi)).float().mean()),
    }
    return loss, stats


def gradspo_loss(
    eps_theta: torch.Tensor,
    eps_ref: torch.Tensor,
    eps_ema: torch.Tensor,
    n_tilde: torch.Tensor,
    alpha_bar_t: torch.Tensor,
    *,
    grad_scale: float = 0.5,
    beta: float = 10.0,
    clip: float = 0.1,
    n_tilde_l: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    r"""GradSPO's loss: clipped ratios of the score-matching target shifted along the antithetic noise.

    .. math::
        \ell_k(\theta) = -\overline{\|\epsilon_\theta - \mathrm{sg}[\epsilon_{ema} - c_t \tilde n_k]\|^2},\quad
        c_t = g\sqrt{1-\bar\alpha_t},\quad \tilde n_l = -\tilde n_w,

    unclipped :math:`\log\rho_w - \log\rho_l = -2c_t\langle\epsilon_\theta - \epsilon_{ref}, n_w - n_l\rangle/D`
    (the EMA prediction cancels). At :math:`\theta = \mathrm{ref}` the loss is :math:`\log 2` and
    :math:`\partial L/\partial\epsilon_\theta = 2\beta c_t\tilde n_w / (DB)`: descent moves the prediction
    along :math:`-\tilde n_w`, i.e. the next-state mean towards the winner.

    Args:
        eps_theta: ``(B, C, H, W)`` prediction of the trained model (CFG applied), with gradient.
        eps_ref: ``(B, C, H, W)`` prediction of the reference (adapter off), no gradient needed.
        eps_ema: ``(B, C, H, W)`` prediction of the EMA model (the sampler), treated as a constant.
        n_tilde: ``(B, C, H, W)`` antithetic winner noise :math:`\tilde n_w` from :func:`antithetic_noise`.
        alpha_bar_t: ``(B,)`` :math:`\bar\alpha_t` of each sample's timestep, in ``(0, 1]``.
        grad_scale: :math:`g > 0` (0.5).
        beta: :math:`\beta > 0` (10).
        clip: :math:`\varepsilon \in (0, 1)` (0.1).
        n_tilde_l: ``(B, C, H, W)`` the loser's noise term; ``None`` means the antithetic :math:`-\tilde n_w`.
            Passing the raw winner/loser noises as ``(n_tilde, n_tilde_l)`` gives the no-antithetic ablation.

    Returns:
        ``(loss, stats)`` as :func:`clipped_ratio_loss`.

    Raises:
        ValueError: on shape mismatch, non-finite input or out-of-range hyper-parameters.

    References:
        Tee et al., NeurIPS 2025, the GradSPO objective (official ``loss.py``: score-matching target, Sec. 4).

    Example:
        >>> z = torch.zeros(2, 1, 2, 2)
        >>> loss, _ = gradspo_loss(z, z, z, torch.ones_like(z), torch.full((2,), 0.5))
        >>> round(float(loss), 6) == round(math.log(2), 6)
        True
    """
    _check("eps_theta", eps_theta)
    shape = tuple(eps_theta.shape)
    for name, x in (("eps_ref", eps_ref), ("eps_ema", eps_ema), ("n_tilde", n_tilde)):
        _check(name, x, shape)
    if n_tilde_l is None:
        n_tilde_l = -n_tilde
    _check("n_tilde_l", n_tilde_l, shape)
    _check("alpha_bar_t", alpha_bar_t, (shape[0],))
    if bool(((alpha_bar_t <= 0) | (alpha_bar_t > 1)).any()):
        raise ValueError("alpha_bar_t must lie in (0, 1]")
    if not (isinstance(grad_scale, (int, float)) and math.isfinite(grad_scale) and grad_scale > 0):
        raise ValueError(f"grad_scale must be a finite float > 0, got {grad_scale!r}")
    c = (grad_scale * (1 - alpha_bar_t).sqrt()).to(eps_theta.dtype).view(-1, *([1] * (len(shape) - 1)))
    anchor = eps_ema.detach()
    target_w, target_l = anchor - c * n_tilde, anchor - c * n_tilde_l
    ref = eps_ref.detach()

    def score(eps: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return -_pixel_mean((eps - target) ** 2)

    lw = score(eps_theta, target_w) - score(ref, target_w)
    ll = score(eps_theta, target_l) - score(ref, target_l)
    return clipped_ratio_loss(lw, ll, beta=beta, clip=clip)


def spo_loss(
    eps_theta: torch.Tensor,
    eps_ref: torch.Tensor,
    x_t: torch.Tensor,
    x_w: torch.Tensor,
    x_l: torch.Tensor,
    alpha_bar_t: torch.Tensor,
    alpha_bar_prev: torch.Tensor,
    sigma_t: torch.Tensor,
    *,
    beta: float = 10.0,
    clip: float = 0.1,
) -> tuple[torch.Tensor, dict[str, float]]:
    r"""SPO's loss: clipped likelihood ratios of the winner/loser DDIM step under :math:`\theta` and the reference.

    .. math::
        \ell_k(\theta) = -\overline{\|x^k_{t'} - \mu_\theta(x_t)\|^2}/(2\sigma_t^2), \qquad
        \mu_\theta = \sqrt{\bar\alpha_{t'}}\,\hat x_0(\epsilon_\theta) + \sqrt{1-\bar\alpha_{t'}-\sigma_t^2}\,
        \epsilon_\theta,

    (the Gaussian normaliser cancels in the ratio); unclipped
    :math:`\log\rho_w-\log\rho_l = -(k_t/\sigma_t)\langle\epsilon_\theta-\epsilon_{ref}, n_w-n_l\rangle/D`.

    Args:
        eps_theta: ``(B, C, H, W)`` prediction of the trained model at ``x_t`` (CFG applied), with gradient.
        eps_ref: ``(B, C, H, W)`` reference prediction.
        x_t: ``(B, C, H, W)`` shared state.
        x_w: ``(B, C, H, W)`` winner next state.
        x_l: ``(B, C, H, W)`` loser next state.
        alpha_bar_t: ``(B,)`` :math:`\bar\alpha_t` in ``(0, 1]``.
        alpha_bar_prev: ``(B,)`` :math:`\bar\alpha_{t'}` in ``(0, 1]``.
        sigma_t: ``(B,)`` DDIM eta = 1 standard deviation, ``> 0``.
        beta: :math:`\beta > 0` (10).
        clip: :math:`\varepsilon \in (0, 1)` (0.1).

    Returns:
        ``(loss, stats)`` as :func:`clipped_ratio_loss`.

    Raises:
        ValueError: on shape mismatch, non-finite input or out-of-range values.

    References:
        Liang et al., "Step-aware Preference Optimization", arXiv:2406.04314 (SPO loss).

    Example:
        >>> z = torch.zeros(1, 1, 2, 2); a = torch.full((1,), 0.5)
        >>> loss, _ = spo_loss(z, z, z, z + 1, z - 1, a, a + 0.1, torch.full((1,), 0.3))
        >>> round(float(loss), 6) == round(math.log(2), 6)
        True
    """
    _check("eps_theta", eps_theta)
    shape = tuple(eps_theta.shape)
    for name, x in (("eps_ref", eps_ref), ("x_t", x_t), ("x_w", x_w), ("x_l", x_l)):
        _check(name, x, shape)
    for name, v in (("alpha_bar_t", alpha_bar_t), ("alpha_bar_prev", alpha_bar_prev), ("sigma_t", sigma_t)):
        _check(name, v, (shape[0],))
    if bool(((alpha_bar_t <= 0) | (alpha_bar_t > 1) | (alpha_bar_prev <= 0) | (alpha_bar_prev > 1)).any()):
        raise ValueError("alpha_bar_t and alpha_bar_prev must lie in (0, 1]")
    if bool((sigma_t <= 0).any()):
        raise ValueError("sigma_t must be > 0 (eta = 1 DDIM steps)")
    view = (-1, *([1] * (len(shape) - 1)))
    a_t, a_p, sig = (v.to(eps_theta.dtype).view(view) for v in (alpha_bar_t, alpha_bar_prev, sigma_t))

    def mean(eps: torch.Tensor) -> torch.Tensor:
        x0 = (x_t - (1 - a_t).sqrt() * eps) / a_t.sqrt()
        return a_p.sqrt() * x0 + (1 - a_p - sig**2).clamp(min=0).sqrt() * eps

    mu_theta, mu_ref = mean(eps_theta), mean(eps_ref.detach())
    var2 = 2 * sig.flatten() ** 2

    def loglik(x: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
        return -_pixel_mean((x - mu) ** 2) / var2

    lw = loglik(x_w, mu_theta) - loglik(x_w, mu_ref)
    ll = loglik(x_l, mu_theta) - loglik(x_l, mu_ref)
    return clipped_ratio_loss(lw, ll, beta=beta, clip=clip)


def diffusion_dpo_loss(
    eps_theta_w: torch.Tensor,
    eps_theta_l: torch.Tensor,
    eps_ref_w: torch.Tensor,
    eps_ref_l: torch.Tensor,
    noise: torch.Tensor,
    *,
    beta: float = 2500.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    r"""Diffusion-DPO's loss on a final-image pair noised with the same noise and timestep.

    .. math::
        L = -\log\sigma\Big(-\tfrac{\beta}{2}\big[(m^\theta_w - m^\theta_l) - (m^{ref}_w - m^{ref}_l)\big]\Big),
        \qquad m^\cdot_k = \overline{\|\epsilon - \epsilon_\cdot(x^k_t, t)\|^2}.

    Args:
        eps_theta_w, eps_theta_l: ``(B, C, H, W)`` predictions of the trained model on the noised winner/loser.
        eps_ref_w, eps_ref_l: the same for the reference.
        noise: ``(B, C, H, W)`` the shared noise :math:`\epsilon`.
        beta: :math:`\beta > 0` (2500 in the diffusers example; see the README on its scale).

    Returns:
        ``(loss, stats)``: stats has ``accuracy`` (implicit-reward accuracy), ``mean_ratio`` (mean of
        :math:`\exp` of the implicit reward margin) and ``clip_fraction`` (always 0: no clamp).

    Raises:
        ValueError: on shape mismatch, non-finite input or ``beta <= 0``.

    References:
        Wallace et al., "Diffusion Model Alignment Using Direct Preference Optimization", CVPR 2024, Eq. 14.

    Example:
        >>> z = torch.zeros(1, 1, 2, 2)
        >>> round(float(diffusion_dpo_loss(z, z, z, z, z)[0]), 6) == round(math.log(2), 6)
        True
    """
    _check("eps_theta_w", eps_theta_w)
    shape = tuple(eps_theta_w.shape)
    for name, x in (("eps_theta_l", eps_theta_l), ("eps_ref_w", eps_ref_w), ("eps_ref_l", eps_ref_l), ("noise", noise)):
        _check(name, x, shape)
    _check_hyper(beta, 0.5)

    def mse(eps: torch.Tensor) -> torch.Tensor:
        return _pixel_mean((eps - noise) ** 2)

    margin = (mse(eps_theta_w) - mse(eps_theta_l)) - (mse(eps_ref_w.detach()) - mse(eps_ref_l.detach()))
    inside = -0.5 * beta * margin
    loss = -F.logsigmoid(inside).mean()
    return loss, {
        "accuracy": float((inside.detach() > 0).float().mean()),
        "mean_ratio": float(inside.detach().exp().mean()),
        "clip_fraction": 0.0,
    }
