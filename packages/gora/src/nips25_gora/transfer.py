"""The digits-transfer experiment (profiles ``quick`` and ``full``): GoRA vs the LoRA family, equal budgets.

Design (fixed before running; README "Results"): every arm starts from the same pretrained MLP and linear-probe
head per seed, gets the same steps, batches and optimizer family, and its own learning rate chosen on a validation
split from one grid (seeds apart from the test seeds, ties broken at random). Claims are paired over seeds.
"""

from __future__ import annotations

import copy
import math
import multiprocessing
import random
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path
from typing import Any, cast

import torch

from nips25_gora.adapter import GoraInit, apply_gora
from nips25_gora.baselines import build_method
from nips25_gora.config import GoraConfig
from nips25_gora.digits import (
    DIGITS_TARGETS,
    DigitsNet,
    DigitsTransfer,
    linear_probe,
    load_digits_shift,
    load_digits_transfer,
    pretrain,
)
from nips25_gora.training import TrainConfig, evaluate_accuracy, make_loader, mean_loss, train
from nips25_shared import Claim, Report, get_logger, seed_everything

__all__ = ["fixed_nets", "hessian_spectral_norm", "reproduce_digits"]

log = get_logger(__name__)
BUDGET_TOL = 0.15
BUDGET_TOL_PERCENT = 15  # BUDGET_TOL in integer percent, so that the check below is exact
INIT_COST_MAX = 0.10
SATURATED = (0.25, 0.97)  # chance is 0.2; an arm outside this band cannot show a difference
LR_SEED_OFFSET = 1000
XI_OFFICIAL = GoraConfig().xi
#: The held-out line search's grid for the init's step size: the official 5e-2 halved 7 times (README, 0.2.2).
XI_GRID: tuple[float, ...] = tuple(XI_OFFICIAL * 2.0**-k for k in range(8))
#: Power iteration for the Hessian's spectral norm L (xi = 1/L claims, README 0.2.3): cap, relative tolerance, and
#: the offset of its start vector's seed from the test seed.
CURVATURE_MAX_ITER = 100
CURVATURE_RTOL = 1e-4
CURVATURE_SEED_OFFSET = 20_000
#: The digits-shift task's domain shift (README 0.2.5), picked by the pilot's pre-stated rule
#: (``benchmarks/pilot_digits_shift.py``), not by any GoRA outcome.
DIGITS_SHIFT = "translate"
#: SD of GoRA's per-seed accuracy change from float summation order alone (one vs two torch threads, 0.2.1).
SUMMATION_ORDER_SD = 0.033
#: The arms of the trained comparison on the fixed nets (README 0.2.6).
SHIFT_METHODS: tuple[str, ...] = ("lora", "gora")


def _se(values: list[float]) -> float:
    return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else float("nan")


def _prepared(seed: int, shots: int) -> tuple[Any, DigitsNet, DigitsNet]:
    """The seed's split, its probed net and (a separate copy) its pretrained net with the digits-0-4 head."""
    seed_everything(seed)
    data = load_digits_transfer(shots=shots, seed=seed)
    pretrained = pretrain(data.source, seed=seed)
    net = linear_probe(copy.deepcopy(pretrained), data.train, seed=seed)
    return data, net, pretrained


def _cached_prepare(cache: dict[Any, Any], seed: int, shots: int) -> None:
    """Pretrain + probe ``seed`` once (``cache[seed]``: split, probed net; ``cache["pretrained", seed]``: the
    pretrained net with its own head); its wall time adds to ``cache["prepare_seconds"]``."""
    if seed not in cache:
        t0 = time.perf_counter()
        data, net, pretrained = _prepared(seed, shots)
        cache[seed], cache["pretrained", seed] = (data, net), pretrained
        cache["prepare_seconds"] = cache.get("prepare_seconds", 0.0) + time.perf_counter() - t0


def _gora_config(p: Any, **kw: Any) -> GoraConfig:
    fields: dict[str, Any] = {"target_modules": DIGITS_TARGETS, "r_ref": p.r_ref, "r_min": 1, "r_max": 32,
                              "n_steps": p.grad_batches, "modules_to_save": ("classifier",)}  # fmt: skip
    return GoraConfig(**(fields | kw))


def _run(method: str, seed: int, lr: float, p: Any, cache: dict[Any, Any], *, split: str) -> dict[str, Any]:
    """One arm on digits-transfer seed ``seed`` from the seed's probed net (cached)."""
    _cached_prepare(cache, seed, p.shots)
    data, probed = cache[seed]
    return _adapt(method, data, probed, seed, lr, p, split=split)


def _adapt(method: str, data: DigitsTransfer, start: DigitsNet, seed: int, lr: float, p: Any, *,
           split: str) -> dict[str, Any]:  # fmt: skip
    """Init ``method`` on a copy of ``start`` from ``data``'s gradient batches, train it on ``data.train`` (the
    trained recipe of every digits arm) and evaluate it on ``split``; ``start`` is not modified."""
    net = copy.deepcopy(start)
    grad_batches = _grad_batches(data, p, seed)
    base_loss = mean_loss(net, grad_batches)
    seed_everything(seed + 1)  # the adapter's random draws
    wrapped, init_s = build_method(method, net, gora=_gora_config(p), grad_batches=grad_batches)
    init_loss = mean_loss(wrapped, grad_batches)
    ratio = 16.0 if method != "full" else 1.0
    cfg = TrainConfig(steps=p.steps, batch_size=p.batch_size, lr=lr, lora_plus_ratio=ratio)
    tlog = train(wrapped, make_loader(data.train, batch_size=p.batch_size, seed=seed), cfg)
    row: dict[str, Any] = {
        "seed": seed,
        "lr": lr,
        "accuracy": evaluate_accuracy(wrapped, getattr(data, split)),
        "base_loss": base_loss,
        "init_loss": init_loss,
        "init_seconds": init_s,
        "train_seconds": tlog.seconds,
        "trainable": sum(t.numel() for t in wrapped.parameters() if t.requires_grad),
        "losses": tlog.losses,
    }
    if split == "test":
        row["correct"] = _correct(wrapped, data.test)
    if method == "gora":
        info: GoraInit = getattr(wrapped, "gora_init")  # noqa: B009
        row["gora_init"] = info
    return row


