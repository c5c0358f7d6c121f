"""The BCV-LR agent: pre-training from video (three stages) and the reward-free online loop."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from nips25_bcvlr._validation import check_int
from nips25_bcvlr.config import BCVLRConfig
from nips25_bcvlr.dynamics import LatentActionModel
from nips25_bcvlr.encoder import ImpalaEncoder, scale_observations
from nips25_bcvlr.online import ReplayBuffer, Rollout
from nips25_bcvlr.policy import ActionDecoder, LatentPolicy
from nips25_bcvlr.quantization import VQEMA, VQOutput
from nips25_bcvlr.representation import CurlObjective, ProtoTemporalObjective
from nips25_bcvlr.training import StageLog, fit
from nips25_bcvlr.video import Video
from nips25_shared import get_logger, progress

__all__ = ["BCVLR", "OnlineLog"]

log = get_logger(__name__)
_CHUNK = 512
_RANK_STRIDE = 1_000_003  # separates the per-process seeds of data-parallel processes


@dataclass
class OnlineLog:
    """What the online loop did: steps, returns of the finished episodes, update counts and timings."""

    env_steps: int = 0
    updates: int = 0
    episode_returns: list[float] = field(default_factory=list)
    collect_seconds: float = 0.0
    update_seconds: float = 0.0
    per_iteration: list[dict[str, float]] = field(default_factory=list)

    @property
    def throughput(self) -> float:
        """(environment steps + updates) per second of the loop's wall time."""
        total = self.collect_seconds + self.update_seconds
        return (self.env_steps + self.updates) / total if total > 0 else float("nan")


def _space_info(action_space: gym.Space) -> tuple[int, bool]:
    if isinstance(action_space, gym.spaces.Discrete):
        return int(action_space.n), False
    if isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1:
        return int(action_space.shape[0]), True
    raise TypeError(f"action_space must be Discrete or a 1-D Box, got {action_space}")


