"""Scoring (paper, Sec. 3-4): exact-set accuracy, hallucination rate, precision/recall and breakdowns."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nips25_commono.example import Example
from nips25_commono.prompt import parse_answer
from nips25_shared import progress

__all__ = ["ScoreReport", "bootstrap_difference", "evaluate", "score"]


@dataclass(frozen=True)
class ScoreReport:
    """Scores of a set of predictions (all rates in ``[0, 1]``).

    Attributes:
        n: number of examples.
        accuracy: share of examples whose predicted set equals the ground-truth set exactly.
        hallucination_rate: share of examples whose prediction holds at least one object option that is not in
            the ground truth (a wrong "None" is not an object, so it is not a hallucination unless
            ``none_is_hallucination`` was set).
        precision: micro-averaged over object options, ``sum |P & G| / sum |P|`` (``nan`` when nothing is predicted).
        recall: ``sum |P & G| / sum |G|`` over object options (``nan`` when no example has common objects).
        invalid_rate: share of predictions that are invalid, scored wrong: nothing could be read, or the reply
            names an option letter beyond the options (``"Answer: A, E"`` with four options; see
            ``out_of_range_rate``). An invalid reply is never partly read.
        out_of_range_rate: share of replies that name a letter beyond the options (part of ``invalid_rate``).
        by_n_objects: ``{n_objects: {"n", "accuracy", "hallucination_rate"}}`` from ``meta["n_objects"]``.
        by_similarity: ``{"similar": {...}, "no_similar": {...}}`` from ``meta["similar_present"]``.
        correct: ``(n,)`` bool, exact-set match per example.
        hallucinated: ``(n,)`` bool, hallucination per example.
        predictions: the parsed predictions.
        raw: the raw model strings (empty strings where the predictions were given as index sets).
    """

    n: int
    accuracy: float
    hallucination_rate: float
    precision: float
    recall: float
    invalid_rate: float
    out_of_range_rate: float
    by_n_objects: dict[int, dict[str, float]]
    by_similarity: dict[str, dict[str, float]]
    correct: np.ndarray = field(repr=False)
    hallucinated: np.ndarray = field(repr=False)
    predictions: tuple[frozenset[int], ...] = field(repr=False)
    raw: tuple[str, ...] = field(repr=False, default=())

    def summary(self) -> dict[str, Any]:
        """The headline numbers and breakdowns as a JSON-ready dict."""
        return {
            "n": self.n,
            "accuracy": self.accuracy,
            "hallucination_rate": self.hallucination_rate,
            "precision": self.precision,
            "recall": self.recall,
            "invalid_rate": self.invalid_rate,
            "out_of_range_rate": self.out_of_range_rate,
            "by_n_objects": {str(k): v for k, v in self.by_n_objects.items()},
            "by_similarity": self.by_similarity,
        }


def _group(keys: Sequence[Any], correct: np.ndarray, halluc: np.ndarray) -> dict[Any, dict[str, float]]:
    out: dict[Any, dict[str, float]] = {}
    for key in sorted({k for k in keys if k is not None}):
        mask = np.array([k == key for k in keys])
        out[key] = {
            "n": int(mask.sum()),
            "accuracy": float(correct[mask].mean()),
            "hallucination_rate": float(halluc[mask].mean()),
        }
    return out


def score(
    predictions: Sequence[str | Iterable[int]],
    examples: Sequence[Example],
    *,
    none_is_hallucination: bool = False,
) -> ScoreReport:
    r"""Score predictions against examples.

    Accuracy is exact-set match, :math:`\mathrm{acc} = \frac1n \sum_i [P_i = G_i]`, where :math:`G_i` is the set of
    options in common or ``{None}``; selecting "None" together with an object never matches. Hallucination is
    :math:`\frac1n \sum_i [P_i \setminus G_i \setminus \{\mathrm{None}\} \neq \emptyset]`.

    Args:
        predictions: one per example: the model's raw string (parsed with :func:`parse_answer`, option texts
            accepted; a reply whose ``Answer:`` names a letter beyond the options is invalid: scored wrong, counted
            in ``invalid_rate`` and ``out_of_range_rate``, never silently dropped) or a set of option indices.
        examples: the questions, same length as ``predictions``.
        none_is_hallucination: also count a "None" answer as a hallucination when objects were in common.

    Returns:
        A :class:`ScoreReport`.

    Raises:
        ValueError: if the inputs are empty, differ in length, or an index set holds an index out of range.
        TypeError: if an example is not an :class:`Example` or a prediction is neither a string nor an index set.

    References:
        Ross et al., "What's in Common? Multimodal Models Hallucinate When Reasoning Across Scenes", NeurIPS 2025,
        Sec. 3 (accuracy and hallucination rate), Sec. 4 (breakdowns by object count and similar objects).

    Example:
        >>> from PIL import Image
        >>> from nips25_commono.example import NONE_OPTION
        >>> im = Image.new("RGB", (8, 8))
        >>> ex = Example(images=(im, im), options=("apple", "pear", NONE_OPTION), answer=frozenset({0}))
        >>> score(["Answer: A", "Answer: A, B"], [ex, ex]).accuracy
        0.5
        >>> report = score(["Answer: A, E"], [ex])  # E is beyond the three options: invalid, not "A"
        >>> report.accuracy, report.invalid_rate, report.out_of_range_rate
        (0.0, 1.0, 1.0)
    """
    if isinstance(predictions, str) or not isinstance(predictions, Sequence):
        raise TypeError("predictions must be a sequence with one prediction per example")
    if not isinstance(examples, Sequence):
        raise TypeError("examples must be a sequence of Example")
    if len(examples) == 0:
        raise ValueError("examples must not be empty")
    if len(predictions) != len(examples):
        raise ValueError(f"predictions has {len(predictions)} entries for {len(examples)} examples")
    parsed: list[frozenset[int]] = []
    raw: list[str] = []
    hits = n_pred = n_true = 0
    correct = np.zeros(len(examples), dtype=bool)
    halluc = np.zeros(len(examples), dtype=bool)
    out_of_range = np.zeros(len(examples), dtype=bool)
    for i, (pred, ex) in enumerate(zip(predictions, examples)):
        if not isinstance(ex, Example):
            raise TypeError(f"examples[{i}] must be an Example, got {type(ex).__name__}")
        if isinstance(pred, str):
            try:
                p = parse_answer(pred, ex.options, out_of_range="raise")
            except ValueError:  # a letter beyond the options: the reply is invalid as a whole
                p = frozenset()
                out_of_range[i] = True
            raw.append(pred)
        elif isinstance(pred, Iterable):
            p = frozenset(int(j) for j in pred)
            if p and (min(p) < 0 or max(p) >= len(ex.options)):
                raise ValueError(f"predictions[{i}] holds an index outside [0, {len(ex.options)})")
            raw.append("")
        else:
            raise TypeError(f"predictions[{i}] must be a string or a set of option indices")
        parsed.append(p)
        correct[i] = p == ex.answer
        objects = p - {ex.none_index}
        wrong_objects = objects - ex.answer
        halluc[i] = bool(wrong_objects) or (
            none_is_hallucination and ex.none_index in p and ex.none_index not in ex.answer
        )
        hits += len(objects & ex.common)
        n_pred += len(objects)
        n_true += len(ex.common)
    n_objects = [ex.meta.get("n_objects") for ex in examples]
    similar = [
        None if ex.meta.get("similar_present") is None else ("similar" if ex.meta["similar_present"] else "no_similar")
        for ex in examples
    ]
    return ScoreReport(
        n=len(examples),
        accuracy=float(correct.mean()),
        hallucination_rate=float(halluc.mean()),
        precision=hits / n_pred if n_pred else float("nan"),
        recall=hits / n_true if n_true else float("nan"),
        invalid_rate=float(np.mean([len(p) == 0 for p in parsed])),
        out_of_range_rate=float(out_of_range.mean()),
        by_n_objects={int(k): v for k, v in _group(n_objects, correct, halluc).items()},
        by_similarity=_group(similar, correct, halluc),
        correct=correct,
        hallucinated=halluc,
        predictions=tuple(parsed),
        raw=tuple(raw),
    )


def evaluate(
    model: Any,
    examples: Sequence[Example],
    *,
    none_is_hallucination: bool = False,
    desc: str = "",
) -> ScoreReport:
    """Ask ``model.answer(example)`` for every example and score the raw strings with :func:`score`.

    Args:
        model: anything with ``answer(example: Example) -> str`` (the :class:`~nips25_commono.models.Model`
            protocol).
        examples: the questions.
        none_is_hallucination: see :func:`score`.
        desc: label of the progress bar.

    Returns:
        A :class:`ScoreReport` whose ``raw`` holds the model's strings.

    Raises:
        TypeError: if ``model`` has no callable ``answer`` or returns something other than a string.
        ValueError: if ``examples`` is empty.
    """
    answer: Callable[[Example], Any] | None = getattr(model, "answer", None)
    if not callable(answer):
        raise TypeError(f"model must have a method answer(example) -> str, got {type(model).__name__}")
    if not isinstance(examples, Sequence) or len(examples) == 0:
        raise ValueError("examples must be a non-empty sequence of Example")
    replies = []
    for ex in progress(examples, total=len(examples), desc=desc or type(model).__name__):
        reply = answer(ex)
        if not isinstance(reply, str):
            raise TypeError(f"{type(model).__name__}.answer must return a string, got {type(reply).__name__}")
        replies.append(reply)
    return score(replies, examples, none_is_hallucination=none_is_hallucination)


def bootstrap_difference(
    a: np.ndarray, b: np.ndarray, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0, paired: bool = False
) -> Mapping[str, float]:
    """Difference of means ``mean(a) - mean(b)`` with a percentile bootstrap interval.

    Independent samples are resampled separately; with ``paired=True`` (``a[i]`` and ``b[i]`` measured on the same
    question) the questions are resampled, i.e. the mean of ``a - b``, which is the right interval when the two
    arms share their questions and much narrower when the arms are correlated.

    Args:
        a: ``(n_a,)`` numbers or booleans (e.g. per-example hallucination with a similar object present).
        b: ``(n_b,)`` numbers or booleans (``(n_a,)`` when paired).
        n_boot: bootstrap resamples, ``>= 100``.
        level: coverage of the interval, in ``(0, 1)``.
        seed: seed of the resampling.
        paired: resample pairs ``(a[i], b[i])`` together.

    Returns:
        ``{"difference", "low", "high", "standard_error"}`` (the standard error is the resamples' standard
        deviation).

    Raises:
        ValueError: if a sample is empty, not 1-D or not finite, ``n_boot`` / ``level`` is out of range, or the
            samples of a paired difference differ in length.

    Example:
        >>> a = np.array([1, 1, 1, 0, 1, 1, 0, 1]); b = np.array([1, 0, 1, 0, 0, 1, 0, 1])
        >>> d = bootstrap_difference(a, b, paired=True, n_boot=500)
        >>> d["difference"], d["low"] >= 0.0
        (0.25, True)
    """
    arrays = []
    for name, x in (("a", a), ("b", b)):
        arr = np.asarray(x, dtype=float)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} holds NaN or inf")
        arrays.append(arr)
    if not isinstance(n_boot, int) or n_boot < 100:
        raise ValueError(f"n_boot must be an int >= 100, got {n_boot!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    rng = np.random.default_rng(seed)
    xa, xb = arrays
    if paired:
        if xa.size != xb.size:
            raise ValueError(f"paired samples must have equal lengths, got {xa.size} and {xb.size}")
        diffs = (xa - xb)[rng.integers(0, xa.size, size=(n_boot, xa.size))].mean(axis=1)
    else:
        ma = xa[rng.integers(0, xa.size, size=(n_boot, xa.size))].mean(axis=1)
        mb = xb[rng.integers(0, xb.size, size=(n_boot, xb.size))].mean(axis=1)
        diffs = ma - mb
    lo, hi = np.quantile(diffs, [(1 - level) / 2, (1 + level) / 2])
    return {
        "difference": float(xa.mean() - xb.mean()),
        "low": float(lo),
        "high": float(hi),
        "standard_error": float(diffs.std(ddof=1)),
    }