def _cycle(loader: Any) -> Any:
    while True:
        yield from loader


def _grad_batches(data: Any, p: Any, seed: int) -> list[Any]:
    """The ``p.grad_batches`` batches GoRA reads (cycling over the few-shot set); the same for every arm."""
    loader = make_loader(data.train, batch_size=p.grad_batch_size, seed=seed + 10_000)
    return [b for _, b in zip(range(p.grad_batches), _cycle(loader))]


def _sgd_gradient(net: DigitsNet, batches: list[Mapping[str, torch.Tensor]]) -> list[torch.Tensor]:
    """Mean gradient of the target weights over ``batches`` (the G of the SGD-step controls)."""
    weights = [getattr(net, t).weight for t in DIGITS_TARGETS]
    loss = sum(net(**b).loss for b in batches) / len(batches)
    return list(torch.autograd.grad(loss, weights))


def _sgd_step(probed: DigitsNet, grads: list[torch.Tensor], xi: float) -> DigitsNet:
    """A copy of ``probed`` after W <- W - xi G on the target weights."""
    net = copy.deepcopy(probed)
    with torch.no_grad():
        for t, g in zip(DIGITS_TARGETS, grads):
            getattr(net, t).weight -= xi * g
    return net


def _correct(model: Any, data: dict[str, torch.Tensor]) -> list[int]:
    """Per-image correctness (1/0) of ``argmax(model(pixels).logits)`` (eval mode)."""
    was_training = model.training
    model.eval()
    with torch.no_grad():
        pred = model(pixels=data["pixels"]).logits.argmax(-1)
    model.train(was_training)
    return (pred == data["labels"]).int().tolist()


def _full_rank_control(seed: int, p: Any, cache: dict[Any, Any]) -> dict[str, float]:
    """Full-rank GoRA (r_i = n_i) against a manual SGD step W <- W - xi G on the same batches: the same loss."""
    data, probed = cache[seed]
    grad_batches = _grad_batches(data, p, seed)
    base = mean_loss(probed, grad_batches)
    seed_everything(seed + 1)
    full = apply_gora(copy.deepcopy(probed), grad_batches, _gora_config(p, r_min=128, r_max=128))
    sgd = _sgd_step(probed, _sgd_gradient(copy.deepcopy(probed), grad_batches), XI_OFFICIAL)
    return {"base": base, "full_rank_gora": mean_loss(full, grad_batches), "sgd_step": mean_loss(sgd, grad_batches)}


def _lowest(losses: dict[float, float]) -> float:
    """The xi of the lowest loss; ties go to the larger xi (``losses`` iterates from the largest)."""
    best = min(losses.values())
    return next(xi for xi, v in losses.items() if v == best)


def _held_out_xi(seed: int, p: Any, cache: dict[Any, Any]) -> dict[str, Any]:
    """``init-is-descent-held-out-xi`` for one seed: xi* per step kind from the validation loss (README, 0.2.2).

    For GoRA and for the SGD-step control alike, xi* is the value of :data:`XI_GRID` whose step gives the lowest
    mean cross-entropy on the validation split (held out from the gradient batches and from the test split); the
    drop is then measured on the gradient batches, the validation and the test split.
    """
    data, probed = cache[seed]
    batches = _grad_batches(data, p, seed)
    splits: dict[str, list[Any]] = {"grad": batches, "val": [data.val], "test": [data.test]}
    base = {k: mean_loss(probed, b) for k, b in splits.items()}
    # GoRA: B is linear in xi (compress_init), so the official init with lora_B scaled by xi / xi0 is the init at xi
    seed_everything(seed + 1)
    gora = apply_gora(copy.deepcopy(probed), batches, _gora_config(p))
    lora_b: list[torch.Tensor] = [cast(torch.Tensor, d["default"].weight) for m in gora.modules()
              if isinstance(d := getattr(m, "lora_B", None), torch.nn.ModuleDict) and "default" in d]  # fmt: skip
    original = [b.detach().clone() for b in lora_b]
    gora_val = {}
    for xi in XI_GRID:
        with torch.no_grad():
            for b, b0 in zip(lora_b, original):
                b.copy_(b0 * (xi / XI_OFFICIAL))
        gora_val[xi] = mean_loss(gora, splits["val"])
    grads = _sgd_gradient(copy.deepcopy(probed), batches)
    sgd_val = {xi: mean_loss(_sgd_step(probed, grads, xi), splits["val"]) for xi in XI_GRID}
    xi_gora, xi_sgd = _lowest(gora_val), _lowest(sgd_val)
    seed_everything(seed + 1)  # the reported GoRA drop: the method's own call at xi*
    chosen = apply_gora(copy.deepcopy(probed), batches, _gora_config(p, xi=xi_gora))
    stepped = _sgd_step(probed, grads, xi_sgd)
    return {
        "xi_gora": xi_gora,
        "xi_sgd": xi_sgd,
        "gora_drop": {k: base[k] - mean_loss(chosen, b) for k, b in splits.items()},
        "sgd_drop": {k: base[k] - mean_loss(stepped, b) for k, b in splits.items()},
        "gora_val_loss": {f"{xi:g}": v for xi, v in gora_val.items()},
        "sgd_val_loss": {f"{xi:g}": v for xi, v in sgd_val.items()},
        "base_loss": base,
    }


