"""The verifier side of the search: a process reward model (PRM) scoring every step of a prefix."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np

__all__ = ["AGGREGATIONS", "Aggregation", "Verifier", "aggregate_scores"]

Aggregation = Literal["last", "min", "prod"]
AGGREGATIONS: tuple[str, ...] = ("last", "min", "prod")


@runtime_checkable
class Verifier(Protocol):
    """A process reward model.

    ``score(problems, prefixes)`` returns, for each pair, one score in ``[0, 1]`` per step of the prefix (steps end
    at the stop string; a trailing unterminated answer counts as a step). ``n_params`` feeds the FLOPs model.
    """

    n_params: float

    def score(self, problems: Sequence[str], prefixes: Sequence[str]) -> list[list[float]]: ...


def aggregate_scores(step_scores: Sequence[float], *, agg: str = "last") -> float:
    r"""Aggregate per-step PRM scores into one path score (the paper's code, ``utils/score.py``).

    ``last``: :math:`s_T`; ``min``: :math:`\min_t s_t`; ``prod``: :math:`\prod_t s_t`.

    Args:
        step_scores: per-step scores, non-empty, finite.
        agg: ``"last"`` (the paper's default), ``"min"`` or ``"prod"``.

    Returns:
        The aggregated score.

    Raises:
        ValueError: on an unknown ``agg``, empty or non-finite ``step_scores``.

    Example:
        >>> aggregate_scores([0.9, 0.5, 0.8], agg="min")
        0.5
    """
    if agg not in AGGREGATIONS:
        raise ValueError(f"agg must be one of {AGGREGATIONS}, got {agg!r}")
    if len(step_scores) == 0:
        raise ValueError("step_scores must be non-empty (one score per step)")
    values = [float(s) for s in step_scores]
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"step_scores must be finite, got {values}")
    if agg == "last":
        return values[-1]
    if agg == "min":
        return min(values)
    return float(np.prod(values))
