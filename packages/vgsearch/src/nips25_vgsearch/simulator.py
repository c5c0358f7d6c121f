"""A calibrated simulator of step-wise reasoning with a noisy, autocorrelated process reward model.

Used for fast sweeps over ``g`` and ``n`` at the paper's model sizes (1.5B generator, 7B PRM) on a MATH-500-like
mix of difficulty levels. It is a model of the paper's setting, not the paper's models: every parameter is a
documented choice (README, "Choices").
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from nips25_vgsearch.generator import STOP, Step, StepRequest, is_int

__all__ = ["MATH500_LEVEL_MIX", "SimGenerator", "SimPRM", "StepChainTask", "consecutive_gap_share"]

#: Problems per difficulty level 1..5 in MATH-500 (43, 90, 105, 128, 134 of 500).
MATH500_LEVEL_MIX: tuple[float, ...] = (43 / 500, 90 / 500, 105 / 500, 128 / 500, 134 / 500)
_PROBLEM = re.compile(r"^stepchain#(\d+) q=([0-9.]+) depth=(\d+) tokens=(\d+)$")
_STEP = re.compile(r"\[(\d+)\|(ok|err)\|(\d+)\|(\d+)\]")
_MASK = (1 << 64) - 1
_NORMAL = NormalDist()


def _splitmix(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def _normal(*keys: int) -> float:
    """A standard normal that is a pure function of integer keys (fast, no RNG object)."""
    x = 0
    for k in keys:
        x = _splitmix(x ^ (k & _MASK))
    u = ((x >> 11) + 0.5) / float(1 << 53)
    return _NORMAL.inv_cdf(u)


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def _check_unit(values: Sequence[float], name: str, *, lo: float = 0.0, hi: float = 1.0) -> tuple[float, ...]:
    out = tuple(float(v) for v in values)
    if not out:
        raise ValueError(f"{name} must be non-empty")
    if not all(math.isfinite(v) and lo < v < hi for v in out):
        raise ValueError(f"{name} must hold finite values in ({lo}, {hi}), got {out}")
    return out


@dataclass(frozen=True)
class StepChainTask:
    r"""Problems whose solutions are chains of steps; each step is right or wrong, errors mostly absorbing.

    Problem :math:`i` has level :math:`d_i \sim` ``level_mix``, depth :math:`L_{d}` and per-step correctness
    :math:`q_i = \sigma(\mathrm{logit}(q_{d}) + \delta_i)`, :math:`\delta_i \sim N(0, \text{q\_spread}^2)`. A
    (decision) step after a correct prefix is correct with probability :math:`q_i`; after an error it recovers with
    probability ``recovery``. Steps have :math:`1 + \mathrm{Poisson}(\lambda - 1)` tokens. The answer is right iff the
    prefix is correct after the last step. The PRM (:class:`SimPRM`) is

    .. math::
        z_1 = \mu_1 + b + \sigma_1\epsilon_1,\quad
        z_t = \rho z_{t-1} + (1-\rho)(\mu_t + b) + \sigma_\epsilon \epsilon_t,\quad s_t = \sigma(z_t),

    with a per-path bias :math:`b \sim N(0, \tau^2)` and :math:`\mu_t = +a` until the PRM has *noticed* an error
    in the prefix, :math:`-a` after: at each step of an incorrect prefix the PRM notices with probability
    ``prm_detect`` (and then stays convinced), so errors are caught late, as with real PRMs whose consecutive
    scores rarely move (the paper: < 1% change for more than half of the steps).

    Attributes:
        n_problems: number of problems.
        level_mix: probabilities of levels 1..K (default MATH-500's mix).
        depth_by_level: chain length per level.
        q_by_level: per-step correctness per level, in (0, 1).
        q_spread: sd of the per-problem logit offset of ``q``.
        recovery: probability that a step after an error makes the prefix correct again.
        decision_period: :math:`p \ge 1`; only steps :math:`1, 1 + p, 1 + 2p, \dots` (decision steps) can go
            wrong or recover, the steps between (routine steps) keep the prefix's state, so a PRM score that tracks
            the state does not move over them. ``1`` (default): every step is a decision step. The positive
            control plants the paper's premise (verifications that add nothing) with ``p = 2``.
        tokens_per_step: mean tokens per step :math:`\lambda`.
        problem_tokens: tokens of each problem statement.
        prm_signal: :math:`a`; prm_bias: :math:`\tau`; prm_first_noise: :math:`\sigma_1`;
        prm_noise: :math:`\sigma_\epsilon`; rho: :math:`\rho \in [0, 1)`; prm_detect: probability per step of
        noticing an error in the prefix, in (0, 1].
        seed: seed of the problem draw (levels, ``q_i``); the PRM noise is a function of the step texts.
    """

    n_problems: int = 200
    level_mix: tuple[float, ...] = MATH500_LEVEL_MIX
    depth_by_level: tuple[int, ...] = (3, 4, 5, 6, 8)
    q_by_level: tuple[float, ...] = (0.97, 0.94, 0.91, 0.88, 0.85)
    q_spread: float = 1.0
    recovery: float = 0.05
    decision_period: int = 1
    tokens_per_step: float = 60.0
    problem_tokens: int = 100
    prm_signal: float = 3.0
    prm_bias: float = 1.0
    prm_first_noise: float = 1.0
    prm_noise: float = 0.1
    rho: float = 0.8
    prm_detect: float = 0.5
    seed: int = 0
    problems: list[str] = field(init=False, repr=False)
    levels: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.n_problems, bool) or not isinstance(self.n_problems, int) or self.n_problems < 1:
            raise ValueError(f"n_problems must be an int >= 1, got {self.n_problems!r}")
        mix = np.asarray(self.level_mix, dtype=float)
        if mix.ndim != 1 or mix.size == 0 or not np.all(np.isfinite(mix)) or np.any(mix < 0) or mix.sum() <= 0:
            raise ValueError(f"level_mix must be a non-empty vector of finite non-negative weights, got {mix}")
        q = _check_unit(self.q_by_level, "q_by_level")
        if len(q) != mix.size or len(self.depth_by_level) != mix.size:
            raise ValueError(
                f"q_by_level and depth_by_level must have one entry per level ({mix.size}), "
                f"got {len(q)} and {len(self.depth_by_level)}"
            )
        if not all(is_int(d) and d >= 1 for d in self.depth_by_level):
            raise ValueError(f"depth_by_level must hold ints >= 1, got {self.depth_by_level}")
        _check_unit([self.recovery], "recovery", lo=-1e-12)
        for name in ("q_spread", "prm_bias", "prm_first_noise", "prm_noise"):
            v = getattr(self, name)
            if not math.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be finite and >= 0, got {v}")
        if not math.isfinite(self.prm_signal) or self.prm_signal <= 0:
            raise ValueError(f"prm_signal must be finite and > 0, got {self.prm_signal}")
        if not 0.0 < self.prm_detect <= 1.0:
            raise ValueError(f"prm_detect must be in (0, 1], got {self.prm_detect}")
        if not 0.0 <= self.rho < 1.0:
            raise ValueError(f"rho must be in [0, 1), got {self.rho}")
        if not math.isfinite(self.tokens_per_step) or self.tokens_per_step < 1:
            raise ValueError(f"tokens_per_step must be >= 1, got {self.tokens_per_step}")
        if not is_int(self.decision_period) or self.decision_period < 1:
            raise ValueError(f"decision_period must be an int >= 1, got {self.decision_period!r}")
        if not is_int(self.problem_tokens) or self.problem_tokens < 1:
            raise ValueError(f"problem_tokens must be an int >= 1, got {self.problem_tokens!r}")
        if not is_int(self.seed) or self.seed < 0:
            raise ValueError(f"seed must be an int >= 0, got {self.seed!r}")
        rng = np.random.default_rng(self.seed)
        levels = rng.choice(mix.size, size=self.n_problems, p=mix / mix.sum())
        offsets = rng.normal(0.0, self.q_spread, size=self.n_problems)
        problems = []
        for i, (lvl, off) in enumerate(zip(levels, offsets)):
            qi = 1.0 / (1.0 + math.exp(-(_logit(q[lvl]) + off)))
            problems.append(
                f"stepchain#{i} q={qi:.6f} depth={int(self.depth_by_level[lvl])} tokens={self.problem_tokens}"
            )
        object.__setattr__(self, "problems", problems)
        object.__setattr__(self, "levels", levels + 1)

    def generator(self) -> SimGenerator:
        """The simulated policy model (1.5B parameters for the FLOPs model)."""
        return SimGenerator(self)

    def verifier(self) -> SimPRM:
        """The simulated PRM (7B parameters for the FLOPs model)."""
        return SimPRM(self)

    def is_correct(self, problem: str, completion: str) -> bool:
        """Whether ``completion`` is a finished, right answer to ``problem``."""
        _parse_problem(problem)
        return completion.rstrip().endswith("answer=right")

    def oracle_accuracy(self, problem: str) -> float:
        """Probability that one sample is right (ignores recovery): :math:`q_i^{L_i}`."""
        q, depth, _ = _parse_problem(problem)
        return q**depth


@lru_cache(maxsize=1 << 16)
def _parse_problem(problem: str) -> tuple[float, int, int]:
    m = _PROBLEM.match(problem)
    if m is None:
        raise ValueError(f"problem is not a StepChainTask problem: {problem[:60]!r}")
    return float(m.group(2)), int(m.group(3)), int(m.group(4))


@dataclass
class SimGenerator:
    """Samples steps of a :class:`StepChainTask`; step ``k`` of a path is a pure function of ``(seed, k)``.

    Batched: the draws of all requests are computed at once with a vectorised counter-based hash (SplitMix64 of
    ``(seed, k)``), so the simulator's cost is a few numpy operations per call rather than one random generator
    per step. A path is the same whether sampled step by step or to the end, and whatever batch it is in.
    """

    task: StepChainTask
    n_params: float = 1.5e9

    def count_tokens(self, text: str) -> int:
        """Tokens of a problem statement or a prefix."""
        m = _PROBLEM.match(text)
        if m is not None:
            return int(m.group(4))
        return sum(int(t[2]) for t in _STEP.findall(text))

    def step(self, requests: Sequence[StepRequest], *, to_eos: bool = False) -> list[Step]:
        """One step (or the rest of the chain with ``to_eos``) per request."""
        if not requests:
            return []
        parsed = [_parse_problem(r.problem) for r in requests]
        q = np.array([p[0] for p in parsed])
        depth = np.array([p[1] for p in parsed], dtype=np.int64)
        k = np.array([r.depth for r in requests], dtype=np.int64)
        ok = np.array([_last_ok(r.prefix) for r in requests], dtype=bool)
        seeds = np.array([r.seed & _MASK for r in requests], dtype=np.uint64)
        texts: list[list[str]] = [[] for _ in requests]
        tokens = np.zeros(len(requests), dtype=np.int64)
        live = np.arange(len(requests))
        cdf = _poisson_cdf(self.task.tokens_per_step - 1.0)
        while live.size:
            u, u_tok, ident = _step_draws(seeds[live], k[live])
            decide = k[live] % self.task.decision_period == 0  # step k + 1 is a decision step
            ok[live] = np.where(decide, np.where(ok[live], u < q[live], u < self.task.recovery), ok[live])
            n_tok = 1 + np.minimum(np.searchsorted(cdf, u_tok, side="right"), cdf.size - 1)
            k[live] += 1
            tokens[live] += n_tok
            done = k[live] >= depth[live]
            for i, ki, oki, ni, idi, di in zip(live.tolist(), k[live].tolist(), ok[live].tolist(), n_tok.tolist(),
                                               ident.tolist(), done.tolist()):  # fmt: skip
                tail = f" answer={'right' if oki else 'wrong'}" if di else STOP
                texts[i].append(f"[{ki}|{'ok' if oki else 'err'}|{ni}|{idi}]{tail}")
            live = live[~done] if to_eos else live[:0]
        finished = (k >= depth).tolist()
        return [Step("".join(t), int(n), len(t), f) for t, n, f in zip(texts, tokens.tolist(), finished)]


def _last_ok(prefix: str) -> bool:
    """Whether the last step of ``prefix`` is correct (``True`` at the root)."""
    if not prefix:
        return True
    m = _STEP.search(prefix, prefix.rfind("["))
    if m is None:
        raise ValueError(f"prefix is not a StepChainTask solution: {prefix[:60]!r}")
    return m.group(2) == "ok"


@lru_cache(maxsize=16)
def _poisson_cdf(lam: float) -> np.ndarray:
    """CDF of Poisson(``lam``) on 0..K with K far in the tail (the last entry is 1)."""
    top = int(lam + 12 * math.sqrt(lam) + 20)
    ks = np.arange(top + 1)
    if lam > 0:
        pmf = np.exp(ks * math.log(lam) - lam - np.array([math.lgamma(k + 1.0) for k in ks]))
    else:
        pmf = (ks == 0).astype(float)
    cdf = np.cumsum(pmf)
    cdf[-1] = 1.0
    return cdf


def _splitmix_np(x: np.ndarray) -> np.ndarray:
    """SplitMix64 of every entry of a ``uint64`` array (wrapping arithmetic, as :func:`_splitmix`)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _hash_np(*keys: int | np.ndarray) -> np.ndarray:
    """:func:`_normal`'s hash chain of integer keys (scalars or ``uint64`` arrays), vectorised."""
    x = np.zeros(1, dtype=np.uint64)
    for key in keys:
        k = np.uint64(key & _MASK) if isinstance(key, int) else np.asarray(key, dtype=np.uint64)
        x = _splitmix_np(x ^ k)
    return x


def _unit(x: np.ndarray) -> np.ndarray:
    """Uniforms in (0, 1) from the top 53 bits of ``uint64`` hashes."""
    return ((x >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)


def _step_draws(seeds: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three draws of step ``k`` of paths ``seeds``: correctness uniform, token-count uniform, 62-bit id."""
    h = _hash_np(seeds, k.astype(np.uint64))
    return _unit(_splitmix_np(h ^ np.uint64(1))), _unit(_splitmix_np(h ^ np.uint64(2))), (
        _splitmix_np(h ^ np.uint64(3)) >> np.uint64(2))  # fmt: skip


def _normals(*keys: int | np.ndarray) -> np.ndarray:
    """:func:`_normal` of many key tuples at once (the same values)."""
    return np.array([_NORMAL.inv_cdf(u) for u in _unit(_hash_np(*keys)).tolist()])


@dataclass
class SimPRM:
    """The simulated PRM of a :class:`StepChainTask` (see its docstring for the score model)."""

    task: StepChainTask
    n_params: float = 7e9
    seed: int = 12345

    def score(self, problems: Sequence[str], prefixes: Sequence[str]) -> list[list[float]]:
        """Per-step scores :math:`s_t` of each prefix (the recursion over steps, vectorised over paths)."""
        if len(problems) != len(prefixes):
            raise ValueError(f"problems and prefixes must have the same length, got {len(problems)}, {len(prefixes)}")
        if not problems:
            return []
        t = self.task
        paths = []
        for problem, prefix in zip(problems, prefixes):
            _parse_problem(problem)
            steps = _STEP.findall(prefix)
            if not steps:
                raise ValueError("prefixes must hold at least one step")
            paths.append(steps)
        lengths = np.array([len(p) for p in paths])
        longest = int(lengths.max())
        ident = np.zeros((len(paths), longest), dtype=np.uint64)
        err = np.zeros((len(paths), longest), dtype=bool)
        for i, steps in enumerate(paths):
            ident[i, : len(steps)] = [int(s[3]) for s in steps]
            err[i, : len(steps)] = [s[1] == "err" for s in steps]
        bias = t.prm_bias * _normals(self.seed, ident[:, 0], 1)
        valid = np.arange(longest)[None, :] < lengths[:, None]
        eps = np.zeros(ident.shape)
        eps[valid] = _normals(self.seed, ident[valid], 2)
        notice = np.zeros(ident.shape, dtype=bool)
        notice[valid] = _unit(_hash_np(self.seed, ident[valid], 3)) < t.prm_detect
        z = np.zeros(len(paths))
        noticed = np.zeros(len(paths), dtype=bool)
        scores = np.zeros(ident.shape)
        for j in range(longest):
            noticed = np.where(err[:, j], noticed | notice[:, j], False)
            mu = np.where(noticed, -t.prm_signal, t.prm_signal)
            if j == 0:
                z = mu + bias + t.prm_first_noise * eps[:, 0]
            else:
                z = t.rho * z + (1.0 - t.rho) * (mu + bias) + t.prm_noise * eps[:, j]
            scores[:, j] = 1.0 / (1.0 + np.exp(-z))
        return [row[:m] for row, m in zip(scores.tolist(), lengths.tolist())]


def consecutive_gap_share(step_scores: Sequence[Sequence[float]], *, threshold: float = 0.01) -> float:
    r"""Share of consecutive PRM score pairs that differ by less than ``threshold``: :math:`|s_t - s_{t-1}| <` thr.

    The paper's motivation (Sec. 1): for more than half of the steps, consecutive scores differ by < 1%.

    Args:
        step_scores: per-path per-step scores; paths with one step contribute nothing.
        threshold: absolute gap, in (0, 1).

    Returns:
        The share in [0, 1], or ``nan`` when no path has two steps.

    Raises:
        ValueError: on a threshold outside (0, 1) or non-finite scores.
    """
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must be in (0, 1), got {threshold}")
    gaps = []
    for path in step_scores:
        arr = np.asarray(path, dtype=float)
        if arr.ndim != 1 or not np.all(np.isfinite(arr)):
            raise ValueError("step_scores must be finite 1-d sequences")
        gaps.extend(np.abs(np.diff(arr)).tolist())
    if not gaps:
        return float("nan")
    return float(np.mean(np.asarray(gaps) < threshold))