class BCVLR:
    r"""Behaviour cloning from videos via latent representations (Liu, Li & Zhao, NeurIPS 2025).

    :meth:`pretrain` runs, on an action-free and reward-free video: (1) self-supervised features
    (:class:`CurlObjective` or :class:`ProtoTemporalObjective`); (2) the latent action model (IDM with VQ-EMA
    latents and a feature-space FDM) on the frozen features; (3) pre-imitation of the latent policy
    :math:`\mathrm{MSE}(\pi(o_t), \hat z_t)`. :meth:`online` then interacts without rewards: act with
    :math:`D(\pi(o))`, fine-tune the IDM and the decoder :math:`D` on the collected transitions with
    :math:`\mathrm{CE}(D(\mathrm{IDM}(o_{t-1:t+1})), a_t) + \alpha (L_{FDM} + L_{VQ})` (MSE for continuous actions),
    and re-clone :math:`\pi` on the video with the updated IDM (BCV-LR, Alg. 1).

    Args:
        config: the hyper-parameters (:class:`BCVLRConfig`; presets via ``BCVLRConfig.preset``).
        obs_shape: ``(3, H, W)`` of the observations.
        action_space: ``Discrete(n)`` or a 1-D ``Box`` in ``[-1, 1]``.
        seed: seeds the initial weights, minibatches and action sampling.
        accelerator: an ``accelerate.Accelerator`` (a default one is made when ``None``).

    Raises:
        ValueError / TypeError: if ``obs_shape`` or ``action_space`` are not supported.

    Example:
        >>> import numpy as np, gymnasium as gym
        >>> cfg = BCVLRConfig.preset("cpu", stage1_steps=1, stage2_steps=1, stage3_steps=1, stage1_batch=4)
        >>> agent = BCVLR(cfg, obs_shape=(3, 12, 12), action_space=gym.spaces.Discrete(3))
        >>> agent.pretrained  # call agent.pretrain(video) before agent.predict(obs)
        False
    """

    def __init__(
        self,
        config: BCVLRConfig,
        *,
        obs_shape: tuple[int, int, int],
        action_space: gym.Space,
        seed: int = 0,
        accelerator: Any = None,
    ) -> None:
        from accelerate import Accelerator

        if not isinstance(config, BCVLRConfig):
            raise TypeError(f"config must be a BCVLRConfig, got {type(config).__name__}")
        if len(obs_shape) != 3 or obs_shape[0] != 3 or min(obs_shape[1:]) < 4:
            raise ValueError(f"obs_shape must be (3, H, W) with H, W >= 4, got {obs_shape}")
        check_int("seed", seed, minimum=0)
        self.config = config
        self.obs_shape = tuple(int(s) for s in obs_shape)
        self.action_space = action_space
        self.n_actions, self.continuous = _space_info(action_space)
        self.seed = seed
        self.accelerator = accelerator if accelerator is not None else Accelerator()
        self.device = self.accelerator.device
        torch.manual_seed(seed)  # initial weights: the same in every process (DDP also broadcasts rank 0's)
        rank = self.accelerator.process_index
        # minibatch indices: one stream shared by every process, which each takes its slice of the global batch
        self.generator = torch.Generator().manual_seed(seed)
        # augmentations, action noise and random actions: one stream per process (process 0 keeps ``seed``)
        self.local_generator = torch.Generator().manual_seed(seed + _RANK_STRIDE * rank)
        self.rng = np.random.default_rng(seed if rank == 0 else [seed, rank])
        hw = (self.obs_shape[1], self.obs_shape[2])
        c = config
        self.learned = c.feature_space == "learned"
        self.encoder = ImpalaEncoder(3, c.encoder_channels, n_blocks=c.encoder_blocks)
        self.objective: nn.Module | None = None
        if self.learned:
            self.objective = (
                CurlObjective(
                    self.encoder,
                    self.obs_shape,  # type: ignore[arg-type]
                    dim=c.curl_dim,
                    tau=c.ema_tau,
                    recon_weight=c.curl_recon_weight,
                    pad=c.shift_pad,
                )
                if c.objective == "curl"
                else ProtoTemporalObjective(
                    self.encoder,
                    self.obs_shape,  # type: ignore[arg-type]
                    dim=c.proto_dim,
                    n_protos=c.n_protos,
                    temperature=c.proto_temperature,
                    sinkhorn_iters=c.sinkhorn_iters,
                    tau=c.ema_tau,
                    pad=c.shift_pad,
                )
            )
        feat_channels = c.encoder_channels if self.learned else 3
        vq = VQEMA(
            n_codebooks=c.n_codebooks,
            n_latents=c.n_latents,
            codebook_size=c.codebook_size,
            dim=c.code_dim,
            beta=c.vq_beta,
            decay=c.vq_decay,
            dead_code_threshold=c.dead_code_threshold,
        )
        self.lam = LatentActionModel(
            feat_channels,
            hw,
            n_context=c.n_context,
            idm_channels=c.idm_channels,
            idm_hidden=c.idm_hidden,
            fdm_base=c.fdm_base,
            vq=vq,
        )
        policy_encoder = (
            self.encoder if self.learned else ImpalaEncoder(3, c.encoder_channels, n_blocks=c.encoder_blocks)
        )
        self.policy = LatentPolicy(
            policy_encoder,
            hw,
            latent_dim=c.latent_dim,
            channels=c.policy_channels,
            hidden=c.policy_hidden,
            train_encoder=not self.learned,
        )
        if self.learned:
            self.encoder.requires_grad_(True)  # frozen only after Stage 1
        self.decoder = ActionDecoder(c.latent_dim, self.n_actions, hidden=c.decoder_hidden, continuous=self.continuous)
        for module in self._modules():
            module.to(self.device)
        self._train = self._prepare_models()
        self.logs: dict[str, StageLog] = {}
        self.video: Video | None = None
        self._policy_opt: Any = None
        self._finetune_opt: Any = None
        # the pre-training video's frozen features, keyed on the encoder's tensors and the statistics (_video_features)
        self._video_cache: tuple[tuple[Any, ...], Any, Video, torch.Tensor] | None = None
        self.feature_stats: tuple[torch.Tensor, torch.Tensor] | None = None
        self.pretrained = False

    def _prepare_models(self) -> dict[str, nn.Module]:
        """Pass every trained module through ``accelerator.prepare`` once (DDP under ``accelerate launch``).

        The training losses call these wrappers; everything else (acting, EMA targets, checkpoints) uses the plain
        modules, which share the wrapped ones' parameters. With one process the wrappers are the modules themselves.
        The latent policy is prepared as its head when it sits on the frozen shared encoder.
        """
        names = ["lam", "decoder", "policy"]
        modules: list[nn.Module] = [self.lam, self.decoder, self.policy.head if self.learned else self.policy]
        if self.objective is not None:
            names.append("objective")
            modules.append(self.objective)
        prepared = self.accelerator.prepare(*modules)
        return dict(zip(names, prepared if isinstance(prepared, tuple) else (prepared,)))

    def _modules(self) -> list[nn.Module]:
        mods: list[nn.Module] = [self.encoder, self.lam, self.policy, self.decoder]
        return [*mods, self.objective] if self.objective is not None else mods

    def _log(self, name: str, stage: StageLog) -> None:
        self.logs.setdefault(name, StageLog()).extend(stage)

    # ----------------------------------------------------------------------------------------------- features
    @torch.no_grad()
    def features(self, frames: torch.Tensor) -> torch.Tensor:
        r"""Frozen features of ``(N, 3, H, W)`` uint8 frames: ``(N, C, H, W)`` (scaled pixels in pixel space).

        With ``feature_norm="standardize"`` each channel is standardised with the video's statistics
        :math:`(f - \mu_c) / \sigma_c`, fixed once after Stage 1 (:meth:`pretrain`).
        """
        out = []
        for chunk in frames.split(_CHUNK):
            obs = scale_observations(chunk.to(self.device))
            out.append(self._normalize(self.encoder(obs)) if self.learned else obs)
        return torch.cat(out)

    def _normalize(self, feats: torch.Tensor) -> torch.Tensor:
        if self.feature_stats is None:
            return feats
        mean, std = (t.to(feats.device)[None, :, None, None] for t in self.feature_stats)
        return (feats - mean) / std

    @torch.no_grad()
    def _fit_feature_stats(self, frames: torch.Tensor) -> None:
        """Per-channel mean and standard deviation of the raw frozen features over the video (``feature_norm``)."""
        self.feature_stats = None
        if self.config.feature_norm == "none" or not self.learned:
            return
        feats = self.features(frames)  # raw: no statistics yet
        std = feats.std(dim=(0, 2, 3)).clamp_min(1e-6)  # a channel constant over the video stays unscaled (~0)
        self.feature_stats = (feats.mean(dim=(0, 2, 3)).cpu(), std.cpu())

    def _window_features(self, windows: torch.Tensor) -> torch.Tensor:
        b, n = windows.shape[:2]
        return self.features(windows.flatten(0, 1)).unflatten(0, (b, n))

    def _encoder_key(self) -> tuple[Any, ...]:
        """What the frozen features depend on: each encoder tensor's identity, storage and in-place version.

        Any change of the encoder (an optimiser step, ``load_state_dict``, a move to another device) changes a
        version counter or a storage pointer, so a cache keyed on this is never stale. Pixel features depend on
        nothing.
        """
        if not self.learned:
            return ()
        return tuple((id(t), t.data_ptr(), t._version) for t in (*self.encoder.parameters(), *self.encoder.buffers()))

    def _video_features(self, video: Video) -> torch.Tensor:
        """:meth:`features` of ``video``'s frames, computed once for the pre-training video while the encoder and
        the feature statistics stay as they are (re-cloning, probes); any other video is encoded afresh."""
        cache = self._video_cache
        key = self._encoder_key()
        if cache is not None and cache[2] is video and cache[1] is self.feature_stats and cache[0] == key:
            return cache[3]
        feats = self.features(torch.from_numpy(video.frames))
        if video is self.video:
            self._video_cache = (key, self.feature_stats, video, feats)
        return feats

    def _prepare(self, params: Sequence[Any], lr: float) -> Any:
        return self.accelerator.prepare(torch.optim.Adam(params, lr=lr))

    def _check_video(self, video: Any) -> None:
        if not isinstance(video, Video):
            raise TypeError(f"video must be a Video, got {type(video).__name__}")
        if tuple(video.frames.shape[1:]) != self.obs_shape:
            raise ValueError(f"video frames must be {self.obs_shape}, got {tuple(video.frames.shape[1:])}")

    # ----------------------------------------------------------------------------------------------- pretrain
    def pretrain(
        self, video: Video, *, show_progress: bool = True, callback: Callable[[str, int], None] | None = None
    ) -> dict[str, float]:
        """Stages 1-3 on an action-free video (its ``actions``, if any, are not read).

        Args:
            video: the expert video; its frames must match ``obs_shape``.
            show_progress: progress bars per stage (silent under ``-q``).
            callback: called as ``callback("stage2", step)`` after each Stage-2 update (``step`` from 0) and as
                ``callback("stage3", stage3_steps)`` at the end (diagnostics such as a latent-action probe; it
                must not change the agent).

        Returns:
            Final loss of each stage and the codebook perplexity on the video.

        Raises:
            TypeError / ValueError: if ``video`` is not a :class:`Video` of ``obs_shape`` frames.
        """
        self._check_video(video)
        c = self.config
        self.video = video
        frames = torch.from_numpy(video.frames)
        windows = torch.from_numpy(video.windows(c.n_context))
        summary: dict[str, float] = {}
        if self.learned and self.objective is not None and c.stage1_steps > 0:
            obj = self.objective
            train_obj = self._train["objective"]
            params = [p for p in obj.parameters() if p.requires_grad]
            opt = self._prepare(params, c.stage1_lr)
            nxt = windows[:, -2:]  # (t, t+1) pairs for the temporal objective

            def stage1_loss(idx: torch.Tensor) -> torch.Tensor:
                if isinstance(obj, CurlObjective):
                    return train_obj(
                        scale_observations(frames[idx % len(frames)].to(self.device)), self.local_generator
                    )
                pair = nxt[idx % len(nxt)]
                return train_obj(
                    scale_observations(frames[pair[:, 0]].to(self.device)),
                    scale_observations(frames[pair[:, 1]].to(self.device)),
                    self.local_generator,
                )

            def target(step: int) -> None:
                if (step + 1) % c.target_every == 0:
                    obj.update_target()  # type: ignore[operator]

            st = fit(stage1_loss, opt, params, accelerator=self.accelerator, n_steps=c.stage1_steps,
                     n_items=len(frames), batch_size=c.stage1_batch, generator=self.generator, after_step=target,
                     desc="stage 1: features", show_progress=show_progress)  # fmt: skip
            self._log("stage1", st)
            summary["stage1_loss"] = st.losses[-1]
        if self.learned:
            self.encoder.requires_grad_(False)
        self._fit_feature_stats(frames)
        feats = self._video_features(video)  # frozen from here on: Stages 2-3, re-cloning and probes reuse them
        lam_params = list(self.lam.parameters())
        opt = self._prepare(lam_params, c.stage2_lr)
        self.lam.train()

        def stage2_loss(idx: torch.Tensor) -> torch.Tensor:
            return self._train["lam"](feats[windows[idx]]).loss

        def after_stage2(step: int) -> None:
            if callback is not None:
                callback("stage2", step)

        st = fit(stage2_loss, opt, lam_params, accelerator=self.accelerator, n_steps=c.stage2_steps,
                 n_items=len(windows), batch_size=c.stage2_batch, generator=self.generator, grad_clip=c.grad_clip,
                 after_step=after_stage2, desc="stage 2: latent actions", show_progress=show_progress)  # fmt: skip
        self._log("stage2", st)
        summary["stage2_loss"] = st.losses[-1] if st.losses else float("nan")
        summary["perplexity"] = self.codebook_perplexity(video)
        summary["stage3_loss"] = self._clone(c.stage3_steps, "stage3", show_progress=show_progress)
        self.pretrained = True
        if callback is not None:
            callback("stage3", c.stage3_steps)
        return summary

    def _target(self, vq: VQOutput) -> torch.Tensor:
        """The latent the policy regresses and the decoder reads: ``la`` (before VQ, the official code) or ``z_q``."""
        return vq.z if self.config.latent_target == "continuous" else vq.z_q

    @torch.no_grad()
    def _latent_targets(self, feats: torch.Tensor, windows: torch.Tensor) -> torch.Tensor:
        """The IDM's latents (eval mode) of ``(M, n_context)`` frame-index windows into ``(N, C, H, W)`` features."""
        self.lam.eval()
        out = torch.cat([self._target(self.lam.infer(feats[w])) for w in windows.split(_CHUNK)])
        self.lam.train()
        return out

    def _clone(self, n_steps: int, name: str, *, show_progress: bool = False) -> float:
        """Regress the latent policy on the IDM's current latent actions over the video (pre-imitation/re-clone).

        The video's frozen features come from the cache (:meth:`_video_features`); the targets are recomputed on
        every call, because the IDM they come from is fine-tuned between two re-clonings (Alg. 1).
        """
        c = self.config
        assert self.video is not None
        frames = torch.from_numpy(self.video.frames)
        windows = torch.from_numpy(self.video.windows(c.n_context))
        feats = self._video_features(self.video)
        targets = self._latent_targets(feats, windows)
        t_index = windows[:, -2]
        params = [p for p in self.policy.parameters() if p.requires_grad]
        if self._policy_opt is None:
            self._policy_opt = self._prepare(params, c.stage3_lr)

        def clone_loss(idx: torch.Tensor) -> torch.Tensor:
            if self.learned:
                pred = self._train["policy"](feats[t_index[idx]])  # the head on frozen features
            else:
                pred = self._train["policy"](scale_observations(frames[t_index[idx]].to(self.device)))
            return F.mse_loss(pred, targets[idx])

        if n_steps == 0:
            return float("nan")
        st = fit(clone_loss, self._policy_opt, params, accelerator=self.accelerator, n_steps=n_steps,
                 n_items=len(windows), batch_size=c.stage3_batch, generator=self.generator, grad_clip=c.grad_clip,
                 desc="stage 3: latent policy", show_progress=show_progress)  # fmt: skip
        self._log(name, st)
        return st.losses[-1]

    # ----------------------------------------------------------------------------------------------- latents
    @torch.no_grad()
    def latent_actions(self, video: Video) -> np.ndarray:
        """Latent action of every transition window of ``video``: ``(M, latent_dim)`` float32.

        The latent the policy is cloned on (``config.latent_target``: the IDM's output before quantisation by
        default, as in the official code; the VQ code with ``"quantized"``), with the VQ in evaluation mode.

        Raises:
            TypeError / ValueError: if ``video`` is not a :class:`Video` of ``obs_shape`` frames.
        """
        self._check_video(video)
        windows = torch.from_numpy(video.windows(self.config.n_context))
        return self._latent_targets(self._video_features(video), windows).cpu().numpy()

    @torch.no_grad()
    def codebook_perplexity(self, video: Video) -> float:
        r"""Mean over codebooks of :math:`\exp H` of the code usage on ``video`` (collapse diagnostic; max ``K``).

        Raises:
            TypeError / ValueError: if ``video`` is not a :class:`Video` of ``obs_shape`` frames.
        """
        self._check_video(video)
        feats = self._video_features(video)
        windows = torch.from_numpy(video.windows(self.config.n_context))
        self.lam.eval()
        idx = torch.cat([self.lam.infer(feats[w]).indices for w in windows.split(_CHUNK)])
        self.lam.train()
        usage = F.one_hot(idx, self.config.codebook_size).float().mean((0, 1))  # (G, K)
        return float(torch.exp(-(usage * torch.log(usage + 1e-10)).sum(-1)).mean())

    # ----------------------------------------------------------------------------------------------- acting
    @torch.no_grad()
    def act(self, obs: np.ndarray, *, deterministic: bool = False) -> np.ndarray:
        """Actions for ``(B, 3, H, W)`` uint8 observations: sample (or mode of) :math:`D(\\pi(o))`."""
        if self.learned:  # the head on the frozen (and, with feature_norm, standardised) features
            z = self.policy.head(self.features(torch.as_tensor(np.ascontiguousarray(obs))))
        else:
            z = self.policy(scale_observations(obs).to(self.device))
        out = self.decoder(z)
        if self.continuous:
            if deterministic:
                return out.cpu().numpy()
            noise = torch.randn(out.shape, generator=self.local_generator).to(out.device)
            return (out + self.config.action_std * noise).clamp(-1.0, 1.0).cpu().numpy()
        if deterministic:
            return out.argmax(-1).cpu().numpy()
        return torch.multinomial(F.softmax(out, -1).cpu(), 1, generator=self.local_generator).squeeze(-1).numpy()

    def predict(
        self,
        obs: np.ndarray,
        state: Any = None,
        episode_start: np.ndarray | None = None,
        *,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, None]:
        """Stable-baselines3's ``predict``: actions for ``(H, W, 3)`` or ``(B, H, W, 3)`` uint8 observations.

        The policy is memoryless, so ``state`` and ``episode_start`` are accepted and ignored (``state`` comes back
        as ``None``); ``stable_baselines3.common.evaluation.evaluate_policy(agent, env)`` works as with an SB3 model.

        Args:
            obs: uint8 pixels as the env returns them, one ``(H, W, 3)`` or a batch ``(B, H, W, 3)``.
            state, episode_start: SB3's recurrent-policy arguments (unused).
            deterministic: the decoder's mode (argmax / mean) instead of a sample.

        Returns:
            ``(actions, None)``: ``(B,)`` int64 (discrete) or ``(B, A)`` float32 (continuous) actions for a batch,
            one action (``()`` / ``(A,)``) for a single observation.

        Raises:
            ValueError / TypeError: if ``obs`` is not uint8 pixels of the agent's observation shape.
            RuntimeError: if the agent is neither pre-trained nor loaded (its actions would be those of random
                weights).
        """
        arr = np.asarray(obs)
        if arr.dtype != np.uint8:
            raise TypeError(f"obs must be uint8 pixels, got dtype {arr.dtype}")
        single = arr.ndim == 3
        if single:
            arr = arr[None]
        expected = (self.obs_shape[1], self.obs_shape[2], 3)
        if arr.ndim != 4 or arr.shape[1:] != expected or arr.shape[0] == 0:
            raise ValueError(f"obs must be {expected} or (B, *{expected}) with B >= 1, got {np.asarray(obs).shape}")
        if not self.pretrained:
            raise RuntimeError("predict() needs a pre-trained agent: call pretrain(video) or BCVLR.load(path) first")
        actions = self.act(np.ascontiguousarray(arr.transpose(0, 3, 1, 2)), deterministic=deterministic)
        return (actions[0] if single else actions), None

    def _random_actions(self, n: int) -> np.ndarray:
        if self.continuous:
            return self.rng.uniform(-1, 1, size=(n, self.n_actions)).astype(np.float32)
        return self.rng.integers(self.n_actions, size=n)

    # ----------------------------------------------------------------------------------------------- online
    def _replay_cache_fits(self) -> bool:
        """Whether ``buffer_size`` rows of :meth:`_replay_features` fit in ``config.feature_cache_mib``."""
        c = self.config
        feat_channels = c.encoder_channels if self.learned else 3
        row = c.n_context * feat_channels * self.obs_shape[1] * self.obs_shape[2] if c.finetune_idm else c.latent_dim
        return c.buffer_size * row * 4 <= c.feature_cache_mib * 2**20

    @torch.no_grad()
    def _replay_features(self, windows: np.ndarray) -> torch.Tensor:
        """What stays frozen about ``(M, n_context, 3, H, W)`` replay windows during an online run.

        The frozen features ``(M, n_context, C, H, W)`` (the encoder and the statistics are fixed after Stage 1),
        or, when the IDM is not fine-tuned, its latent ``(M, latent_dim)`` in evaluation mode.
        """
        feats = self._window_features(torch.from_numpy(windows))
        if self.config.finetune_idm:
            return feats
        self.lam.eval()
        z = torch.cat([self._target(self.lam.infer(w)) for w in feats.split(_CHUNK)])
        self.lam.train()
        return z

    def _finetune(self, replay: ReplayBuffer) -> StageLog:
        c = self.config
        assert replay.windows is not None and replay.actions is not None
        windows, actions, cached = replay.windows, replay.actions.to(self.device), replay.features
        if c.finetune_idm:
            params = [*self.lam.parameters(), *self.decoder.parameters()]
            if self._finetune_opt is None:
                self._finetune_opt = self.accelerator.prepare(
                    torch.optim.Adam(
                        [
                            {"params": list(self.lam.parameters()), "lr": c.finetune_lr},
                            {"params": list(self.decoder.parameters()), "lr": c.decoder_lr},
                        ]
                    )
                )
        else:
            params = list(self.decoder.parameters())
            if self._finetune_opt is None:
                self._finetune_opt = self._prepare(params, c.decoder_lr)

        def action_loss(pred: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
            if self.continuous:
                return F.mse_loss(pred, actions[idx].float())
            return F.cross_entropy(pred, actions[idx].long())

        def finetune_loss(idx: torch.Tensor) -> torch.Tensor:
            if cached is not None:  # computed once per transition (online); the same values as below
                frozen = cached[idx]
                if not c.finetune_idm:
                    return action_loss(self._train["decoder"](frozen), idx)
            else:
                frozen = self._window_features(windows[idx])
            if c.finetune_idm:
                out = self._train["lam"](frozen)
                return action_loss(self._train["decoder"](self._target(out.vq)), idx) + c.alpha * out.loss
            with torch.no_grad():
                self.lam.eval()
                z = self._target(self.lam.infer(frozen))
                self.lam.train()
            return action_loss(self._train["decoder"](z), idx)

        return fit(finetune_loss, self._finetune_opt, params, accelerator=self.accelerator, n_steps=c.idm_updates,
                   n_items=len(replay), batch_size=c.finetune_batch, generator=self.generator,
                   grad_clip=c.grad_clip)  # fmt: skip

    def online(
        self,
        envs: gym.Env | Sequence[gym.Env] | gym.vector.VectorEnv,
        total_steps: int,
        *,
        show_progress: bool = True,
        callback: Callable[[str, int], None] | None = None,
    ) -> OnlineLog:
        """The reward-free online loop: act, fine-tune IDM and decoder on the replay, re-clone on the video.

        Each iteration takes ``steps_per_iter`` steps in every env (so ``n_envs * steps_per_iter``
        interactions), then ``idm_updates`` fine-tuning updates and ``reclone_steps`` re-cloning updates; it stops
        once ``total_steps`` interactions are spent. Rewards are never read: ``OnlineLog.episode_returns`` is
        filled only from gymnasium's ``RecordEpisodeStatistics`` wrapper, when the user wraps the envs in it.
        What is frozen about a transition (its window's features; the IDM's latent when the IDM is not fine-tuned)
        is computed once, when it enters the replay (``config.feature_cache_mib``), and the video's frozen features
        once per pre-training.

        Under data parallelism every process steps its own envs (reset with seeds offset by the process index) and
        keeps its own replay; the updates are data-parallel (see :func:`~nips25_bcvlr.training.fit`).

        Args:
            envs: one env, a list (``config.n_envs`` is the recommended count) or a ``gymnasium.vector.VectorEnv``;
                observations ``(H, W, 3)`` uint8.
            total_steps: interaction budget (per process), ``>= 1``.
            show_progress: progress bar over iterations.
            callback: called as ``callback("online", iteration)`` after each iteration's updates (diagnostics,
                e.g. a latent-action probe; it must not change the agent).

        Returns:
            The :class:`OnlineLog`.

        Raises:
            RuntimeError: if called before :meth:`pretrain`.
            ValueError: if ``total_steps < 1`` or the envs' spaces do not match the agent.
        """
        if not self.pretrained:
            raise RuntimeError("online() needs a pre-trained agent: call pretrain(video) first")
        check_int("total_steps", total_steps)
        if self.video is None and self.config.reclone and self.config.finetune_idm:
            raise RuntimeError("online() re-clones on the video: call pretrain(video) on this agent first")
        if isinstance(envs, gym.vector.VectorEnv):
            if envs.single_action_space != self.action_space:
                raise ValueError(
                    f"envs must have action_space {self.action_space}, got {envs.single_action_space} per env"
                )
            env_arg: Sequence[gym.Env] | gym.vector.VectorEnv = envs
        else:
            env_list = [envs] if isinstance(envs, gym.Env) else list(envs)
            for env in env_list:
                if env.action_space != self.action_space:
                    raise ValueError(f"envs must have action_space {self.action_space}, got {env.action_space}")
            env_arg = env_list
        c = self.config
        n_envs = envs.num_envs if isinstance(envs, gym.vector.VectorEnv) else len(env_arg)  # type: ignore[arg-type]
        rollout = Rollout(env_arg, n_context=c.n_context, seed=self.seed + self.accelerator.process_index * n_envs)
        replay = ReplayBuffer(c.buffer_size)
        cache = self._replay_cache_fits()
        result = OnlineLog()
        n_iters = -(-total_steps // (n_envs * c.steps_per_iter))
        bar = progress(range(n_iters), total=n_iters, desc="online") if show_progress else None
        iteration = 0
        while result.env_steps < total_steps:
            steps = min(c.steps_per_iter, -(-(total_steps - result.env_steps) // n_envs))
            start = time.perf_counter()

            def act(obs: np.ndarray) -> np.ndarray:
                if result.env_steps < c.random_steps:
                    return self._random_actions(len(obs))
                return self.act(obs)

            batch = rollout.collect(act, steps)
            result.env_steps += len(batch.actions)
            result.collect_seconds += time.perf_counter() - start
            start = time.perf_counter()
            frozen = self._replay_features(batch.windows) if cache and len(batch.actions) else None
            replay.add(batch, features=frozen)
            if len(replay) == 0:
                result.update_seconds += time.perf_counter() - start
                continue
            ft = self._finetune(replay)
            self._log("finetune", ft)
            if c.reclone and c.finetune_idm and c.reclone_steps > 0:
                self._clone(c.reclone_steps, "reclone")
            result.update_seconds += time.perf_counter() - start
            result.updates += len(ft.losses) + (c.reclone_steps if c.reclone and c.finetune_idm else 0)
            result.per_iteration.append({"env_steps": result.env_steps, "finetune_loss": ft.losses[-1]})
            if callback is not None:
                callback("online", iteration)
            iteration += 1
            if bar is not None:
                next(bar, None)
        result.episode_returns = list(rollout.episode_returns)
        return result

    # ----------------------------------------------------------------------------------------------- io
    def state_dict(self) -> dict[str, Any]:
        """Config, shapes and every module's weights (plain tensors and built-in types)."""
        return {
            "config": dataclasses.asdict(self.config),
            "obs_shape": list(self.obs_shape),
            "n_actions": self.n_actions,
            "continuous": self.continuous,
            "modules": {
                "encoder": self.encoder.state_dict(),
                "lam": self.lam.state_dict(),
                "policy": self.policy.state_dict(),
                "decoder": self.decoder.state_dict(),
            },
            "feature_stats": None if self.feature_stats is None else [t.clone() for t in self.feature_stats],
        }

    def save(self, path: str | Path) -> Path:
        """Write :meth:`state_dict` with ``torch.save``; returns the path.

        Under data parallelism every process must call it: all wait for each other, then only the main process
        writes (the weights are identical on every process).
        """
        path = Path(path)
        state = self.state_dict()
        self.accelerator.wait_for_everyone()
        if self.accelerator.is_main_process:
            torch.save(state, path)
        self.accelerator.wait_for_everyone()
        return path

    @classmethod
    def load(cls, path: str | Path, *, accelerator: Any = None) -> BCVLR:
        """Rebuild an agent saved with :meth:`save` (weights only; the video is not stored).

        Raises:
            FileNotFoundError: if ``path`` does not exist.
            ValueError: if ``path`` is not a checkpoint written by :meth:`save`.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"path: no checkpoint at {path}")
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as err:  # torch raises UnpicklingError, RuntimeError or EOFError for a foreign file
            raise ValueError(f"path: {path} is not a checkpoint written by BCVLR.save ({type(err).__name__})") from err
        if not isinstance(state, dict) or not {"config", "obs_shape", "n_actions", "continuous", "modules"} <= set(
            state
        ):
            raise ValueError(f"path: {path} is not a checkpoint written by BCVLR.save (missing keys)")
        cfg: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in state["config"].items()}
        cfg.setdefault("latent_target", "quantized")  # 0.1.0 checkpoints: the policy was cloned on z_q
        n = state["n_actions"]
        space: gym.Space = (
            gym.spaces.Box(-1.0, 1.0, (n,), np.float32) if state["continuous"] else gym.spaces.Discrete(n)
        )
        agent = cls(
            BCVLRConfig(**cfg), obs_shape=tuple(state["obs_shape"]), action_space=space, accelerator=accelerator
        )
        for name in ("encoder", "lam", "policy", "decoder"):
            getattr(agent, name).load_state_dict(state["modules"][name])
        stats = state.get("feature_stats")
        agent.feature_stats = None if stats is None else (stats[0], stats[1])
        agent.pretrained = True
        return agent
