"""``nips25-routing``: ``reproduce`` the headline experiment, ``route`` JSON-lines queries on stdin."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from nips25_routing.estimation import BACKENDS, ANNEstimator
from nips25_routing.history import HistoryStore
from nips25_routing.port import PORTRouter
from nips25_routing.reproduce import reproduce
from nips25_shared import add_common_arguments, run_reproduce

__all__ = ["main", "route_stream"]


def route_stream(router: PORTRouter, lines: TextIO, out: TextIO, *, batch_size: int = 256) -> int:
    """Read ``{"embedding": [...]}`` JSON lines (optional ``"id"``), write ``{"id", "model", "index"}`` lines.

    Returns:
        The number of queries routed.

    Raises:
        ValueError: on a line that is not a JSON object with a numeric ``embedding`` list (names the line number).
    """
    models = router.estimator.history.models
    batch: list[tuple[object, list[float]]] = []
    count = 0

    def flush() -> None:
        actions = router.route(np.asarray([e for _, e in batch], dtype=np.float32))
        for (qid, _), a in zip(batch, actions, strict=True):
            model = models[a] if a < len(models) else None
            out.write(json.dumps({"id": qid, "model": model, "index": int(a)}) + "\n")
        batch.clear()

    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"stdin line {lineno}: not JSON ({exc})") from exc
        emb = obj.get("embedding") if isinstance(obj, dict) else None
        if not isinstance(emb, list) or not emb:
            raise ValueError(f"stdin line {lineno}: expected an object with a non-empty 'embedding' list")
        batch.append((obj.get("id", count), emb))
        count += 1
        if len(batch) >= batch_size:
            flush()
    if batch:
        flush()
    return count


def _load_history(path: Path) -> HistoryStore:
    if not path.is_file():
        raise FileNotFoundError(f"--history: no file at {path}")
    with np.load(path, allow_pickle=False) as npz:
        missing = {"embeddings", "quality", "cost"} - set(npz.files)
        if missing:
            raise ValueError(f"--history: {path} misses arrays {sorted(missing)}")
        models = [str(m) for m in npz["models"]] if "models" in npz.files else []
        return HistoryStore(npz["embeddings"], npz["quality"], npz["cost"], models)


def _route(args: argparse.Namespace) -> int:
    history = _load_history(args.history)
    estimator = ANNEstimator(history, backend=args.backend, k=args.k)
    if args.state is not None and args.state.is_file():
        router = PORTRouter.load(args.state, estimator)
    else:
        if args.budgets is None:
            raise ValueError("--budgets is required when no --state file exists yet")
        router = PORTRouter(
            estimator, [float(b) for b in args.budgets.split(",")], n_total=args.n_total, alpha=args.alpha,
            eps=args.eps, seed=args.seed,
        )  # fmt: skip
    n = route_stream(router, sys.stdin, sys.stdout, batch_size=args.batch_size)
    if args.state is not None:
        router.save(args.state)
    print(f"routed {n} queries", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-routing``."""
    parser = argparse.ArgumentParser(prog="nips25-routing", description="PORT: training-free online LLM routing.")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the headline experiment and write reports/routing/")
    add_common_arguments(rep, slug="routing")
    rt = sub.add_parser("route", help="route JSON-lines queries from stdin with PORT; decisions to stdout")
    rt.add_argument("--history", type=Path, required=True, help=".npz with embeddings, quality, cost[, models]")
    rt.add_argument("--budgets", help="comma-separated per-model budgets (cost units of the history)")
    rt.add_argument("--n-total", type=int, default=10_000, help="expected stream length N (default 10000)")
    rt.add_argument("--alpha", type=float, default=1e-4, help="weight of quality against cost (default 1e-4)")
    rt.add_argument("--eps", type=float, default=0.025, help="learning fraction of the stream (default 0.025)")
    rt.add_argument("--k", type=int, default=5, help="neighbours per estimate (default 5)")
    rt.add_argument("--backend", choices=BACKENDS, default="faiss-hnsw", help="kNN backend (default faiss-hnsw)")
    rt.add_argument("--batch-size", type=int, default=256, help="queries per routing batch (default 256)")
    rt.add_argument("--state", type=Path, help="router state JSON: resumed if present, written after routing")
    rt.add_argument("--seed", type=int, default=0, help="seed of the learning phase (default 0)")
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        run_reproduce(reproduce, args)
        return 0
    try:
        return _route(args)
    except (ValueError, FileNotFoundError) as exc:
        print(f"nips25-routing route: error: {exc}", file=sys.stderr)
        return 2
