r"""``StepwiseTrainer``: GradSPO, SPO and Diffusion-DPO on one diffusers UNet with LoRA, under ``accelerate``.

One iteration samples a batch of trajectories, builds preference pairs and takes one optimiser step:

* GradSPO / SPO: from step ``divert_start_step`` on, ``K`` DDIM (eta = 1) candidates per state are scored by the
  step-aware reward; the best/worst pair (if valid) becomes a training pair; the trajectory continues from a
  uniformly random candidate. GradSPO samples with the EMA model, SPO with the current one.
* Diffusion-DPO: ``K`` full trajectories per prompt; the best/worst final images are noised at random timesteps
  (as many per pair as a stepwise method has pairs per trajectory) with shared noise.

Data parallelism (``accelerate launch``): the conditioning passed to :meth:`StepwiseTrainer.step` is the *global*
batch; process ``r`` of ``W`` rolls out only its contiguous shard of rows. Every process draws the global batch's
random numbers from the same generator and keeps its rows, so ``W`` processes compute exactly what one process
computes at the same global batch (up to float summation order), with ``1/W`` of the work each. The loss is the
mean over the *global* valid pairs: each process scales its share by ``W / n_global`` before DDP's gradient average;
a process whose shard has no valid pair still runs one zero-weighted backward, so no rank skips the all-reduce.
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any, Literal

import torch
from diffusers.schedulers.scheduling_ddim import DDIMScheduler

from nips25_gradspo.candidates import ddim_candidates, ddim_mean, select_pair, validity_margin
from nips25_gradspo.denoisers import Cond, Denoiser, index_cond, repeat_cond
from nips25_gradspo.ema import EMA
from nips25_gradspo.lora import adapters_disabled, lora_parameters
from nips25_gradspo.objectives import diffusion_dpo_loss, gradspo_loss, spo_loss
from nips25_gradspo.reward import StepAwareReward
from nips25_gradspo.schedule import Method, ddim_coefficients

__all__ = ["PairBatch", "StepwiseTrainer", "TrainerConfig"]


@dataclass(frozen=True)
class TrainerConfig:
    """Hyper-parameters of :class:`StepwiseTrainer`. Defaults are GradSPO's SD1.5 configuration.

    Attributes:
        method: ``"gradspo"``, ``"spo"`` or ``"dpo"``.
        num_inference_steps: DDIM steps ``S`` (20).
        num_candidates: candidates per step ``K >= 2`` (4).
        divert_start_step: first step with candidates, ``0 <= d < S`` (4).
        threshold: pair validity threshold in ``[0, 1)`` (0.3; SDXL 0.4).
        grad_scale: GradSPO's ``g`` (0.5).
        beta: ``beta`` of the clipped-ratio loss (10).
        clip: ratio clip ``epsilon`` in ``(0, 1)`` (0.1).
        dpo_beta: Diffusion-DPO's ``beta`` (2500, the diffusers example's value).
        ema_decay: EMA decay in ``[0, 1)`` (0.9).
        lr: AdamW learning rate (6e-5).
        weight_decay: AdamW weight decay (1e-4).
        max_grad_norm: gradient-norm clip (1.0).
        sampler: ``"auto"`` (EMA for GradSPO, current model otherwise), ``"ema"`` or ``"current"``.
        antithetic: GradSPO uses ``(n_w - n_l)/2`` and its negative (``False``: the raw ``n_w``, ``n_l``).
        last_step_all_valid: ``"auto"`` (GradSPO: yes, SPO: no), ``"yes"`` or ``"no"``.
        reward_input: the preference model sees the noisy candidate ``"x_t"`` or its Tweedie ``"x0_hat"``.
        micro_batch: pairs per forward/backward chunk (gradient accumulation inside one step).
    """

    method: Method = "gradspo"
    num_inference_steps: int = 20
    num_candidates: int = 4
    divert_start_step: int = 4
    threshold: float = 0.3
    grad_scale: float = 0.5
    beta: float = 10.0
    clip: float = 0.1
    dpo_beta: float = 2500.0
    ema_decay: float = 0.9
    lr: float = 6e-5
    weight_decay: float = 1e-4
    max_grad_norm: float = 1.0
    sampler: Literal["auto", "ema", "current"] = "auto"
    antithetic: bool = True
    last_step_all_valid: Literal["auto", "yes", "no"] = "auto"
    reward_input: Literal["x_t", "x0_hat"] = "x_t"
    micro_batch: int = 256

    def __post_init__(self) -> None:
        if self.method not in ("gradspo", "spo", "dpo"):
            raise ValueError(f"method must be 'gradspo', 'spo' or 'dpo', got {self.method!r}")
        if self.num_inference_steps < 1:
            raise ValueError(f"num_inference_steps must be >= 1, got {self.num_inference_steps}")
        if self.num_candidates < 2:
            raise ValueError(f"num_candidates must be >= 2, got {self.num_candidates}")
        if not 0 <= self.divert_start_step < self.num_inference_steps:
            raise ValueError(
                f"divert_start_step must be in [0, num_inference_steps={self.num_inference_steps}), "
                f"got {self.divert_start_step}"
            )
        validity_margin(self.threshold)
        for name in ("grad_scale", "beta", "dpo_beta", "lr", "max_grad_norm"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a finite float > 0, got {v!r}")
        if not 0 < self.clip < 1:
            raise ValueError(f"clip must be in (0, 1), got {self.clip}")
        if not 0 <= self.ema_decay < 1:
            raise ValueError(f"ema_decay must be in [0, 1), got {self.ema_decay}")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}")
        if self.sampler not in ("auto", "ema", "current"):
            raise ValueError(f"sampler must be 'auto', 'ema' or 'current', got {self.sampler!r}")
        if self.last_step_all_valid not in ("auto", "yes", "no"):
            raise ValueError(f"last_step_all_valid must be 'auto', 'yes' or 'no', got {self.last_step_all_valid!r}")
        if self.reward_input not in ("x_t", "x0_hat"):
            raise ValueError(f"reward_input must be 'x_t' or 'x0_hat', got {self.reward_input!r}")
        if self.micro_batch < 1:
            raise ValueError(f"micro_batch must be >= 1, got {self.micro_batch}")

    @property
    def uses_ema_sampler(self) -> bool:
        """Whether trajectories are drawn with the EMA model."""
        return self.sampler == "ema" or (self.sampler == "auto" and self.method == "gradspo")

    @property
    def all_valid_at_last_step(self) -> bool:
        """Whether every pair of the final step is accepted."""
        return self.last_step_all_valid == "yes" or (self.last_step_all_valid == "auto" and self.method == "gradspo")


@dataclass
class PairBatch:
    """Training pairs of one iteration (``N`` rows; stepwise methods fill the step fields, DPO the final ones).

    Attributes:
        x_t: ``(N, C, H, W)`` shared states (stepwise) or noised winners (DPO).
        t: ``(N,)`` long timesteps.
        cond: conditioning rows.
        eps_sampler: ``(N, C, H, W)`` the sampler's prediction at ``x_t`` (GradSPO's EMA anchor).
        noise_w, noise_l: ``(N, C, H, W)`` candidate noises of winner and loser (DPO: the shared noise twice).
        x_w, x_l: ``(N, C, H, W)`` winner/loser next states (DPO: noised winner/loser images).
        valid: ``(N,)`` bool.
        step: ``(N,)`` long DDIM step index ``i`` (DPO: -1).
    """

    x_t: torch.Tensor
    t: torch.Tensor
    cond: dict[str, torch.Tensor]
    eps_sampler: torch.Tensor
    noise_w: torch.Tensor
    noise_l: torch.Tensor
    x_w: torch.Tensor
    x_l: torch.Tensor
    valid: torch.Tensor
    step: torch.Tensor

    def select(self, idx: torch.Tensor) -> PairBatch:
        """Rows ``idx`` of every field."""
        return PairBatch(
            self.x_t[idx], self.t[idx], index_cond(self.cond, idx), self.eps_sampler[idx], self.noise_w[idx],
            self.noise_l[idx], self.x_w[idx], self.x_l[idx], self.valid[idx], self.step[idx],
        )  # fmt: skip


def _cat(batches: list[PairBatch]) -> PairBatch:
    def cat(name: str) -> torch.Tensor:
        return torch.cat([getattr(b, name) for b in batches])

    cond = {k: torch.cat([b.cond[k] for b in batches]) for k in batches[0].cond}
    return PairBatch(
        cat("x_t"), cat("t"), cond, cat("eps_sampler"), cat("noise_w"), cat("noise_l"), cat("x_w"), cat("x_l"),
        cat("valid"), cat("step"),
    )  # fmt: skip


class StepwiseTrainer:
    """Align a diffusion model to a step-aware reward by GradSPO, SPO or Diffusion-DPO.

    Args:
        denoiser: a :class:`~nips25_gradspo.denoisers.Denoiser` whose ``unet`` already carries a LoRA
            (:func:`~nips25_gradspo.lora.add_unet_lora`).
        scheduler: a ``DDIMScheduler`` (its ``set_timesteps`` is called with ``config.num_inference_steps``).
        reward: a :class:`~nips25_gradspo.reward.StepAwareReward`.
        config: :class:`TrainerConfig`.
        latent_shape: ``(C, H, W)`` of one sample.
        accelerator: an ``accelerate.Accelerator`` (default: ``Accelerator()``, which picks the device and the
            process group ``accelerate launch`` set up). The UNet and the optimiser are ``prepare``-d with it;
            ``trainer.unet`` stays the unwrapped module (``accelerator.unwrap_model``).

    Raises:
        TypeError: if ``scheduler`` is not a ``DDIMScheduler`` or ``reward`` is not callable.
        ValueError: if the UNet has no LoRA, ``latent_shape`` is not three positive ints or ``accelerator`` is set
            up for FSDP/DeepSpeed; in :meth:`step`, if the global batch is smaller than the number of processes.

    Example:
        >>> from nips25_gradspo import ClassDenoiser, DigitReward, NoisyDigitClassifier, add_unet_lora
        >>> from nips25_gradspo import digits_scheduler, digits_unet
        >>> unet = digits_unet(); _ = add_unet_lora(unet, r=2, alpha=2)
        >>> tr = StepwiseTrainer(ClassDenoiser(unet), digits_scheduler(), DigitReward(NoisyDigitClassifier()),
        ...                      config=TrainerConfig(num_inference_steps=3, num_candidates=2, divert_start_step=1),
        ...                      latent_shape=(1, 8, 8))
        >>> stats = tr.step({"class_labels": torch.tensor([3])}, generator=torch.Generator().manual_seed(0))
        >>> sorted(stats)[:3]
        ['accuracy', 'clip_fraction', 'final_reward']
        >>> stats["valid_fraction"] <= 1.0 and tr.iteration in (0, 1)
        True
    """

    def __init__(
        self,
        denoiser: Denoiser,
        scheduler: DDIMScheduler,
        reward: StepAwareReward,
        *,
        config: TrainerConfig,
        latent_shape: tuple[int, int, int],
        accelerator: Any = None,
    ) -> None:
        from accelerate import Accelerator

        if not isinstance(scheduler, DDIMScheduler):
            raise TypeError(f"scheduler must be a diffusers DDIMScheduler, got {type(scheduler).__name__}")
        if not callable(reward):
            raise TypeError("reward must be callable as reward(x, t, cond) -> (B,)")
        if not isinstance(config, TrainerConfig):
            raise TypeError(f"config must be a TrainerConfig, got {type(config).__name__}")
        if len(latent_shape) != 3 or not all(isinstance(s, int) and s > 0 for s in latent_shape):
            raise ValueError(f"latent_shape must be (C, H, W) positive ints, got {latent_shape!r}")
        self.config = config
        self.denoiser = denoiser
        self.reward = reward
        self.latent_shape = tuple(latent_shape)
        self.scheduler = scheduler
        self.scheduler.set_timesteps(config.num_inference_steps)
        self.accelerator = accelerator if accelerator is not None else Accelerator()
        kind = str(getattr(self.accelerator, "distributed_type", ""))
        if "FSDP" in kind or "DEEPSPEED" in kind:
            raise ValueError(
                f"accelerator: {kind} is not supported (sampling, the EMA swap and the reference pass run on the "
                "unwrapped UNet, which FSDP/ZeRO shard); use data parallelism (multi-GPU / multi-CPU), see the "
                "README's 'Scaling out'"
            )
        params = lora_parameters(denoiser.unet)
        opt = torch.optim.AdamW(params.values(), lr=config.lr, betas=(0.9, 0.999), weight_decay=config.weight_decay)
        self.model, self.optimizer = self.accelerator.prepare(denoiser.unet, opt)
        # Sampling, reference and scoring passes run on the unwrapped UNet (no DDP hooks, no buffer syncs); only the
        # loss's differentiable pass goes through the prepared (DDP) module, whose backward all-reduces the gradient.
        self.unet: torch.nn.Module = self.accelerator.unwrap_model(self.model)
        denoiser.unet = self.unet
        self._train_denoiser = copy.copy(denoiser)
        self._train_denoiser.unet = self.model
        self.params = lora_parameters(self.unet)
        self.ema = EMA(self.params, decay=config.ema_decay)
        self.iteration = 0

    # ----------------------------------------------------------------- sampling
    @contextlib.contextmanager
    def sampler_model(self, use_ema: bool | None = None) -> Iterator[None]:
        """Within the block the denoiser computes with the sampler's weights (EMA for GradSPO)."""
        if self.config.uses_ema_sampler if use_ema is None else use_ema:
            with self.ema.applied(self.params):
                yield
        else:
            yield

    def _prev_t(self, t: int) -> int:
        return max(t - self.scheduler.config["num_train_timesteps"] // self.scheduler.num_inference_steps, 0)

    def _device(self) -> torch.device:
        return next(iter(self.params.values())).device

    def _score(self, xs: torch.Tensor, t_prev: int, cond: Cond, final: bool) -> torch.Tensor:
        k, b = xs.shape[:2]
        flat = xs.flatten(0, 1)
        tt = torch.full((k * b,), t_prev, dtype=torch.long, device=flat.device)
        rc = repeat_cond(cond, k)
        if self.config.reward_input == "x0_hat" and not final:
            a = ddim_coefficients(self.scheduler, t_prev).alpha_bar_t.to(flat.dtype).reshape(())
            eps = self.denoiser(flat, tt, rc)
            flat = (flat - (1 - a).sqrt() * eps) / a.sqrt()
        return self.reward(flat, tt, rc).reshape(k, b).float()

    def local_rows(self, batch_size: int) -> torch.Tensor | None:
        """Rows of a global batch this process handles: ``None`` (all) on one process, else its contiguous shard.

        Raises:
            ValueError: if ``batch_size`` is smaller than the number of processes.
        """
        world = self.accelerator.num_processes
        if world == 1:
            return None
        if batch_size < world:
            raise ValueError(f"cond: the global batch ({batch_size}) must be >= the number of processes ({world})")
        return torch.tensor_split(torch.arange(batch_size), world)[self.accelerator.process_index]

    @torch.no_grad()
    def sample(
        self,
        cond: Cond,
        *,
        generator: torch.Generator,
        record: bool = True,
        use_ema: bool | None = None,
        rows: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, PairBatch | None]:
        """Draw one trajectory per conditioning row with the sampler model, recording candidate pairs.

        Args:
            cond: conditioning with leading dimension ``B``.
            generator: torch generator (all randomness of the rollout).
            record: build candidate pairs from ``divert_start_step`` on (``False``: plain DDIM eta = 1 sampling).
            use_ema: override the sampler choice of the config.
            rows: ``(B_local,)`` long indices into the batch: roll out only these rows (the random numbers of the
                whole batch are drawn and the rows kept, so a shard equals the same rows of the full run).
                ``None``: all rows.

        Returns:
            ``(x_0, pairs)``: ``(B_local, C, H, W)`` final samples and the pairs (``None`` when ``record`` is False).
        """
        b = _batch_size(cond)
        dev = self._device()
        idx = torch.arange(b) if rows is None else rows
        if rows is not None:
            cond = index_cond(cond, rows.to(next(iter(cond.values())).device))
        bl = idx.numel()
        x = torch.randn((b, *self.latent_shape), generator=generator)[idx].to(dev) * self.scheduler.init_noise_sigma
        rows_out: list[PairBatch] = []
        steps = self.scheduler.timesteps.tolist()
        cfg = self.config
        with self.sampler_model(use_ema):
            for i, t in enumerate(steps):
                tt = torch.full((bl,), t, dtype=torch.long, device=dev)
                eps = self.denoiser(x, tt, cond)
                if not record or i < cfg.divert_start_step:
                    mean, sigma = ddim_mean(self.scheduler, eps, x, t)
                    x = mean + sigma * torch.randn((b, *self.latent_shape), generator=generator)[idx].to(dev)
                    continue
                shape = (cfg.num_candidates, b, *self.latent_shape)
                noise = torch.randn(shape, generator=generator)[:, idx].to(dev)
                xs, noise, _ = ddim_candidates(self.scheduler, eps, x, t, k=cfg.num_candidates, noise=noise)
                last = i == len(steps) - 1
                scores = self._score(xs, self._prev_t(t), cond, last)
                iw, il, valid = select_pair(
                    scores, threshold=cfg.threshold, final_step=last and cfg.all_valid_at_last_step
                )
                ar = torch.arange(bl, device=dev)
                rows_out.append(PairBatch(
                    x, tt, dict(cond), eps, noise[iw, ar], noise[il, ar], xs[iw, ar], xs[il, ar], valid,
                    torch.full((bl,), i, dtype=torch.long, device=dev),
                ))  # fmt: skip
                pick = torch.randint(0, cfg.num_candidates, (b,), generator=generator)[idx].to(dev)
                x = xs[pick, ar]
        return x, (_cat(rows_out) if record else None)

    @torch.no_grad()
    def dpo_pairs(
        self, cond: Cond, *, generator: torch.Generator, rows: torch.Tensor | None = None
    ) -> tuple[PairBatch, torch.Tensor]:
        """Diffusion-DPO pairs: ``K`` final samples per prompt (current model), best/worst by the reward at t=0,
        each pair noised with shared noise at ``S - d`` uniformly drawn timesteps.

        Args:
            cond: conditioning of the (global) batch.
            generator: torch generator.
            rows: the batch rows to handle (see :meth:`sample`); ``None``: all.

        Returns:
            ``(pairs, scores)``: the pairs and the ``(K, B_local)`` rewards of the final samples.
        """
        cfg = self.config
        b = _batch_size(cond)
        dev = self._device()
        k = cfg.num_candidates
        idx = torch.arange(b) if rows is None else rows
        bl = idx.numel()
        kb = None if rows is None else (torch.arange(k)[:, None] * b + rows[None]).flatten()
        finals, _ = self.sample(repeat_cond(cond, k), generator=generator, record=False, rows=kb)
        if rows is not None:
            cond = index_cond(cond, rows.to(next(iter(cond.values())).device))
        xs = finals.reshape(k, bl, *self.latent_shape)
        scores = self._score(xs, 0, cond, True)
        iw, il, _ = select_pair(scores, threshold=0.0, final_step=True)
        ar = torch.arange(bl, device=dev)
        n_t = cfg.num_inference_steps - cfg.divert_start_step
        x_w, x_l = xs[iw, ar].repeat(n_t, 1, 1, 1), xs[il, ar].repeat(n_t, 1, 1, 1)
        t_all = torch.randint(0, self.scheduler.config["num_train_timesteps"], (n_t * b,), generator=generator)
        t = t_all.reshape(n_t, b)[:, idx].flatten().to(dev)
        noise_all = torch.randn((n_t * b, *self.latent_shape), generator=generator)
        noise = noise_all.reshape(n_t, b, *self.latent_shape)[:, idx].flatten(0, 1).to(dev)
        nw, nl = self.scheduler.add_noise(x_w, noise, t), self.scheduler.add_noise(x_l, noise, t)
        pairs = PairBatch(
            nw, t, repeat_cond(cond, n_t), torch.zeros_like(nw), noise, noise, nw, nl,
            torch.ones(n_t * bl, dtype=torch.bool, device=dev), torch.full((n_t * bl,), -1, device=dev),
        )  # fmt: skip
        return pairs, scores

    def pairs(self, cond: Cond, *, generator: torch.Generator) -> tuple[PairBatch, float]:
        """The training pairs of this process for one iteration of the configured method, and the mean reward of
        the *global* batch's final samples (scored at t = 0; DPO: over its ``K`` samples per prompt).

        ``cond`` is the global batch; on ``W > 1`` processes this process handles :meth:`local_rows`.
        """
        rows = self.local_rows(_batch_size(cond))
        if self.config.method == "dpo":
            pairs, scores = self.dpo_pairs(cond, generator=generator, rows=rows)
        else:
            x0, got = self.sample(cond, generator=generator, rows=rows)
            assert got is not None
            pairs = got
            local = cond if rows is None else index_cond(cond, rows.to(next(iter(cond.values())).device))
            with torch.no_grad():
                scores = self._score(x0[None], 0, local, True)
        total = self._sum(scores.sum().double(), float(scores.numel()))
        return pairs, float(total[0] / total[1])

    def _sum(self, *values: float | torch.Tensor) -> torch.Tensor:
        """``values`` summed over processes, as a float64 tensor (on one process: the values themselves)."""
        vec = torch.stack([torch.as_tensor(v, dtype=torch.float64).reshape(()) for v in values]).to(self._device())
        if self.accelerator.num_processes == 1:
            return vec.cpu()
        return self.accelerator.reduce(vec, reduction="sum").cpu()

    # ----------------------------------------------------------------- loss
    def loss(self, pairs: PairBatch) -> tuple[torch.Tensor, dict[str, float]]:
        """The method's loss on (valid) ``pairs``, differentiable in the LoRA parameters.

        Raises:
            ValueError: if ``pairs`` holds no valid pair.
        """
        p = pairs.select(pairs.valid.nonzero().flatten())
        if p.t.numel() == 0:
            raise ValueError("pairs holds no valid pair")
        return self._loss(p)

    def _loss(self, p: PairBatch) -> tuple[torch.Tensor, dict[str, float]]:
        """The method's loss on every row of ``p`` (validity not checked)."""
        cfg = self.config
        if cfg.method == "dpo":
            both_x, both_t = torch.cat([p.x_w, p.x_l]), torch.cat([p.t, p.t])
            both_c = repeat_cond(p.cond, 2)
            e = self._train_denoiser(both_x, both_t, both_c)
            with torch.no_grad(), adapters_disabled(self.denoiser.unet):
                r = self.denoiser(both_x, both_t, both_c)
            ew, el = e.chunk(2)
            rw, rl = r.chunk(2)
            return diffusion_dpo_loss(ew, el, rw, rl, p.noise_w, beta=cfg.dpo_beta)
        eps_theta = self._train_denoiser(p.x_t, p.t, p.cond)
        with torch.no_grad(), adapters_disabled(self.denoiser.unet):
            eps_ref = self.denoiser(p.x_t, p.t, p.cond)
        co = ddim_coefficients(self.scheduler, p.t)
        dt = eps_theta.dtype
        if cfg.method == "gradspo":
            if cfg.antithetic:
                n_w, n_l = (p.noise_w - p.noise_l) / 2, None
            else:
                n_w, n_l = p.noise_w, p.noise_l
            return gradspo_loss(
                eps_theta, eps_ref, p.eps_sampler, n_w, co.alpha_bar_t.to(dt),
                grad_scale=cfg.grad_scale, beta=cfg.beta, clip=cfg.clip, n_tilde_l=n_l,
            )  # fmt: skip
        return spo_loss(
            eps_theta, eps_ref, p.x_t, p.x_w, p.x_l, co.alpha_bar_t.to(dt), co.alpha_bar_prev.to(dt),
            co.sigma_t.to(dt), beta=cfg.beta, clip=cfg.clip,
        )  # fmt: skip

    def backward(self, pairs: PairBatch, *, n_total: int | None = None) -> dict[str, float]:
        """Accumulate the gradient of the mean loss over valid pairs, in micro-batches. Returns weighted stats.

        Each micro-batch's mean loss is weighted by its share of ``n_total`` valid pairs (all processes together;
        default: this process's count) and by the number of processes, since DDP averages the processes' gradients.
        Every micro-batch but the last runs under ``accelerator.no_sync`` (one gradient all-reduce per step). With
        no valid pair here, one zero-weighted pair is back-propagated, so this process joins the all-reduce.

        Returns:
            ``{"loss", "accuracy", "mean_ratio", "clip_fraction", "n_pairs"}`` over all processes.
        """
        idx = pairs.valid.nonzero().flatten()
        n = idx.numel()
        n_all = n if n_total is None else n_total
        if n_all < 1:
            raise ValueError("pairs holds no valid pair")
        world = self.accelerator.num_processes
        keys = ("loss", "accuracy", "mean_ratio", "clip_fraction")
        local = dict.fromkeys(keys, 0.0)
        chunks = [idx[s : s + self.config.micro_batch] for s in range(0, n, self.config.micro_batch)]
        for j, rows in enumerate(chunks or [torch.zeros(1, dtype=torch.long, device=idx.device)]):
            last = j == max(len(chunks), 1) - 1
            with contextlib.nullcontext() if last else self.accelerator.no_sync(self.model):
                loss, st = self._loss(pairs.select(rows))
                w = rows.numel() / n_all if chunks else 0.0
                self.accelerator.backward(loss * (w * world))
            local["loss"] += float(loss.detach()) * w
            for k in keys[1:]:
                local[k] += st[k] * w
        total = self._sum(*(local[k] for k in keys), float(n)).tolist()
        return {**dict(zip(keys, total[:4])), "n_pairs": total[4]}

    def step(self, cond: Cond, *, generator: torch.Generator) -> dict[str, float]:
        """One iteration: sample pairs, one optimiser step on their loss, EMA update.

        Args:
            cond: the conditioning of the *global* batch (on ``W`` processes each rolls out its shard).
            generator: torch generator, seeded the same on every process.

        Returns:
            ``{"loss", "accuracy", "mean_ratio", "clip_fraction", "n_pairs", "valid_fraction", "grad_norm",
            "final_reward"}`` over the global batch (loss ``nan`` and no update on any process when no pair of the
            global batch was valid).

        Raises:
            ValueError: on malformed ``cond`` or a global batch smaller than the number of processes.
        """
        pairs, final_reward = self.pairs(cond, generator=generator)
        n_valid, n_rows = (int(v) for v in self._sum(float(pairs.valid.sum()), float(pairs.valid.numel())))
        valid_fraction = n_valid / n_rows
        self.optimizer.zero_grad()
        if n_valid == 0:
            stats = {"loss": math.nan, "accuracy": math.nan, "mean_ratio": math.nan, "clip_fraction": math.nan}
            return {**stats, "n_pairs": 0.0, "valid_fraction": 0.0, "grad_norm": 0.0, "final_reward": final_reward}
        stats = self.backward(pairs, n_total=n_valid)
        norm = self.accelerator.clip_grad_norm_(list(self.params.values()), self.config.max_grad_norm)
        self.optimizer.step()
        self.optimizer.zero_grad()
        self.ema.update(self.params)
        self.iteration += 1
        return {**stats, "valid_fraction": valid_fraction, "grad_norm": float(norm), "final_reward": final_reward}

    def config_dict(self) -> dict[str, Any]:
        """The trainer's configuration as a JSON-ready dict."""
        return asdict(self.config)


def _batch_size(cond: Cond) -> int:
    if not cond:
        raise ValueError("cond must hold at least one tensor")
    sizes = {int(v.shape[0]) for v in cond.values()}
    if len(sizes) != 1 or 0 in sizes:
        raise ValueError(f"every tensor in cond must share one non-zero leading (batch) size, got {sorted(sizes)}")
    return sizes.pop()
