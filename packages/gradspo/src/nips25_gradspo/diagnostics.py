r"""Estimator quality and sample quality: gradient relative variance per step, noise/reward-gradient alignment, MMD.

The relative variance of a stochastic gradient :math:`G` is :math:`\mathrm{tr}\,\mathrm{Cov}(G)/\|\mathbb E G\|^2`
(scale free, so methods with different per-step weights compare). At fixed states :math:`x_t` the trainer's LoRA
gradient is recomputed over fresh candidate draws; invalid pairs contribute a zero gradient.
"""

from __future__ import annotations

import math

import torch

from nips25_gradspo.candidates import antithetic_noise, ddim_candidates, ddim_mean, select_pair
from nips25_gradspo.denoisers import Cond, index_cond
from nips25_gradspo.trainer import PairBatch, StepwiseTrainer

__all__ = ["gradient_relative_variance", "mmd2"]


def _flat_grad(trainer: StepwiseTrainer) -> torch.Tensor:
    return torch.cat([
        (p.grad if p.grad is not None else torch.zeros_like(p)).detach().flatten() for p in trainer.params.values()
    ])  # fmt: skip


def gradient_relative_variance(
    trainer: StepwiseTrainer, cond: Cond, *, n_resamples: int = 32, generator: torch.Generator
) -> dict[str, list[float]]:
    r"""Per DDIM step (from ``divert_start_step``): relative variance of the LoRA gradient over candidate draws,
    and the mean cosine between the winner noise and the reward gradient :math:`\nabla_{x_{t'}} r(\mu_t, t', c)`.

    The states :math:`x_t` come from one rollout of the trainer's sampler; each resample draws ``K`` fresh
    candidates at every state, selects pairs with the trainer's rule and back-propagates the method's loss
    (mean over states, invalid pairs counting as zero). The model is not updated.

    Args:
        trainer: a GradSPO or SPO :class:`~nips25_gradspo.trainer.StepwiseTrainer`.
        cond: conditioning of the fixed states (batch ``B >= 1``).
        n_resamples: candidate draws per step (>= 2).
        generator: torch generator.

    Returns:
        ``{"timestep": [...], "relative_variance": [...], "valid_fraction": [...], "alignment": [...]}``, one
        entry per recorded step.

    Raises:
        ValueError: if ``n_resamples < 2`` or the trainer's method is Diffusion-DPO.
    """
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 2:
        raise ValueError(f"n_resamples must be an int >= 2, got {n_resamples!r}")
    cfg = trainer.config
    if cfg.method == "dpo":
        raise ValueError("trainer: gradient_relative_variance needs a stepwise method ('gradspo' or 'spo')")
    _, base = trainer.sample(cond, generator=generator)
    assert base is not None
    out: dict[str, list[float]] = {"timestep": [], "relative_variance": [], "valid_fraction": [], "alignment": []}
    last = cfg.num_inference_steps - 1
    for i in sorted(set(base.step.tolist())):
        rows = base.select((base.step == i).nonzero().flatten())
        t = int(rows.t[0])
        t_prev = trainer._prev_t(t)
        grads, valid_share, cosines = [], [], []
        for _ in range(n_resamples):
            noise = torch.randn((cfg.num_candidates, *rows.x_t.shape), generator=generator).to(rows.x_t.device)
            with torch.no_grad(), trainer.sampler_model():
                xs, noise, _ = ddim_candidates(
                    trainer.scheduler, rows.eps_sampler, rows.x_t, t, k=cfg.num_candidates, noise=noise
                )
                scores = trainer._score(xs, t_prev, rows.cond, i == last)
            iw, il, valid = select_pair(
                scores, threshold=cfg.threshold, final_step=i == last and cfg.all_valid_at_last_step
            )
            ar = torch.arange(rows.t.numel())
            pairs = PairBatch(
                rows.x_t, rows.t, rows.cond, rows.eps_sampler, noise[iw, ar], noise[il, ar], xs[iw, ar], xs[il, ar],
                valid, rows.step,
            )  # fmt: skip
            trainer.optimizer.zero_grad()
            if bool(valid.any()):
                loss, _ = trainer.loss(pairs)
                (loss * valid.float().mean()).backward()
            grads.append(_flat_grad(trainer))
            valid_share.append(float(valid.float().mean()))
            cosines.append(_alignment(trainer, rows, t, t_prev, antithetic_noise(noise, iw, il), i == last))
        trainer.optimizer.zero_grad()
        g = torch.stack(grads).double()
        mean = g.mean(0)
        tr_cov = float(g.var(0, unbiased=True).sum())
        norm2 = float(mean.pow(2).sum())
        out["timestep"].append(float(t))
        out["relative_variance"].append(tr_cov / norm2 if norm2 > 0 else math.inf)
        out["valid_fraction"].append(sum(valid_share) / len(valid_share))
        out["alignment"].append(sum(cosines) / len(cosines))
    return out


