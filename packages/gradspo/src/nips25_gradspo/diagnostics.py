r"""Estimator quality and sample quality: gradient relative variance per step, noise/reward-gradient alignment, MMD.

The relative variance of a stochastic gradient :math:`G` is :math:`\mathrm{tr}\,\mathrm{Cov}(G)/\|\mathbb E G\|^2`
(scale free, so methods with different per-step weights compare). At fixed states :math:`x_t` the trainer's LoRA
gradient is recomputed over fresh candidate draws; invalid pairs contribute a zero gradient.
"""

from __future__ import annotations

import math

import torch

from nips25_gradspo.candidates import antithetic_noise, ddim_candidates, ddim_mean, select_pair
from nips25_gradspo.denoisers import Cond, index_cond, repeat_cond
from nips25_gradspo.trainer import PairBatch, StepwiseTrainer

__all__ = [
    "flip_signs",
    "flipped_relative_variance",
    "gradient_relative_variance",
    "mmd2",
    "paired_gradient_variance",
]


def _flat_grad(trainer: StepwiseTrainer) -> torch.Tensor:
    return torch.cat([
        (p.grad if p.grad is not None else torch.zeros_like(p)).detach().flatten() for p in trainer.params.values()
    ])  # fmt: skip


def _relvar_gram(k: torch.Tensor, w: torch.Tensor) -> float:
    """:func:`_relvar` of the rows of ``g`` taken with counts ``w`` (``(R,)``), from the Gram matrix ``k = g g^T``."""
    n = float(w.sum())
    norm2 = float(w @ k @ w) / n**2
    if not norm2 > 0:
        return math.nan
    return (float(w @ k.diagonal()) - n * norm2) / (n - 1) / norm2


def _relvar_se(g: torch.Tensor, n_bootstrap: int) -> float:
    """Bootstrap standard error of :func:`_relvar` over the rows (resamples) of ``g`` (``nan`` if undefined).

    Each replicate re-draws the rows with replacement; computed from the ``(R, R)`` Gram matrix."""
    if n_bootstrap < 2:
        return math.nan
    gen = torch.Generator().manual_seed(0)
    g = g.double()
    k = g @ g.T
    n = g.shape[0]
    vals = [
        _relvar_gram(k, torch.bincount(torch.randint(0, n, (n,), generator=gen), minlength=n).double())
        for _ in range(n_bootstrap)
    ]
    finite = torch.tensor([v for v in vals if math.isfinite(v)], dtype=torch.float64)
    return float(finite.std()) if finite.numel() >= 2 and finite.numel() == len(vals) else math.nan


def _relvar(g: torch.Tensor) -> float:
    """``tr Cov / ||mean||^2`` of the rows of ``g``; ``nan`` (undefined) when the mean gradient is exactly zero,
    e.g. when no draw had a valid pair (0/0): never ``inf``, which would read as a measured variance."""
    g = g.double()
    norm2 = float(g.mean(0).pow(2).sum())
    return float(g.var(0, unbiased=True).sum()) / norm2 if norm2 > 0 else math.nan


def flipped_relative_variance(relative_variance: float, flip_probability: float) -> float:
    r"""The relative variance of an estimator whose every draw is negated with probability ``q`` (a preference model
    that swaps winner and loser at random): a planted effect with a known answer.

    With :math:`G' = sG`, :math:`s = \pm 1`, :math:`P(s=-1) = q`, independent of :math:`G`:
    :math:`\mathbb E G' = (1-2q)\mu`, :math:`\mathrm{tr\,Cov}\,G' = \mathrm{tr\,Cov}\,G + (1-(1-2q)^2)\|\mu\|^2`, so
    :math:`r' = (r + 1 - (1-2q)^2) / (1-2q)^2`.

    Example:
        >>> round(flipped_relative_variance(3.0, 0.1), 4)
        5.25
    """
    if not 0 <= flip_probability < 0.5:
        raise ValueError(f"flip_probability must be in [0, 0.5), got {flip_probability!r}")
    a = (1 - 2 * flip_probability) ** 2
    return (relative_variance + 1 - a) / a


