"""The routing history H: embeddings of past queries with every model's observed quality and cost (PORT, Sec. 3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nips25_routing.validation import as_matrix, check_nonzero_rows
from nips25_shared import get_logger

__all__ = ["HistoryStore", "RoutingTable", "load_routerbench", "prompt_text"]

log = get_logger(__name__)


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
        prompts: ``N`` query texts (RouterBench's ``prompt`` holds the repr of a list of turns; they are joined
            with blank lines).
        quality: ``(N, M)`` quality in ``[0, 1]``.
        cost: ``(N, M)`` cost (dollars).
        models: ``M`` model names (column names of the source table).
        sample_ids: ``N`` values of the ``sample_id`` column (row positions as strings if it is absent).
        eval_names: ``N`` values of ``eval_name`` (empty strings if absent).
        rows: ``(N,)`` positions of these rows in the file (differs from ``arange(N)`` after ``missing="drop"``).
        file_rows: number of rows in the file (an embeddings file made for it has this many).
    """

    prompts: list[str]
    quality: np.ndarray
    cost: np.ndarray
    models: list[str]
    sample_ids: list[str] = field(default_factory=list)
    eval_names: list[str] = field(default_factory=list)
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    file_rows: int = 0

    def __len__(self) -> int:
        return len(self.prompts)

    def to_history(self, embeddings: Any, rows: Any = None) -> HistoryStore:
        """The :class:`HistoryStore` of the given ``rows`` (all by default) with their ``(n, D)`` embeddings."""
        idx = np.arange(len(self.prompts)) if rows is None else np.asarray(rows, dtype=np.int64)
        return HistoryStore(embeddings, self.quality[idx], self.cost[idx], list(self.models))


def prompt_text(raw: Any) -> str:
    """The text of one RouterBench ``prompt`` cell: the repr of a list of turns becomes the turns joined by blank
    lines; any other string is kept as it is.

    Example:
        >>> prompt_text("['What is 2+2?', 'And 3+3?']")
        'What is 2+2?\\n\\nAnd 3+3?'
        >>> prompt_text("plain text")
        'plain text'
    """
    import ast

    if isinstance(raw, (list, tuple)):
        return "\n\n".join(str(t) for t in raw)
    text = str(raw)
    if text.startswith("[") and text.endswith("]"):
        try:
            turns = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return text
        if isinstance(turns, list):
            return "\n\n".join(str(t) for t in turns)
    return text


def _row_name(frame: Any, row: int) -> str:
    """``row`` (a 0-based position among the data rows) as the error messages name it.

    Positions count data rows from 0 with the header not counted, as pandas does: in a CSV, data row 0 is the
    line after the header (line numbers can differ when a quoted prompt spans several lines); in a pickle, the
    row's index label is added when it differs from its position.
    """
    label = frame.index[row]
    extra = "" if isinstance(label, (int, np.integer)) and int(label) == row else f", index label {label!r}"
    return f"data row {row} (0-based, header not counted{extra})"


def _numeric_column(frame: Any, column: str, path: Path) -> np.ndarray:
    import pandas as pd

    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(np.isnan(values) & frame[column].notna().to_numpy())
    if bad.size:
        row = int(bad[0])
        raise ValueError(
            f"{path.name}: {_row_name(frame, row)}, column {column!r}: expected a number, got "
            f"{frame[column].iloc[row]!r}"
        )
    return values