def _alignment(
    trainer: StepwiseTrainer, rows: PairBatch, t: int, t_prev: int, n_tilde: torch.Tensor, final: bool
) -> float:
    """Mean cosine between the antithetic winner noise and the reward gradient at the step mean."""
    with torch.no_grad():
        mean, _ = ddim_mean(trainer.scheduler, rows.eps_sampler, rows.x_t, t)
    x = mean.detach().requires_grad_(True)
    tt = torch.full((x.shape[0],), t_prev, dtype=torch.long, device=x.device)
    with torch.enable_grad():
        r = trainer.reward(x, tt, index_cond(rows.cond, slice(None))).sum()
        (g,) = torch.autograd.grad(r, x)
    cos = torch.nn.functional.cosine_similarity(n_tilde.flatten(1), g.flatten(1), dim=1)
    return float(cos.mean())


def mmd2(x: torch.Tensor, y: torch.Tensor, *, bandwidth: float | None = None) -> float:
    r"""Unbiased squared MMD with a Gaussian kernel :math:`k(a, b) = \exp(-\|a-b\|^2 / (2h^2))`.

    Args:
        x: ``(N, ...)`` samples (flattened per row), ``N >= 2``.
        y: ``(M, ...)`` reference samples, ``M >= 2``, same row size.
        bandwidth: :math:`h > 0`; default the median pairwise distance within ``y``.

    Returns:
        The unbiased estimate of :math:`\mathrm{MMD}^2` (can be slightly negative).

    Raises:
        ValueError: on too few rows, mismatched row sizes, non-finite values or ``bandwidth <= 0``.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> a, b = torch.randn(200, 2, generator=g), torch.randn(200, 2, generator=g)
        >>> abs(mmd2(a, b)) < 0.02
        True
    """
    xf, yf = x.reshape(x.shape[0], -1).double(), y.reshape(y.shape[0], -1).double()
    if xf.shape[0] < 2 or yf.shape[0] < 2 or xf.shape[1] != yf.shape[1]:
        raise ValueError(f"x and y need >= 2 rows of one size, got {tuple(x.shape)}, {tuple(y.shape)}")
    if not (bool(torch.isfinite(xf).all()) and bool(torch.isfinite(yf).all())):
        raise ValueError("x and y must be finite")
    dyy = torch.cdist(yf, yf) ** 2
    if bandwidth is None:
        off = dyy[~torch.eye(len(yf), dtype=torch.bool)]
        bandwidth = float(off.sqrt().median())
    if not bandwidth > 0:
        raise ValueError(f"bandwidth must be > 0, got {bandwidth}")
    gamma = 1.0 / (2 * bandwidth**2)
    kxx, kyy, kxy = (torch.exp(-gamma * d) for d in (torch.cdist(xf, xf) ** 2, dyy, torch.cdist(xf, yf) ** 2))
    n, m = len(xf), len(yf)
    sxx = (kxx.sum() - kxx.diagonal().sum()) / (n * (n - 1))
    syy = (kyy.sum() - kyy.diagonal().sum()) / (m * (m - 1))
    return float(sxx + syy - 2 * kxy.mean())
