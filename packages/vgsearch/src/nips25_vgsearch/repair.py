"""Arithmetic chains with checks: a task where verification granularity matters for a tiny trained pair.

Issue 34, item 5 (README, "0.2.4 design"). Problem ``"7;+3;-5"`` asks for :math:`(7+3)-5 \\bmod 10`. Step 1 is a
*check* of operation 1 from the start value; every later operation gets a *compute* step ``"t:a+d=c"`` from the
last check's value ``a`` followed by a *check* step ``"t:check a+d=c"`` that redoes the same operation from the same
``a``. Later steps read only the checks, so a wrong compute step is repaired by the next check, a wrong check is
absorbing, and the answer is the last check's value. ``t`` is a phrasing tag (one of 26 letters, drawn uniformly),
so two paths rarely write the same text. A solution of ``k`` operations has ``2k - 1`` steps; the checks are the odd
steps (1-based), which ``g = 2`` branches exactly.

The generator is :class:`~nips25_vgsearch.arith.StepMLP` with a step-kind flag (33 inputs), the PRM
:class:`~nips25_vgsearch.arith.StepPRMNet` over the same features plus the written result, labelled "the step's
value is the true running value" (so its score rises again after a repair). :class:`RepairOracle` is the exact
checker, the positive control's PRM.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from nips25_vgsearch.arith import (
    N_FEATURES,
    StepMLP,
    StepPRMNet,
    TinyGenerator,
    TinyPRM,
    _accelerator,
    _cached_or_trained,
    _check_problem,
    _check_training,
    _load_weights,
    _one_hot_features,
    _step_bce,
    _train,
    draw_problems,
    one_thread,
    train_tiny_generator,
)
from nips25_vgsearch.generator import STOP, Step, StepRequest
from nips25_vgsearch.simulator import _MASK, _step_draws

__all__ = [
    "ArithRepairTask",
    "RepairGenerator",
    "RepairOracle",
    "RepairPRM",
    "evaluate_repair_pair",
    "load_or_train_repair_pair",
    "repair_steps",
    "train_repair_prm",
]

TAGS = "abcdefghijklmnopqrstuvwxyz"
N_REPAIR_FEATURES = N_FEATURES + 1  # + the step-kind flag (1 for a check)
#: Generator hidden width: PRM/generator parameters about 4.7, the paper's 7B/1.5B (README, "0.2.4 design").
GEN_HIDDEN = 135
_STEP = re.compile(r"^([a-z]):(check )?(\d)([+-])(\d)=(\d)$")


def repair_steps(n_ops: int) -> int:
    """Steps of a solution of ``n_ops`` operations: one check, then a compute and a check per later operation."""
    return 2 * n_ops - 1


def _op_index(k: int) -> int:
    """The operation (0-based) that step ``k`` (0-based) works on; step ``k`` is a check iff ``k`` is even."""
    return (k + 1) // 2


@functools.lru_cache(maxsize=1 << 16)
def _ops(problem: str) -> tuple[tuple[str, int], ...]:
    """The problem's operations (validated once per problem text)."""
    return tuple(_check_problem(problem))


@functools.lru_cache(maxsize=1 << 16)
def _truths(problem: str) -> tuple[int, ...]:
    """The true running value after each operation."""
    value, out = int(problem[0]), []
    for op, d in _ops(problem):
        value = (value + d) % 10 if op == "+" else (value - d) % 10
        out.append(value)
    return tuple(out)


