"""FedAvg training of the tiny LM with per-sample weights, and test perplexity (FedRW, Sec. 3 and 5)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from nips25_fedrw.loss import weighted_lm_loss
from nips25_fedrw.model import LMConfig, TinyCausalLM, encode_samples
from nips25_shared import progress, seed_everything

__all__ = ["FedAvgConfig", "fedavg_train", "perplexity"]


@dataclass(frozen=True)
class FedAvgConfig:
    """FedAvg hyper-parameters; every method in an experiment gets the same budget (rounds x local steps)."""

    rounds: int = 3
    local_steps: int = 20
    batch_size: int = 32
    lr: float = 3e-3
    reduction: str = "sample"

    def __post_init__(self) -> None:
        for name in ("rounds", "local_steps", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if not isinstance(self.lr, float | int) or not math.isfinite(self.lr) or not 0.0 < self.lr <= 1.0:
            raise ValueError(f"lr must be in (0, 1], got {self.lr!r}")
        if self.reduction not in ("sample", "token"):
            raise ValueError(f"reduction must be 'sample' or 'token', got {self.reduction!r}")


def _check_weights(weights: Sequence[np.ndarray] | None, sizes: list[int]) -> list[np.ndarray]:
    if weights is None:
        return [np.ones(n) for n in sizes]
    if len(weights) != len(sizes):
        raise ValueError(f"weights must hold one array per client ({len(sizes)}), got {len(weights)}")
    out = []
    for k, (w, n) in enumerate(zip(weights, sizes)):
        arr = np.asarray(w, dtype=np.float64)
        if arr.shape != (n,):
            raise ValueError(f"weights[{k}] must have shape ({n},), got {arr.shape}")
        if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
            raise ValueError(f"weights[{k}] must be finite and > 0")
        out.append(arr)
    return out


def fedavg_train(
    client_samples: Sequence[Sequence[str]],
    *,
    weights: Sequence[np.ndarray] | None = None,
    config: FedAvgConfig | None = None,
    model_config: LMConfig | None = None,
    seed: int = 0,
) -> tuple[TinyCausalLM, list[dict[str, float]]]:
    r"""Federated averaging of :class:`TinyCausalLM` with the reweighted loss on every client.

    Round ``r``: each client ``k`` starts from the global model, takes ``local_steps`` AdamW steps on mini-batches
    drawn uniformly from its samples (duplicates included) with loss :func:`weighted_lm_loss`; the server averages
    :math:`\theta = \sum_k a_k \theta_k / \sum_k a_k` with :math:`a_k = \sum_{x \in D_k} w(x)` (the client's
    sample count when every weight is 1, i.e. plain FedAvg). Local steps run under ``accelerate``.

    Args:
        client_samples: ``K >= 1`` non-empty lists of text samples.
        weights: per-client float arrays ``(len(client_samples[k]),)``, finite and ``> 0``; ``None`` means all 1.
        config: :class:`FedAvgConfig` (default: its defaults).
        model_config: :class:`LMConfig` (default: its defaults).
        seed: seeds the model initialisation and the mini-batch draws.

    Returns:
        ``(model, history)``; ``history[r] = {"round": r, "train_loss": mean local loss}``.

    Raises:
        ValueError: for no clients, an empty client, or malformed weights.

    References:
        McMahan et al., "Communication-Efficient Learning of Deep Networks from Decentralized Data", AISTATS 2017;
        Ye et al., "FedRW", NeurIPS 2025, arXiv:2511.07505.
    """
    from accelerate import Accelerator

    if isinstance(client_samples, str) or len(client_samples) == 0:
        raise ValueError("client_samples must hold at least one client's samples")
    for k, s in enumerate(client_samples):
        if isinstance(s, str) or len(s) == 0:
            raise ValueError(f"client_samples[{k}] must be a non-empty sequence of str")
    cfg = FedAvgConfig() if config is None else config
    mcfg = LMConfig() if model_config is None else model_config
    if not isinstance(cfg, FedAvgConfig):
        raise TypeError(f"config must be a FedAvgConfig, got {type(cfg).__name__}")
    ws = _check_weights(weights, [len(s) for s in client_samples])
    seed_everything(seed)
    model = TinyCausalLM(mcfg)
    encoded = [encode_samples(list(s), max_len=mcfg.max_len) for s in client_samples]
    agg = np.array([w.sum() for w in ws])
    accelerator = Accelerator(cpu=True)
    history: list[dict[str, float]] = []
    for r in progress(range(cfg.rounds), total=cfg.rounds, desc="fedavg rounds"):
        global_state = {n: p.detach().clone() for n, p in model.state_dict().items()}
        new_state = {n: torch.zeros_like(p) for n, p in global_state.items()}
        losses = []
        for k, (x, y, m) in enumerate(encoded):
            model.load_state_dict(global_state)
            opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
            local, opt = accelerator.prepare(model, opt)
            rng = np.random.default_rng([seed, r, k])
            w_k = torch.as_tensor(ws[k], dtype=torch.float32)
            for _ in range(cfg.local_steps):
                idx = torch.as_tensor(rng.integers(0, x.shape[0], size=cfg.batch_size))
                loss = weighted_lm_loss(local(x[idx]), y[idx], m[idx], w_k[idx], reduction=cfg.reduction)
                opt.zero_grad()
                accelerator.backward(loss)
                opt.step()
                losses.append(loss.item())
            for n, p in accelerator.unwrap_model(local).state_dict().items():
                new_state[n] += p.detach() * float(agg[k] / agg.sum())
        model.load_state_dict(new_state)
        history.append({"round": float(r), "train_loss": float(np.mean(losses))})
    return model, history


@torch.no_grad()
def perplexity(model: TinyCausalLM, samples: Sequence[str], *, batch_size: int = 256) -> float:
    r"""Token-level perplexity :math:`\exp(\sum \mathrm{CE} / \sum \text{tokens})` over ``samples``.

    Unlike EP-MPD's exp of the mean of batch means, every token counts once whatever the batch sizes.

    Args:
        model: a :class:`TinyCausalLM`.
        samples: non-empty list of test strings.
        batch_size: evaluation batch size ``>= 1``.

    Returns:
        The perplexity (``>= 1``).

    Raises:
        ValueError: if ``samples`` is empty or ``batch_size < 1``.
    """
    if not isinstance(model, TinyCausalLM):
        raise TypeError(f"model must be a TinyCausalLM, got {type(model).__name__}")
    if isinstance(samples, str) or len(samples) == 0:
        raise ValueError("samples must be a non-empty sequence of str")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    model.eval()
    x, y, m = encode_samples(list(samples), max_len=model.config.max_len)
    total, tokens = 0.0, 0.0
    for s in range(0, x.shape[0], batch_size):
        logits = model(x[s : s + batch_size])
        ce = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), y[s : s + batch_size].reshape(-1), reduction="none"
        )
        mm = m[s : s + batch_size].reshape(-1).to(ce.dtype)
        total += float((ce * mm).sum())
        tokens += float(mm.sum())
    model.train()
    return math.exp(total / tokens)
