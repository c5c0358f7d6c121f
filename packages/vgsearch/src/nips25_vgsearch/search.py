"""VG-Search: verifier-guided search that verifies every ``g`` generation steps (Chen et al., NeurIPS 2025).

``g = 1`` is the beam search of huggingface/search-and-learn, ``beam_width = 1`` (nothing pruned) is Best-of-N
with final verification, and ``g`` in between trades verifier calls for generator samples.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from nips25_vgsearch.flops import ComputeLedger, FlopsModel
from nips25_vgsearch.generator import Generator, Step, StepRequest, path_seed
from nips25_vgsearch.verifier import AGGREGATIONS, Verifier, aggregate_scores

__all__ = [
    "PAPER",
    "GapPolicy",
    "GranularityPolicy",
    "PaperPreset",
    "SearchConfig",
    "SearchResult",
    "beam_search",
    "best_of_n",
    "dvts",
    "vg_search",
]

#: ``g(first_scores) -> int | None``: chooses the granularity of one problem from its first-step scores.
GranularityPolicy = Callable[[np.ndarray], "int | None"]


@dataclass(frozen=True)
class GapPolicy:
    r"""The ``gap`` adaptive-g policy [reconstructed]: verify less often while PRM scores barely move.

    The paper motivates VG-Search by the small change of consecutive PRM scores (< 1% for most steps); this
    policy acts on it per problem during the search. Round 1 uses ``g_start``. After every later verification the
    per-step score change of the kept beams is measured,
    :math:`\Delta = \frac{1}{B_1 g}\sum_{b \in \text{kept}} |\bar s_b - \bar s_{\text{parent}(b)}|` (aggregated
    scores now and at the parent's verification, divided by the ``g`` of that round), and the next round's
    granularity is :math:`\min(2g, g_{max})` when :math:`\Delta < \tau` (skip verifications) and
    :math:`\max(\lfloor g/2 \rfloor, g_{min})` otherwise. The number of rounds follows from the remaining depth
    (``max_steps``), so every schedule reaches the same depth as fixed ``g``; with ``threshold=0`` and
    ``g_start=g_min=1`` it is beam search exactly.

    Attributes:
        threshold: :math:`\tau \ge 0`, per-step score change below which a verification is skipped (0.01).
        g_start: granularity of round 1, ``>= 1``.
        g_min, g_max: bounds of ``g``, ``1 <= g_min <= g_start <= g_max``.

    Example:
        >>> from nips25_vgsearch import StepChainTask
        >>> task = StepChainTask(n_problems=2, seed=0)
        >>> res = vg_search(task.problems, task.generator(), task.verifier(), n=4, beam_width=2, g=GapPolicy())
        >>> all(1 <= g <= 4 for r in res for g in r.g_schedule)
        True
    """

    threshold: float = 0.01
    g_start: int = 1
    g_min: int = 1
    g_max: int = 4

    def __post_init__(self) -> None:
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)):
            raise TypeError(f"threshold must be a number, got {type(self.threshold).__name__}")
        if not (math.isfinite(self.threshold) and self.threshold >= 0):
            raise ValueError(f"threshold must be finite and >= 0, got {self.threshold}")
        for name in ("g_start", "g_min", "g_max"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if not self.g_min <= self.g_start <= self.g_max:
            raise ValueError(f"need g_min <= g_start <= g_max, got {self.g_min}, {self.g_start}, {self.g_max}")

    def next_g(self, g: int, change: float) -> int:
        """The granularity after a round run at ``g`` whose kept beams moved ``change`` per step."""
        return min(2 * g, self.g_max) if change < self.threshold else max(g // 2, self.g_min)


@dataclass(frozen=True)
class SearchConfig:
    """Hyper-parameters of VG-Search (the paper's ``config.py`` plus ``g``); defaults follow its MATH-500 run.

    Attributes:
        n: candidates per verification round, :math:`n = B_1 B_2`.
        beam_width: children per kept beam :math:`B_2`; :math:`B_1 = n / B_2` beams are kept.
        g: verification granularity, ``>= 1``; ``None`` is the full length (no verification between the first
            pruning and the end of the answer).
        num_iterations: verification rounds :math:`I`; ``None`` derives :math:`I = 1 + \\lceil (L-1)/g \\rceil`
            from ``max_steps`` :math:`L` so that every ``g`` reaches the same depth :math:`L` before the last round
            (12/7/5/4 rounds for ``g`` = 1..4 at ``L = 12``). This is our default, not the paper's: the paper's run
            sets ``num_iterations`` by hand to 12/6/4/3 (:data:`PAPER`, :meth:`PaperPreset.config`). A mapping
            ``{g: I}`` gives the rounds per granularity (for adaptive ``g``); a ``g`` missing from it gets the
            derived count.
        max_steps: depth the derived ``num_iterations`` reaches before the last round samples to the end.
        agg: aggregation of per-step scores: ``"last"``, ``"min"`` or ``"prod"``.
        filter_duplicates: drop beams whose text equals an earlier beam's before selection.
        refill: ``"cyclic"`` copies the survivors cyclically up to ``n`` beams (the paper's code);
            ``"branch"`` gives each survivor exactly ``beam_width`` children (fewer beams once some finish).
        diverse: DVTS (diverse verifier tree search, search-and-learn): the ``n`` first steps form
            :math:`B_1 = n / B_2` subtrees of :math:`B_2` samples; selection keeps the best unfinished beam of each
            subtree (never comparing subtrees), each survivor branches into :math:`B_2` children (``refill="branch"``).
    """

    n: int = 4
    beam_width: int = 4
    g: int | None = 1
    num_iterations: int | Mapping[int | None, int] | None = None
    max_steps: int = 12
    agg: str = "last"
    filter_duplicates: bool = True
    refill: Literal["cyclic", "branch"] = "cyclic"
    diverse: bool = False

    def __post_init__(self) -> None:
        for name in ("n", "beam_width", "max_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if self.n % self.beam_width:
            raise ValueError(f"n must be a multiple of beam_width, got n={self.n}, beam_width={self.beam_width}")
        if self.g is not None and (isinstance(self.g, bool) or not isinstance(self.g, int) or self.g < 1):
            raise ValueError(f"g must be an int >= 1 or None (full length), got {self.g!r}")
        rounds = self.num_iterations
        if isinstance(rounds, Mapping):
            for key, value in rounds.items():
                if key is not None and (isinstance(key, bool) or not isinstance(key, int) or key < 1):
                    raise ValueError(f"num_iterations keys must be granularities (int >= 1 or None), got {key!r}")
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise ValueError(f"num_iterations[{key!r}] must be an int >= 1, got {value!r}")
        elif rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1):
            raise ValueError(f"num_iterations must be an int >= 1, a mapping g -> int, or None, got {rounds!r}")
        if self.agg not in AGGREGATIONS:
            raise ValueError(f"agg must be one of {AGGREGATIONS}, got {self.agg!r}")
        if self.refill not in ("cyclic", "branch"):
            raise ValueError(f"refill must be 'cyclic' or 'branch', got {self.refill!r}")
        for name in ("filter_duplicates", "diverse"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {type(getattr(self, name)).__name__}")
        if self.diverse and self.refill != "branch":
            raise ValueError(
                "diverse=True (DVTS) needs refill='branch' (each subtree keeps its own beam_width children)"
            )

    @property
    def keep(self) -> int:
        """:math:`B_1 = n / B_2`, beams kept after each verification."""
        return self.n // self.beam_width

    def iterations(self, g: int | None) -> int:
        """Verification rounds for granularity ``g`` (``num_iterations`` when set, or its entry for ``g``)."""
        if isinstance(self.num_iterations, Mapping):
            if g in self.num_iterations:
                return self.num_iterations[g]
        elif self.num_iterations is not None:
            return self.num_iterations
        if g is None:
            return 1 if self.max_steps == 1 else 2
        return 1 + math.ceil((self.max_steps - 1) / g)


@dataclass(frozen=True)
class PaperPreset:
    """The paper's MATH-500 run (official ``experiment_scripts/example.sh`` with its ``beam_search.yaml`` recipes).

    :math:`n = 4` candidates, beam width :math:`B_2 = 4` (so :math:`B_1 = 1` beam is kept), ``g`` in {1, 2, 3, 4}
    with ``num_iterations`` 12/6/4/3 (:math:`\\lfloor 12/g \\rfloor`, set per ``g`` in the script; the depth
    after the :math:`I` rounds, :math:`1 + (I-1) g`, is then 12/11/10/9 steps), duplicate filtering on, ``last``
    aggregation, seed 0. Sampling (temperature 0.8, top-p 1.0, at most 2048 new tokens) belongs to the generator
    (:class:`~nips25_vgsearch.HFGenerator`), so it is recorded here but not passed to the search.

    Attributes:
        n: candidates per round.
        beam_width: :math:`B_2`.
        num_iterations: ``((g, I), ...)``: the rounds per granularity.
        filter_duplicates: drop beams with identical text before selection.
        agg: per-step score aggregation.
        seed: the run's seed.
        temperature, top_p, max_tokens: the generator's sampling settings in the paper's run.

    Example:
        >>> [PAPER.config(g).iterations(g) for g in PAPER.gs]
        [12, 6, 4, 3]
        >>> PAPER.search_kwargs(2)["num_iterations"], PAPER.config(2).keep
        (6, 1)
    """

    n: int = 4
    beam_width: int = 4
    num_iterations: tuple[tuple[int, int], ...] = ((1, 12), (2, 6), (3, 4), (4, 3))
    filter_duplicates: bool = True
    agg: str = "last"
    seed: int = 0
    temperature: float = 0.8
    top_p: float = 1.0
    max_tokens: int = 2048

    def __post_init__(self) -> None:
        rounds = dict(self.num_iterations)
        if len(rounds) != len(self.num_iterations) or not rounds:
            raise ValueError(f"num_iterations must list each g once, got {self.num_iterations!r}")
        for g, i in rounds.items():
            SearchConfig(n=self.n, beam_width=self.beam_width, g=g, num_iterations=i, agg=self.agg,
                         filter_duplicates=self.filter_duplicates)  # fmt: skip

    @property
    def gs(self) -> tuple[int, ...]:
        """The granularities of the run, ascending."""
        return tuple(sorted(dict(self.num_iterations)))

    def rounds(self, g: int) -> int:
        """``num_iterations`` for granularity ``g``.

        Raises:
            ValueError: if ``g`` is not one of :attr:`gs`.
        """
        rounds = dict(self.num_iterations)
        if g not in rounds:
            raise ValueError(f"g must be one of the preset's granularities {self.gs}, got {g!r}")
        return rounds[g]

    def search_kwargs(self, g: int) -> dict[str, object]:
        """Keyword arguments of :func:`vg_search` for the paper's run at granularity ``g``."""
        return {"n": self.n, "beam_width": self.beam_width, "g": g, "num_iterations": self.rounds(g),
                "agg": self.agg, "filter_duplicates": self.filter_duplicates, "seed": self.seed}  # fmt: skip

    def config(self, g: int) -> SearchConfig:
        """The :class:`SearchConfig` of the paper's run at granularity ``g``."""
        kw = self.search_kwargs(g)
        kw.pop("seed")
        return SearchConfig(**kw)  # type: ignore[arg-type]


#: The paper's run: n = 4, beam width 4, g in {1, 2, 3, 4} with 12/6/4/3 rounds (official ``example.sh``).
PAPER = PaperPreset()


@dataclass(frozen=True)
class SearchResult:
    """The outcome of one search on one problem.

    Attributes:
        problem: the problem text.
        answer: the completion with the highest aggregated score (ties: a deterministic random order, by path seed).
        completions: every finished completion, best first.
        scores: their aggregated scores, same order.
        g: the granularity used (``None`` = full length; adaptive policies choose it per problem).
        ledger: token and call counts.
        flops: total FLOPs under the search's :class:`FlopsModel`.
        first_scores: aggregated scores of the ``n`` first-step samples (the difficulty proxy), shape ``(n,)``.
        trace: texts of the kept beams after each verification round.
        g_schedule: the granularity of each round after round 0 (constant unless ``g`` is a :class:`GapPolicy`).
    """

    problem: str
    answer: str
    completions: list[str]
    scores: list[float]
    g: int | None
    ledger: ComputeLedger
    flops: float
    first_scores: np.ndarray
    trace: list[list[str]] = field(default_factory=list)
    g_schedule: list[int | None] = field(default_factory=list)


@dataclass
class _Beam:
    text: str
    tokens: int
    depth: int
    lineage: tuple[int, ...]
    finished: bool = False
    step_scores: list[float] = field(default_factory=list)
    verified_upto: int = 0
    parent_score: float = math.nan
    tree: int = 0


@dataclass
class _State:
    problem: str
    problem_tokens: int  # what the verifier reads before a prefix (the problem)
    seed: int
    g: int | None
    iterations: int
    active: list[_Beam] = field(default_factory=list)
    completed: list[_Beam] = field(default_factory=list)
    ledger: ComputeLedger = field(default_factory=ComputeLedger)
    first_scores: np.ndarray = field(default_factory=lambda: np.zeros(0))
    trace: list[list[str]] = field(default_factory=list)
    done: bool = False
    depth: int = 1
    g_schedule: list[int | None] = field(default_factory=list)
    prompt_tokens: int = 0  # what the generator reads before a prefix (its prompt: template, chat template)
    seeds: dict[tuple[int, ...], int] = field(default_factory=dict)  # path seed per lineage (hashed once)


def _count_prompts(generator: Generator, states: list[_State]) -> None:
    """Prompt tokens the generator reads per request: ``count_tokens(generator.prompt(problem))`` when the generator
    renders a prompt (``HFGenerator``: template, chat template and system message), else the problem's tokens."""
    prompt = getattr(generator, "prompt", None)
    for s in states:
        s.prompt_tokens = generator.count_tokens(prompt(s.problem)) if callable(prompt) else s.problem_tokens


def _check_problems(problems: str | Sequence[str]) -> list[str]:
    if isinstance(problems, str):
        problems = [problems]
    if not isinstance(problems, Sequence):
        raise TypeError(f"problems must be a str or a sequence of str, got {type(problems).__name__}")
    out = list(problems)
    if not out:
        raise ValueError("problems must be non-empty")
    for i, p in enumerate(out):
        if not isinstance(p, str) or not p:
            raise ValueError(f"problems[{i}] must be a non-empty str, got {p!r}")
    return out


def _check_models(generator: Generator, verifier: Verifier) -> None:
    if not callable(getattr(generator, "step", None)) or not callable(getattr(generator, "count_tokens", None)):
        raise TypeError(f"generator must follow the Generator protocol, got {type(generator).__name__}")
    if not callable(getattr(verifier, "score", None)):
        raise TypeError(f"verifier must follow the Verifier protocol, got {type(verifier).__name__}")


def _generate(generator: Generator, pairs: list[tuple[_State, _Beam]], *, to_eos: bool) -> None:
    """One batched generator call; every (problem, beam) pair grows by one step (or to the end)."""
    if not pairs:
        return
    requests = [StepRequest(problem=s.problem, prefix=b.text, depth=b.depth, seed=_path_seed(s, b)) for s, b in pairs]
    steps = generator.step(requests, to_eos=to_eos)
    if len(steps) != len(requests):
        raise ValueError(f"generator.step returned {len(steps)} steps for {len(requests)} requests")
    for (state, beam), step in zip(pairs, steps):
        if not isinstance(step, Step):
            raise TypeError(f"generator.step must return Step objects, got {type(step).__name__}")
        state.ledger.gen_calls += 1
        state.ledger.gen_tokens += step.n_tokens
        state.ledger.prefill_tokens += state.prompt_tokens + beam.tokens
        beam.text += step.text
        beam.tokens += step.n_tokens
        beam.depth += step.n_steps
        beam.finished = bool(step.finished or to_eos or not step.text.strip())


def _path_seed(state: _State, beam: _Beam) -> int:
    """:func:`~nips25_vgsearch.generator.path_seed` of a beam, hashed once per lineage and problem."""
    seed = state.seeds.get(beam.lineage)
    if seed is None:
        seed = state.seeds[beam.lineage] = path_seed(state.seed, state.problem, beam.lineage)
    return seed


def _verify(verifier: Verifier, pairs: list[tuple[_State, _Beam]]) -> None:
    """One batched verifier call; every beam gets its per-step scores."""
    if not pairs:
        return
    scores = verifier.score([s.problem for s, _ in pairs], [b.text for _, b in pairs])
    if len(scores) != len(pairs):
        raise ValueError(f"verifier.score returned {len(scores)} score lists for {len(pairs)} prefixes")
    for (state, beam), row in zip(pairs, scores):
        values = [float(v) for v in row]
        if not values or not all(math.isfinite(v) for v in values):
            raise ValueError(f"verifier.score must return non-empty finite per-step scores, got {values}")
        state.ledger.verifier_calls += 1
        read = state.problem_tokens + beam.tokens
        state.ledger.verifier_tokens += read
        state.ledger.verifier_new_tokens += read - beam.verified_upto
        beam.verified_upto = read
        beam.step_scores = values


def _select(state: _State, config: SearchConfig) -> None:
    """Move finished beams to ``completed``; keep the top ``B1`` of the rest by aggregated score (stable)."""
    rest: list[_Beam] = []
    seen: set[str] = set()
    for beam in state.active:
        if beam.finished:
            state.completed.append(beam)
        elif config.filter_duplicates and beam.text in seen:
            continue
        else:
            seen.add(beam.text)
            rest.append(beam)
    agg = np.array([aggregate_scores(b.step_scores, agg=config.agg) for b in rest])
    order = np.argsort(-agg, kind="stable")
    if config.diverse:  # DVTS: the best beam of every subtree, in subtree order
        best: dict[int, int] = {}
        for i in order:
            best.setdefault(rest[i].tree, int(i))
        state.active = [rest[best[t]] for t in sorted(best)]
    else:
        state.active = [rest[i] for i in order[: config.keep]]
    state.trace.append([b.text for b in state.active])
    if len(state.completed) >= config.n or not state.active:
        state.done = True


def _refill(state: _State, config: SearchConfig) -> None:
    """Copy the survivors into the next round's beams; copy ``k > 0`` of a beam starts a new lineage."""
    survivors = state.active
    total = len(survivors) * config.beam_width if config.refill == "branch" else config.n
    beams = []
    for j in range(total):
        parent = survivors[j % len(survivors)]
        k = j // len(survivors)
        lineage = parent.lineage if k == 0 else (*parent.lineage, parent.depth, k)
        beams.append(_Beam(parent.text, parent.tokens, parent.depth, lineage, verified_upto=parent.verified_upto,
                           parent_score=aggregate_scores(parent.step_scores, agg=config.agg),
                           tree=parent.tree))  # fmt: skip
    state.active = beams


def _result(state: _State, config: SearchConfig, flops_model: FlopsModel) -> SearchResult:
    scored = [(aggregate_scores(b.step_scores, agg=config.agg), _path_seed(state, b), b.text) for b in state.completed]
    scored.sort(key=lambda t: (-t[0], t[1]))
    return SearchResult(
        problem=state.problem,
        answer=scored[0][2] if scored else "",
        completions=[t for _, _, t in scored],
        scores=[s for s, _, _ in scored],
        g=state.g,
        ledger=state.ledger,
        flops=flops_model.flops(state.ledger),
        first_scores=state.first_scores,
        trace=state.trace,
        g_schedule=state.g_schedule,
    )


def vg_search(
    problems: str | Sequence[str],
    generator: Generator,
    verifier: Verifier,
    *,
    n: int = 4,
    beam_width: int = 4,
    g: int | GranularityPolicy | GapPolicy | None = 1,
    num_iterations: int | Mapping[int | None, int] | None = None,
    max_steps: int = 12,
    agg: str = "last",
    filter_duplicates: bool = True,
    refill: Literal["cyclic", "branch"] = "cyclic",
    diverse: bool = False,
    seed: int = 0,
    flops_model: FlopsModel | None = None,
) -> list[SearchResult]:
    r"""Variable-granularity verifier-guided search (VG-Search, Chen et al. 2025, Sec. 3, Fig. 2).

    Round 0 samples :math:`n` first steps and verifies them. Each later round (1) **extends** each of the
    :math:`B_1 = n/B_2` survivors by :math:`g-1` unverified steps (paths that end are completed at the step where
    they end and verified in the round's one verifier call), (2) **branches** the survivors back to :math:`n`
    beams, each sampling one step (the last round samples to the end of the answer), and (3) **verifies and
    selects** the top :math:`B_1` unfinished beams by aggregated PRM score. The search stops when :math:`n` paths
    are complete or none is active; the answer is the completion with the highest score. Depth after :math:`I`
    rounds: :math:`1 + (I-1) g`.

    Every problem keeps its own beams and ledger; generator and verifier calls are batched across problems, and a
    path's randomness depends only on ``(seed, problem, lineage)``, so results do not depend on the batch.

    Args:
        problems: one problem text or a sequence of them.
        generator: a :class:`~nips25_vgsearch.generator.Generator`.
        verifier: a :class:`~nips25_vgsearch.verifier.Verifier`.
        n, beam_width, num_iterations, max_steps, agg, filter_duplicates, refill, diverse: see
            :class:`SearchConfig` (``diverse=True`` is DVTS; :func:`dvts`).
        g: granularity ``>= 1``, ``None`` for the full length, a policy ``g(first_scores) -> int | None``
            called per problem after round 0 (adaptive VG-Search, e.g. :class:`~nips25_vgsearch.AdaptiveG`), or a
            :class:`GapPolicy` that changes ``g`` between rounds from the observed score change.
        seed: search seed.
        flops_model: the FLOPs model; default ``FlopsModel()`` (1.5B generator, 7B PRM).

    Returns:
        One :class:`SearchResult` per problem, in input order.

    Raises:
        ValueError: on empty problems or out-of-range hyper-parameters, or malformed generator/verifier output.
        TypeError: if ``generator``/``verifier`` do not follow their protocols.

    References:
        Chen, Lu, Okoshi, Mo, Motomura, Fan, "Rethinking Optimal Verification Granularity for Compute-Efficient
        Test-Time Scaling", NeurIPS 2025, arXiv:2505.11730, Sec. 3.

    Example:
        >>> from nips25_vgsearch import StepChainTask
        >>> task = StepChainTask(n_problems=2, seed=0)
        >>> res = vg_search(task.problems, task.generator(), task.verifier(), n=4, beam_width=2, g=2)
        >>> len(res), res[0].ledger.verifier_calls > 0
        (2, True)
    """
    gap = g if isinstance(g, GapPolicy) else None
    if gap is not None and num_iterations is not None:
        raise ValueError("num_iterations must be None with a GapPolicy (the rounds follow from max_steps)")
    policy = g if callable(g) and gap is None else None
    config = SearchConfig(
        n=n, beam_width=beam_width, g=None if policy or gap else g,  # type: ignore[arg-type]
        num_iterations=num_iterations, max_steps=max_steps, agg=agg, filter_duplicates=filter_duplicates,
        refill=refill, diverse=diverse,
    )  # fmt: skip
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    flops_model = FlopsModel() if flops_model is None else flops_model
    if not isinstance(flops_model, FlopsModel):
        raise TypeError(f"flops_model must be a FlopsModel, got {type(flops_model).__name__}")
    items = _check_problems(problems)
    _check_models(generator, verifier)
    states = [_State(p, generator.count_tokens(p), seed, config.g, config.iterations(config.g)) for p in items]
    _count_prompts(generator, states)
    for s in states:
        s.active = [_Beam("", 0, 0, (j,), tree=j // config.beam_width) for j in range(config.n)]
    pairs = [(s, b) for s in states for b in s.active]
    _generate(generator, pairs, to_eos=config.iterations(1 if policy or gap else config.g) == 1)
    _verify(verifier, pairs)
    for s in states:
        s.first_scores = np.array([aggregate_scores(b.step_scores, agg=config.agg) for b in s.active])
        if policy is not None:
            chosen = policy(s.first_scores.copy())
            SearchConfig(n=config.n, beam_width=config.beam_width, g=chosen)  # validates the policy's choice
            s.g, s.iterations = chosen, config.iterations(chosen)
        if gap is not None:
            s.g, s.iterations = gap.g_start, config.iterations(gap.g_start)
        _select(s, config)
    rnd = 1
    while any(not s.done and rnd < s.iterations for s in states):
        live = [s for s in states if not s.done and rnd < s.iterations]
        for s in live:
            if gap is not None and rnd > 1:
                previous = s.g_schedule[-1]
                assert previous is not None
                change = [abs(aggregate_scores(b.step_scores, agg=config.agg) - b.parent_score) for b in s.active]
                s.g = gap.next_g(previous, float(np.mean(change)) / previous if change else 0.0)
                s.iterations = rnd + max(1, math.ceil((config.max_steps - s.depth) / s.g))
            s.g_schedule.append(s.g)
            s.depth += 1 if s.g is None else s.g
        ended = _extend(generator, live)
        for s in live:
            if not s.active:
                s.done = True
            else:
                _refill(s, config)
        groups = [[s for s in live if not s.done and (rnd == s.iterations - 1) == to_eos] for to_eos in (False, True)]
        pairs = []
        for to_eos, group in zip((False, True), groups):
            grown = [(s, b) for s in group for b in s.active]
            _generate(generator, grown, to_eos=to_eos)
            pairs += grown
        _verify(verifier, ended + pairs)  # one verifier call per round: ended paths, branched beams, both groups
        for s in groups[0] + groups[1]:
            _select(s, config)
        rnd += 1
    return [_result(s, config, flops_model) for s in states]


def _extend(generator: Generator, states: list[_State]) -> list[tuple[_State, _Beam]]:
    """The unverified ``g - 1`` steps of every survivor; a path that ends is completed at once.

    Returns the ended paths: the caller verifies them in the round's one verifier call (their scores are read only
    when the answer is chosen, so verifying them later changes nothing but the number of verifier calls).
    """
    ticks = max((1 if s.g is None else s.g - 1) for s in states)
    ended_all: list[tuple[_State, _Beam]] = []
    for t in range(ticks):
        for to_eos in (False, True):
            if to_eos:
                group = [s for s in states if s.g is None and t == 0]
            else:
                group = [s for s in states if s.g is not None and t < s.g - 1]
            pairs = [(s, b) for s in group for b in s.active]
            _generate(generator, pairs, to_eos=to_eos)
            ended = [(s, b) for s, b in pairs if b.finished]
            ended_all += ended
            for s, b in ended:
                s.completed.append(b)
            for s in group:
                s.active = [b for b in s.active if not b.finished]
    return ended_all


def beam_search(
    problems: str | Sequence[str], generator: Generator, verifier: Verifier, **kwargs: object
) -> list[SearchResult]:
    """Beam search of search-and-learn: :func:`vg_search` with ``g = 1`` (a verification after every step).

    Args:
        problems, generator, verifier: as in :func:`vg_search`.
        **kwargs: any other keyword of :func:`vg_search` except ``g``.

    Raises:
        ValueError: if ``g`` is passed.
    """
    if "g" in kwargs:
        raise ValueError("beam_search fixes g=1; use vg_search for another granularity")
    return vg_search(problems, generator, verifier, g=1, **kwargs)  # type: ignore[arg-type]


def dvts(
    problems: str | Sequence[str], generator: Generator, verifier: Verifier, **kwargs: object
) -> list[SearchResult]:
    """Diverse verifier tree search (search-and-learn's DVTS) with granularity ``g`` (default 1).

    :func:`vg_search` with ``diverse=True, refill="branch"``: :math:`n / B_2` independent subtrees, each keeping
    its best beam at every verification and branching it into :math:`B_2` children; the answer is the best
    completion over all subtrees. Subtrees never compete, which keeps the final candidates diverse.

    Args:
        problems, generator, verifier: as in :func:`vg_search`.
        **kwargs: any other keyword of :func:`vg_search` except ``diverse`` and ``refill``.

    Raises:
        ValueError: if ``diverse`` or ``refill`` is passed.
    """
    for key in ("diverse", "refill"):
        if key in kwargs:
            raise ValueError(f"dvts fixes {key}; use vg_search to set it")
    return vg_search(problems, generator, verifier, diverse=True, refill="branch", **kwargs)  # type: ignore[arg-type]


def best_of_n(
    problems: str | Sequence[str],
    generator: Generator,
    verifier: Verifier,
    *,
    n: int = 4,
    agg: str = "last",
    seed: int = 0,
    flops_model: FlopsModel | None = None,
) -> list[SearchResult]:
    r"""Best-of-N with a final PRM verification: :math:`n` independent answers, keep :math:`\arg\max` score.

    Path ``j`` uses the same lineage ``(j,)`` as VG-Search's ``j``-th first-step sample, so with a generator that
    honours :func:`~nips25_vgsearch.generator.step_seed`, VG-Search with ``beam_width=1`` draws the same paths.

    Args:
        problems: one problem text or a sequence of them.
        generator, verifier: the models.
        n: samples per problem, ``>= 1``.
        agg: per-step score aggregation.
        seed: search seed.
        flops_model: the FLOPs model; default ``FlopsModel()``.

    Returns:
        One :class:`SearchResult` per problem (``trace`` empty, ``g=None``).

    Raises:
        ValueError: on empty problems or out-of-range hyper-parameters.
    """
    config = SearchConfig(n=n, beam_width=1, agg=agg)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    flops_model = FlopsModel() if flops_model is None else flops_model
    if not isinstance(flops_model, FlopsModel):
        raise TypeError(f"flops_model must be a FlopsModel, got {type(flops_model).__name__}")
    items = _check_problems(problems)
    _check_models(generator, verifier)
    states = [_State(p, generator.count_tokens(p), seed, None, 1) for p in items]
    _count_prompts(generator, states)
    for s in states:
        s.active = [_Beam("", 0, 0, (j,)) for j in range(n)]
    pairs = [(s, b) for s in states for b in s.active]
    _generate(generator, pairs, to_eos=True)
    _verify(verifier, pairs)
    for s in states:
        s.first_scores = np.array([aggregate_scores(b.step_scores, agg=agg) for b in s.active])
        s.completed, s.active = s.active, []
    return [_result(s, config, flops_model) for s in states]
