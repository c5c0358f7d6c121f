"""The routing history H: embeddings of past queries with every model's observed quality and cost (PORT, Sec. 3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nips25_routing.validation import as_matrix, check_nonzero_rows

__all__ = ["HistoryStore", "RoutingTable", "load_routerbench"]


@dataclass(frozen=True)
class HistoryStore:
    r"""Past queries with every model's quality :math:`d_{hi}\in[0,1]` and cost :math:`g_{hi}\ge 0`.

    Args:
        embeddings: ``(H, D)`` query embeddings (any scale; the estimator L2-normalises them).
        quality: ``(H, M)`` quality of model ``i`` on query ``h`` (e.g. 1 if correct), in ``[0, 1]``.
        cost: ``(H, M)`` cost of model ``i`` on query ``h`` (e.g. dollars), ``>= 0``.
        models: ``M`` model names.

    Raises:
        ValueError: on mismatched shapes, NaN/inf, empty arrays, quality outside ``[0, 1]``, negative cost or
            duplicate model names.

    Example:
        >>> import numpy as np
        >>> h = HistoryStore(np.eye(2), np.array([[1.0, 0.0], [0.0, 1.0]]), np.ones((2, 2)), ["a", "b"])
        >>> h.n_models, h.size
        (2, 2)
    """

    embeddings: np.ndarray
    quality: np.ndarray
    cost: np.ndarray
    models: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        emb = check_nonzero_rows(as_matrix(self.embeddings, "embeddings", dtype=np.float32), "embeddings")
        n = emb.shape[0]
        quality = as_matrix(self.quality, "quality", rows=n)
        cost = as_matrix(self.cost, "cost", rows=n, cols=quality.shape[1])
        if (quality < 0).any() or (quality > 1).any():
            raise ValueError("quality must lie in [0, 1]")
        if (cost < 0).any():
            raise ValueError("cost must be >= 0")
        models = list(self.models) or [f"model-{i}" for i in range(quality.shape[1])]
        if len(models) != quality.shape[1] or len(set(models)) != len(models):
            raise ValueError(f"models must be {quality.shape[1]} distinct names, got {models}")
        object.__setattr__(self, "embeddings", np.ascontiguousarray(emb))
        object.__setattr__(self, "quality", quality)
        object.__setattr__(self, "cost", cost)
        object.__setattr__(self, "models", models)

    @property
    def size(self) -> int:
        """Number of history queries ``H``."""
        return int(self.quality.shape[0])

    @property
    def n_models(self) -> int:
        """Number of models ``M``."""
        return int(self.quality.shape[1])


@dataclass(frozen=True)
class RoutingTable:
    """A table of queries with every model's quality and cost, as RouterBench ships it (no embeddings yet).

    Attributes:
        prompts: ``N`` query texts.
        quality: ``(N, M)`` quality in ``[0, 1]``.
        cost: ``(N, M)`` cost (dollars).
        models: ``M`` model names (column names of the source table).
    """

    prompts: list[str]
    quality: np.ndarray
    cost: np.ndarray
    models: list[str]

    def to_history(self, embeddings: Any, rows: Any = None) -> HistoryStore:
        """The :class:`HistoryStore` of the given ``rows`` (all by default) with their ``(n, D)`` embeddings."""
        idx = np.arange(len(self.prompts)) if rows is None else np.asarray(rows, dtype=np.int64)
        return HistoryStore(embeddings, self.quality[idx], self.cost[idx], list(self.models))


def load_routerbench(path: str | Path, *, cost_suffix: str = "|total_cost") -> RoutingTable:
    """Read a RouterBench-schema table (pickle of a pandas DataFrame, or CSV) into a :class:`RoutingTable`.

    The schema (Hu et al., RouterBench, 2024; used by PORT Sec. 5): one row per prompt with a ``prompt`` column,
    one quality column per model named after it, and a cost column ``"<model>|total_cost"``. A model is every
    column ``c`` for which ``c + cost_suffix`` also exists.

    Args:
        path: a ``.pkl``/``.pickle`` or ``.csv`` file.
        cost_suffix: suffix of the cost columns.

    Returns:
        The table, models in column order.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if the extension is unknown, the ``prompt`` column or every model column is missing, or a
            quality/cost value is missing or out of range.
    """
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: no RouterBench table at {p} (expected a .pkl or .csv file)")
    if p.suffix in (".pkl", ".pickle"):
        frame = pd.read_pickle(p)
    elif p.suffix == ".csv":
        frame = pd.read_csv(p)
    else:
        raise ValueError(f"path must end in .pkl, .pickle or .csv, got {p.name}")
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"path must hold a pandas DataFrame, got {type(frame).__name__}")
    if "prompt" not in frame.columns:
        raise ValueError(f"path: table has no 'prompt' column (columns: {list(frame.columns)[:10]}...)")
    models = [c for c in frame.columns if isinstance(c, str) and f"{c}{cost_suffix}" in frame.columns]
    if not models:
        raise ValueError(f"path: no model columns with a matching '<model>{cost_suffix}' column")
    quality = frame[models].to_numpy(dtype=np.float64)
    cost = frame[[f"{m}{cost_suffix}" for m in models]].to_numpy(dtype=np.float64)
    if not (np.isfinite(quality).all() and np.isfinite(cost).all()):
        raise ValueError("path: table has missing or non-finite quality/cost values")
    if (quality < 0).any() or (quality > 1).any() or (cost < 0).any():
        raise ValueError("path: quality must lie in [0, 1] and cost must be >= 0")
    return RoutingTable([str(x) for x in frame["prompt"]], quality, cost, models)