def flip_signs(n_resamples: int, flip_probability: float, *, seed: int = 1) -> torch.Tensor:
    """The planted control's signs: exactly ``round(q * R)`` of the ``R`` draws negated, chosen at random.

    A fixed count (not an independent coin per draw) makes the realised flip fraction the stated one: with
    independent coins at ``q = 0.1`` the 0.2.0 run flipped 2 of 32 draws (and would have flipped 4 of 128), so the
    planted effect was smaller than its "known" answer. One sign per draw is shared by every step, so the
    whole-iteration gradient is flipped as a whole.

    Args:
        n_resamples: ``R >= 1`` draws.
        flip_probability: ``q`` in ``[0, 0.5)``.
        seed: seed of the permutation that picks the negated draws.

    Returns:
        ``(R, 1)`` float64 tensor of +-1.

    Raises:
        ValueError: if ``flip_probability`` is not in ``[0, 0.5)``.

    Example:
        >>> s = flip_signs(128, 0.1)
        >>> s.shape, int((s < 0).sum())
        (torch.Size([128, 1]), 13)
    """
    if not 0 <= flip_probability < 0.5:
        raise ValueError(f"flip_probability must be in [0, 0.5), got {flip_probability!r}")
    signs = torch.ones(n_resamples, 1, dtype=torch.float64)
    flipped = torch.randperm(n_resamples, generator=torch.Generator().manual_seed(seed))[
        : round(flip_probability * n_resamples)
    ]
    signs[flipped] = -1.0
    return signs


@torch.no_grad()
def _continue_to_x0(
    trainer: StepwiseTrainer, x: torch.Tensor, i: int, cond: Cond, generator: torch.Generator
) -> torch.Tensor:
    """Plain DDIM (eta = 1) from state ``x`` at step ``i`` to ``x_0`` with the trainer's sampler model."""
    steps = trainer.scheduler.timesteps.tolist()
    with trainer.sampler_model():
        for t in steps[i:]:
            tt = torch.full((x.shape[0],), t, dtype=torch.long, device=x.device)
            mean, sigma = ddim_mean(trainer.scheduler, trainer.denoiser(x, tt, cond), x, t)
            x = mean + sigma * torch.randn(x.shape, generator=generator).to(x.device)
    return x


def _dpo_pairs_from(trainer: StepwiseTrainer, rows: PairBatch, i: int, t: int, generator: torch.Generator) -> PairBatch:
    """Diffusion-DPO's pair for the fixed states ``rows.x_t``: ``K`` continuations to ``x_0``, best/worst by the
    final reward, both noised to the bucket's timestep ``t`` with one shared noise."""
    k = trainer.config.num_candidates
    b = rows.x_t.shape[0]
    with torch.no_grad():
        finals = _continue_to_x0(trainer, rows.x_t.repeat(k, 1, 1, 1), i, repeat_cond(rows.cond, k), generator)
        xs = finals.reshape(k, b, *rows.x_t.shape[1:])
        iw, il, _ = select_pair(trainer._score(xs, 0, rows.cond, True), threshold=0.0, final_step=True)
        ar = torch.arange(b)
        noise = torch.randn(rows.x_t.shape, generator=generator).to(rows.x_t.device)
        nw, nl = (trainer.scheduler.add_noise(x, noise, rows.t) for x in (xs[iw, ar], xs[il, ar]))
    ones = torch.ones(b, dtype=torch.bool, device=rows.x_t.device)
    return PairBatch(nw, rows.t, rows.cond, torch.zeros_like(nw), noise, noise, nw, nl, ones, rows.step)


