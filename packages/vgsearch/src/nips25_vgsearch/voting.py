"""Final-answer selection over a search's completed paths: PRM argmax, majority vote, PRM-weighted majority vote.

The paper's code (search-and-learn ``utils/score.py``) reports all three at ``n = 2^k``; the search itself returns
the PRM argmax (:attr:`~nips25_vgsearch.SearchResult.answer`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

from nips25_vgsearch.generator import STOP
from nips25_vgsearch.search import SearchResult

__all__ = ["extract_answer", "final_answer", "last_boxed"]

_BOXED = "\\boxed{"


def last_boxed(text: str) -> str | None:
    r"""Content of the last complete ``\boxed{...}`` of ``text``, braces balanced (``\frac{1}{2}`` stays whole).

    Returns:
        The content, unstripped, or ``None`` when ``text`` has no closed box.

    Example:
        >>> last_boxed("a \\boxed{1} b \\boxed{\\frac{1}{2}}")
        '\\frac{1}{2}'

    Raises:
        TypeError: if ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    start = text.rfind(_BOXED)
    while start >= 0:
        depth, i = 1, start + len(_BOXED)
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            return text[start + len(_BOXED) : i - 1]
        start = text.rfind(_BOXED, 0, start)
    return None


def extract_answer(completion: str) -> str:
    r"""The final answer of a completion: the content of its last ``\boxed{...}``, else its last non-empty step.

    Braces inside the box are balanced, so ``\boxed{\frac{1}{2}}`` gives ``\frac{1}{2}``; an unclosed box (a
    truncated answer) is ignored.

    Args:
        completion: a completed path (steps separated by ``"\n\n"``).

    Returns:
        The answer string, stripped (``""`` for an empty completion).

    Raises:
        TypeError: if ``completion`` is not a str.

    Example:
        >>> extract_answer("2+3=5\n\nso \\boxed{5}\n\n")
        '5'
    """
    if not isinstance(completion, str):
        raise TypeError(f"completion must be a str, got {type(completion).__name__}")
    boxed = last_boxed(completion)
    if boxed is not None:
        return boxed.strip()
    steps = [s.strip() for s in completion.split(STOP) if s.strip()]
    return steps[-1] if steps else ""


def final_answer(
    result: SearchResult,
    *,
    method: Literal["best", "majority", "weighted"] = "best",
    extract: Callable[[str], str] = extract_answer,
) -> str:
    r"""Pick the final completion of one search.

    * ``"best"``: the completion with the highest aggregated PRM score (the search's own answer).
    * ``"majority"``: the answer :math:`a` with the most completions, :math:`\arg\max_a |\{i : e(c_i) = a\}|`.
    * ``"weighted"``: PRM-weighted majority, :math:`\arg\max_a \sum_{i : e(c_i) = a} s_i` (search-and-learn's
      weighted vote: the sum of the aggregated scores of the completions giving ``a``).

    Ties between answers go to the answer whose best completion ranks first in ``result.completions`` (best
    first). The returned text is the highest-scored completion giving the winning answer, so a task's
    ``is_correct(problem, completion)`` applies unchanged.

    Args:
        result: a :class:`~nips25_vgsearch.SearchResult` (its ``completions`` and ``scores``, best first).
        method: ``"best"``, ``"majority"`` or ``"weighted"``.
        extract: completion -> answer string used to group completions (default :func:`extract_answer`).

    Returns:
        The chosen completion (``""`` if nothing completed).

    Raises:
        TypeError: if ``result`` is not a SearchResult or ``extract`` is not callable or returns a non-str.
        ValueError: on an unknown ``method`` or non-finite scores.

    References:
        Chen et al., NeurIPS 2025 (arXiv:2505.11730), Sec. 4 (BoN variants); search-and-learn ``utils/score.py``.
    """
    if not isinstance(result, SearchResult):
        raise TypeError(f"result must be a SearchResult, got {type(result).__name__}")
    if method not in ("best", "majority", "weighted"):
        raise ValueError(f"method must be 'best', 'majority' or 'weighted', got {method!r}")
    if not callable(extract):
        raise TypeError(f"extract must be callable, got {type(extract).__name__}")
    if len(result.scores) != len(result.completions):
        raise ValueError(f"result has {len(result.completions)} completions but {len(result.scores)} scores")
    if not all(math.isfinite(s) for s in result.scores):
        raise ValueError("result.scores must be finite")
    if not result.completions:
        return ""
    if method == "best":
        return result.completions[0]
    tally: dict[str, float] = {}
    first: dict[str, int] = {}
    for i, (text, score) in enumerate(zip(result.completions, result.scores)):
        answer = extract(text)
        if not isinstance(answer, str):
            raise TypeError(f"extract must return a str, got {type(answer).__name__}")
        tally[answer] = tally.get(answer, 0.0) + (1.0 if method == "majority" else float(score))
        first.setdefault(answer, i)
    winner = max(tally, key=lambda a: (tally[a], -first[a]))
    return result.completions[first[winner]]
