r"""Problem files in the MATH-500 layout: reading, grading, and a search over every problem of a file.

The layout is that of the released MATH-500 test set (Lightman et al., "Let's Verify Step by Step", the 500-problem
split the paper evaluates on): one JSON object per line with the fields ``problem`` and ``answer`` (a string such as
``"\\frac{1}{2}"``) and, in the released file, ``solution``, ``subject``, ``level`` (an int 1-5) and ``unique_id``
(e.g. ``"test/precalculus/807.json"``). :func:`read_math_jsonl` reads it exactly as released (UTF-8, one object per
line, blank lines skipped); :func:`search_problems` runs a search on the problems and grades the chosen answers with
:func:`exact_match`; ``nips25-vgsearch run --data PROBLEMS.jsonl`` is the command line for it (CONTRACT §4b).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from nips25_vgsearch.flops import FlopsModel
from nips25_vgsearch.generator import Generator
from nips25_vgsearch.progress import progress
from nips25_vgsearch.search import GapPolicy, best_of_n, vg_search
from nips25_vgsearch.verifier import Verifier
from nips25_vgsearch.voting import extract_answer, last_boxed

__all__ = [
    "METHODS",
    "MathDataError",
    "MathProblem",
    "exact_match",
    "read_math_jsonl",
    "search_problems",
    "summarize_rows",
]

#: Search strategies of :func:`search_problems`: the package's functions of the same names.
METHODS = ("vg_search", "beam_search", "best_of_n", "dvts")
_OPTIONAL_STR = ("solution", "subject", "unique_id")
#: A ``level`` string the reader accepts: ``"3"`` or ``"Level 3"`` (the MATH data set's form), levels 1-5.
_LEVEL_STR = re.compile(r"\s*(?:level\s*)?[1-5]\s*", re.IGNORECASE)


class MathDataError(ValueError):
    """A line of a MATH-500-layout JSONL cannot be read; the message names the file, the line and the field."""


@dataclass(frozen=True)
class MathProblem:
    """One line of a MATH-500-layout JSONL.

    Attributes:
        problem: the problem text (non-empty).
        answer: the reference answer as text (an int answer is written as its digits), or ``None`` when the line
            has none (only with ``require_answer=False``).
        line: the 1-based line number in the file.
        unique_id, solution, subject: the released file's optional text fields, ``None`` when absent.
        level: the released file's difficulty: an int 1-5 (MATH-500), or a str ``"Level N"`` / ``"N"`` with N in 1-5
            (the MATH data set's form), kept as written; ``None`` when absent.
    """

    problem: str
    answer: str | None
    line: int
    unique_id: str | None = None
    solution: str | None = None
    subject: str | None = None
    level: int | str | None = None

    @property
    def id(self) -> str | int:
        """``unique_id`` when the line has one, else the line number."""
        return self.line if self.unique_id is None else self.unique_id


def read_math_jsonl(
    path: str | os.PathLike[str], *, name: str = "data", require_answer: bool = True
) -> list[MathProblem]:
    """Read a MATH-500-layout JSONL: one ``{"problem", "answer", ...}`` object per line, in file order.

    Lines are split at ``\\n``, ``\\r\\n`` or ``\\r`` only (a U+2028 inside a JSON string is not a line break);
    blank lines are skipped; a UTF-8 byte-order mark is ignored; fields other than the six of the layout are
    ignored.

    Args:
        path: the JSONL file.
        name: what the caller calls the file (a flag such as ``"--data"``, an environment variable), put first in
            every error message.
        require_answer: a line without an ``answer`` (absent or ``null``) is an error; ``False`` reads it with
            ``answer=None`` (a problem to solve without grading). A blank ``answer`` (``""``, whitespace) is an
            error either way: only an absent one means "no reference".

    Returns:
        The problems, one per non-blank line.

    Raises:
        FileNotFoundError: if ``path`` is not a file.
        MathDataError: naming ``name``, the file, the line and the field: a line that is not UTF-8, not JSON or not
            an object; ``problem`` missing, empty or not a str; ``answer`` missing (with ``require_answer``), blank,
            or neither a str nor an int; ``solution``/``subject``/``unique_id`` not a str; ``level`` an int outside
            1-5, a str other than ``"Level N"`` / ``"N"`` (N in 1-5), or neither; a problem or ``unique_id``
            repeated from an earlier line; a file without problems.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = (Path(d) / "p.jsonl").write_text('{"problem": "1+1?", "answer": 2, "level": 1}\\n')
        ...     read_math_jsonl(Path(d) / "p.jsonl")[0]
        MathProblem(problem='1+1?', answer='2', line=1, unique_id=None, solution=None, subject=None, level=1)
    """
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"{name}: {file} is not a file (a MATH-500 JSONL, one JSON object per line)")
    out: list[MathProblem] = []
    seen: dict[str, int] = {}
    seen_ids: dict[str, int] = {}
    for k, raw in enumerate(file.read_bytes().splitlines(), start=1):
        where = f"{name}: {file} line {k}"
        try:
            text = raw.decode("utf-8-sig" if k == 1 else "utf-8")
        except UnicodeDecodeError as err:
            raise MathDataError(f"{where} is not UTF-8 text (byte {err.start + 1} of the line)") from None
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as err:
            raise MathDataError(f"{where} is not JSON ({err.msg})") from None
        if not isinstance(row, dict):
            raise MathDataError(f"{where} is not a JSON object (got {type(row).__name__})")
        problem = row.get("problem")
        if not isinstance(problem, str) or not problem.strip():
            raise MathDataError(f"{where} needs a non-empty str 'problem' field, got {problem!r}")
        answer = row.get("answer")
        if answer is None:
            if require_answer:
                raise MathDataError(f"{where} needs an 'answer' field")
        elif isinstance(answer, bool) or not isinstance(answer, (str, int)):
            raise MathDataError(f"{where}: 'answer' must be a str or an int (compared with the boxed answer as "
                                f"text), got {answer!r}")  # fmt: skip
        elif isinstance(answer, str) and not answer.strip():
            absent = "" if require_answer else ", or leave the field out (or null) for a problem to solve ungraded"
            raise MathDataError(f"{where}: 'answer' is blank ({answer!r}); give the reference answer{absent}")
        extra: dict[str, Any] = {}
        for field in _OPTIONAL_STR:
            value = row.get(field)
            if value is not None and not isinstance(value, str):
                raise MathDataError(f"{where}: '{field}' must be a str, got {value!r}")
            extra[field] = value
        level = row.get("level")
        if level is not None and not _is_level(level):
            raise MathDataError(f"{where}: 'level' must be an int 1-5 (MATH-500) or a str 'Level N' / 'N' with N in "
                                f"1-5 (MATH), got {level!r}; leave the field out (or null) when unknown")  # fmt: skip
        if problem in seen:
            raise MathDataError(f"{where} repeats the problem of line {seen[problem]}")
        seen[problem] = k
        uid = extra["unique_id"]
        if uid is not None:
            if uid in seen_ids:
                raise MathDataError(f"{where} repeats the unique_id {uid!r} of line {seen_ids[uid]}")
            seen_ids[uid] = k
        out.append(MathProblem(problem=problem, answer=None if answer is None else str(answer).strip(), line=k,
                               level=level, **extra))  # fmt: skip
    if not out:
        raise MathDataError(f"{name}: {file} holds no problems")
    return out


def _is_level(level: object) -> bool:
    """Whether ``level`` is a MATH difficulty: an int 1-5 (not a bool) or a str matching :data:`_LEVEL_STR`."""
    if isinstance(level, bool):
        return False
    if isinstance(level, int):
        return 1 <= level <= 5
    return isinstance(level, str) and _LEVEL_STR.fullmatch(level) is not None


def exact_match(completion: str, answer: str) -> bool:
    r"""Whether the last ``\boxed{...}`` of ``completion`` (braces balanced) equals ``answer`` after stripping.

    No LaTeX normalisation (``0.5`` and ``\frac{1}{2}`` differ), unlike a symbolic grader.

    Example:
        >>> exact_match("so \\boxed{\\frac{1}{2}}", "\\frac{1}{2}")
        True
    """
    return last_boxed(completion) is not None and extract_answer(completion) == answer.strip()


def search_problems(
    problems: Sequence[MathProblem],
    generator: Generator,
    verifier: Verifier,
    *,
    method: Literal["vg_search", "beam_search", "best_of_n", "dvts"] = "vg_search",
    n: int = 4,
    beam_width: int = 4,
    g: int | GapPolicy | None = 1,
    num_iterations: int | None = None,
    max_steps: int = 12,
    agg: str = "last",
    filter_duplicates: bool = True,
    seed: int = 0,
    batch_size: int = 4,
    flops_models: Mapping[str, FlopsModel] | None = None,
) -> list[dict[str, Any]]:
    """Run one search per problem and grade the chosen answers: one JSON-ready row per problem, in input order.

    ``method`` picks :func:`~nips25_vgsearch.vg_search` (granularity ``g``), ``beam_search`` (``g = 1``),
    :func:`~nips25_vgsearch.best_of_n` (``n`` independent answers, ``beam_width``, ``g``, ``num_iterations``,
    ``max_steps`` and ``filter_duplicates`` unused) or :func:`~nips25_vgsearch.dvts`; the defaults are
    :func:`~nips25_vgsearch.vg_search`'s. Problems are searched ``batch_size`` at a time (one batched generator and
    verifier call per step for the chunk); a path's randomness depends only on ``(seed, problem, lineage)``, so the
    rows do not depend on the batch (up to floating-point differences of batched kernels).

    Args:
        problems: from :func:`read_math_jsonl`.
        generator, verifier: the models (e.g. :func:`~nips25_vgsearch.load_generator`,
            :func:`~nips25_vgsearch.load_prm`).
        method: one of :data:`METHODS`.
        n, beam_width, g, num_iterations, max_steps, agg, filter_duplicates, seed: as in
            :func:`~nips25_vgsearch.vg_search` (``g=None`` is the full length, a :class:`~nips25_vgsearch.GapPolicy`
            the ``gap`` adaptive policy).
        batch_size: problems per search call, ``>= 1``.
        flops_models: ``{accounting name: FlopsModel}``; the search runs with the first, and every row gives its
            FLOPs under each (default ``{"prefill-reread": FlopsModel()}``, the paper's 1.5B / 7B sizes).

    Returns:
        Rows ``{"id", "line", "unique_id", "subject", "level", "answer" (the chosen completion's
        :func:`~nips25_vgsearch.extract_answer`), "reference" (or ``None``), "correct" (:func:`exact_match`, or
        ``None`` without a reference), "score" (the chosen completion's aggregated PRM score, ``None`` if nothing
        completed), "completion", "n_completed", "g" (``"inf"`` for the full length), "g_schedule", "ledger" (the
        :class:`~nips25_vgsearch.ComputeLedger` counts), "flops" ({accounting: FLOPs})}``.

    Raises:
        ValueError: on an unknown ``method``, empty ``problems``, ``batch_size < 1``, ``g`` other than 1 with
            ``beam_search``, an empty ``flops_models``, or any error of the search itself (out-of-range
            hyper-parameters).
        TypeError: if a problem is not a :class:`MathProblem`.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if isinstance(problems, (str, bytes)) or not problems:
        raise ValueError("problems must be a non-empty sequence of MathProblem")
    for i, p in enumerate(problems):
        if not isinstance(p, MathProblem):
            raise TypeError(f"problems[{i}] must be a MathProblem, got {type(p).__name__}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    if method == "beam_search" and g != 1:
        raise ValueError(f"beam_search fixes g=1, got g={g!r}; use method='vg_search' for another granularity")
    models = dict(flops_models) if flops_models is not None else {"prefill-reread": FlopsModel()}
    if not models:
        raise ValueError("flops_models must name at least one FlopsModel")
    search_flops = next(iter(models.values()))
    texts = [p.problem for p in problems]
    results = []
    chunks = range(0, len(texts), batch_size)
    for start in progress(chunks, desc=f"{method} ({len(texts)} problems, {batch_size} per call)"):
        chunk = texts[start : start + batch_size]
        if method == "best_of_n":
            results += best_of_n(chunk, generator, verifier, n=n, agg=agg, seed=seed, flops_model=search_flops)
        else:
            results += vg_search(
                chunk, generator, verifier, n=n, beam_width=beam_width, g=1 if method == "beam_search" else g,
                num_iterations=num_iterations, max_steps=max_steps, agg=agg, filter_duplicates=filter_duplicates,
                refill="branch" if method == "dvts" else "cyclic", diverse=method == "dvts", seed=seed,
                flops_model=search_flops,
            )  # fmt: skip
    rows = []
    for p, r in zip(problems, results):
        rows.append({
            "id": p.id, "line": p.line, "unique_id": p.unique_id, "subject": p.subject, "level": p.level,
            "answer": extract_answer(r.answer), "reference": p.answer,
            "correct": None if p.answer is None else exact_match(r.answer, p.answer),
            "score": r.scores[0] if r.scores else None, "completion": r.answer, "n_completed": len(r.completions),
            "g": "inf" if r.g is None else r.g, "g_schedule": ["inf" if x is None else x for x in r.g_schedule],
            "ledger": asdict(r.ledger), "flops": {k: fm.flops(r.ledger) for k, fm in models.items()},
        })  # fmt: skip
    return rows


def summarize_rows(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    r"""Accuracy with its standard error and mean cost over the rows of :func:`search_problems`.

    Accuracy :math:`\hat p = c / m` over the :math:`m` rows with a reference (``correct`` not ``None``), with the
    binomial standard error :math:`\sqrt{\hat p (1 - \hat p) / m}` (0 when :math:`\hat p` is 0 or 1: a
    degenerate estimate, not a certainty).

    Args:
        rows: rows of :func:`search_problems`.

    Returns:
        ``{"problems", "graded", "correct", "accuracy", "se"}`` (``accuracy`` and ``se`` ``None`` when no row has
        a reference), ``"no_completion"`` (rows whose search completed nothing), and the per-problem means
        ``"flops_mean"`` ({accounting: mean FLOPs}), ``"gen_tokens_mean"``, ``"verifier_calls_mean"``,
        ``"verifier_tokens_mean"``.

    Raises:
        ValueError: if ``rows`` is empty.
    """
    if not rows:
        raise ValueError("rows must be non-empty")
    graded = [bool(r["correct"]) for r in rows if r["correct"] is not None]
    acc = float(np.mean(graded)) if graded else None
    se = None if acc is None else math.sqrt(acc * (1.0 - acc) / len(graded))
    names = list(rows[0]["flops"])
    return {
        "problems": len(rows), "graded": len(graded), "correct": int(sum(graded)), "accuracy": acc, "se": se,
        "no_completion": sum(1 for r in rows if r["score"] is None),
        "flops_mean": {k: float(np.mean([r["flops"][k] for r in rows])) for k in names},
        **{f"{k}_mean": float(np.mean([r["ledger"][k] for r in rows]))
           for k in ("gen_tokens", "verifier_calls", "verifier_tokens")},
    }  # fmt: skip