def hessian_spectral_norm(
    net: DigitsNet,
    batches: list[Mapping[str, torch.Tensor]],
    *,
    seed: int,
    max_iter: int = CURVATURE_MAX_ITER,
    rtol: float = CURVATURE_RTOL,
) -> dict[str, float]:
    """Largest-magnitude Hessian eigenvalue of the mean loss over ``batches`` w.r.t. the target weights.

    Power iteration on Hessian-vector products (double backward, the model in eval mode, float32): start from a
    Gaussian vector drawn with ``seed``, ``v <- Hv / ||Hv||``, Rayleigh quotient ``v^T H v``; stops once it changes
    by less than ``rtol`` (relative) or after ``max_iter`` products. Returns ``{"L": |lambda|, "eigenvalue":
    lambda, "iterations": k, "converged": 0/1}`` (README, 0.2.3: xi = 1/L).
    """
    net.eval()
    weights = [getattr(net, t).weight for t in DIGITS_TARGETS]
    loss = sum(net(**b).loss for b in batches) / len(batches)
    grads = torch.autograd.grad(loss, weights, create_graph=True)
    gen = torch.Generator().manual_seed(seed)
    v = [torch.randn(w.shape, generator=gen, dtype=w.dtype) for w in weights]
    norm = math.sqrt(sum(float((x * x).sum()) for x in v))
    v = [x / norm for x in v]
    previous, rayleigh, converged, k = math.nan, math.nan, False, 0
    while k < max_iter:
        k += 1
        hv = torch.autograd.grad(grads, weights, grad_outputs=v, retain_graph=True)
        rayleigh = sum(float((a * b).sum()) for a, b in zip(v, hv))
        norm = math.sqrt(sum(float((h * h).sum()) for h in hv))
        if norm == 0:
            raise ValueError("the Hessian-vector product is zero: no curvature to set xi = 1/L")
        v = [h.detach() / norm for h in hv]
        if abs(rayleigh - previous) < rtol * abs(rayleigh):
            converged = True
            break
        previous = rayleigh
    return {"L": abs(rayleigh), "eigenvalue": rayleigh, "iterations": float(k), "converged": float(converged)}


def _one_over_l(seed: int, p: Any, cache: dict[Any, Any]) -> dict[str, Any]:
    """``init-is-descent-1-over-L`` for one seed: GoRA, full-rank GoRA and the SGD step at xi = 1/L (README 0.2.3)."""
    data, probed = cache[seed]
    return _one_over_l_at(data, probed, seed, p)


def _shift_one_over_l(seed: int, p: Any, cache: dict[Any, Any]) -> dict[str, Any]:
    """``shift-init-is-descent-1-over-L`` for one seed: the seed's pretrained net, its own head, on digits 0-4
    under :data:`DIGITS_SHIFT` (README 0.2.5)."""
    data = load_digits_shift(kind=DIGITS_SHIFT, shots=p.shots, seed=seed)
    net = copy.deepcopy(cache["pretrained", seed])
    head_accuracy = {"head_test_accuracy": evaluate_accuracy(net, data.test)}
    return _one_over_l_at(data, net, seed, p) | head_accuracy


def _one_over_l_at(data: DigitsTransfer, probed: DigitsNet, seed: int, p: Any) -> dict[str, Any]:
    """GoRA, full-rank GoRA and the SGD step at xi = 1/L from ``probed`` on ``data``'s gradient batches."""
    batches = _grad_batches(data, p, seed)
    splits: dict[str, list[Any]] = {"grad": batches, "val": [data.val], "test": [data.test]}
    base = {k: mean_loss(probed, b) for k, b in splits.items()}
    curvature = hessian_spectral_norm(copy.deepcopy(probed), batches, seed=seed + CURVATURE_SEED_OFFSET)
    xi = 1.0 / curvature["L"]
    grads = _sgd_gradient(copy.deepcopy(probed), batches)
    grad_norm_sq = sum(float((g.double() ** 2).sum()) for g in grads)
    seed_everything(seed + 1)  # the same lora_A draws as every other GoRA call of this seed
    gora = apply_gora(copy.deepcopy(probed), batches, _gora_config(p, xi=xi))
    seed_everything(seed + 1)
    full = apply_gora(copy.deepcopy(probed), batches, _gora_config(p, xi=xi, r_min=128, r_max=128))
    sgd = _sgd_step(probed, grads, xi)
    info: GoraInit = getattr(gora, "gora_init")  # noqa: B009
    return {
        **curvature,
        "xi": xi,
        "grad_norm_sq": grad_norm_sq,
        "guaranteed_drop": grad_norm_sq / (2 * curvature["L"]),  # the descent lemma's bound for the SGD step
        "gora_drop": {k: base[k] - mean_loss(gora, b) for k, b in splits.items()},
        "sgd_drop": {k: base[k] - mean_loss(sgd, b) for k, b in splits.items()},
        "full_rank_minus_sgd": abs(mean_loss(full, batches) - mean_loss(sgd, batches)),
        "rank_over_in": {n: r / info.shapes[n][1] for n, r in info.ranks.items()},
        "base_loss": base,
    }


CANNOT_ANSWER = "cannot answer: the SGD-step control fails the same criterion"
#: The two xi = 1/L readouts: claim-id suffix and what is measured (README 0.2.3).
DESCENT_READOUTS: tuple[tuple[str, str], ...] = (
    ("init-is-descent-1-over-L", "loss drop"),
    ("init-is-descent-1-over-L-normalised", "loss drop / (||G||^2 / 2L)"),
)
DESCENT_CRITERION = ("{what} > 0 on every seed and mean > 2 x SD over seeds, for GoRA; control: the SGD step at the "
                     "same xi passes the same criterion and full-rank GoRA equals it (|loss gap| < 1e-5 on every "
                     "seed)")  # fmt: skip


def _well_above_spread(values: list[float]) -> bool:
    """The issue's criterion: every value > 0 and their mean > 2 x their SD (needs >= 2 values)."""
    return bool(all(v > 0 for v in values) and len(values) > 1
                and statistics.fmean(values) > 2 * statistics.stdev(values))  # fmt: skip


def _descent_verdict(gora: list[float], sgd: list[float], full_gaps: list[float]) -> str:
    """ "holds" / "does not hold" (control passes, GoRA fails) / :data:`CANNOT_ANSWER` (the control fails)."""
    control = _well_above_spread(sgd) and max(full_gaps) < 1e-5
    return "holds" if _well_above_spread(gora) and control else "does not hold" if control else CANNOT_ANSWER