def gradient_relative_variance(
    trainer: StepwiseTrainer,
    cond: Cond,
    *,
    n_resamples: int = 32,
    generator: torch.Generator,
    n_states: int | None = None,
    n_bootstrap: int = 0,
    flip_probability: float = 0.0,
) -> dict[str, list[float]]:
    r"""Per DDIM step (from ``divert_start_step``): relative variance of the LoRA gradient over candidate draws,
    the relative variance of the whole iteration's gradient, and the mean cosine between the winner noise and the
    reward gradient :math:`\nabla_{x_{t'}} r(\mu_t, t', c)`.

    The states :math:`x_t` come from one rollout of the trainer's sampler; each resample draws ``K`` fresh
    candidates at every state, selects pairs with the trainer's rule and back-propagates the method's loss
    (mean over states, invalid pairs counting as zero). The model is not updated. For Diffusion-DPO a resample
    continues ``K`` trajectories from the same state to :math:`x_0`, keeps the best and worst, and noises both to
    the step's timestep with one shared noise (its pairs are whole trajectories).

    Two trainers with the same weights, method-independent sampler (e.g. both freshly initialised, where EMA =
    current) and equal ``generator`` seeds see the same states and the same candidate noise (common random
    numbers; see :func:`paired_gradient_variance`).

    The relative variance is undefined (``nan``) at a step where no draw had a valid pair (a zero mean gradient);
    ``valid_fraction`` beside it says how often pairs were valid.

    Args:
        trainer: a :class:`~nips25_gradspo.trainer.StepwiseTrainer` (``"gradspo"``, ``"spo"`` or ``"dpo"``).
        cond: conditioning of the fixed states (batch ``B >= 1``).
        n_resamples: candidate draws per step (>= 2).
        generator: torch generator.
        n_states: average the gradient over only the first ``n_states`` of the ``B`` states (same states and
            candidate noise as the full measurement; ``None``: all). With exchangeable states this raises the
            relative variance about ``B / n_states``-fold: a positive control for the measurement.
        n_bootstrap: bootstrap replicates (over resamples) for the standard errors (0: ``nan``).
        flip_probability: also report the relative variance of the same draws with exactly ``round(q R)`` of
            them negated (:func:`flip_signs`; one sign per draw for all steps): the planted positive control
            (``"relative_variance_flipped"``, ``"..._flipped_se"``, ``"iteration_relative_variance_flipped"``,
            ``"..._flipped_se"``, and the realised ``"flip_fraction"``), close to
            :func:`flipped_relative_variance` of the unflipped value at the realised fraction.

    Returns:
        ``{"timestep", "relative_variance", "relative_variance_se", "valid_fraction", "clip_fraction",
        "alignment"}`` (one entry per recorded step; ``alignment`` is ``nan`` for DPO; ``clip_fraction`` is the
        share of valid pairs whose ratio was clipped, ``nan`` without valid pairs) and
        ``"iteration_relative_variance"``, ``"iteration_relative_variance_se"`` (one value each: the gradient of the
        mean loss over all recorded steps, per resample).

    Raises:
        ValueError: if ``n_resamples < 2`` or ``n_states`` is not in ``1..B``.
    """
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 2:
        raise ValueError(f"n_resamples must be an int >= 2, got {n_resamples!r}")
    b_all = next(iter(cond.values())).shape[0] if cond else 0
    if n_states is not None and not (isinstance(n_states, int) and 1 <= n_states <= b_all):
        raise ValueError(f"n_states must be None or an int in 1..{b_all}, got {n_states!r}")
    cfg = trainer.config
    _, base = trainer.sample(cond, generator=generator)
    assert base is not None
    keys = ("timestep", "relative_variance", "relative_variance_se", "valid_fraction", "clip_fraction", "alignment")
    out: dict[str, list[float]] = {k: [] for k in keys}
    keep = torch.arange(b_all if n_states is None else n_states)
    signs = flip_signs(n_resamples, flip_probability)
    if flip_probability > 0:
        out.update({"relative_variance_flipped": [], "relative_variance_flipped_se": []})
        out["flip_fraction"] = [float((signs < 0).double().mean())]
    last = cfg.num_inference_steps - 1
    per_step: list[torch.Tensor] = []
    for i in sorted(set(base.step.tolist())):
        rows = base.select((base.step == i).nonzero().flatten())
        t = int(rows.t[0])
        t_prev = trainer._prev_t(t)
        grads, valid_share, cosines, clipped = [], [], [], []
        for _ in range(n_resamples):
            if cfg.method == "dpo":
                pairs = _dpo_pairs_from(trainer, rows, i, t, generator)
                valid = pairs.valid
            else:
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
                    rows.x_t, rows.t, rows.cond, rows.eps_sampler, noise[iw, ar], noise[il, ar], xs[iw, ar],
                    xs[il, ar], valid, rows.step,
                )  # fmt: skip
                cosines.append(_alignment(trainer, rows, t, t_prev, antithetic_noise(noise, iw, il), i == last))
            pairs = pairs.select(keep)
            valid = pairs.valid
            trainer.optimizer.zero_grad()
            if bool(valid.any()):
                loss, st = trainer.loss(pairs)
                (loss * valid.float().mean()).backward()
                clipped.append(st["clip_fraction"])
            grads.append(_flat_grad(trainer))
            valid_share.append(float(valid.float().mean()))
        trainer.optimizer.zero_grad()
        g = torch.stack(grads).double()
        if flip_probability > 0:
            out["relative_variance_flipped"].append(_relvar(g * signs))
            out["relative_variance_flipped_se"].append(_relvar_se(g * signs, n_bootstrap))
        per_step.append(g)
        out["timestep"].append(float(t))
        out["relative_variance"].append(_relvar(g))
        out["relative_variance_se"].append(_relvar_se(g, n_bootstrap))
        out["valid_fraction"].append(sum(valid_share) / len(valid_share))
        out["clip_fraction"].append(sum(clipped) / len(clipped) if clipped else math.nan)
        out["alignment"].append(sum(cosines) / len(cosines) if cosines else math.nan)
    iteration = torch.stack(per_step).mean(0)
    out["iteration_relative_variance"] = [_relvar(iteration)]
    out["iteration_relative_variance_se"] = [_relvar_se(iteration, n_bootstrap)]
    if flip_probability > 0:
        out["iteration_relative_variance_flipped"] = [_relvar(iteration * signs)]
        out["iteration_relative_variance_flipped_se"] = [_relvar_se(iteration * signs, n_bootstrap)]
    return out


