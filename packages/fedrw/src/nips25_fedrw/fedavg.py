"""FedAvg training of the tiny LM with per-sample weights, and test perplexity (FedRW, Sec. 3 and 5)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import torch

from nips25_fedrw.loss import weighted_lm_loss
from nips25_fedrw.model import LMConfig, TinyCausalLM
from nips25_shared import progress, seed_everything

if TYPE_CHECKING:
    from accelerate import Accelerator

__all__ = ["CausalLM", "FedAvgConfig", "fedavg_train", "perplexity"]


@runtime_checkable
class CausalLM(Protocol):
    """A ``torch.nn.Module`` causal LM that tokenises its own text: :class:`TinyCausalLM` or a GPT-2 wrapper.

    ``model(x)`` maps int64 tokens ``(B, T)`` to logits ``(B, T, V)``; ``encode(samples)`` gives ``(x, y, mask)``
    (inputs, next-token targets, bool mask of real targets), each ``(B, T)`` with ``T <= max_len``.
    """

    def encode(self, samples: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Inputs, targets and mask of ``samples``."""
        ...

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Logits for tokens ``x``."""
        ...


@dataclass(frozen=True)
class FedAvgConfig:
    """FedAvg hyper-parameters; every method in an experiment gets the same budget.

    The local budget is either ``local_epochs`` passes over the client's own samples in shuffled mini-batches without
    replacement (EP-MPD's FL loop, which FedRW's experiments follow: a client holding fewer samples takes fewer
    steps), or, when ``local_epochs`` is ``None``, ``local_steps`` mini-batches drawn uniformly with replacement.

    Attributes:
        rounds: FedAvg rounds ``>= 1``.
        local_steps: local steps per round when ``local_epochs`` is ``None``.
        batch_size: mini-batch size.
        lr: AdamW learning rate in ``(0, 1]``.
        reduction: ``"sample"`` or ``"token"`` (see :func:`nips25_fedrw.loss.weighted_lm_loss`).
        local_epochs: local epochs per round ``>= 1``, or ``None`` for ``local_steps``.
    """

    rounds: int = 3
    local_steps: int = 20
    batch_size: int = 32
    lr: float = 3e-3
    reduction: str = "sample"
    local_epochs: int | None = None

    def __post_init__(self) -> None:
        for name in ("rounds", "local_steps", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        e = self.local_epochs
        if e is not None and (isinstance(e, bool) or not isinstance(e, int) or e < 1):
            raise ValueError(f"local_epochs must be an int >= 1 or None, got {e!r}")
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
        arr = np.asarray(w)
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
            raise TypeError(f"weights[{k}] must be a numeric array, got dtype {arr.dtype}")
        arr = arr.astype(np.float64)
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
    model: torch.nn.Module | None = None,
    accelerator: Accelerator | None = None,
) -> tuple[torch.nn.Module, list[dict[str, float]]]:
    r"""Federated averaging of :class:`TinyCausalLM` with the reweighted loss on every client.

    Round ``r``: each client ``k`` starts from the global model, takes AdamW steps with loss
    :func:`weighted_lm_loss` on its samples (duplicates included): ``local_epochs`` shuffled passes, or
    ``local_steps`` mini-batches drawn uniformly with replacement (see :class:`FedAvgConfig`); the server averages
    :math:`\theta = \sum_k a_k \theta_k / \sum_k a_k` with :math:`a_k = \sum_{x \in D_k} w(x)` (the client's
    sample count when every weight is 1, i.e. plain FedAvg).

    Scaling out: under ``accelerate launch`` the **clients** are sharded over the processes (client ``k`` trains
    on process ``k % num_processes``, on ``accelerator.device``), and the weighted sum of the local models and the
    loss totals are all-reduced at the end of each round, so every process ends each round with the same global
    model. Client ``k``'s mini-batches come from ``numpy.random.default_rng([seed, r, k])`` whatever process trains
    it, and the average adds the clients in the same order on any number of processes, so ``N`` processes give the
    1-process model bit for bit (same device and thread count). The local models are not wrapped in DDP (clients
    are independent), so no process waits on another during local steps; each process keeps the models of its own
    clients until the round's average (memory: ``ceil(K / N)`` model copies).

    Args:
        client_samples: ``K >= 1`` non-empty lists of text samples.
        weights: per-client float arrays ``(len(client_samples[k]),)``, finite and ``> 0``; ``None`` means all 1.
        config: :class:`FedAvgConfig` (default: its defaults).
        model_config: :class:`LMConfig` of the :class:`TinyCausalLM` built when ``model`` is ``None``; giving both
            ``model`` and ``model_config`` is an error (the configuration would be ignored).
        seed: seeds the model initialisation and the mini-batch draws.
        model: the initial global model, a :class:`CausalLM` ``torch.nn.Module`` (e.g.
            :func:`nips25_fedrw.gpt2.load_gpt2`'s); ``None`` (default) builds a fresh :class:`TinyCausalLM`. It is
            trained in place and returned on ``accelerator.device``.
        accelerator: the ``accelerate.Accelerator`` giving the device and the process group; ``None`` creates
            ``Accelerator()`` (GPU when present, the processes of ``accelerate launch`` when launched). Its
            ``mixed_precision`` may be ``"no"`` or ``"bf16"`` (forward passes under ``accelerator.autocast()``).

    Returns:
        ``(model, history)``; ``history[r] = {"round": r, "train_loss": mean local loss over all clients' steps,
        "steps": local steps of all clients in the round}``, identical on every process. Each batch is cut to its
        longest sample (no effect on a causal LM's outputs).

    Raises:
        ValueError: for no clients, an empty client, malformed weights (wrong shape, NaN/inf, ``<= 0``), both
            ``model`` and ``model_config``, or an ``accelerator`` with ``mixed_precision="fp16"``.
        TypeError: for non-numeric weights, or a ``config``, ``model`` or ``accelerator`` of the wrong type.

    References:
        McMahan et al., "Communication-Efficient Learning of Deep Networks from Decentralized Data", AISTATS 2017;
        Ye et al., "FedRW", NeurIPS 2025, arXiv:2511.07505.

    Example:
        >>> _ = torch.set_num_threads(1)
        >>> cfg = FedAvgConfig(rounds=1, local_steps=1, batch_size=2)
        >>> model, hist = fedavg_train([["a rose", "a rose"], ["the sun"]], config=cfg, seed=0)
        >>> hist[0]["steps"], 5.0 < hist[0]["train_loss"] < 6.5  # two clients, one step each; near ln 258 = 5.55
        (2.0, True)
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
    if model is not None and not (isinstance(model, torch.nn.Module) and isinstance(model, CausalLM)):
        raise TypeError(f"model must be a torch.nn.Module with encode(samples), got {type(model).__name__}")
    if model is not None and model_config is not None:
        raise ValueError("model_config: give it only when model is None (a given model is trained as it is)")
    if accelerator is not None and not isinstance(accelerator, Accelerator):
        raise TypeError(f"accelerator must be an accelerate.Accelerator, got {type(accelerator).__name__}")
    ws = _check_weights(weights, [len(s) for s in client_samples])
    acc = Accelerator() if accelerator is None else accelerator
    if acc.mixed_precision == "fp16":
        raise ValueError("accelerator: mixed_precision='fp16' needs a gradient scaler per client; use 'bf16' or 'no'")
    seed_everything(seed)
    if model is None:
        model = TinyCausalLM(mcfg)
    model.to(acc.device)
    encoded = [model.encode(list(s)) for s in client_samples]
    agg = np.array([w.sum() for w in ws])
    mine = [k for k in range(len(encoded)) if k % acc.num_processes == acc.process_index]
    history: list[dict[str, float]] = []
    rounds = (
        progress(range(cfg.rounds), total=cfg.rounds, desc="fedavg rounds")
        if acc.is_main_process
        else range(cfg.rounds)
    )
    for r in rounds:
        global_state = {n: p.detach().clone() for n, p in model.state_dict().items()}
        local_states: dict[int, dict[str, torch.Tensor]] = {}
        loss_sum = torch.zeros(2, dtype=torch.float64, device=acc.device)  # (sum of step losses, steps)
        for k in mine:
            x, y, m = encoded[k]
            model.load_state_dict(global_state)
            opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
            rng = np.random.default_rng([seed, r, k])
            w_k = torch.as_tensor(ws[k], dtype=torch.float32)
            for batch in _batches(x.shape[0], cfg, rng):
                idx = torch.as_tensor(batch)
                t = int(m[idx].sum(dim=1).max())  # trailing padding changes nothing in a causal LM: cut it
                xb, yb, mb, wb = (v.to(acc.device) for v in (x[idx, :t], y[idx, :t], m[idx, :t], w_k[idx]))
                with acc.autocast():
                    logits = model(xb)
                loss = weighted_lm_loss(logits.float(), yb, mb, wb, reduction=cfg.reduction)
                opt.zero_grad()
                loss.backward()
                opt.step()
                loss_sum += torch.tensor([loss.item(), 1.0], dtype=torch.float64, device=acc.device)
            local_states[k] = {n: p.detach().clone() for n, p in model.state_dict().items()}
        new_state = _average(acc, global_state, local_states, agg / agg.sum())
        if acc.num_processes > 1:
            loss_sum = acc.reduce(loss_sum, reduction="sum")
        model.load_state_dict(new_state)
        total, steps = loss_sum.tolist()
        history.append({"round": float(r), "train_loss": total / steps, "steps": steps})
    return model, history


def _average(
    acc: Accelerator,
    global_state: dict[str, torch.Tensor],
    local_states: dict[int, dict[str, torch.Tensor]],
    share: np.ndarray,
) -> dict[str, torch.Tensor]:
    """:math:`\\sum_k a_k \\theta_k` over all clients, added in client order on every process (bit-identical).

    Client ``k``'s term comes from the process that trained it: an all-reduce of that term and zeros from the
    other processes is exact, so the order of the additions, and hence every bit of the result, is the same for
    any number of processes.
    """
    out = {n: torch.zeros_like(p) for n, p in global_state.items()}
    for k in range(len(share)):
        for n, p in out.items():
            term = local_states[k][n] * float(share[k]) if k in local_states else torch.zeros_like(p)
            if acc.num_processes > 1:
                term = acc.reduce(term.contiguous(), reduction="sum")
            p += term
    return out


def _batches(n: int, cfg: FedAvgConfig, rng: np.random.Generator) -> list[np.ndarray]:
    """Index batches of one client's round: shuffled epochs without replacement, or uniform draws."""
    if cfg.local_epochs is None:
        return [rng.integers(0, n, size=cfg.batch_size) for _ in range(cfg.local_steps)]
    out = []
    for _ in range(cfg.local_epochs):
        order = rng.permutation(n)
        out += [order[s : s + cfg.batch_size] for s in range(0, n, cfg.batch_size)]
    return out


@torch.no_grad()
def perplexity(model: torch.nn.Module, samples: Sequence[str], *, batch_size: int = 256) -> float:
    r"""Token-level perplexity :math:`\exp(\sum \mathrm{CE} / \sum \text{tokens})` over ``samples``.

    Unlike EP-MPD's exp of the mean of batch means, every token counts once whatever the batch sizes. It runs on
    the model's device, in every process that calls it (evaluation is not sharded).

    Args:
        model: a :class:`CausalLM` module (:class:`TinyCausalLM` or a GPT-2 wrapper).
        samples: non-empty list of test strings.
        batch_size: evaluation batch size ``>= 1``.

    Returns:
        The perplexity (``>= 1``).

    Raises:
        ValueError: if ``samples`` is empty or ``batch_size < 1``.
    """
    if not (isinstance(model, torch.nn.Module) and isinstance(model, CausalLM)):
        raise TypeError(f"model must be a torch.nn.Module with encode(samples), got {type(model).__name__}")
    if isinstance(samples, str) or len(samples) == 0:
        raise ValueError("samples must be a non-empty sequence of str")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    model.eval()
    device = next(model.parameters()).device
    x, y, m = (v.to(device) for v in model.encode(list(samples)))
    total, tokens = 0.0, 0.0
    for s in range(0, x.shape[0], batch_size):
        logits = model(x[s : s + batch_size]).float()
        ce = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), y[s : s + batch_size].reshape(-1), reduction="none"
        )
        mm = m[s : s + batch_size].reshape(-1).to(ce.dtype)
        total += float((ce * mm).sum())
        tokens += float(mm.sum())
    model.train()
    return math.exp(total / tokens)
