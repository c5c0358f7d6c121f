r"""TreeGen: a leaf-conditioned discrete Bayesian flow network over the (A, B) parametrisation of hierarchies.

Each of the :math:`2N-2` categorical rows (N leaf-to-parent rows with :math:`N-1` classes, :math:`N-2`
parent-to-parent rows with :math:`N-2-i` classes) carries a belief :math:`\theta` that a discrete BFN refines from
uniform to a sample. The network is permutation-equivariant over the leaves: leaf tokens (normalised
four-momenta) and internal-node slot tokens attend to each other with an attention bias built from edge features
(pairwise invariant masses and split likelihoods of leaf pairs, and the current :math:`\theta` of every
leaf-slot and slot-slot edge); row logits are bilinear in the final leaf and slot states.

Conditioning enters only through the leaves: ``p(tree | leaves)`` is learned from Ginkgo (leaves, truth tree) pairs,
which are joint samples, so the target is the same posterior the trellis computes exactly.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from nips25_shared import get_logger, progress
from nips25_treegen.decoding import DECODERS, EXACT_MAX_LEAVES, PHYSICAL_DECODERS, VALID_MAX_LEAVES, decode_rows
from nips25_treegen.flow import DiscreteBayesianFlow, EntropySchedule, bayesian_update, flow_sample, sender_sample
from nips25_treegen.ginkgo import Jet, _check_leaves, invariant_mass2, split_log_lik
from nips25_treegen.hierarchy import decode
from nips25_treegen.labelling import canonical_rows

__all__ = ["TrainConfig", "TreeGen", "TreeGenConfig", "jet_features", "row_layout", "train"]

_LOG = get_logger(__name__)
_N_EDGE = 12
_N_LEAF = 6


@dataclass(frozen=True)
class TreeGenConfig:
    """Hyper-parameters of the TreeGen network and its flow.

    Attributes:
        n_max: largest leaf count the model handles (its schedule is tabulated up to K = n_max - 1).
        d_model: token width.
        n_heads: attention heads (divides ``d_model``).
        n_layers: transformer blocks.
        schedule: ``"consistent"`` (TreeGen's entropy-matched schedule) or ``"quadratic"`` (shared beta1 t^2).
        h_min: target normalised entropy at t = 1 of the consistent schedule.
        beta1: beta(1) of the quadratic schedule.
        loss_weighting: ``"bfn"`` (the continuous-time L-infinity loss) or ``"cross_entropy"`` (unweighted
            -log p_O(x); a labelled variant).
        t_cut, lam, lam_root: Ginkgo parameters used for the pairwise split-likelihood features.
    """

    n_max: int = 12
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 3
    schedule: str = "consistent"
    h_min: float = 0.02
    beta1: float = 3.0
    loss_weighting: str = "bfn"
    t_cut: float = 16.0
    lam: float = 1.5
    lam_root: float = 1.5

    def __post_init__(self) -> None:
        if not isinstance(self.n_max, int) or not 3 <= self.n_max <= 33:
            raise ValueError(f"n_max must be an int in [3, 33], got {self.n_max!r}")
        for name in ("d_model", "n_heads", "n_layers"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.loss_weighting not in ("bfn", "cross_entropy"):
            raise ValueError(f"loss_weighting must be 'bfn' or 'cross_entropy', got {self.loss_weighting!r}")
        for name in ("t_cut", "lam", "lam_root", "beta1"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and > 0, got {value!r}")
        if self.schedule not in ("consistent", "quadratic"):
            raise ValueError(f"schedule must be 'consistent' or 'quadratic', got {self.schedule!r}")
        if not 0.0 < self.h_min < 1.0:
            raise ValueError(f"h_min must be in (0, 1), got {self.h_min!r}")

    def flow(self) -> DiscreteBayesianFlow:
        """The discrete BFN accuracy schedule of this model."""
        if self.schedule == "quadratic":
            return DiscreteBayesianFlow(schedule="quadratic", beta1=self.beta1)
        return DiscreteBayesianFlow(entropy=EntropySchedule(k_max=max(self.n_max - 1, 2), h_min=self.h_min))


def row_layout(n_leaves: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mask ``(2N-2, N-1)`` of valid classes per row and class counts ``(2N-2,)``: N A-rows, then N-2 B-rows."""
    if not isinstance(n_leaves, (int, np.integer)) or n_leaves < 3:
        raise ValueError(f"n_leaves must be an int >= 3, got {n_leaves!r}")
    n = int(n_leaves)
    mask = torch.ones(2 * n - 2, n - 1, dtype=torch.bool)
    cols = torch.arange(n - 1)
    for i in range(n - 2):
        mask[n + i] = cols > i
    return mask, mask.sum(-1)


def jet_features(leaves: Any, *, t_cut: float = 16.0, lam: float = 1.5) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Leaf features ``(B, N, 6)`` and leaf-pair features ``(B, N, N, 3)`` (float32).

    Leaf: :math:`[E, p_x, p_y, p_z]/E_{jet}`, :math:`\log(E/E_{jet})`, :math:`t/t_{cut}`. Pair:
    :math:`\log(1 + m_{ij}^2/t_{cut})`, the split likelihood :math:`\psi(i, j)/10` (clipped at -3) and whether it
    is finite. All are invariant to the order of the leaves (equivariant features).

    Args:
        leaves: ``(B, N, 4)`` or ``(N, 4)`` four-momenta.
        t_cut, lam: Ginkgo parameters for :math:`\psi`.

    Raises:
        ValueError: for a last axis other than 4, non-finite values, or non-positive jet energy.
    """
    arr = np.asarray(leaves, dtype=np.float64)
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[-1] != 4 or arr.shape[1] < 1:
        raise ValueError(f"leaves must have shape (B, N, 4) or (N, 4), got {np.shape(leaves)}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("leaves must be finite (no NaN/inf)")
    e_jet = arr[..., 0].sum(-1)
    if np.any(e_jet <= 0) or np.any(arr[..., 0] <= 0):
        raise ValueError("leaves must have positive energies")
    rel = arr / e_jet[:, None, None]
    leaf = np.concatenate([rel, np.log(rel[..., :1]), (invariant_mass2(arr) / t_cut)[..., None]], axis=-1)
    pi, pj = arr[:, :, None, :], arr[:, None, :, :]
    m2 = invariant_mass2(pi + pj)
    psi = split_log_lik(np.broadcast_to(pi, (*m2.shape, 4)), np.broadcast_to(pj, (*m2.shape, 4)), t_cut=t_cut, lam=lam)
    n = arr.shape[1]
    eye = np.eye(n, dtype=bool)[None]
    finite = np.isfinite(psi) & ~eye
    pair = np.stack(
        [
            np.where(eye, 0.0, np.log1p(np.maximum(m2, 0.0) / t_cut)),
            np.where(finite, np.maximum(psi / 10, -3), -3),
            finite,
        ],
        axis=-1,
    )
    return torch.as_tensor(leaf, dtype=torch.float32), torch.as_tensor(pair, dtype=torch.float32)


class _Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, length, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, length, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        x = x + self.out(att.transpose(1, 2).reshape(b, length, d))
        return x + self.ff(self.norm2(x))


class TreeGen(nn.Module):
    r"""The TreeGen network :math:`p_O(\cdot \mid \theta, t, \text{leaves})` with its BFN loss and sampler.

    Args:
        config: :class:`TreeGenConfig`.

    References:
        Kollovieh, Fleischmann, Guerranti, Charpentier, Günnemann, "TreeGen: A Bayesian Generative Model for
        Hierarchies", NeurIPS 2025 (OpenReview d2EouMhAAq); Graves et al., "Bayesian Flow Networks",
        arXiv:2308.07037 (discrete BFN, Alg. 8-9).

    Example:
        >>> from nips25_treegen.ginkgo import simulate
        >>> jets = simulate(4, n_leaves=(5, 5), seed=0)
        >>> model = TreeGen(TreeGenConfig(n_max=6, d_model=16, n_layers=1))
        >>> leaves = np.stack([j.leaves for j in jets]); parents = np.stack([j.parents for j in jets])
        >>> bool(torch.isfinite(model.loss(leaves, parents)))
        True
        >>> model.sample(jets[0].leaves, n_samples=3, n_steps=4).shape
        (3, 9)
    """

    def __init__(self, config: TreeGenConfig | None = None) -> None:
        super().__init__()
        self.config = config or TreeGenConfig()
        cfg = self.config
        d = cfg.d_model
        self.flow = cfg.flow()
        self.leaf_in = nn.Linear(_N_LEAF, d)
        self.slot_in = nn.Linear(4 + _N_LEAF + 1, d)
        self.rank_embed = nn.Embedding(cfg.n_max, d)
        self.time_in = nn.Sequential(nn.Linear(16, d), nn.GELU(), nn.Linear(d, d))
        self.edge = nn.Sequential(nn.Linear(_N_EDGE, 32), nn.GELU(), nn.Linear(32, cfg.n_heads * cfg.n_layers))
        self.blocks = nn.ModuleList(_Block(d, cfg.n_heads) for _ in range(cfg.n_layers))
        self.norm = nn.LayerNorm(d)
        self.q_a, self.k_a, self.q_b, self.k_b = (nn.Linear(d, d) for _ in range(4))
        self.theta_skip = nn.Parameter(torch.tensor(1.0))

    def forward(
        self, leaf_feat: torch.Tensor, pair_feat: torch.Tensor, theta: torch.Tensor, t: torch.Tensor
    ) -> torch.Tensor:
        """Masked row logits ``(B, 2N-2, N-1)`` from features, beliefs ``theta`` (same shape) and ``t`` ``(B,)``."""
        b, n, _ = leaf_feat.shape
        mask, _ = row_layout(n)
        mask = mask.to(theta.device)
        theta_a, theta_b = theta[:, :n], theta[:, n:]  # (B, N, N-1), (B, N-2, N-1)
        slots = n - 1
        tb_full = torch.zeros(b, slots, slots, device=theta.device, dtype=theta.dtype)
        tb_full[:, : n - 2] = theta_b
        length = n + slots
        edge = torch.zeros(b, length, length, _N_EDGE, device=theta.device, dtype=theta.dtype)
        edge[:, :n, :n, 0:3] = pair_feat
        edge[:, :n, n:, 3] = theta_a
        edge[:, n:, :n, 4] = theta_a.transpose(1, 2)
        edge[:, n:, n:, 5] = tb_full
        edge[:, n:, n:, 6] = tb_full.transpose(1, 2)
        edge[:, :n, :n, 7] = 1.0
        edge[:, :n, n:, 8] = 1.0
        edge[:, n:, :n, 9] = 1.0
        edge[:, n:, n:, 10] = 1.0
        edge[:, torch.arange(length), torch.arange(length), 11] = 1.0
        bias = self.edge(edge).permute(0, 3, 1, 2)  # (B, H * layers, L, L)
        heads = self.config.n_heads
        pos = torch.arange(slots, device=theta.device, dtype=theta.dtype)
        denom = max(slots - 1, 1)
        exp_children = theta_a.sum(1) + tb_full.sum(1)  # (B, slots)
        exp_momentum = torch.einsum("bij,bif->bjf", theta_a, leaf_feat)  # leaf children's summed features
        slot_feat = torch.cat(
            [
                (pos / denom).expand(b, slots)[..., None],
                ((slots - 1 - pos) / denom).expand(b, slots)[..., None],
                exp_children[..., None],
                torch.full((b, slots, 1), 1.0 / slots, dtype=theta.dtype, device=theta.device),
                exp_momentum,
                theta_a.sum(1)[..., None] / n,
            ],
            dim=-1,
        )
        rank = torch.clamp(slots - 1 - torch.arange(slots, device=theta.device), max=self.config.n_max - 1)
        freqs = torch.exp(torch.linspace(0.0, math.log(1000.0), 8, device=theta.device))
        t_emb = self.time_in(torch.cat([torch.sin(t[:, None] * freqs), torch.cos(t[:, None] * freqs)], -1))
        x = torch.cat([self.leaf_in(leaf_feat), self.slot_in(slot_feat) + self.rank_embed(rank)], dim=1)
        x = x + t_emb[:, None]
        for layer, block in enumerate(self.blocks):
            x = block(x, bias[:, layer * heads : (layer + 1) * heads])
        x = self.norm(x)
        leaves_h, slots_h = x[:, :n], x[:, n:]
        scale = 1.0 / math.sqrt(self.config.d_model)
        logit_a = self.q_a(leaves_h) @ self.k_a(slots_h).transpose(1, 2) * scale
        logit_b = (self.q_b(slots_h) @ self.k_b(slots_h).transpose(1, 2) * scale)[:, : n - 2]
        logits = torch.cat([logit_a, logit_b], dim=1) + self.theta_skip * torch.log(theta.clamp_min(1e-6))
        return logits.masked_fill(~mask, -math.inf)

    def _features(self, leaves: Any) -> tuple[torch.Tensor, torch.Tensor]:
        arr = np.asarray(leaves, dtype=np.float64)
        if arr.ndim != 3 or arr.shape[-1] != 4:
            raise ValueError(f"leaves must have shape (B, N, 4), got {arr.shape}")
        if not 3 <= arr.shape[1] <= self.config.n_max:
            raise ValueError(f"leaves must hold N in [3, n_max={self.config.n_max}] particles, got {arr.shape[1]}")
        dev = next(self.parameters()).device
        lf, pf = jet_features(arr, t_cut=self.config.t_cut, lam=self.config.lam)
        return lf.to(dev), pf.to(dev)

    def loss(
        self, leaves: Any, parents: Any, *, t: torch.Tensor | None = None, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        r"""Mean over the batch of the summed per-row BFN loss (:math:`L^\infty` or cross-entropy, see config).

        Args:
            leaves: ``(B, N, 4)`` leaf four-momenta (one N per batch).
            parents: ``(B, 2N-1)`` truth trees (binary; any internal order: the targets are their canonical,
                mass-sorted tables, :func:`nips25_treegen.labelling.canonical_rows`, the labelling the physical
                decoders draw in).
            t: optional ``(B,)`` times in [0, 1]; uniform draws by default.
            generator: torch generator for the draws.

        Returns:
            Scalar loss tensor.

        Raises:
            ValueError: for mismatched shapes or trees that are not binary / not in node order.
        """
        inputs, x, t = self.loss_inputs(leaves, parents, t=t, generator=generator)
        return self.loss_from_logits(self(*inputs), x, t)

    def loss_inputs(
        self, leaves: Any, parents: Any, *, t: torch.Tensor | None = None, generator: torch.Generator | None = None
    ) -> tuple[tuple[torch.Tensor, ...], torch.Tensor, torch.Tensor]:
        """Network inputs ``(leaf_feat, pair_feat, theta, t)`` drawn from the Bayesian flow, the targets and ``t``."""
        leaf_feat, pair_feat = self._features(leaves)
        b, n = leaf_feat.shape[:2]
        par = np.asarray(parents)
        if par.shape != (b, 2 * n - 1):
            raise ValueError(f"parents must have shape (B, 2N-1) = ({b}, {2 * n - 1}), got {par.shape}")
        leaf_arr = np.asarray(leaves, dtype=np.float64)
        x = torch.as_tensor(np.stack([canonical_rows(lv, p) for lv, p in zip(leaf_arr, par)]), device=leaf_feat.device)
        mask, k = row_layout(n)
        if t is None:
            t = torch.rand(b, generator=generator)
        if t.shape != (b,) or torch.any((t < 0) | (t > 1)):
            raise ValueError(f"t must have shape ({b},) with values in [0, 1]")
        beta = torch.as_tensor(self.flow.beta(k.numpy()[None], t.cpu().numpy()[:, None]), dtype=torch.float32)
        theta = flow_sample(x.cpu(), beta, mask.expand(b, -1, -1), generator=generator).to(leaf_feat.device)
        t = t.to(leaf_feat.device)
        return (leaf_feat, pair_feat, theta, t), x, t

    def loss_from_logits(
        self, logits: torch.Tensor, x: torch.Tensor, t: torch.Tensor, *, reduction: str = "mean"
    ) -> torch.Tensor:
        """Summed per-row loss given the network's masked logits ``(B, 2N-2, N-1)``: batch mean or ``(B,)``.

        Args:
            logits: ``(B, 2N-2, N-1)`` masked row logits.
            x: ``(B, 2N-2)`` int64 target slots.
            t: ``(B,)`` flow times.
            reduction: ``"mean"`` (scalar) or ``"none"`` (one loss per tree, ``(B,)``).

        Raises:
            ValueError: for an unknown ``reduction``.
        """
        if reduction not in ("mean", "none"):
            raise ValueError(f"reduction must be 'mean' or 'none', got {reduction!r}")
        mask, k = row_layout(logits.shape[1] // 2 + 1)
        mask, k = mask.to(logits.device), k.to(logits.device)
        if self.config.loss_weighting == "cross_entropy":
            logp = torch.log_softmax(logits, -1).gather(-1, x[..., None])[..., 0]
            per_tree = -(logp * (k >= 2)).sum(-1)
        else:
            per_tree = self.flow.loss(x, torch.softmax(logits, -1), mask, t).sum(-1)
        return per_tree.mean() if reduction == "mean" else per_tree

    @torch.no_grad()
    def sample(
        self,
        leaves: Any,
        *,
        n_samples: int = 1,
        n_steps: int = 100,
        seed: int = 0,
        batch_jets: int | None = None,
        decoder: str = "auto",
        constrain_steps: bool = False,
        particles: int = 64,
    ) -> np.ndarray:
        r"""Sample trees with the discrete BFN sampler (Graves et al., Alg. 9) over the (A, B) rows.

        For :math:`i = 1..n`: :math:`k \sim p_O(\theta, (i-1)/n)`, :math:`\alpha_i = \beta_K(i/n) - \beta_K((i-1)/n)`,
        :math:`y \sim \mathcal N(\alpha_i(K e_k - 1), \alpha_i K I)`, Bayesian update; finally draw from
        :math:`p_O(\theta, 1)` and decode. The step draws :math:`k` are per-row draws from :math:`p_O` as in Alg. 9
        (the flow then depends on :math:`p_O`'s per-row marginals only, what the network is trained to match). The
        final tree is decoded by ``decoder`` (:mod:`nips25_treegen.decoding`). The default draws it from
        :math:`p_O(\theta, 1)` restricted to the physically valid trees in the canonical (mass-sorted) labelling
        that training uses, :math:`q(T) \propto \prod_r p_{O,r}(x_r(T))\,\mathbb 1[T \text{ valid}]`, so every
        sample is a binary tree with a finite Ginkgo likelihood: exactly (``"valid"``) up to ``VALID_MAX_LEAVES``
        leaves, by importance-resampled canonical merges (``"merge"``) above. ``"exact"`` / ``"assignment"``
        restrict to binary tables in any labelling (the 0.1 decoders, no physics); ``"independent"`` draws every
        row alone (samples may not be trees, check with :func:`nips25_treegen.hierarchy.is_binary_tree`).
        ``constrain_steps=True`` also draws every step's :math:`k` from the restricted product (a labelled variant:
        exact Bayes when :math:`p_O = \theta`, but it distorts the per-row marginals of a trained network).

        Args:
            leaves: ``(N, 4)`` one jet, or ``(J, N, 4)`` jets of one N.
            n_samples: trees per jet (>= 1).
            n_steps: sampler steps (>= 1).
            seed: int >= 0, seed of the sampler's torch generator (and numpy generator of the constrained decoders).
            batch_jets: jets per forward pass (default: all).
            decoder: ``"auto"`` (``"valid"`` for N <= ``VALID_MAX_LEAVES``, else ``"merge"``), ``"valid"``,
                ``"merge"``, ``"exact"`` (binary, any labelling), ``"assignment"`` (perturb-and-MAP of the same) or
                ``"independent"``.
            constrain_steps: also decode every step's draw with ``decoder`` (default: only the final tree).
            particles: proposals per draw of the ``"merge"`` decoder (>= 1).

        Returns:
            ``(n_samples, 2N-1)`` parents arrays for one jet, ``(J, n_samples, 2N-1)`` for several.

        Raises:
            ValueError: for bad leaves or out-of-range arguments.
        """
        arr = np.asarray(leaves, dtype=np.float64)
        single = arr.ndim == 2
        if single:
            _check_leaves(arr, min_leaves=3)
            arr = arr[None]
        if not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
            raise ValueError(f"n_samples must be an int >= 1, got {n_samples!r}")
        if not isinstance(n_steps, (int, np.integer)) or n_steps < 1:
            raise ValueError(f"n_steps must be an int >= 1, got {n_steps!r}")
        if batch_jets is not None and (not isinstance(batch_jets, (int, np.integer)) or batch_jets < 1):
            raise ValueError(f"batch_jets must be None or an int >= 1, got {batch_jets!r}")
        if decoder not in ("auto", *DECODERS):
            raise ValueError(f"decoder must be 'auto' or one of {DECODERS}, got {decoder!r}")
        if not isinstance(constrain_steps, (bool, np.bool_)):
            raise TypeError(f"constrain_steps must be a bool, got {constrain_steps!r}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be an int >= 0, got {seed!r}")
        leaf_feat, pair_feat = self._features(arr)
        j, n = leaf_feat.shape[:2]
        if decoder == "auto":
            decoder = "valid" if n <= VALID_MAX_LEAVES else "merge"
        if decoder == "exact" and n > EXACT_MAX_LEAVES:
            raise ValueError(
                f"decoder='exact' needs N <= EXACT_MAX_LEAVES={EXACT_MAX_LEAVES}, got N={n}; use 'auto' or 'assignment'"
            )
        if decoder == "valid" and n > VALID_MAX_LEAVES:
            raise ValueError(
                f"decoder='valid' needs N <= VALID_MAX_LEAVES={VALID_MAX_LEAVES}, got N={n}; use 'auto' or 'merge'"
            )
        if isinstance(particles, bool) or not isinstance(particles, (int, np.integer)) or particles < 1:
            raise ValueError(f"particles must be an int >= 1, got {particles!r}")
        gen = torch.Generator().manual_seed(int(seed))
        rng = np.random.default_rng(int(seed))
        chunk = j if batch_jets is None else int(batch_jets)
        out = []
        for start in range(0, j, chunk):
            lf = leaf_feat[start : start + chunk].repeat_interleave(n_samples, 0)
            pf = pair_feat[start : start + chunk].repeat_interleave(n_samples, 0)
            jet_leaves = arr[start : start + chunk]
            final = functools.partial(
                self._draw, decoder=decoder, gen=gen, rng=rng, leaves=jet_leaves, per_jet=n_samples, particles=particles
            )
            step = final if constrain_steps else functools.partial(self._draw, decoder="independent", gen=gen, rng=rng)
            rows = self._sample_rows(lf, pf, n_steps, gen, step, final)
            out.append(rows.reshape(-1, n_samples, 2 * n - 1))
        res = np.concatenate(out)
        return res[0] if single else res

    def _draw(
        self,
        logits: torch.Tensor,
        decoder: str,
        gen: torch.Generator,
        rng: np.random.Generator,
        leaves: np.ndarray | None = None,
        per_jet: int = 1,
        particles: int = 64,
    ) -> torch.Tensor:
        if decoder == "independent":
            return _gumbel_argmax(logits, gen)
        arr = logits.detach().cpu().double().numpy()
        if decoder not in PHYSICAL_DECODERS:
            return torch.as_tensor(decode_rows(arr, decoder=decoder, seed=rng), device=logits.device)
        assert leaves is not None
        rows = [
            decode_rows(
                arr[j * per_jet : (j + 1) * per_jet],
                decoder=decoder,
                seed=rng,
                leaves=leaves[j],
                t_cut=self.config.t_cut,
                particles=particles,
            )
            for j in range(leaves.shape[0])
        ]
        return torch.as_tensor(np.concatenate(rows), device=logits.device)

    def _sample_rows(
        self, lf: torch.Tensor, pf: torch.Tensor, n_steps: int, gen: torch.Generator, step_fn: Any, final_fn: Any
    ) -> np.ndarray:
        b, n = lf.shape[:2]
        mask, k = row_layout(n)
        mask_b = mask.expand(b, -1, -1).to(lf.device)
        theta = mask_b.float() / mask_b.sum(-1, keepdim=True)
        k_np = k.numpy()
        for i in range(1, n_steps + 1):
            t0, t1 = (i - 1) / n_steps, i / n_steps
            logits = self(lf, pf, theta, torch.full((b,), t0, device=lf.device))
            draw = step_fn(logits)
            alpha = torch.as_tensor(self.flow.beta(k_np, t1) - self.flow.beta(k_np, t0), dtype=torch.float32)
            y = sender_sample(draw.cpu(), alpha.expand(b, -1).contiguous(), mask_b.cpu(), generator=gen)
            theta = bayesian_update(theta, y.to(lf.device), mask_b)
        logits = self(lf, pf, theta, torch.ones(b, device=lf.device))
        rows = final_fn(logits).cpu().numpy()
        return np.stack([decode(r[:n], r[n:]) for r in rows])


def _gumbel_argmax(logits: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    u = torch.rand(logits.shape, generator=gen).to(logits.device).clamp(1e-12, 1 - 1e-12)
    return torch.argmax(logits - torch.log(-torch.log(u)), dim=-1)


@dataclass(frozen=True)
class TrainConfig:
    """Training loop settings (Adam under ``accelerate``).

    Attributes:
        steps: optimisation steps.
        batch_size: jets per step (one leaf count per batch).
        lr: Adam learning rate (cosine-decayed to 10%).
        weight_decay: AdamW weight decay.
        max_grad_norm: gradient clipping.
        seed: seed of the batch order and flow draws.
    """

    steps: int = 1500
    batch_size: int = 64
    lr: float = 2e-3
    weight_decay: float = 1e-4
    max_grad_norm: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        for name in ("lr", "max_grad_norm"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and > 0, got {value!r}")
        if not (math.isfinite(self.weight_decay) and self.weight_decay >= 0):
            raise ValueError(f"weight_decay must be finite and >= 0, got {self.weight_decay!r}")


def train(
    model: TreeGen, jets: Sequence[Jet], config: TrainConfig | None = None, *, accelerator: Any = None
) -> list[float]:
    """Fit ``model`` on (leaves, truth tree) pairs, data-parallel under ``accelerate``; returns the per-step losses.

    Each step draws one leaf count (proportionally to its number of jets) and a global batch of
    ``config.batch_size`` jets with it, plus their flow times and Bayesian-flow draws, from generators seeded by
    ``config.seed``, identically on every process. Process ``r`` of ``W`` then runs the network on its share of
    the batch (rows ``r::W``) and back-propagates ``W / B`` times its summed loss, so the gradient that DDP
    averages is exactly the gradient of the global batch mean: ``W`` processes take the same optimiser steps as one
    process with the same global batch, doing ``1/W`` of the network work each (tested to 1e-5). A process whose
    share is empty (``B < W``) back-propagates a zero loss, so the gradient all-reduce never waits on it. The
    learning-rate schedule (cosine to 10%) is stepped once per optimiser step; it is not handed to
    ``accelerator.prepare`` (which would step it once per process). Nothing is written to disk.

    Args:
        model: the :class:`TreeGen` to train (in place; parameters on ``accelerator.device`` afterwards).
        jets: simulated jets with 3..n_max leaves.
        config: :class:`TrainConfig`.
        accelerator: an ``accelerate.Accelerator`` (default: a new one, which follows ``accelerate launch`` and
            its device choice).

    Returns:
        The global batch-mean loss of every step (the same list on every process).

    Raises:
        ValueError: for an empty jet list or leaf counts the model cannot hold.
    """
    from accelerate import Accelerator

    config = config or TrainConfig()
    if len(jets) == 0:
        raise ValueError("jets must be a non-empty sequence of Jet")
    groups: dict[int, list[Jet]] = {}
    for jet in jets:
        if not 3 <= jet.n_leaves <= model.config.n_max:
            raise ValueError(f"jets must have 3..n_max={model.config.n_max} leaves, got {jet.n_leaves}")
        groups.setdefault(jet.n_leaves, []).append(jet)
    sizes = sorted(groups)
    data = {n: (np.stack([j.leaves for j in groups[n]]), np.stack([j.parents for j in groups[n]])) for n in sizes}
    weights = np.array([len(groups[n]) for n in sizes], dtype=float)
    rng = np.random.default_rng(config.seed)
    gen = torch.Generator().manual_seed(config.seed)
    accelerator = accelerator or Accelerator()
    world, rank = accelerator.num_processes, accelerator.process_index
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(s, config.steps) / config.steps))
    )
    wrapped, opt = accelerator.prepare(model, opt)
    core = accelerator.unwrap_model(wrapped)
    wrapped.train()
    losses = []
    steps = range(config.steps)
    for _ in progress(steps, total=config.steps, desc="train treegen") if accelerator.is_main_process else steps:
        n = sizes[int(rng.choice(len(sizes), p=weights / weights.sum()))]
        leaves, parents = data[n]
        idx = rng.choice(leaves.shape[0], size=min(config.batch_size, leaves.shape[0]), replace=False)
        inputs, x, t = core.loss_inputs(leaves[idx], parents[idx], generator=gen)  # the global batch, every rank
        share = torch.arange(rank, idx.size, world, device=x.device)
        scale = float(world) / idx.size
        if share.numel() == 0:  # more processes than jets: a zero-loss step keeps the all-reduce in step
            share, scale = torch.zeros(1, dtype=torch.long, device=x.device), 0.0
        local = [v[share] for v in inputs]
        per_tree = core.loss_from_logits(wrapped(*local), x[share], t[share], reduction="none")
        loss = per_tree.sum() * scale
        opt.zero_grad()
        accelerator.backward(loss)
        accelerator.clip_grad_norm_(wrapped.parameters(), config.max_grad_norm)
        opt.step()
        sched.step()
        total = accelerator.reduce(per_tree.detach().sum() * (scale / world), reduction="sum")
        losses.append(float(total))
    wrapped.eval()
    model.eval()
    _LOG.info("trained %d steps; final mean loss %.4f", config.steps, float(np.mean(losses[-50:])))
    return losses