def _combined_verdict(verdicts: Sequence[str]) -> str:
    """One claim over several nets (README 0.2.6): "holds" if it holds on every net, "does not hold" if it does
    not hold on at least one, else "cannot answer" (every other net's control failed)."""
    if not verdicts:
        raise ValueError("verdicts must be non-empty")
    if all(v == "holds" for v in verdicts):
        return "holds"
    if any(v == "does not hold" for v in verdicts):
        return "does not hold"
    return "cannot answer"


def _descent_measured(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The measured dicts of the two xi = 1/L readouts (:data:`DESCENT_READOUTS` order), each with its verdict."""

    def summary(values: list[float]) -> dict[str, Any]:
        sd = statistics.stdev(values) if len(values) > 1 else float("nan")
        return {"per_seed": values, "mean": statistics.fmean(values), "sd": sd,
                "n_negative": sum(v <= 0 for v in values)}  # fmt: skip

    full_gaps = [r["full_rank_minus_sgd"] for r in rows]
    common = {"L": [r["L"] for r in rows], "eigenvalue": [r["eigenvalue"] for r in rows],
              "iterations": [r["iterations"] for r in rows], "converged": [r["converged"] for r in rows],
              "xi": [r["xi"] for r in rows], "grad_norm_sq": [r["grad_norm_sq"] for r in rows],
              "control_full_rank_minus_sgd": full_gaps,
              "gora_val_drop": [r["gora_drop"]["val"] for r in rows],
              "gora_test_drop": [r["gora_drop"]["test"] for r in rows],
              "sgd_val_drop": [r["sgd_drop"]["val"] for r in rows],
              "sgd_test_drop": [r["sgd_drop"]["test"] for r in rows],
              "rank_over_in_seed0": rows[0]["rank_over_in"], "n_seeds": len(rows)}  # fmt: skip
    if "head_test_accuracy" in rows[0]:
        common["head_test_accuracy"] = [r["head_test_accuracy"] for r in rows]
    raw = ([r["gora_drop"]["grad"] for r in rows], [r["sgd_drop"]["grad"] for r in rows])
    norm = tuple([d / r["guaranteed_drop"] for d, r in zip(values, rows)] for values in raw)
    return [{"verdict": _descent_verdict(gora, sgd, full_gaps), "gora": summary(gora), "control_sgd_step": summary(sgd),
             "gora_share_of_sgd_drop": [g / c if c else float("nan") for g, c in zip(*raw)]} | common
            for gora, sgd in (raw, norm)]  # fmt: skip


def _descent_statement(task: str, what: str) -> str:
    return (f"{task}At xi = 1/L (L: the Hessian's spectral norm on the gradient batches) GoRA's initialisation "
            f"lowers the loss ({what}), well above seed spread.")  # fmt: skip


def _descent_note(p: Any, head: str) -> str:
    return (f"L by power iteration (<= {CURVATURE_MAX_ITER} Hessian-vector products, rtol {CURVATURE_RTOL}) on the "
            f"{p.grad_batches} gradient batches of {p.grad_batch_size}; targets fc1-fc4; {head}.")  # fmt: skip


def _descent_claims(rows: list[dict[str, Any]], p: Any, *, prefix: str = "", task: str = "",
                    head: str = "head from a linear probe") -> list[Claim]:  # fmt: skip
    """The two xi = 1/L claims (raw and normalised drop), each with the SGD step as its positive control.

    ``prefix`` / ``task`` name the task in the claim ids and statements (digits-transfer: empty; README 0.2.5:
    ``"shift-"``), ``head`` says where the head came from in the scale note.
    """
    return [Claim(id=f"{prefix}{suffix}", statement=_descent_statement(task, what), paper=None, measured=measured,
                  criterion=DESCENT_CRITERION.format(what=what), holds=measured["verdict"] == "holds",
                  scale_note=_descent_note(p, head))
            for (suffix, what), measured in zip(DESCENT_READOUTS, _descent_measured(rows))]  # fmt: skip


def _test_seed(s: int, p: Any, chosen: dict[str, float]) -> dict[str, Any]:
    """Every arm, the probe, the full-rank control and the held-out xi search on test seed ``s`` (own cache)."""
    cache: dict[Any, Any] = {}
    runs = {m: _run(m, s, chosen[m], p, cache, split="test") for m in p.methods}
    data, probed = cache[s]
    t0 = time.perf_counter()
    control = _full_rank_control(s, p, cache)
    control_seconds = time.perf_counter() - t0
    return {"runs": runs, "probe": evaluate_accuracy(probed, data.test), "probe_correct": _correct(probed, data.test),
            "control": control, "control_seconds": control_seconds, "held_out_xi": _held_out_xi(s, p, cache),
            "one_over_l": _one_over_l(s, p, cache), "shift_one_over_l": _shift_one_over_l(s, p, cache),
            "prepare_seconds": cache["prepare_seconds"]}  # fmt: skip


def fixed_nets(pretraining_seeds: Sequence[int]) -> dict[int, DigitsNet]:
    """The fixed pretrained nets of README 0.2.6: ``{k: pretrain(source, seed=k)}`` on every unshifted digit 0-4.

    Each keeps its own 5-way head (the digits-shift task's classes). Net ``k`` is bit for bit the digits-transfer
    seed-``k`` pretrained net.

    Raises:
        ValueError: if ``pretraining_seeds`` is empty or repeats a seed.
    """
    if not pretraining_seeds or len(set(pretraining_seeds)) != len(pretraining_seeds):
        raise ValueError(f"pretraining_seeds must be non-empty and distinct, got {tuple(pretraining_seeds)}")
    source = load_digits_shift(kind=DIGITS_SHIFT, shots=1, seed=0).source
    return {k: pretrain(source, seed=k) for k in pretraining_seeds}


def _fixed_net_val(item: tuple[int, str, float, int], *, p: Any, nets: dict[int, DigitsNet]) -> float:
    """Validation accuracy of ``method`` at ``lr`` on net ``k``, split seed ``s`` (``item = (k, method, lr, s)``)."""
    k, method, lr, s = item
    data = load_digits_shift(kind=DIGITS_SHIFT, shots=p.shots, seed=s)
    return float(_adapt(method, data, nets[k], s, lr, p, split="val")["accuracy"])


def _fixed_net_seed(item: tuple[int, bool, bool], *, p: Any, nets: dict[int, DigitsNet],
                    chosen: dict[int, dict[str, float]]) -> dict[int, dict[str, Any]]:  # fmt: skip
    """Test seed ``s`` of README 0.2.6 on every fixed net (``item = (s, init, trained)``).

    The seed draws only the adaptation's randomness: the split (``load_digits_shift(seed=s)``), the gradient
    batches (``s + 10_000``), ``lora_A`` (``seed_everything(s + 1)``), the power iteration's start (``s + 20_000``)
    and the training order (``s``). ``init``: the xi = 1/L readouts; ``trained``: GoRA and LoRA trained at
    ``chosen[k]`` and the un-adapted net's test accuracy (the positive control's baseline).
    """
    s, init, trained = item
    data = load_digits_shift(kind=DIGITS_SHIFT, shots=p.shots, seed=s)
    out: dict[int, dict[str, Any]] = {}
    for k, net in nets.items():
        row: dict[str, Any] = {"seed": s}
        if init:
            row["one_over_l"] = _one_over_l_at(data, net, s, p) | {
                "head_test_accuracy": evaluate_accuracy(net, data.test)
            }
        if trained:
            row["runs"] = {m: _adapt(m, data, net, s, chosen[k][m], p, split="test") for m in SHIFT_METHODS}
            row["head"], row["head_correct"] = evaluate_accuracy(net, data.test), _correct(net, data.test)
        out[k] = row
    return out


def _trained_verdict(gap: Mapping[str, Any], control_passes: bool) -> str:
    """``shift-gora-beats-lora`` on one net (README 0.2.6) from the paired-gap ``measured`` of GoRA - LoRA."""
    if gap["saturated_arms"]:
        return f"cannot answer: saturated arm(s) {gap['saturated_arms']} outside {SATURATED}"
    if not control_passes:
        return "cannot answer: the positive control (LoRA beats the un-adapted net by > 2 SE) fails"
    return "holds" if gap["paired_gap"] > 2 * gap["paired_gap_se"] else "does not hold"


def _fixed_net_claims(per_seed: list[dict[int, dict[str, Any]]], p: Any, lr: dict[str, Any]) -> list[Claim]:
    """The README 0.2.6 claims from :func:`_fixed_net_seed`'s rows, the nets combined by :func:`_combined_verdict`."""
    nets = list(per_seed[0])
    where = f"digits-shift ({DIGITS_SHIFT} digits 0-4) from one fixed pretrained net per row (pretraining seeds {nets})"
    head = f"one fixed pretrained net per row (pretraining seeds {nets}), its digits-0-4 head reused"
    claims = []
    descent = {k: _descent_measured([r[k]["one_over_l"] for r in per_seed if "one_over_l" in r[k]]) for k in nets}
    for i, (suffix, what) in enumerate(DESCENT_READOUTS):
        by_net = {str(k): descent[k][i] for k in nets}
        verdict = _combined_verdict([m["verdict"] for m in by_net.values()])
        claims.append(Claim(
            id=f"fixed-net-{suffix}", statement=_descent_statement(f"{where}: ", what), paper=None,
            measured={"verdict": verdict, "pretraining_seeds": nets, "per_net": by_net},
            criterion=DESCENT_CRITERION.format(what=what) + ", on every net (else 'does not hold' if it fails on a "
            "net whose control passes, otherwise 'cannot answer')",
            holds=verdict == "holds", scale_note=_descent_note(p, head),
        ))  # fmt: skip
    rows = {k: [r[k] for r in per_seed if "runs" in r[k]] for k in nets}
    note = (f"MLP 64-128x4 pretrained on sklearn digits 0-4 (fixed per row), adapted to {DIGITS_SHIFT} digits 0-4 with "
            f"{p.shots} images per class, {p.steps} steps of {p.batch_size}, r_ref={p.r_ref}, LoRA+ 16; paper: "
            "T5-base on GLUE, Llama-3.1-8B on MetaMathQA->GSM8K.")  # fmt: skip
    gaps, controls, verdicts = {}, {}, {}
    for k in nets:
        acc = {m: [r["runs"][m]["accuracy"] for r in rows[k]] for m in SHIFT_METHODS} | {
            "head": [r["head"] for r in rows[k]]
        }
        correct = {m: [r["runs"][m]["correct"] for r in rows[k]] for m in SHIFT_METHODS}
        correct["head"] = [r["head_correct"] for r in rows[k]]
        control = _paired_claim("c", "LoRA > un-adapted", "lora", "head", acc, None, note, correct).measured
        control["passes"] = bool(control["paired_gap"] > 2 * control["paired_gap_se"])
        gap = _paired_claim("g", "GoRA > LoRA", "gora", "lora", acc, None, note, correct).measured
        gap |= {"lr": lr["chosen"][k], "lr_validation": lr["validation_accuracy"][k],
                "trainable": {m: rows[k][0]["runs"][m]["trainable"] for m in SHIFT_METHODS}}  # fmt: skip
        controls[str(k)], gaps[str(k)] = control, gap
        verdicts[str(k)] = gap["verdict"] = _trained_verdict(gap, control["passes"])
    claims.append(Claim(
        id="shift-positive-control",
        statement=f"Control: on {where}, the readout sees adaptation (LoRA beats the un-adapted pretrained net).",
        paper=None, measured={"pretraining_seeds": nets, "per_net": controls},
        criterion="mean paired test-accuracy gap (LoRA - un-adapted net) > 2 SE over the seeds, on every net",
        holds=all(c["passes"] for c in controls.values()), scale_note=note,
    ))  # fmt: skip
    verdict = _combined_verdict(list(verdicts.values()))
    claims.append(Claim(
        id="shift-gora-beats-lora",
        statement=f"At LoRA's parameter budget GoRA reaches higher accuracy than LoRA ({where}).",
        paper={"T5-base GLUE avg gain": 5.88, "Llama-3.1-8B GSM8K gain": 5.13},
        measured={"verdict": verdict, "pretraining_seeds": nets, "per_net": gaps},
        criterion=f"on every net: mean paired accuracy gap (GoRA - LoRA) > 2 SE over the seeds, both arms' mean inside "
        f"{SATURATED} and the positive control passing (else 'cannot answer' on that net); 'does not hold' if it "
        "fails on a net where it can answer",
        holds=verdict == "holds", scale_note=note,
    ))  # fmt: skip
    return claims


def _fixed_net_part(p: Any, seed: int) -> tuple[list[Claim], dict[str, Any]]:
    """README 0.2.6: the fixed nets, their LR search (split seeds 1000, ...) and the test seeds, in workers."""
    t0 = time.perf_counter()
    nets = fixed_nets(p.fixed_nets)
    phases = {"pretrain_seconds": time.perf_counter() - t0}
    lr_seeds = [LR_SEED_OFFSET + i for i in range(p.lr_seeds)]
    items = [(k, m, lr, s) for k in nets for m in SHIFT_METHODS for lr in p.lr_grid for s in lr_seeds]
    t0 = time.perf_counter()
    accuracy = dict(zip(items, _parallel(partial(_fixed_net_val, p=p, nets=nets), items, p.fixed_net_workers)))
    phases["lr_search_seconds"] = time.perf_counter() - t0
    rng = random.Random(f"fixed-net-lr-{seed}")  # its own tie-break stream: the digits-transfer LRs are unchanged
    chosen: dict[int, dict[str, float]] = {k: {} for k in nets}
    grid: dict[int, dict[str, dict[str, float]]] = {k: {} for k in nets}
    for k in nets:
        for m in SHIFT_METHODS:
            val = {lr: statistics.fmean(accuracy[k, m, lr, s] for s in lr_seeds) for lr in p.lr_grid}
            chosen[k][m], grid[k][m] = _best_lr(val, rng)
            log.info("fixed net %d, %s: lr %g (validation %s)", k, m, chosen[k][m], grid[k][m])
    n = max(p.n_seeds, p.shift_trained_seeds)
    tests = [(seed + i, i < p.n_seeds, i < p.shift_trained_seeds) for i in range(n)]
    t0 = time.perf_counter()
    per_seed = _parallel(partial(_fixed_net_seed, p=p, nets=nets, chosen=chosen), tests, p.fixed_net_workers)
    phases["test_seconds"] = time.perf_counter() - t0
    lr = {"grid": list(p.lr_grid), "seeds": lr_seeds, "chosen": chosen, "validation_accuracy": grid}
    config = {"pretraining_seeds": list(nets), "init_seeds": [t[0] for t in tests if t[1]],
              "trained_seeds": [t[0] for t in tests if t[2]], "lr_search": lr, "phase_seconds": phases}  # fmt: skip
    return _fixed_net_claims(per_seed, p, lr), config


def _one_thread() -> None:
    torch.set_num_threads(1)


def _map_seeds(seeds: list[int], p: Any, chosen: dict[str, float]) -> list[dict[str, Any]]:
    """:func:`_test_seed` over ``seeds`` in seed order, in ``p.workers`` spawned processes (one torch thread each).

    Every seed is computed from its own seeds and cache, so the numbers do not depend on the worker count.
    """
    return _parallel(partial(_test_seed, p=p, chosen=chosen), seeds, p.workers)


def _parallel(fn: Callable[[Any], Any], items: list[Any], workers: int) -> list[Any]:
    """``[fn(x) for x in items]`` in order, in up to ``workers`` spawned processes (one torch thread each)."""
    workers = min(workers, len(items))
    if workers <= 1:
        return [fn(x) for x in items]
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_one_thread) as pool:
        return list(pool.map(fn, items))


