"""Run PORT and the paper's baselines on your own RouterBench-schema file (``nips25-routing run``, Table 1)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nips25_routing.compare import ROUTERS, compare_routers, stream_budgets
from nips25_routing.history import RoutingTable, load_routerbench
from nips25_routing.validation import check_nonnegative_int, check_positive_int
from nips25_shared import get_logger
from nips25_shared.cache import atomic_write
from nips25_shared.logs import is_main_rank

__all__ = ["MIN_ROWS", "OFFICIAL_STREAM_SHARE", "run_routerbench"]

log = get_logger(__name__)
MIN_ROWS = 100  # smallest file `run` accepts: a stream and a history of a few dozen rows each
OFFICIAL_STREAM_SHARE = 10_000 / 36_497  # the official split: 10,000 of RouterBench's 36,497 rows are the stream


def _embeddings(table: RoutingTable, embeddings: Any, encoder: Any) -> np.ndarray:
    if (embeddings is None) == (encoder is None):
        raise ValueError("give exactly one of embeddings (an (N, D) array or .npy path) and encoder")
    if encoder is not None:
        return np.asarray(encoder.encode(table.prompts), dtype=np.float32)
    if isinstance(embeddings, (str, Path)):
        path = Path(embeddings)
        if not path.is_file():
            raise FileNotFoundError(f"embeddings: no file at {path}")
        embeddings = np.load(path, allow_pickle=False)
    emb = np.asarray(embeddings, dtype=np.float32)
    if emb.ndim != 2:
        raise ValueError(f"embeddings must be a 2-D array (one row per table row), got shape {emb.shape}")
    if emb.shape[0] == table.file_rows:
        emb = emb[table.rows]
    elif emb.shape[0] != len(table):
        raise ValueError(f"embeddings must have one row per table row ({table.file_rows}), got {emb.shape[0]}")
    bad = np.flatnonzero(~np.isfinite(emb).all(axis=1) | ~emb.any(axis=1))
    if bad.size:
        row = int(table.rows[bad[0]])
        raise ValueError(f"embeddings row {row} (0-based, as numpy counts) is not finite or all zero")
    return emb


def _plot(results: dict[str, dict[str, float]], out_dir: Path, title: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, key, label in zip(axes, ("quality", "throughput"), ("Performance", "Throughput"), strict=True):
        ax.bar(names, [results[n][key] for n in names], color=["C3" if n == "PORT" else "C0" for n in names])
        ax.set_ylabel(label)
        ax.tick_params(axis="x", rotation=45, labelsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out_dir / "routers.png", dpi=120)
    plt.close(fig)
    return "routers.png"


def run_routerbench(
    data: str | Path | RoutingTable,
    *,
    embeddings: Any = None,
    encoder: Any = None,
    budget_multiple: float = 1.0,
    split: str = "weighted",
    n_stream: int | None = None,
    seed: int = 0,
    batch_size: int = 256,
    missing: str = "error",
    routers: Sequence[str] = ROUTERS,
    out_dir: str | Path | None = None,
) -> dict[str, dict[str, float]]:
    """PORT and the paper's baselines on a RouterBench-schema file: the official split, budgets and metrics.

    The rows are shuffled with ``seed``; the first ``n_stream`` are the stream (in that arrival order), the rest
    the history. The budgets are ``budget_multiple`` times what the cheapest model would spend on the stream, split
    by ``split`` from the history's per-model means. Every router is run by
    :func:`~nips25_routing.compare_routers` (PORT with the package defaults; ties at random).

    Args:
        data: a RouterBench ``.pkl``/``.csv`` (read by :func:`~nips25_routing.load_routerbench`) or a loaded table.
        embeddings: ``(R, D)`` prompt embeddings, one row per row of the file, or a ``.npy`` path of them.
        encoder: instead of ``embeddings``, a :class:`~nips25_routing.SentenceEncoder` (e.g.
            :class:`~nips25_routing.MiniLMEncoder`) that embeds the prompts.
        budget_multiple: the paper's budget multiple (Table 1: 1).
        split: budget split (``weighted``, ``cost``, ``perf``, ``uniform``).
        n_stream: stream length; default the official share (10,000 of 36,497 rows), at most 10,000.
        seed: seed of the shuffle, PORT's learning phase and every tie draw.
        batch_size: queries per routing batch (the paper: 256).
        missing: ``"error"`` or ``"drop"`` rows with missing cells (see :func:`~nips25_routing.load_routerbench`).
        routers: which of :data:`~nips25_routing.compare.ROUTERS` to run.
        out_dir: if given, one ``<router>.json`` per router (official keys ``quality, cost, ratio, throughput``),
            ``results.json`` (all of them, the budgets and the split) and ``routers.png``, each written atomically
            and only by the main rank (:func:`nips25_shared.logs.is_main_rank`: another rank of a distributed launch
            computes and returns the same results and writes nothing).

    Returns:
        ``{router: {"quality", "cost", "ratio", "throughput", "relative"}}``; ``relative`` is Performance over
        Approx-Opt's (``nan`` if Approx-Opt was not run).

    Raises:
        ValueError: on a table of fewer than :data:`MIN_ROWS` rows, embeddings of the wrong shape, or a bad file
            (the loader names the row and column).
        FileNotFoundError: if a file does not exist.

    Example:
        >>> import numpy as np, pandas as pd, tempfile, pathlib
        >>> rng = np.random.default_rng(0)
        >>> frame = pd.DataFrame({"prompt": [f"['q{i}']" for i in range(120)],
        ...                       "a": rng.uniform(size=120), "a|total_cost": rng.uniform(1e-4, 2e-4, 120),
        ...                       "b": rng.uniform(size=120), "b|total_cost": rng.uniform(1e-3, 2e-3, 120)})
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "rb.pkl"; frame.to_pickle(path)
        >>> res = run_routerbench(path, embeddings=rng.normal(size=(120, 8)), routers=("PORT", "Random"))
        >>> sorted(res["PORT"])
        ['cost', 'quality', 'ratio', 'relative', 'throughput']
    """
    table = data if isinstance(data, RoutingTable) else load_routerbench(data, missing=missing)
    if len(table) < MIN_ROWS:
        raise ValueError(f"data must have at least {MIN_ROWS} usable rows, got {len(table)}")
    if not table.rows.size:
        table = RoutingTable(
            table.prompts, table.quality, table.cost, table.models, table.sample_ids, table.eval_names,
            np.arange(len(table)), len(table),
        )  # fmt: skip
    emb = _embeddings(table, embeddings, encoder)
    seed = check_nonnegative_int(seed, "seed")
    n = len(table)
    n_stream = min(10_000, max(1, round(OFFICIAL_STREAM_SHARE * n))) if n_stream is None else n_stream
    n_stream = check_positive_int(n_stream, "n_stream")
    if n_stream > n - 5:
        raise ValueError(f"n_stream must leave at least 5 history rows of {n}, got {n_stream}")
    order = np.random.default_rng(seed).permutation(n)
    stream, hist = order[:n_stream], order[n_stream:]
    history = table.to_history(emb[hist], hist)
    q, g = table.quality[stream], table.cost[stream]
    budgets = stream_budgets(history, g, budget_multiple=budget_multiple, split=split)
    res = compare_routers(
        history, emb[stream], q, g, budgets=budgets, seed=seed, batch_size=batch_size, routers=routers,
    )  # fmt: skip
    approx = res["Approx-Opt"].quality if "Approx-Opt" in res else float("nan")
    out = {
        name: {"quality": r.quality, "cost": r.cost, "ratio": r.ratio, "throughput": float(r.throughput),
               "relative": r.quality / approx if approx > 0 else float("nan")}
        for name, r in res.items()
    }  # fmt: skip
    if out_dir is not None and is_main_rank():
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        for name, metrics in out.items():
            atomic_write(d / f"{name}.json", json.dumps(metrics, indent=2).encode())
        summary = {
            "models": table.models, "n_rows": n, "n_stream": n_stream, "n_history": int(hist.size),
            "budget_multiple": budget_multiple, "split": split, "seed": seed, "budgets": budgets.tolist(),
            "affordable_queries": (budgets / g.mean(axis=0)).tolist(), "routers": out,
        }  # fmt: skip
        atomic_write(d / "results.json", json.dumps(summary, indent=2).encode())
        _plot(out, d, f"{n_stream}-query stream, budget {budget_multiple}x, {split} split")
    return out