@functools.lru_cache(maxsize=1 << 17)
def _parse(problem: str, prefix: str) -> tuple[tuple[int, int, int, int, bool], ...]:
    """The steps of ``prefix`` as ``(a, op (0: +, 1: -), operand, result, is_check)``, checked against ``problem``.

    Cached and built from the prefix one step shorter, so a search's growing prefixes cost one regex each.
    """
    body = prefix[: -len(STOP)] if prefix.endswith(STOP) else prefix
    if not body:
        _ops(problem)
        return ()
    cut = body.rfind(STOP)
    head = _parse(problem, body[: cut + len(STOP)]) if cut >= 0 else _parse(problem, "")
    text = body[cut + len(STOP) :] if cut >= 0 else body
    ops = _ops(problem)
    k = len(head)
    m = _STEP.match(text)
    if m is None:
        raise ValueError(f"prefix step {k} is not of the form 't:a+d=c' or 't:check a+d=c': {text!r}")
    is_check = m.group(2) is not None
    a, op, d, c = int(m.group(3)), m.group(4), int(m.group(5)), int(m.group(6))
    last = next((s[3] for s in reversed(head) if s[4]), int(problem[0]))
    j = _op_index(k)
    if k >= repair_steps(len(ops)) or is_check != (k % 2 == 0) or (a, op, d) != (last, *ops[j]):
        kind = "check " if k % 2 == 0 else ""
        expected = (f"'t:{kind}{last}{ops[j][0]}{ops[j][1]}=...'" if k < repair_steps(len(ops))
                    else f"at most {repair_steps(len(ops))} steps")  # fmt: skip
        raise ValueError(f"prefix step {k} ({text!r}) does not follow problem {problem!r}: expected {expected}")
    return (*head, (a, int(op == "-"), d, c, is_check))


@dataclass(frozen=True)
class ArithRepairTask:
    """Modular-arithmetic chains whose every operation after the first is computed and then checked.

    Attributes:
        n_problems: number of problems, ``>= 1``.
        n_ops: operations per problem, in [1, 8] (``2 n_ops - 1`` steps).
        seed: seed of the problem draw.
    """

    n_problems: int = 600
    n_ops: int = 6
    seed: int = 0

    def __post_init__(self) -> None:
        self.problems  # noqa: B018  (drawn and validated at construction)

    @functools.cached_property
    def problems(self) -> list[str]:
        """The problems, ``n_problems`` chains of ``n_ops`` operations drawn from ``seed``."""
        return draw_problems(self.n_problems, self.n_ops, self.seed, name="n_ops", most=8)

    @property
    def depth(self) -> int:
        """Steps per solution."""
        return repair_steps(self.n_ops)

    def answer(self, problem: str) -> int:
        """The right final value.

        Raises:
            ValueError: if ``problem`` is not an arithmetic chain.
        """
        return _truths(problem)[-1]

    def is_correct(self, problem: str, completion: str) -> bool:
        """Whether the completion is a full solution whose last check holds the right final value.

        Raises:
            ValueError: if ``problem`` is not an arithmetic chain, or ``completion`` does not follow it.
            TypeError: if ``completion`` is not a str.
        """
        if not isinstance(completion, str):
            raise TypeError(f"completion must be a str, got {type(completion).__name__}")
        steps = _parse(problem, completion)
        return len(steps) == repair_steps(len(_check_problem(problem))) and steps[-1][3] == self.answer(problem)

    def solution(self, problem: str, *, tag: str = "a") -> str:
        """The right solution (every step right), all steps with phrasing tag ``tag``."""
        ops, truths = _check_problem(problem), _truths(problem)
        steps, last = [], int(problem[0])
        for k in range(repair_steps(len(ops))):
            j = _op_index(k)
            steps.append(f"{tag}:{'check ' if k % 2 == 0 else ''}{last}{ops[j][0]}{ops[j][1]}={truths[j]}")
            if k % 2 == 0:
                last = truths[j]
        return STOP.join(steps)

    def oracle(self) -> RepairOracle:
        """The exact checker as a PRM (the positive control)."""
        return RepairOracle()


class RepairOracle:
    """The exact checker as a :class:`~nips25_vgsearch.verifier.Verifier`: per step 0.9975 if the step's value is
    the true running value, else 0.0025 (sigma(+-6), the simulator control's oracle scale)."""

    n_params = 0.0
    HIGH, LOW = 1.0 / (1.0 + math.exp(-6.0)), 1.0 / (1.0 + math.exp(6.0))

    def score(self, problems: Sequence[str], prefixes: Sequence[str]) -> list[list[float]]:
        """Per-step scores of each prefix."""
        if len(problems) != len(prefixes):
            raise ValueError(f"problems and prefixes must have the same length, got {len(problems)}, {len(prefixes)}")
        out = []
        for p, s in zip(problems, prefixes):
            truths = _truths(p)
            out.append([self.HIGH if st[3] == truths[_op_index(k)] else self.LOW for k, st in enumerate(_parse(p, s))])
        return out


