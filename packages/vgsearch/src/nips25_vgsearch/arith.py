"""A tiny real generator/PRM pair trained inside the package on modular-arithmetic chains.

Problem ``"7;+3;-5;+4"`` asks for :math:`((7+3)-5)+4 \\bmod 10`. A solution is one step per operation,
``"7+3=0\\n\\n0-5=5\\n\\n5+4=9"``. The generator is a small MLP policy that reads the step's operands (the previous
result and the next operation) and samples the result digit; it is trained on a noisy teacher (each result wrong
with probability ``teacher_error``, later steps computed from the written value), so it makes step errors like a
small LLM. The PRM is a GRU over the steps with a sigmoid head per step, trained on teacher traces labelled
"prefix correct so far". Both train in seconds on a CPU under ``accelerate``.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np
import torch
from torch import nn

from nips25_shared import cached, get_logger
from nips25_vgsearch.generator import STOP, Step, StepRequest, step_seed
from nips25_vgsearch.progress import progress

__all__ = [
    "ArithChainTask",
    "StepMLP",
    "StepPRMNet",
    "TinyGenerator",
    "TinyPRM",
    "evaluate_prm",
    "load_or_train_pair",
    "teacher_solution",
    "train_tiny_generator",
    "train_tiny_prm",
]

log = get_logger("nips25_vgsearch.arith")
_PROBLEM = re.compile(r"^\d(;[+-]\d)+$")
_STEP = re.compile(r"^(\d)([+-])(\d)=(\d)$")
_M = TypeVar("_M", bound=nn.Module)
N_FEATURES = 32  # one-hot previous value (10), op (2), operand (10), result (10)


def _check_problem(problem: str) -> list[tuple[str, int]]:
    if not isinstance(problem, str) or not _PROBLEM.match(problem):
        raise ValueError(f"problem is not an arithmetic chain like '7;+3;-5': {problem!r}")
    return [(op[0], int(op[1])) for op in problem.split(";")[1:]]


def _apply(value: int, op: str, d: int) -> int:
    return (value + d) % 10 if op == "+" else (value - d) % 10


@dataclass(frozen=True)
class ArithChainTask:
    """Modular-arithmetic chains with exactly checkable answers.

    Attributes:
        n_problems: number of problems.
        depth: operations per problem (= reasoning steps), in [1, 16].
        seed: seed of the problem draw.
    """

    n_problems: int = 100
    depth: int = 6
    seed: int = 0
    problems: list[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "problems", draw_problems(self.n_problems, self.depth, self.seed))

    def answer(self, problem: str) -> int:
        """The right final value.

        Raises:
            ValueError: if ``problem`` is not an arithmetic chain.
        """
        _check_problem(problem)
        value = int(problem[0])
        for op, d in _check_problem(problem):
            value = _apply(value, op, d)
        return value

    def is_correct(self, problem: str, completion: str) -> bool:
        """Whether the completion has one step per operation and its last result is the right final value.

        Raises:
            ValueError: if ``problem`` is not an arithmetic chain.
            TypeError: if ``completion`` is not a str.
        """
        if not isinstance(completion, str):
            raise TypeError(f"completion must be a str, got {type(completion).__name__}")
        steps = [s for s in completion.split(STOP) if s]
        found = re.findall(r"=(\d)$", steps[-1]) if steps else []
        return len(steps) == len(_check_problem(problem)) and bool(found) and int(found[0]) == self.answer(problem)


def draw_problems(n_problems: int, depth: int, seed: int, *, name: str = "depth", most: int = 16) -> list[str]:
    """``n_problems`` random chains of ``depth`` operations from seed ``seed``.

    Raises:
        ValueError: if ``n_problems`` is not an int >= 1 or ``depth`` (called ``name``) not an int in [1, ``most``].
    """
    if isinstance(n_problems, bool) or not isinstance(n_problems, int) or n_problems < 1:
        raise ValueError(f"n_problems must be an int >= 1, got {n_problems!r}")
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= most:
        raise ValueError(f"{name} must be an int in [1, {most}], got {depth!r}")
    rng = np.random.default_rng(seed)
    return [random_problem(rng, depth) for _ in range(n_problems)]


def random_problem(rng: np.random.Generator, depth: int) -> str:
    """A random chain of ``depth`` operations."""
    ops = [f"{'+-'[int(rng.integers(2))]}{int(rng.integers(10))}" for _ in range(depth)]
    return ";".join([str(int(rng.integers(10))), *ops])


def teacher_solution(problem: str, rng: np.random.Generator, *, error: float) -> tuple[str, list[bool]]:
    """A noisy teacher's solution and, per step, whether the prefix up to it is correct.

    Each step's result is replaced by a uniformly drawn wrong digit with probability ``error``; later steps
    compute from the written (possibly wrong) value, so errors propagate to the answer.
    """
    value = truth = int(problem[0])
    steps, labels = [], []
    for op, d in _check_problem(problem):
        out = _apply(value, op, d)
        truth = _apply(truth, op, d)
        if rng.random() < error:
            out = int((out + rng.integers(1, 10)) % 10)
        steps.append(f"{value}{op}{d}={out}")
        value = out
        labels.append(value == truth)
    return STOP.join(steps), labels


def _features(prev: int, op: str, d: int, result: int | None = None) -> np.ndarray:
    x = np.zeros(N_FEATURES, dtype=np.float32)
    x[prev] = 1.0
    x[10 + (op == "-")] = 1.0
    x[12 + d] = 1.0
    if result is not None:
        x[22 + result] = 1.0
    return x


def _one_hot_features(
    prev: np.ndarray, op: np.ndarray, d: np.ndarray, result: np.ndarray | None = None, flag: np.ndarray | None = None
) -> np.ndarray:
    """:func:`_features` of many steps at once: ints ``(B,)`` (``op`` 0 for ``+``, 1 for ``-``) -> ``(B, 32)``.

    With ``flag`` (bools ``(B,)``, the step kind of :mod:`nips25_vgsearch.repair`) a 33rd column holds it; a row with
    ``op`` of -1 has no operation (its op and operand columns stay zero).
    """
    x = np.zeros((len(prev), N_FEATURES + (flag is not None)), dtype=np.float32)
    rows = np.arange(len(prev))
    x[rows, prev] = 1.0
    has_op = op >= 0
    x[rows[has_op], 10 + op[has_op]] = 1.0
    x[rows[has_op], 12 + d[has_op]] = 1.0
    if result is not None:
        x[rows, 22 + result] = 1.0
    if flag is not None:
        x[:, N_FEATURES] = flag
    return x


def _parse_prefix(problem: str, prefix: str) -> list[tuple[int, str, int, int]]:
    """The steps of ``prefix`` as ``(previous value, op, operand, result)``; they must follow ``problem``."""
    ops = _check_problem(problem)
    steps: list[tuple[int, str, int, int]] = []
    for i, text in enumerate(s for s in prefix.split(STOP) if s):
        m = _STEP.match(text)
        if m is None:
            raise ValueError(f"prefix step {i} is not of the form 'a+b=c': {text!r}")
        step = (int(m.group(1)), m.group(2), int(m.group(3)), int(m.group(4)))
        prev = steps[-1][3] if steps else int(problem[0])
        if i >= len(ops) or step[:3] != (prev, *ops[i]):
            raise ValueError(
                f"prefix step {i} ({text!r}) does not follow problem {problem!r}: expected "
                + (f"'{prev}{ops[i][0]}{ops[i][1]}=...'" if i < len(ops) else f"at most {len(ops)} steps")
            )
        steps.append(step)
    return steps


class StepMLP(nn.Module):
    """The generator's policy: features of (previous value, op, operand) -> logits over the 10 result digits.

    Args:
        d_hidden: hidden width.
        n_features: input width (32; 33 with the step-kind flag of :mod:`nips25_vgsearch.repair`).
    """

    def __init__(self, d_hidden: int = 64, n_features: int = N_FEATURES) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_features, d_hidden), nn.ReLU(), nn.Linear(d_hidden, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` (B, n_features) -> logits (B, 10)."""
        return self.net(x)