def _pick_lr(method: str, p: Any, cache: dict[Any, Any], rng: random.Random) -> tuple[float, dict[str, float]]:
    seeds = [LR_SEED_OFFSET + i for i in range(p.lr_seeds)]
    val = {}
    for lr in p.lr_grid:
        val[lr] = statistics.fmean(_run(method, s, lr, p, cache, split="val")["accuracy"] for s in seeds)
    return _best_lr(val, rng)


def _best_lr(val: dict[float, float], rng: random.Random) -> tuple[float, dict[str, float]]:
    """The LR of the highest mean validation accuracy in ``val`` (``{lr: accuracy}``), ties at random."""
    best = max(val.values())
    chosen = rng.choice([lr for lr, v in val.items() if v == best])  # ties at random, never by list order
    return chosen, {f"{lr:g}": v for lr, v in val.items()}


def _test_sampling_var(ca: list[int], cb: list[int]) -> float:
    """Sampling variance of a paired accuracy gap on a finite test split: var(c_a - c_b per image) / n."""
    d = [x - y for x, y in zip(ca, cb)]
    return statistics.variance(d) / len(d)


def _paired_claim(cid: str, statement: str, a: str, b: str, acc: dict[str, list[float]], paper: Any,
                  note: str, correct: dict[str, list[list[int]]], *,
                  summation_order_sd: float | None = None) -> Claim:  # fmt: skip
    diff = [x - y for x, y in zip(acc[a], acc[b])]
    means = {m: statistics.fmean(acc[m]) for m in (a, b)}
    saturated = [m for m, v in means.items() if not SATURATED[0] < v < SATURATED[1]]
    mean, se = statistics.fmean(diff), _se(diff)
    test_var = [_test_sampling_var(x, y) for x, y in zip(correct[a], correct[b])]
    gap_var = statistics.variance(diff) if len(diff) > 1 else float("nan")
    extra: dict[str, Any] = {}
    if summation_order_sd is not None:  # README 0.2.2: stable if a 2-SD summation-order shift keeps it > 2 SE
        extra = {"summation_order_sd_of_mean": summation_order_sd,
                 "stable_against_summation_order": bool(mean - 2 * summation_order_sd > 2 * se
                                                        or mean + 2 * summation_order_sd < 2 * se)}  # fmt: skip
    return Claim(
        id=cid,
        statement=statement,
        paper=paper,
        measured={
            f"{a}_mean": means[a],
            f"{a}_se": _se(acc[a]),
            f"{b}_mean": means[b],
            f"{b}_se": _se(acc[b]),
            "paired_gap": mean,
            "paired_gap_se": se,
            "n_seeds": len(diff),
            "per_seed": {a: acc[a], b: acc[b]},
            "saturated_arms": saturated,
            "gap_variance_over_seeds": gap_var,
            "test_sampling_variance_per_seed": test_var,
            "test_sampling_share_of_gap_variance": statistics.fmean(test_var) / gap_var,
        }
        | extra,
        criterion=f"mean paired accuracy gap ({a} - {b}) > 2 SE over {len(diff)} seeds, and both arms' mean "
        f"accuracy inside {SATURATED} (not saturated)",
        holds=bool(mean > 2 * se and not saturated),
        scale_note=note,
    )