def _gen_features(a: np.ndarray, op: np.ndarray, d: np.ndarray, is_check: np.ndarray) -> np.ndarray:
    return _one_hot_features(a, op, d, flag=is_check)


class RepairGenerator(TinyGenerator):
    """The trained 33-input :class:`~nips25_vgsearch.arith.StepMLP` as a generator of repair-task solutions.

    Step ``k`` of a path samples its result by inverse CDF (temperature ``temperature``) and its phrasing tag
    uniformly, from the two uniforms of the path's counter-based hash at ``k`` (the simulator's), so a path is the
    same step by step or to the end and in any batch. Tokens are characters.

    Args:
        model: a :class:`StepMLP` with 33 inputs.
        temperature: sampling temperature, > 0 (the paper: 0.8).
    """

    def __init__(self, model: StepMLP, *, temperature: float = 0.8) -> None:
        if not isinstance(model, StepMLP) or model.net[0].in_features != N_REPAIR_FEATURES:
            raise TypeError(f"model must be a StepMLP with {N_REPAIR_FEATURES} inputs, got {model!r}")
        super().__init__(model, temperature=temperature)

    @torch.no_grad()
    @one_thread()
    def step(self, requests: Sequence[StepRequest], *, to_eos: bool = False) -> list[Step]:
        """One step (or the rest of the solution) per request, batched over requests."""
        if not requests:
            return []
        ops = [_ops(r.problem) for r in requests]
        last, depth = [], []
        for i, r in enumerate(requests):
            parsed = _parse(r.problem, r.prefix)
            if r.depth != len(parsed):
                raise ValueError(f"requests[{i}].depth is {r.depth} but its prefix holds {len(parsed)} steps")
            last.append(next((s[3] for s in reversed(parsed) if s[4]), int(r.problem[0])))
            depth.append(r.depth)
        a = np.array(last, dtype=np.int64)
        k = np.array(depth, dtype=np.int64)
        total = np.array([repair_steps(len(o)) for o in ops], dtype=np.int64)
        op_code = np.zeros((len(ops), max(len(row) for row in ops)), dtype=np.int64)
        operand = np.zeros_like(op_code)
        for i, row in enumerate(ops):
            op_code[i, : len(row)] = [o == "-" for o, _ in row]
            operand[i, : len(row)] = [d for _, d in row]
        seeds = np.array([r.seed & _MASK for r in requests], dtype=np.uint64)
        texts: list[list[str]] = [[] for _ in requests]
        live = np.arange(len(requests))[k < total]
        while live.size:
            j = (k[live] + 1) // 2
            op, d = op_code[live, j], operand[live, j]
            is_check = k[live] % 2 == 0
            logits = self.model(torch.from_numpy(_gen_features(a[live], op, d, is_check)))
            cdf = np.cumsum(torch.softmax(logits / self.temperature, dim=-1).double().numpy(), axis=1)
            u, u_tag, _ = _step_draws(seeds[live], k[live])
            result = np.minimum((cdf < (u * cdf[:, -1])[:, None]).sum(axis=1), 9)
            tag = np.minimum((u_tag * len(TAGS)).astype(np.int64), len(TAGS) - 1)
            ends = (k[live] + 1 >= total[live]).tolist()
            for i, tg, chk, ai, oi, di, ri, end in zip(
                live.tolist(),
                tag.tolist(),
                is_check.tolist(),
                a[live].tolist(),
                op.tolist(),
                d.tolist(),
                result.tolist(),
                ends,
            ):
                texts[i].append(f"{TAGS[tg]}:{'check ' if chk else ''}{ai}{'+-'[oi]}{di}={ri}" + ("" if end else STOP))
            a[live] = np.where(is_check, result, a[live])
            k[live] += 1
            live = live[k[live] < total[live]] if to_eos else live[:0]
        return [Step("".join(t), len("".join(t)), max(1, len(t)), bool(k[i] >= total[i])) for i, t in enumerate(texts)]


def _prm_features(steps: Sequence[tuple[int, int, int, int, bool]]) -> np.ndarray:
    a, op, d, c, f = (np.array(col) for col in zip(*steps))
    return _one_hot_features(a, op, d, c, flag=f.astype(bool))