class StepPRMNet(nn.Module):
    """The PRM: a GRU over per-step features (B, T, n_features) -> logit of "prefix correct" per step (B, T).

    Args:
        d_hidden: GRU width.
        n_features: input width (32; 33 with the step-kind flag of :mod:`nips25_vgsearch.repair`).
    """

    def __init__(self, d_hidden: int = 64, n_features: int = N_FEATURES) -> None:
        super().__init__()
        self.inp = nn.Linear(n_features, d_hidden)
        self.gru = nn.GRU(d_hidden, d_hidden, batch_first=True)
        self.head = nn.Linear(d_hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` (B, T, n_features) -> logits (B, T)."""
        y, _ = self.gru(torch.relu(self.inp(x)))
        return self.head(y)[..., 0]


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one intra-op thread inside the block (restored after).

    The tiny models' kernels are microseconds long: on a shared 2-core machine more threads only add
    synchronisation (PRM training measured 24 steps/s on one thread against 4 on two under load).
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _accelerator(accelerator: Any) -> Any:
    """``accelerator``, or a default :class:`accelerate.Accelerator` (device and processes of ``accelerate launch``)."""
    from accelerate import Accelerator

    if accelerator is None:
        return Accelerator()
    if not isinstance(accelerator, Accelerator):
        raise TypeError(f"accelerator must be an accelerate.Accelerator or None, got {type(accelerator).__name__}")
    return accelerator


def _train(
    model: _M, batch: Any, *, steps: int, batch_size: int, lr: float, loss_fn: Any, desc: str, accelerator: Any
) -> tuple[_M, float]:
    """Data-parallel Adam training under ``accelerate``; returns the unwrapped model on the CPU and the last loss.

    ``batch(t, rows)`` builds rows ``rows`` of the global batch of step ``t``; every row is drawn from its own seed,
    so process ``r`` of ``P`` builds only its shard ``[r B/P, (r+1) B/P)`` and the processes together see the
    same global batch as one process (DDP averages the shards' gradients, equal shards, so the update is the
    one-process update). The loss returned is the global batch's (averaged over processes).
    """
    accelerator = _accelerator(accelerator)
    world, rank = accelerator.num_processes, accelerator.process_index
    if batch_size % world:
        raise ValueError(f"batch_size ({batch_size}) must be a multiple of the number of processes ({world})")
    local = batch_size // world
    rows = range(rank * local, (rank + 1) * local)
    with one_thread():
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        wrapped, opt = accelerator.prepare(model, opt)
        wrapped.train()
        loss_value = math.nan
        for t in progress(range(steps), desc=desc, show=accelerator.is_main_process):
            x, y = batch(t, rows)
            loss = loss_fn(wrapped, x.to(accelerator.device), y.to(accelerator.device))
            opt.zero_grad()
            accelerator.backward(loss)
            opt.step()
            if t == steps - 1:
                loss_value = float(accelerator.reduce(loss.detach(), reduction="mean"))
    trained = accelerator.unwrap_model(wrapped)
    return cast(_M, trained.to("cpu").eval()), loss_value


def _check_depth(depth: int) -> None:
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 16:
        raise ValueError(f"depth must be an int in [1, 16] (as ArithChainTask), got {depth!r}")


def _check_training(steps: int, batch_size: int, teacher_error: float, *, lo: float) -> None:
    if steps < 1 or batch_size < 1:
        raise ValueError(f"steps and batch_size must be >= 1, got {steps}, {batch_size}")
    if not lo <= teacher_error < 1.0 or (teacher_error == 0.0 and lo > 0):
        raise ValueError(f"teacher_error must be in [{lo}, 1), got {teacher_error}")


def train_tiny_generator(
    *, steps: int = 300, batch_size: int = 256, teacher_error: float = 0.25, lr: float = 1e-2, seed: int = 0,
    accelerator: Any = None, d_hidden: int = 64, step_kind_flag: bool = False,
) -> tuple[StepMLP, float]:  # fmt: skip
    """Train the generator policy on noisy-teacher steps (cross-entropy of the written result digit).

    Data-parallel under ``accelerate``: each process draws its shard of every global batch (row ``i`` of step
    ``t`` from its own seed), so ``P`` processes give the one-process result (up to float summation order).

    Args:
        steps: optimiser steps.
        batch_size: global batch (all processes together); a multiple of the number of processes.
        teacher_error: probability that a teacher step's result is wrong, in [0, 1).
        lr: Adam learning rate.
        seed: seed of the initial weights and the data.
        accelerator: an :class:`accelerate.Accelerator`; ``None`` makes a default one (the device and the
            processes of ``accelerate launch``).
        d_hidden: the MLP's hidden width.
        step_kind_flag: add the 33rd input, a step-kind flag drawn per row (the compute and check steps of
            :mod:`nips25_vgsearch.repair`, which compute the same function); ``False`` keeps the 32-input model and
            its data stream.

    Returns:
        ``(model, final_loss)``: the trained model on the CPU (the search runs it there) and the last step's
        global-batch loss.

    Raises:
        ValueError: on ``steps < 1``, ``batch_size < 1`` or not a multiple of the processes, or ``teacher_error``
            outside [0, 1).
        TypeError: if ``accelerator`` is not an ``Accelerator``.

    Example:
        >>> model, loss = train_tiny_generator(steps=2, batch_size=8)
        >>> tuple(model(torch.zeros(1, N_FEATURES)).shape), loss > 0
        ((1, 10), True)
    """
    _check_training(steps, batch_size, teacher_error, lo=0.0)
    torch.manual_seed(seed)
    model = StepMLP(d_hidden, N_FEATURES + step_kind_flag)

    def batch(t: int, rows: range) -> tuple[torch.Tensor, torch.Tensor]:
        rng = np.random.default_rng((seed, t))  # the global batch's draws (cheap); this process's rows are kept
        prev, op, d = (
            rng.integers(10, size=batch_size),
            rng.integers(2, size=batch_size),
            rng.integers(10, size=batch_size),
        )
        wrong, shift = rng.random(batch_size) < teacher_error, rng.integers(1, 10, size=batch_size)
        sl = slice(rows.start, rows.stop)
        flag = (rng.random(batch_size) < 0.5)[sl] if step_kind_flag else None  # drawn last: the 32-input stream stays
        prev, op, d, wrong, shift = prev[sl], op[sl], d[sl], wrong[sl], shift[sl]
        y = np.where(op == 0, prev + d, prev - d) % 10
        y = np.where(wrong, (y + shift) % 10, y)
        return torch.from_numpy(_one_hot_features(prev, op, d, flag=flag)), torch.from_numpy(y)

    return _train(model, batch, steps=steps, batch_size=batch_size, lr=lr, loss_fn=_cross_entropy,
                  desc="train generator", accelerator=accelerator)  # fmt: skip


def _cross_entropy(m: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(m(x), y)


def _step_bce(m: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy of per-step PRM logits (B, T) against labels (B, T)."""
    return nn.functional.binary_cross_entropy_with_logits(m(x), y)


def _teacher_chains(
    rng: np.random.Generator, count: int, depth: int, error: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` noisy-teacher chains as PRM inputs (count, depth, 32) and "prefix correct" labels (count, depth)."""
    xs, ys = [], []
    for _ in range(count):
        problem = random_problem(rng, depth)
        sol, labels = teacher_solution(problem, rng, error=error)
        xs.append(np.stack([_features(*st) for st in _parse_prefix(problem, sol)]))
        ys.append(labels)
    return torch.from_numpy(np.stack(xs)), torch.tensor(ys, dtype=torch.float32)


def train_tiny_prm(
    *, steps: int = 300, batch_size: int = 128, depth: int = 6, teacher_error: float = 0.2, lr: float = 1e-2,
    seed: int = 0, accelerator: Any = None,
) -> tuple[StepPRMNet, float]:  # fmt: skip
    """Train the PRM: binary cross-entropy of "prefix correct" at every step of noisy-teacher traces.

    Data-parallel under ``accelerate`` as :func:`train_tiny_generator` (chain ``i`` of step ``t`` from its own seed).

    Args:
        steps: optimiser steps.
        batch_size: global batch of chains (all processes together); a multiple of the number of processes.
        depth: operations per chain, in [1, 16].
        teacher_error: probability that a teacher step is wrong, in (0, 1).
        lr: Adam learning rate.
        seed: seed of the initial weights and the data.
        accelerator: an :class:`accelerate.Accelerator`; ``None`` makes a default one.

    Returns:
        ``(model, final_loss)``: the trained model on the CPU and the last step's global-batch loss.

    Raises:
        ValueError: on ``steps < 1``, ``batch_size < 1`` or not a multiple of the processes, ``teacher_error``
            outside (0, 1) or ``depth`` outside [1, 16].
        TypeError: if ``accelerator`` is not an ``Accelerator``.

    Example:
        >>> model, loss = train_tiny_prm(steps=2, batch_size=4, depth=3)
        >>> tuple(model(torch.zeros(2, 3, N_FEATURES)).shape)
        (2, 3)
    """
    _check_training(steps, batch_size, teacher_error, lo=1e-9)
    _check_depth(depth)
    torch.manual_seed(seed + 1)
    model = StepPRMNet()

    def batch(t: int, rows: range) -> tuple[torch.Tensor, torch.Tensor]:
        rng = np.random.default_rng((seed + 1, t))  # the global batch's draws; this process's rows are kept
        shape = (batch_size, depth)
        value = truth = rng.integers(10, size=batch_size)
        op, d, u = rng.integers(2, size=shape), rng.integers(10, size=shape), rng.random(shape)
        shift = rng.integers(1, 10, size=shape)
        sl = slice(rows.start, rows.stop)
        value, truth, op, d, shift = value[sl], truth[sl], op[sl], d[sl], shift[sl]
        wrong = u[sl] < teacher_error
        feats, labels = [], []
        for k in range(depth):  # the noisy teacher of teacher_solution, vectorised over chains
            out = np.where(op[:, k] == 0, value + d[:, k], value - d[:, k]) % 10
            truth = np.where(op[:, k] == 0, truth + d[:, k], truth - d[:, k]) % 10
            out = np.where(wrong[:, k], (out + shift[:, k]) % 10, out)
            feats.append(_one_hot_features(value, op[:, k], d[:, k], out))
            labels.append(out == truth)
            value = out
        return torch.from_numpy(np.stack(feats, axis=1)), torch.from_numpy(np.stack(labels, axis=1).astype(np.float32))

    return _train(model, batch, steps=steps, batch_size=batch_size, lr=lr, loss_fn=_step_bce, desc="train PRM",
                  accelerator=accelerator)  # fmt: skip


@torch.no_grad()
@one_thread()
def evaluate_prm(
    model: StepPRMNet, *, depth: int = 6, n_chains: int = 1000, teacher_error: float = 0.2, seed: int = 12345
) -> dict[str, float]:
    """Held-out quality of a PRM on fresh noisy-teacher chains (the training distribution, new draws).

    Args:
        model: a :class:`StepPRMNet`.
        depth: operations per chain, in [1, 16].
        n_chains: held-out chains, ``>= 1``.
        teacher_error: per-step error rate of the teacher, in (0, 1).
        seed: seed of the held-out draw (apart from the training seeds).

    Returns:
        ``{"loss": mean binary cross-entropy per step, "step_acc": share of steps whose "prefix correct" label the
        PRM gets right at threshold 0.5}``.

    Raises:
        TypeError: if ``model`` is not a :class:`StepPRMNet`.
        ValueError: on ``depth``, ``n_chains`` or ``teacher_error`` out of range.
    """
    if not isinstance(model, StepPRMNet):
        raise TypeError(f"model must be a StepPRMNet, got {type(model).__name__}")
    if isinstance(n_chains, bool) or not isinstance(n_chains, int) or n_chains < 1:
        raise ValueError(f"n_chains must be an int >= 1, got {n_chains!r}")
    _check_training(1, 1, teacher_error, lo=1e-9)
    _check_depth(depth)
    x, y = _teacher_chains(np.random.default_rng(seed), n_chains, depth, teacher_error)
    logits = model.eval()(x)
    return {
        "loss": float(nn.functional.binary_cross_entropy_with_logits(logits, y)),
        "step_acc": float(((logits > 0).float() == y).float().mean()),
    }


def _n_params(model: nn.Module) -> float:
    return float(sum(p.numel() for p in model.parameters()))


class TinyGenerator:
    """The trained :class:`StepMLP` as a :class:`~nips25_vgsearch.generator.Generator` (batched, per-path seeds).

    Step ``k`` of a path writes ``"{prev}{op}{d}="`` and samples the result by inverse CDF from one uniform of
    ``step_seed(seed, k)``, so a path is the same whether sampled step by step or to the end. Tokens are
    characters.

    Args:
        model: a :class:`StepMLP`.
        temperature: sampling temperature, > 0 (the paper: 0.8).
    """

    def __init__(self, model: StepMLP, *, temperature: float = 0.8) -> None:
        if not isinstance(model, StepMLP):
            raise TypeError(f"model must be a StepMLP, got {type(model).__name__}")
        if not math.isfinite(temperature) or temperature <= 0:
            raise ValueError(f"temperature must be finite and > 0, got {temperature}")
        self.model = model.eval()
        self.temperature = float(temperature)
        self.n_params = _n_params(model)

    def count_tokens(self, text: str) -> int:
        """Characters (the tokens of this model)."""
        return len(text)

    @torch.no_grad()
    @one_thread()
    def step(self, requests: Sequence[StepRequest], *, to_eos: bool = False) -> list[Step]:
        """One step (or the rest of the chain) per request, batched over requests."""
        ops = [_check_problem(r.problem) for r in requests]
        value = []
        for i, r in enumerate(requests):
            parsed = _parse_prefix(r.problem, r.prefix)
            if r.depth != len(parsed):
                raise ValueError(f"requests[{i}].depth is {r.depth} but its prefix holds {len(parsed)} steps")
            value.append(parsed[-1][3] if parsed else int(r.problem[0]))
        depth = [r.depth for r in requests]
        texts: list[list[str]] = [[] for _ in requests]
        live = [i for i in range(len(requests)) if depth[i] < len(ops[i])]
        while live:
            x = np.stack([_features(value[i], *ops[i][depth[i]]) for i in live])
            probs = torch.softmax(self.model(torch.from_numpy(x)) / self.temperature, dim=-1).double().numpy()
            cdf = np.cumsum(probs, axis=1)
            for row, i in enumerate(live):
                u = np.random.default_rng(step_seed(requests[i].seed, depth[i])).random() * cdf[row, -1]
                result = min(int(np.searchsorted(cdf[row], u, side="right")), 9)
                op, d = ops[i][depth[i]]
                depth[i] += 1
                last = depth[i] >= len(ops[i])
                texts[i].append(f"{value[i]}{op}{d}={result}" + ("" if last else STOP))
                value[i] = result
            live = [i for i in live if to_eos and depth[i] < len(ops[i])]
        out = []
        for i in range(len(requests)):
            text = "".join(texts[i])
            out.append(Step(text, len(text), max(1, len(texts[i])), depth[i] >= len(ops[i])))
        return out


class TinyPRM:
    """The trained :class:`StepPRMNet` as a :class:`~nips25_vgsearch.verifier.Verifier`.

    Scores are batched with right padding; the GRU is causal, so they equal one-by-one scores.

    Args:
        model: a :class:`StepPRMNet`.
    """

    def __init__(self, model: StepPRMNet) -> None:
        if not isinstance(model, StepPRMNet):
            raise TypeError(f"model must be a StepPRMNet, got {type(model).__name__}")
        self.model = model.eval()
        self.n_params = _n_params(model)

    @torch.no_grad()
    @one_thread()
    def score(self, problems: Sequence[str], prefixes: Sequence[str]) -> list[list[float]]:
        """Per-step scores of each prefix."""
        if len(problems) != len(prefixes):
            raise ValueError(f"problems and prefixes must have the same length, got {len(problems)}, {len(prefixes)}")
        if not problems:
            return []
        parsed = []
        for i, (p, s) in enumerate(zip(problems, prefixes)):
            parsed.append(self._steps(p, s))
            if not parsed[-1]:
                raise ValueError(f"prefixes[{i}] is empty: the PRM scores steps")
        lengths = np.array([len(s) for s in parsed])
        rows = np.repeat(np.arange(len(parsed)), lengths)
        cols = np.concatenate([np.arange(n) for n in lengths])
        feats = self._step_features([st for s in parsed for st in s])  # all steps of all prefixes at once
        x = np.zeros((len(parsed), int(lengths.max()), feats.shape[1]), dtype=np.float32)
        x[rows, cols] = feats
        probs = torch.sigmoid(self.model(torch.from_numpy(x))).numpy().astype(float)
        return [probs[i, :n].tolist() for i, n in enumerate(lengths.tolist())]

    @staticmethod
    def _steps(problem: str, prefix: str) -> Sequence[tuple[Any, ...]]:
        """The parsed steps of ``prefix`` (raises ``ValueError`` if it does not follow ``problem``)."""
        _check_problem(problem)
        return _parse_prefix(problem, prefix)

    @staticmethod
    def _step_features(steps: Sequence[tuple[Any, ...]]) -> np.ndarray:
        """Features (N, n_features) of the parsed steps of all prefixes, concatenated."""
        return np.stack([_features(*st) for st in steps])


class _NotCached(Exception):
    """Raised by a build function to look a cache entry up without building it."""


def _not_cached() -> dict[str, np.ndarray]:
    raise _NotCached


def _cached_or_trained(key: str, train: Any, accelerator: Any) -> dict[str, np.ndarray]:
    """The cache entry ``key``, or ``train()`` run on every process and written by the main process only.

    Every process takes part in the training (its gradients are averaged), so the decision to train is the main
    process's, broadcast to the others; the main process writes the entry, the others wait and read it back.
    """
    from accelerate.utils import broadcast_object_list

    hit: list[Any] = [None]
    if accelerator.is_main_process:
        with contextlib.suppress(_NotCached):
            hit[0] = cached(key, _not_cached)
    if accelerator.num_processes > 1:
        hit = broadcast_object_list([hit[0] is not None])
        found = bool(hit[0])
    else:
        found = hit[0] is not None
    if not found:
        model, loss = train()
        arrays = {**{k: v.numpy() for k, v in model.state_dict().items()}, "__loss__": np.array(loss)}
        if accelerator.is_main_process:
            cached(key, lambda: arrays)
    accelerator.wait_for_everyone()
    return cached(key, _not_cached)


def _load_weights(model: _M, arrays: dict[str, np.ndarray]) -> _M:
    """``model`` with the weights of a cache entry written by :func:`_cached_or_trained`, in eval mode."""
    model.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in arrays.items() if k != "__loss__"})
    return model.eval()


def load_or_train_pair(
    *, gen_steps: int = 300, prm_steps: int = 1500, seed: int = 0, depth: int = 6, accelerator: Any = None
) -> tuple[TinyGenerator, TinyPRM, dict[str, Any]]:
    """The tiny generator and PRM, trained once per setting and kept in the nips25 cache (``cached``).

    The generator's held-out cross-entropy is 1.23 nats at the default 300 steps and 1.17 at 900, against its
    teacher's noise floor of 1.11 (measured on 20000 fresh steps with 0.2.0's data stream; 0.1.0 stated about
    1.11 at 300 steps), so it stays a little worse than its teacher; the PRM's held-out loss is about 0.09 at
    1500 steps (0.25 at 300). Under
    ``accelerate launch`` every process trains its shard and only the main process writes the cache entries
    (after :meth:`~accelerate.Accelerator.wait_for_everyone`).

    Args:
        gen_steps, prm_steps: optimiser steps of :func:`train_tiny_generator` and :func:`train_tiny_prm`.
        seed: seed of both trainings.
        depth: operations per chain of the PRM's training traces, in [1, 16].
        accelerator: an :class:`accelerate.Accelerator`; ``None`` makes a default one.

    Returns:
        ``(generator, prm, info)`` with parameter counts, final training losses and the PRM's held-out quality
        (:func:`evaluate_prm`) in ``info``.
    """
    accelerator = _accelerator(accelerator)
    g_arr = _cached_or_trained(
        f"vgsearch/arith-gen-v3-s{gen_steps}-seed{seed}",
        lambda: train_tiny_generator(steps=gen_steps, seed=seed, accelerator=accelerator), accelerator,
    )  # fmt: skip
    p_arr = _cached_or_trained(
        f"vgsearch/arith-prm-v3-d{depth}-s{prm_steps}-seed{seed}",
        lambda: train_tiny_prm(steps=prm_steps, depth=depth, seed=seed, accelerator=accelerator), accelerator,
    )  # fmt: skip

    gen = TinyGenerator(_load_weights(StepMLP(), g_arr))
    prm = TinyPRM(_load_weights(StepPRMNet(), p_arr))
    info = {
        "gen_params": gen.n_params,
        "prm_params": prm.n_params,
        "gen_loss": float(g_arr["__loss__"]),
        "prm_loss": float(p_arr["__loss__"]),
        "gen_train_steps": gen_steps,
        "prm_train_steps": prm_steps,
        **{f"prm_heldout_{k}": v for k, v in evaluate_prm(prm.model, depth=depth).items()},
    }
    return gen, prm, info