def reproduce_digits(p: Any, *, profile: str, seed: int, out_dir: Path, title: str, start: float) -> Report:
    """Run the digits-transfer profile ``p``; see the module docstring and the README for the design."""
    rng = random.Random(seed)
    cache: dict[Any, Any] = {}
    chosen, grid = {}, {}
    t_search = time.perf_counter()
    for method in p.methods:
        chosen[method], grid[method] = _pick_lr(method, p, cache, rng)
        log.info("%s: lr %g (validation %s)", method, chosen[method], grid[method])
    phases = {"lr_search_seconds": time.perf_counter() - t_search, "prepare_seconds_in_lr_search":
              cache.get("prepare_seconds", 0.0)}  # fmt: skip
    seeds = [seed + i for i in range(p.n_seeds)]
    t_test = time.perf_counter()
    per_seed = _map_seeds(seeds, p, chosen)
    phases |= {"test_seconds": time.perf_counter() - t_test, "workers": min(p.workers, len(seeds)),
               "prepare_seconds_total": phases["prepare_seconds_in_lr_search"]
               + sum(r["prepare_seconds"] for r in per_seed),
               "control_seconds": sum(r["control_seconds"] for r in per_seed)}  # fmt: skip
    results = {m: [r["runs"][m] for r in per_seed] for m in p.methods}
    probe = [r["probe"] for r in per_seed]
    controls = [r["control"] for r in per_seed]
    held_out = [r["held_out_xi"] for r in per_seed]
    correct = {m: [r["correct"] for r in runs] for m, runs in results.items()} | {
        "probe": [r["probe_correct"] for r in per_seed]
    }
    acc = {m: [r["accuracy"] for r in runs] for m, runs in results.items()}
    acc["probe"] = probe
    fragility = SUMMATION_ORDER_SD / math.sqrt(len(seeds))
    note = (f"MLP 64-128x4 pretrained on sklearn digits 0-4, adapted to 5-9 with {p.shots} images per class, "
            f"{p.steps} steps of {p.batch_size}, r_ref={p.r_ref}; paper: T5-base on GLUE, Llama-3.1-8B on "
            "MetaMathQA->GSM8K.")  # fmt: skip
    claims = [
        _paired_claim("positive-control", "Control: the readout sees adaptation (LoRA beats the probe-only model).",
                      "lora", "probe", acc, None, note, correct),
        _paired_claim("gora-beats-lora", "At LoRA's parameter budget GoRA reaches higher accuracy than LoRA.", "gora",
                      "lora", acc, {"T5-base GLUE avg gain": 5.88, "Llama-3.1-8B GSM8K gain": 5.13}, note, correct,
                      summation_order_sd=fragility),
    ]  # fmt: skip
    for other in p.methods:
        if other not in ("gora", "lora"):
            claims.append(
                _paired_claim(
                    f"gora-vs-{other}",
                    f"GoRA reaches higher accuracy than {other}.",
                    "gora",
                    other,
                    acc,
                    "GoRA above it in the paper's tables",
                    note,
                    correct,
                )
            )
    rows = results["gora"]
    drops = [r["base_loss"] - r["init_loss"] for r in rows]
    gaps = [abs(c["full_rank_gora"] - c["sgd_step"]) for c in controls]
    sgd_drops = [c["base"] - c["sgd_step"] for c in controls]
    spread = statistics.stdev(drops) if len(drops) > 1 else float("nan")
    claims.append(Claim(
        id="init-is-descent",
        statement="GoRA's initialisation lowers the loss (a compressed gradient-descent step), well above seed noise.",
        paper=None,
        measured={"loss_drop": drops, "mean_drop": statistics.fmean(drops), "drop_sd": spread,
                  "base_loss": [r["base_loss"] for r in rows], "control_sgd_step_drop": sgd_drops,
                  "control_full_rank_minus_sgd": gaps},
        criterion="every seed's drop > 0 and mean drop > 2 x its SD over seeds; control: full-rank GoRA equals one "
        "SGD step of size xi (|loss gap| < 1e-5 on every seed)",
        holds=bool(all(d > 0 for d in drops) and statistics.fmean(drops) > 2 * spread and max(gaps) < 1e-5),
        scale_note=f"xi = 5e-2 (official), N = {p.grad_batches} batches of {p.grad_batch_size}; head from a linear "
        "probe (not random).",
    ))  # fmt: skip
    held_drops = [h["gora_drop"]["grad"] for h in held_out]
    held_sgd = [h["sgd_drop"]["grad"] for h in held_out]
    held_sd = statistics.stdev(held_drops) if len(held_drops) > 1 else float("nan")
    claims.append(Claim(
        id="init-is-descent-held-out-xi",
        statement="GoRA's initialisation lowers the loss, well above seed noise, at the step size a held-out line "
        "search picks (the same rule for the SGD-step control).",
        paper=None,
        measured={"loss_drop": held_drops, "mean_drop": statistics.fmean(held_drops), "drop_sd": held_sd,
                  "n_seeds": len(held_drops), "xi_gora": [h["xi_gora"] for h in held_out],
                  "xi_sgd": [h["xi_sgd"] for h in held_out], "control_sgd_step_drop": held_sgd,
                  "gora_share_of_sgd_drop": [g / c if c else float("nan") for g, c in zip(held_drops, held_sgd)],
                  "val_drop": [h["gora_drop"]["val"] for h in held_out],
                  "test_drop": [h["gora_drop"]["test"] for h in held_out],
                  "control_sgd_val_drop": [h["sgd_drop"]["val"] for h in held_out],
                  "control_sgd_test_drop": [h["sgd_drop"]["test"] for h in held_out],
                  "base_loss": [h["base_loss"] for h in held_out],
                  "val_loss_by_xi_seed0": {"gora": held_out[0]["gora_val_loss"], "sgd": held_out[0]["sgd_val_loss"]},
                  "xi_grid": list(XI_GRID)},
        criterion="xi* per seed = the grid value (5e-2 x 2^-k, k = 0..7; ties to the larger) with the lowest "
        "validation loss after the step; every seed's drop on the gradient batches > 0 and mean drop > 2 x its SD "
        "over seeds; control: the SGD step at its own xi* (same rule) lowers the loss on every seed",
        holds=bool(all(d > 0 for d in held_drops) and statistics.fmean(held_drops) > 2 * held_sd
                   and all(d > 0 for d in held_sgd) and max(gaps) < 1e-5),
        scale_note="xi* from the seed's validation split (100 images; not the gradient batches, not the test "
        f"split); N = {p.grad_batches} batches of {p.grad_batch_size}; head from a linear probe.",
    ))  # fmt: skip
    claims.extend(_descent_claims([r["one_over_l"] for r in per_seed], p))
    claims.extend(_descent_claims([r["shift_one_over_l"] for r in per_seed], p, prefix="shift-",
                                  task=f"digits-shift ({DIGITS_SHIFT} digits 0-4, pretrained head reused): ",
                                  head=f"pretrained digits-0-4 head reused; target: {DIGITS_SHIFT} 0-4"))  # fmt: skip
    infos: list[GoraInit] = [r["gora_init"] for r in rows]
    ratios = [i.realised / i.budget for i in infos]
    claims.append(Claim(
        id="budget-respected",
        statement="The allocated budget stays near LoRA's and every rank lies within [r_min, r_max].",
        paper=None,
        measured={"realised_over_budget": ratios, "min_rank": min(min(i.ranks.values()) for i in infos),
                  "max_rank": max(max(i.ranks.values()) for i in infos),
                  "ranks_seed0": infos[0].ranks},
        criterion=f"|realised/B - 1| <= {BUDGET_TOL} and 1 <= r_i <= 32 on every seed",
        # in integers: realised = 0.85 B is inside the tolerance, but in floats |0.85 - 1| = 0.15000000000000002
        # > 0.15 (it decided the first quick run, 2026-12-01; see README)
        holds=bool(all(abs(i.realised - i.budget) * 100 <= BUDGET_TOL_PERCENT * i.budget for i in infos)
                   and all(1 <= r <= 32 for i in infos for r in i.ranks.values())),
        scale_note=f"4 matrices (128x64, 3 x 128x128), r_ref={p.r_ref}.",
    ))  # fmt: skip
    share = [r["init_seconds"] / r["train_seconds"] for r in rows]
    claims.append(Claim(
        id="init-is-cheap",
        statement="GoRA's initialisation costs a small fraction of the training time.",
        paper="< 10 % of training time",
        measured={"init_seconds": [r["init_seconds"] for r in rows], "share": share},
        criterion=f"mean(init_seconds / train_seconds) < {INIT_COST_MAX}",
        holds=bool(statistics.fmean(share) < INIT_COST_MAX),
        scale_note=f"{p.grad_batches} gradient batches vs {p.steps} steps of a tiny MLP on CPU.",
    ))  # fmt: skip
    fixed_config: dict[str, Any] = {}
    if p.fixed_nets:
        fixed_claims, fixed_config = _fixed_net_part(p, seed)
        claims.extend(fixed_claims)
    summary = {m: {"mean": statistics.fmean(v), "se": _se(v), "lr": chosen.get(m),
                   "trainable": results[m][0]["trainable"] if m in results else 0,
                   "run_seconds": statistics.fmean(r["init_seconds"] + r["train_seconds"] for r in results[m])
                   if m in results else 0.0,
                   "init_seconds": statistics.fmean(r["init_seconds"] for r in results[m]) if m in results else 0.0}
               for m, v in acc.items()}  # fmt: skip
    figures = [_figure(results, infos[0], out_dir)]
    config = {
        "task": "digits-transfer", "profile": asdict(p), "gora": asdict(replace(_gora_config(p))), "seeds": seeds,
        "lr_search": {"grid": list(p.lr_grid), "seeds": [LR_SEED_OFFSET + i for i in range(p.lr_seeds)],
                      "validation_accuracy": grid, "chosen": chosen},
        "summary": summary,
        "phase_seconds": phases,
        "fixed_net": fixed_config,
    }  # fmt: skip
    notes = (
        "Test accuracy (mean ± SE over seeds; chosen lr; trainable parameters): "
        + "; ".join(f"{m} {v['mean']:.3f} ± {v['se']:.3f} (lr {v['lr']}; {v['trainable']})" for m, v in summary.items())
        + "."
    )
    return Report(package="gora", title=title, profile=profile, seed=seed, config=config, claims=claims,
                  wall_time_s=time.perf_counter() - start, figures=figures, notes=notes)  # fmt: skip


def _figure(results: dict[str, list[dict[str, Any]]], info: GoraInit, out_dir: Path) -> str:
    from nips25_gora.reproduce import _figure as figure

    return figure(results, info, out_dir)