class RepairPRM(TinyPRM):
    """The trained 33-input :class:`~nips25_vgsearch.arith.StepPRMNet` as a verifier of repair-task prefixes.

    Scores are batched with right padding; the GRU is causal, so they equal one-by-one scores.

    Args:
        model: a :class:`StepPRMNet` with 33 inputs.
    """

    def __init__(self, model: StepPRMNet) -> None:
        if not isinstance(model, StepPRMNet) or model.inp.in_features != N_REPAIR_FEATURES:
            raise TypeError(f"model must be a StepPRMNet with {N_REPAIR_FEATURES} inputs, got {model!r}")
        super().__init__(model)

    _steps = staticmethod(_parse)
    _step_features = staticmethod(_prm_features)


def _teacher_batch(
    rng: np.random.Generator, count: int, n_ops: int, error: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``count`` noisy-teacher solutions: PRM features (count, steps, 33), labels "value right" (count, steps), and
    "is check" (steps,). Every step's result is wrong (a uniform other digit) with probability ``error``."""
    n_steps = repair_steps(n_ops)
    start = rng.integers(10, size=count)
    op, d = rng.integers(2, size=(count, n_ops)), rng.integers(10, size=(count, n_ops))
    wrong, shift = rng.random((count, n_steps)) < error, rng.integers(1, 10, size=(count, n_steps))
    a, truth = start.copy(), start.copy()
    feats, labels, kinds = [], [], []
    for k in range(n_steps):
        j, is_check = _op_index(k), k % 2 == 0
        if is_check:
            truth = np.where(op[:, j] == 0, truth + d[:, j], truth - d[:, j]) % 10
        out = np.where(op[:, j] == 0, a + d[:, j], a - d[:, j]) % 10
        out = np.where(wrong[:, k], (out + shift[:, k]) % 10, out)
        feats.append(_one_hot_features(a, op[:, j], d[:, j], out, flag=np.full(count, is_check)))
        labels.append(out == truth)
        kinds.append(is_check)
        if is_check:
            a = out
    return np.stack(feats, axis=1), np.stack(labels, axis=1).astype(np.float32), np.array(kinds)


def train_repair_prm(
    *, steps: int = 1500, batch_size: int = 128, n_ops: int = 6, teacher_error: float = 0.5, lr: float = 1e-2,
    seed: int = 0, accelerator: Any = None,
) -> tuple[StepPRMNet, float]:  # fmt: skip
    """Train the repair task's PRM: binary cross-entropy of "the step's value is right" on noisy-teacher solutions.

    Data-parallel under ``accelerate`` as :func:`~nips25_vgsearch.arith.train_tiny_prm` (each process builds its
    shard of every global batch drawn from the step's seed).

    Args:
        steps: optimiser steps.
        batch_size: global batch of solutions; a multiple of the number of processes.
        n_ops: operations per training chain, in [1, 8].
        teacher_error: probability that a teacher step is wrong, in (0, 1).
        lr: Adam learning rate.
        seed: seed of the initial weights and the data.
        accelerator: an :class:`accelerate.Accelerator`; ``None`` makes a default one.

    Returns:
        ``(model, final_loss)``.

    Raises:
        ValueError: on out-of-range arguments.

    Example:
        >>> model, loss = train_repair_prm(steps=2, batch_size=4, n_ops=2)
        >>> tuple(model(torch.zeros(2, 3, N_REPAIR_FEATURES)).shape)
        (2, 3)
    """
    _check_training(steps, batch_size, teacher_error, lo=1e-9)
    if isinstance(n_ops, bool) or not isinstance(n_ops, int) or not 1 <= n_ops <= 8:
        raise ValueError(f"n_ops must be an int in [1, 8], got {n_ops!r}")
    torch.manual_seed(seed + 2)
    model = StepPRMNet(n_features=N_REPAIR_FEATURES)

    def batch(t: int, rows: range) -> tuple[torch.Tensor, torch.Tensor]:
        x, y, _ = _teacher_batch(np.random.default_rng((seed + 2, t)), batch_size, n_ops, teacher_error)
        return torch.from_numpy(x[rows.start : rows.stop]), torch.from_numpy(y[rows.start : rows.stop])

    return _train(model, batch, steps=steps, batch_size=batch_size, lr=lr, loss_fn=_step_bce,
                  desc="train repair PRM", accelerator=accelerator)  # fmt: skip


@torch.no_grad()
@one_thread()
def evaluate_repair_pair(
    gen: RepairGenerator, prm: RepairPRM, *, n_ops: int = 6, n_chains: int = 1000, teacher_error: float = 0.5,
    seed: int = 54321,
) -> dict[str, float]:  # fmt: skip
    """Held-out quality: the PRM's step accuracy (threshold 0.5) on fresh noisy-teacher solutions, and the
    generator's expected per-step correctness (its sampling distribution at its temperature, averaged over every
    ``(a, op, d)``) on compute and on check steps."""
    x, y, kinds = _teacher_batch(np.random.default_rng(seed), n_chains, n_ops, teacher_error)
    logits = prm.model(torch.from_numpy(x)).numpy()
    right = (logits > 0) == (y > 0.5)
    a, op, d = (g.ravel() for g in np.meshgrid(np.arange(10), np.arange(2), np.arange(10), indexing="ij"))
    truth = np.where(op == 0, a + d, a - d) % 10
    out = {"prm_heldout_step_acc": float(right.mean()), "prm_heldout_step_acc_check": float(right[:, kinds].mean()),
           "prm_heldout_step_acc_compute": float(right[:, ~kinds].mean()) if (~kinds).any() else math.nan}  # fmt: skip
    for name, flag in (("compute", False), ("check", True)):
        logit = gen.model(torch.from_numpy(_gen_features(a, op, d, np.full(a.size, flag)))) / gen.temperature
        out[f"gen_step_correct_{name}"] = float(torch.softmax(logit, -1).numpy()[np.arange(a.size), truth].mean())
    return out


def load_or_train_repair_pair(
    *, gen_steps: int = 300, prm_steps: int = 1500, seed: int = 0, n_ops: int = 6, gen_teacher_error: float = 0.6,
    prm_teacher_error: float = 0.5, accelerator: Any = None,
) -> tuple[RepairGenerator, RepairPRM, dict[str, Any]]:  # fmt: skip
    """The repair task's generator and PRM, trained once per setting and kept in the nips25 cache.

    The generator is :func:`~nips25_vgsearch.arith.train_tiny_generator` with the step-kind flag and hidden width
    135 on a teacher wrong ``gen_teacher_error`` of the time; the PRM is :func:`train_repair_prm`. Only the main
    process writes the cache entries.

    Returns:
        ``(generator, prm, info)``: parameter counts, final losses and :func:`evaluate_repair_pair` in ``info``.
    """
    accelerator = _accelerator(accelerator)
    g_arr = _cached_or_trained(
        f"vgsearch/repair-gen-v1-h{GEN_HIDDEN}-e{gen_teacher_error}-s{gen_steps}-seed{seed}",
        lambda: train_tiny_generator(steps=gen_steps, seed=seed, teacher_error=gen_teacher_error, d_hidden=GEN_HIDDEN,
                                     step_kind_flag=True, accelerator=accelerator), accelerator,
    )  # fmt: skip
    p_arr = _cached_or_trained(
        f"vgsearch/repair-prm-v1-o{n_ops}-e{prm_teacher_error}-s{prm_steps}-seed{seed}",
        lambda: train_repair_prm(steps=prm_steps, n_ops=n_ops, teacher_error=prm_teacher_error, seed=seed,
                                 accelerator=accelerator), accelerator,
    )  # fmt: skip
    gen = RepairGenerator(_load_weights(StepMLP(GEN_HIDDEN, N_REPAIR_FEATURES), g_arr))
    prm = RepairPRM(_load_weights(StepPRMNet(n_features=N_REPAIR_FEATURES), p_arr))
    info = {
        "gen_params": gen.n_params, "prm_params": prm.n_params, "gen_loss": float(g_arr["__loss__"]),
        "prm_loss": float(p_arr["__loss__"]), "gen_train_steps": gen_steps, "prm_train_steps": prm_steps,
        "gen_teacher_error": gen_teacher_error, "prm_teacher_error": prm_teacher_error,
        **evaluate_repair_pair(gen, prm, n_ops=n_ops, teacher_error=prm_teacher_error),
    }  # fmt: skip
    return gen, prm, info