def load_routerbench(path: str | Path, *, cost_suffix: str = "|total_cost", missing: str = "error") -> RoutingTable:
    """Read a RouterBench-schema table, as released, into a :class:`RoutingTable`.

    The schema of ``routerbench_0shot.pkl``/``routerbench_5shot.pkl`` (Hu et al., RouterBench, 2024; the data of
    PORT Sec. 5): a pickled pandas DataFrame, one row per prompt, with ``sample_id``, ``prompt`` (the repr of a
    list of turns), ``eval_name``, and per model ``<model>`` (quality in ``[0, 1]``), ``<model>|model_response``
    and ``<model>|total_cost`` (dollars), then ``oracle_model_to_route_to``. A model is every column ``c`` for
    which ``c + cost_suffix`` also exists, in column order. A CSV export with the same columns reads the same.
    The released 5-shot file has 154 empty score cells in 28 ``arc-challenge`` rows; ``missing="drop"`` drops
    such rows (and says how many in the log), the default refuses the file and names the first one.

    Args:
        path: a ``.pkl``/``.pickle`` or ``.csv`` file.
        cost_suffix: suffix of the cost columns.
        missing: ``"error"`` (a missing or non-finite quality/cost cell raises, naming row and column) or ``"drop"``
            (rows with one are dropped).

    Returns:
        The table, models in column order.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if the extension is unknown, the ``prompt`` column or every model column is missing, a model has
            a ``<model>|model_response`` or cost column without its score or cost column, or a
            quality/cost value is non-numeric, out of range, or (with ``missing="error"``) missing; the message names
            the file, the data row (0-based position, header not counted, as pandas counts) and the column.
    """
    import pandas as pd

    if missing not in ("error", "drop"):
        raise ValueError(f"missing must be 'error' or 'drop', got {missing!r}")
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: no RouterBench table at {p} (expected a .pkl or .csv file)")
    if p.suffix in (".pkl", ".pickle"):
        frame = pd.read_pickle(p)
    elif p.suffix == ".csv":
        try:
            frame = pd.read_csv(p)
        except pd.errors.EmptyDataError:
            raise ValueError(f"{p.name}: the file is empty (expected a header row and data rows)") from None
    else:
        raise ValueError(f"path must end in .pkl, .pickle or .csv, got {p.name}")
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{p.name}: must hold a pandas DataFrame, got {type(frame).__name__}")
    if "prompt" not in frame.columns:
        raise ValueError(f"{p.name}: table has no 'prompt' column (columns: {list(frame.columns)[:10]}...)")
    models = [c for c in frame.columns if isinstance(c, str) and f"{c}{cost_suffix}" in frame.columns]
    if not models:
        raise ValueError(f"{p.name}: no model columns with a matching '<model>{cost_suffix}' column")
    response_suffix = "|model_response"
    for c in frame.columns:  # a model with only some of its columns must not drop silently out of the pool
        if not isinstance(c, str):
            continue
        for suffix in (cost_suffix, response_suffix):
            if c.endswith(suffix) and c[: -len(suffix)] not in frame.columns:
                raise ValueError(f"{p.name}: column {c!r} has no score column {c[: -len(suffix)]!r}")
        if c.endswith(response_suffix) and f"{c[: -len(response_suffix)]}{cost_suffix}" not in frame.columns:
            raise ValueError(f"{p.name}: column {c!r} has no cost column '{c[: -len(response_suffix)]}{cost_suffix}'")
    cost_cols = [f"{m}{cost_suffix}" for m in models]
    quality = np.stack([_numeric_column(frame, c, p) for c in models], axis=1)
    cost = np.stack([_numeric_column(frame, c, p) for c in cost_cols], axis=1)
    columns = models + cost_cols
    values = np.concatenate([quality, cost], axis=1)
    bad = ~np.isfinite(values)
    keep = np.ones(len(frame), dtype=bool)
    if bad.any():
        if missing == "error":
            row, col = (int(v[0]) for v in np.nonzero(bad))
            raise ValueError(
                f"{p.name}: {_row_name(frame, row)}, column {columns[col]!r} is missing or not finite "
                f"({values[row, col]}); "
                f"{int(bad.any(axis=1).sum())} rows have such cells (load with missing='drop' to drop them)"
            )
        keep = ~bad.any(axis=1)
        log.warning("%s: dropped %d rows with missing quality/cost cells", p.name, int((~keep).sum()))
    for name, arr, cols, ok in (
        ("quality", quality, models, lambda a: (a >= 0) & (a <= 1)),
        ("cost", cost, cost_cols, lambda a: a >= 0),
    ):
        wrong = ~ok(arr) & keep[:, None] & np.isfinite(arr)
        if wrong.any():
            row, col = (int(v[0]) for v in np.nonzero(wrong))
            expected = "in [0, 1]" if name == "quality" else ">= 0"
            raise ValueError(
                f"{p.name}: {_row_name(frame, row)}, column {cols[col]!r}: {name} must be {expected}, got "
                f"{arr[row, col]}"
            )
    rows = np.flatnonzero(keep)
    kept = frame.iloc[rows]
    sample_ids = [str(x) for x in kept["sample_id"]] if "sample_id" in frame.columns else [str(r) for r in rows]
    eval_names = [str(x) for x in kept["eval_name"]] if "eval_name" in frame.columns else [""] * rows.size
    return RoutingTable(
        [prompt_text(x) for x in kept["prompt"]],
        quality[rows],
        cost[rows],
        models,
        sample_ids,
        eval_names,
        rows,
        len(frame),
    )
