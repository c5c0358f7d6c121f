"""Hyper-parameters of BCV-LR as one frozen, validated config with the paper's presets and a CPU preset."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from nips25_bcvlr._validation import check_choice, check_int, check_real

__all__ = ["PRESETS", "BCVLRConfig"]


@dataclass(frozen=True)
class BCVLRConfig:
    """Hyper-parameters of BCV-LR (all stages and the online loop). Defaults are the paper's Procgen recipe.

    Attributes (grouped by stage; the paper's value in brackets where it states one):
        objective: Stage-1 loss, ``"curl"`` (contrastive + reconstruction, discrete) or ``"proto"`` (prototype
            temporal, continuous).
        feature_space: ``"learned"`` (BCV-LR: IDM/FDM/policy on the frozen pre-trained encoder) or ``"pixels"``
            (the LAPO-style baseline: no Stage 1, IDM and FDM on raw pixels, the policy trains its own encoder).
        encoder_channels [16 / 32], encoder_blocks [2].
        curl_dim, curl_recon_weight [0.1], ema_tau [0.05], target_every [2], shift_pad [1 / 4].
        proto_dim [128], n_protos [512], proto_temperature [0.1], sinkhorn_iters [3].
        stage1_steps [20k], stage1_lr [3e-5 / 1e-4], stage1_batch [512].
        feature_norm: ``"none"`` [paper] or ``"standardize"`` (ours): after Stage 1, the frozen features are
            standardised per channel with the video's mean and standard deviation before the IDM, FDM and policy.
        n_context: single frames per IDM window [3 discrete; continuous: the paper's IDM reads two 3-frame stacks,
            frames t-2 .. t+1, so 4 in the ``dmc`` preset and 3 in ``cpu-continuous``].
        idm_channels [(16, 32, 32)], idm_hidden [256], fdm_base [24].
        n_codebooks [2], n_latents [4], codebook_size [64], code_dim [16], vq_beta [0.05], vq_decay [0.999],
        dead_code_threshold (ours; 0 = off).
        latent_target: what the latent policy regresses and the action decoder reads: ``"continuous"``, the IDM's
            output before quantisation [official code: ``la``], or ``"quantized"``, the VQ code ``z_q``.
        stage2_steps [10k], stage2_lr [3e-4], stage2_batch [128], grad_clip [2].
        policy_channels [(16, 32, 32)], policy_hidden [256], stage3_steps [20k], stage3_lr [2e-4], stage3_batch.
        decoder_hidden [(192, 128, 64)], n_envs [64], steps_per_iter (per env) [64], idm_updates [60],
        finetune_lr [2e-5], decoder_lr (ours), alpha [15], finetune_batch, reclone_steps [500],
        buffer_size [20k], finetune_idm / reclone (the online fine-tuning; off = the paper's ablation),
        random_steps [0 / 1000], action_std [0.5, continuous].
        feature_cache_mib (ours, speed only): the online loop computes what is frozen about a replay transition
            once, when it is added (its window's frozen features; with ``finetune_idm=False`` the IDM's latent, as
            the IDM is frozen too) and keeps it while ``buffer_size`` of them fit in this many MiB; beyond that, or
            with ``0``, every minibatch is re-encoded. The updates are the same either way (tested to 1e-5).
    """

    objective: str = "curl"
    feature_space: str = "learned"
    encoder_channels: int = 16
    encoder_blocks: int = 2
    curl_dim: int = 64
    curl_recon_weight: float = 0.1
    ema_tau: float = 0.05
    target_every: int = 2
    shift_pad: int = 1
    proto_dim: int = 128
    n_protos: int = 512
    proto_temperature: float = 0.1
    sinkhorn_iters: int = 3
    stage1_steps: int = 20_000
    stage1_lr: float = 3e-5
    stage1_batch: int = 512
    feature_norm: str = "none"
    n_context: int = 3
    idm_channels: tuple[int, ...] = (16, 32, 32)
    idm_hidden: int = 256
    fdm_base: int = 24
    n_codebooks: int = 2
    n_latents: int = 4
    codebook_size: int = 64
    code_dim: int = 16
    vq_beta: float = 0.05
    vq_decay: float = 0.999
    dead_code_threshold: float = 0.0
    latent_target: str = "continuous"
    stage2_steps: int = 10_000
    stage2_lr: float = 3e-4
    stage2_batch: int = 128
    grad_clip: float = 2.0
    policy_channels: tuple[int, ...] = (16, 32, 32)
    policy_hidden: int = 256
    stage3_steps: int = 20_000
    stage3_lr: float = 2e-4
    stage3_batch: int = 128
    decoder_hidden: tuple[int, ...] = (192, 128, 64)
    n_envs: int = 64
    steps_per_iter: int = 64
    idm_updates: int = 60
    finetune_lr: float = 2e-5
    decoder_lr: float = 1e-3
    alpha: float = 15.0
    finetune_batch: int = 128
    reclone_steps: int = 500
    buffer_size: int = 20_000
    finetune_idm: bool = True
    reclone: bool = True
    random_steps: int = 0
    action_std: float = 0.5
    feature_cache_mib: float = 1024.0

    def __post_init__(self) -> None:
        check_choice("objective", self.objective, ("curl", "proto"))
        check_choice("feature_space", self.feature_space, ("learned", "pixels"))
        check_choice("feature_norm", self.feature_norm, ("none", "standardize"))
        check_choice("latent_target", self.latent_target, ("continuous", "quantized"))
        for name in ("encoder_channels", "curl_dim", "target_every", "proto_dim", "n_protos", "sinkhorn_iters"):
            check_int(name, getattr(self, name))
        for name in ("idm_hidden", "fdm_base", "n_codebooks", "n_latents", "codebook_size", "code_dim"):
            check_int(name, getattr(self, name))
        for name in ("stage1_batch", "stage2_batch", "policy_hidden", "stage3_batch", "n_envs", "steps_per_iter"):
            check_int(name, getattr(self, name))
        for name in ("finetune_batch", "buffer_size"):
            check_int(name, getattr(self, name))
        for name in ("encoder_blocks", "shift_pad", "stage1_steps", "stage2_steps", "stage3_steps"):
            check_int(name, getattr(self, name), minimum=0)
        check_int("idm_updates", self.idm_updates)  # the decoder is trained only by these updates
        check_int("reclone_steps", self.reclone_steps, minimum=0)
        check_int("random_steps", self.random_steps, minimum=0)
        check_int("n_context", self.n_context, minimum=2)
        for name in ("stage1_lr", "stage2_lr", "stage3_lr", "finetune_lr", "decoder_lr", "grad_clip"):
            check_real(name, getattr(self, name), low=0.0, low_open=True)
        for name in ("curl_recon_weight", "vq_beta", "alpha", "dead_code_threshold", "feature_cache_mib"):
            check_real(name, getattr(self, name), low=0.0)
        check_real("ema_tau", self.ema_tau, low=0.0, high=1.0, low_open=True)
        check_real("vq_decay", self.vq_decay, low=0.0, high=1.0, low_open=True, high_open=True)
        check_real("proto_temperature", self.proto_temperature, low=0.0, low_open=True)
        check_real("action_std", self.action_std, low=0.0, low_open=True)
        for name in ("idm_channels", "policy_channels", "decoder_hidden"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not value or not all(isinstance(v, int) and v >= 1 for v in value):
                raise ValueError(f"{name} must be a non-empty tuple of positive ints, got {value!r}")
        for name in ("finetune_idm", "reclone"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")

    @property
    def latent_dim(self) -> int:
        """Size of a latent action: ``n_latents * n_codebooks * code_dim`` (paper: 4 * 2 * 16 = 128)."""
        return self.n_latents * self.n_codebooks * self.code_dim

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> BCVLRConfig:
        """One of :data:`PRESETS` (``"procgen"``, ``"dmc"``, ``"cpu"``, ``"cpu-continuous"``) with overrides.

        Raises:
            ValueError: if ``name`` is unknown or an override is not a field.
        """
        if name not in PRESETS:
            raise ValueError(f"name must be one of {sorted(PRESETS)}, got {name!r}")
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - fields)
        if unknown:
            raise ValueError(f"overrides has unknown fields {unknown}")
        return dataclasses.replace(PRESETS[name], **overrides)


PRESETS: dict[str, BCVLRConfig] = {
    "procgen": BCVLRConfig(),
    "dmc": BCVLRConfig(
        objective="proto",
        encoder_channels=32,
        shift_pad=4,
        stage1_steps=50_000,
        stage1_lr=1e-4,
        ema_tau=0.05,
        target_every=1,
        n_context=4,
        stage2_steps=50_000,
        stage3_steps=20_000,
        n_envs=1,
        steps_per_iter=1000,
        idm_updates=100,
        finetune_lr=1e-3,
        alpha=1e-5,
        reclone_steps=1000,
        buffer_size=100_000,
        random_steps=1000,
    ),
    # CPU scale (ours): narrower nets, a few hundred updates per stage, 8 envs; see README "Choices".
    "cpu": BCVLRConfig(
        encoder_channels=8,
        curl_dim=32,
        stage1_steps=100,
        stage1_lr=1e-3,
        stage1_batch=32,
        idm_channels=(16, 32),
        idm_hidden=128,
        fdm_base=16,
        vq_decay=0.99,
        stage2_steps=250,
        stage2_lr=1e-3,
        stage2_batch=32,
        policy_channels=(16, 32),
        policy_hidden=128,
        stage3_steps=200,
        stage3_lr=1e-3,
        stage3_batch=32,
        n_envs=8,
        steps_per_iter=32,
        idm_updates=20,
        finetune_lr=3e-4,
        alpha=1.0,
        finetune_batch=32,
        reclone_steps=40,
        buffer_size=5_000,
    ),
}
PRESETS["cpu-continuous"] = dataclasses.replace(
    PRESETS["cpu"],
    objective="proto",
    shift_pad=2,
    proto_dim=64,
    n_protos=64,
    target_every=1,
    n_context=3,
    alpha=1e-3,
    random_steps=256,
    # 0.2.0 (issue 35, fixed before the run): standardised features against the Stage-2 collapse, and the paper's
    # ratio of online updates to interactions (DMC: 100 IDM updates and 1,000 re-cloning updates per 1,000 steps)
    feature_norm="standardize",
    idm_updates=26,
    reclone_steps=256,
)