def paired_gradient_variance(
    trainers: dict[str, StepwiseTrainer],
    cond: Cond,
    *,
    n_resamples: int = 32,
    seed: int = 0,
    n_bootstrap: int = 0,
    n_states: dict[str, int] | None = None,
    flip_probability: dict[str, float] | None = None,
) -> dict[str, dict[str, list[float]]]:
    """:func:`gradient_relative_variance` of several methods on the same samples, noise and parameters.

    Every trainer must hold the same LoRA (and base) weights and the same sampler weights (e.g. all freshly built
    from one seed, where EMA = current); each gets a generator seeded with ``seed``, so all see the same fixed
    states and the same candidate noise at every resample. Only then is a difference in relative variance a
    difference of the estimators.

    Args:
        trainers: method name -> trainer.
        cond: conditioning of the fixed states.
        n_resamples: draws per step (>= 2).
        seed: the shared generator seed.
        n_bootstrap: bootstrap replicates for the standard errors (0: none).
        n_states: method name -> ``n_states`` of :func:`gradient_relative_variance` (default: all states).
        flip_probability: method name -> ``flip_probability`` of :func:`gradient_relative_variance` (default 0).

    Returns:
        method name -> the dict of :func:`gradient_relative_variance`.

    Raises:
        ValueError: if fewer than two trainers are given or their weights or sampler weights differ.
    """
    if len(trainers) < 2:
        raise ValueError(f"trainers must hold at least two methods, got {list(trainers)}")
    items = list(trainers.items())
    ref_name, ref = items[0]
    ref_state = {k: v.detach() for k, v in ref.denoiser.unet.state_dict().items()}
    ref_ema = ref.ema.shadow if hasattr(ref.ema, "shadow") else None
    for name, tr in items[1:]:
        state = tr.denoiser.unet.state_dict()
        if state.keys() != ref_state.keys() or any(not torch.equal(state[k], ref_state[k]) for k in ref_state):
            raise ValueError(f"trainers: {name!r} and {ref_name!r} hold different weights (not the same parameters)")
        ema = tr.ema.shadow if hasattr(tr.ema, "shadow") else None
        if ref_ema is not None and ema is not None and any(not torch.equal(ema[k], ref_ema[k]) for k in ref_ema):
            raise ValueError(f"trainers: {name!r} and {ref_name!r} hold different EMA weights (different samplers)")
    return {
        name: gradient_relative_variance(
            tr,
            cond,
            n_resamples=n_resamples,
            generator=torch.Generator().manual_seed(seed),
            n_bootstrap=n_bootstrap,
            n_states=(n_states or {}).get(name),
            flip_probability=(flip_probability or {}).get(name, 0.0),
        )
        for name, tr in items
    }


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
