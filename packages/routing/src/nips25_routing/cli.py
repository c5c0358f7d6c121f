"""``nips25-routing``: ``reproduce`` the headline experiment, ``run`` on a RouterBench file, ``route`` JSON lines."""

from __future__ import annotations

import argparse
import functools
import json
import math
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from nips25_routing.budgets import SPLITS
from nips25_routing.estimation import BACKENDS, ANNEstimator
from nips25_routing.history import HistoryStore
from nips25_routing.port import PORTRouter
from nips25_routing.reproduce import reproduce
from nips25_routing.validation import check_positive_int
from nips25_shared import add_common_arguments, run_reproduce, seed_int

__all__ = ["StreamInterrupted", "StreamLineError", "main", "parse_query_line", "route_stream"]


class StreamLineError(ValueError):
    """A bad stdin line; ``routed`` queries before it were routed (and their decisions written)."""

    def __init__(self, message: str, *, lineno: int, routed: int) -> None:
        super().__init__(message)
        self.lineno = lineno
        self.routed = routed


class StreamInterrupted(Exception):
    """SIGINT or SIGTERM stopped ``route``; ``routed`` queries were routed, written and checkpointed."""

    def __init__(self, signum: int, *, routed: int = 0) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum
        self.routed = routed


class _Signals:
    """SIGINT/SIGTERM raise :class:`StreamInterrupted`, but never inside a batch's route-write-checkpoint."""

    def __init__(self) -> None:
        self.critical = False
        self.pending: int | None = None

    def handler(self, signum: int, frame: object) -> None:
        if self.critical:
            self.pending = signum
        else:
            raise StreamInterrupted(signum)


def parse_query_line(line: str, lineno: int, dim: int) -> tuple[object | None, list[float]]:
    """The ``(id, embedding)`` of one JSON line, fully validated; ValueError naming the line and field otherwise."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"stdin line {lineno}: not JSON ({exc})") from exc
    if not isinstance(obj, dict):
        raise ValueError(f"stdin line {lineno}: expected a JSON object, got {type(obj).__name__}")
    if "embedding" not in obj:
        raise ValueError(f"stdin line {lineno}: field 'embedding' is missing")
    emb = obj["embedding"]
    if not isinstance(emb, list):
        raise ValueError(f"stdin line {lineno}: field 'embedding' must be a list of numbers")
    if len(emb) != dim:
        raise ValueError(f"stdin line {lineno}: field 'embedding' must have {dim} entries, got {len(emb)}")
    for i, x in enumerate(emb):
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise ValueError(f"stdin line {lineno}: field 'embedding'[{i}] must be a number, got {json.dumps(x)}")
        if not math.isfinite(x):
            raise ValueError(f"stdin line {lineno}: field 'embedding'[{i}] must be finite, got {x}")
    if not any(emb):
        raise ValueError(f"stdin line {lineno}: field 'embedding' is all zero (cosine similarity is undefined)")
    return obj.get("id"), [float(x) for x in emb]


def route_stream(
    router: PORTRouter,
    lines: TextIO,
    out: TextIO,
    *,
    batch_size: int = 256,
    checkpoint: Callable[[], object] | None = None,
    handle_signals: bool = False,
) -> int:
    """Read ``{"embedding": [...]}`` JSON lines (optional ``"id"``), write ``{"id", "model", "index"}`` lines.

    Every line is validated before it joins a batch. A batch is routed, its decisions written and ``out`` flushed,
    then ``checkpoint`` is called (the CLI saves the router's state atomically there), so after every batch the
    saved state covers exactly the decisions written. On a bad line the queries before it are routed first, so
    the router's state holds exactly the lines before the bad one.

    With ``handle_signals`` (main thread only), SIGINT and SIGTERM stop the stream cleanly: the lines already read
    are routed, written and checkpointed, then :class:`StreamInterrupted` is raised. A signal that arrives while a
    batch is being routed, written or checkpointed takes effect right after it. Only a SIGKILL or a crash between
    writing a batch and its checkpoint can leave the state one batch behind the output.

    Returns:
        The number of queries routed.

    Raises:
        StreamLineError: (a ValueError) on a line that is not a JSON object with a finite, non-zero numeric
            ``embedding`` list of the history's dimension; names the line number and field.
        StreamInterrupted: on SIGINT/SIGTERM with ``handle_signals``.
    """
    batch_size = check_positive_int(batch_size, "batch_size")
    models = router.estimator.history.models
    dim = router.estimator.dim
    batch: list[tuple[object, list[float]]] = []
    count = 0
    done = 0
    guard = _Signals()

    def flush() -> None:
        nonlocal done
        if not batch:
            return
        guard.critical = True
        actions = router.route(np.asarray([e for _, e in batch], dtype=np.float32))
        for (qid, _), a in zip(batch, actions, strict=True):
            model = models[a] if a < len(models) else None
            out.write(json.dumps({"id": qid, "model": model, "index": int(a)}) + "\n")
        out.flush()
        done += len(batch)
        batch.clear()
        if checkpoint is not None:
            checkpoint()
        guard.critical = False
        if guard.pending is not None:
            raise StreamInterrupted(guard.pending, routed=done)

    previous = {}
    if handle_signals:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, guard.handler)
    try:
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                qid, emb = parse_query_line(line, lineno, dim)
            except ValueError as exc:
                flush()
                raise StreamLineError(str(exc), lineno=lineno, routed=count) from exc
            batch.append((count if qid is None else qid, emb))
            count += 1
            if len(batch) >= batch_size:
                flush()
        flush()
    except StreamInterrupted as exc:
        guard.pending = None
        flush()
        raise StreamInterrupted(exc.signum, routed=done) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
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


_DEFAULTS = {"n_total": 10_000, "alpha": 1e-4, "eps": 0.025, "seed": 0}


def _check_matches_state(args: argparse.Namespace, router: PORTRouter) -> None:
    """Usage error if a hyper-parameter given on the command line differs from the resumed state."""
    saved = {"n_total": router.n_total, "alpha": router.config.alpha, "eps": router.config.eps, "seed": router.seed}
    for key, value in saved.items():
        given = getattr(args, key)
        if given is not None and not math.isclose(float(given), float(value), rel_tol=1e-12, abs_tol=0.0):
            flag = "--" + key.replace("_", "-")
            raise ValueError(f"{flag} {given} differs from {value} in --state {args.state}; drop it or use a new state")
    if args.budgets is not None:
        budgets = _parse_budgets(args.budgets)
        if budgets.shape != router.budgets.shape or not np.allclose(budgets, router.budgets, rtol=1e-12, atol=0.0):
            raise ValueError(
                f"--budgets {args.budgets} differs from {router.budgets.tolist()} in --state {args.state}; "
                "drop it or use a new state"
            )


def _parse_budgets(text: str) -> np.ndarray:
    try:
        return np.asarray([float(b) for b in text.split(",")], dtype=np.float64)
    except ValueError as exc:
        raise ValueError(f"--budgets must be comma-separated numbers, got {text!r}") from exc


def _route(args: argparse.Namespace) -> int:
    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be >= 1, got {args.batch_size}")
    history = _load_history(args.history)
    estimator = ANNEstimator(history, backend=args.backend, k=args.k, ef_search=args.ef_search, nprobe=args.nprobe)
    if args.state is not None and args.state.is_file():
        router = PORTRouter.load(args.state, estimator)
        _check_matches_state(args, router)
    else:
        if args.budgets is None:
            raise ValueError("--budgets is required when no --state file exists yet")
        opts = {
            key: default if getattr(args, key) is None else getattr(args, key) for key, default in _DEFAULTS.items()
        }
        router = PORTRouter(
            estimator, _parse_budgets(args.budgets), n_total=int(opts["n_total"]), alpha=float(opts["alpha"]),
            eps=float(opts["eps"]), seed=int(opts["seed"]),
        )  # fmt: skip
    state = args.state
    try:
        n = route_stream(
            router, sys.stdin, sys.stdout, batch_size=args.batch_size, handle_signals=True,
            checkpoint=None if state is None else lambda: router.save(state),
        )  # fmt: skip
    except StreamInterrupted as exc:
        if state is not None:
            router.save(state)
        held = f"; --state {state} holds all {exc.routed} queries written" if state is not None else ""
        print(f"nips25-routing route: {exc} after {exc.routed} queries{held}", file=sys.stderr)
        return 128 + exc.signum
    except StreamLineError as exc:
        if args.state is not None:
            router.save(args.state)
            print(
                f"nips25-routing route: stopped at bad stdin line {exc.lineno}; --state {args.state} holds the "
                f"{exc.routed} queries routed before it",
                file=sys.stderr,
            )
        else:
            print(
                f"nips25-routing route: stopped at bad stdin line {exc.lineno} after {exc.routed} queries",
                file=sys.stderr,
            )
        raise
    if args.state is not None:
        router.save(args.state)
    print(f"routed {n} queries", file=sys.stderr)
    return 0


def _run(args: argparse.Namespace) -> int:
    from nips25_routing.run import run_routerbench

    if (args.embeddings is None) == (args.embed is None):
        raise ValueError("give exactly one of --embeddings E.npy and --embed minilm")
    encoder = None
    if args.embed is not None:
        from nips25_routing.text_zoo import MiniLMEncoder

        encoder = MiniLMEncoder()
    results = run_routerbench(
        args.data, embeddings=args.embeddings, encoder=encoder, budget_multiple=args.budget_multiple,
        split=args.split, n_stream=args.n_stream, seed=args.seed, batch_size=args.batch_size,
        missing="drop" if args.drop_missing else "error", out_dir=args.out,
    )  # fmt: skip
    for name, r in results.items():
        print(f"{name:12s} quality {r['quality']:10.2f}  cost {r['cost']:10.4f}  throughput {r['throughput']:7.0f}")
    print(f"wrote {args.out}/<router>.json, results.json, routers.png", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-routing``."""
    parser = argparse.ArgumentParser(prog="nips25-routing", description="PORT: training-free online LLM routing.")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the headline experiment and write reports/routing/")
    add_common_arguments(rep, slug="routing", profiles=("quick", "text", "paper"))
    rep.add_argument("--seeds", type=int, help="seeds of the comparison and of the dual forms (default: the profile's)")
    rt = sub.add_parser("route", help="route JSON-lines queries from stdin with PORT; decisions to stdout")
    rt.add_argument("--history", type=Path, required=True, help=".npz with embeddings, quality, cost[, models]")
    rt.add_argument(
        "--budgets", help="comma-separated per-model budgets (cost units of the history; must match a resumed --state)"
    )
    rt.add_argument(
        "--n-total", type=int, help="expected stream length N (default 10000; must match a resumed --state)"
    )
    rt.add_argument(
        "--alpha", type=float, help="weight of quality against cost (default 1e-4; must match a resumed --state)"
    )
    rt.add_argument("--eps", type=float, help="learning fraction of the stream (default 0.025)")
    rt.add_argument("--k", type=int, default=5, help="neighbours per estimate (default 5)")
    rt.add_argument("--backend", choices=BACKENDS, default="faiss-hnsw", help="kNN backend (default faiss-hnsw)")
    rt.add_argument(
        "--ef-search", type=int, default=50, help="HNSW query-time list size, >= k (default 50; lower is faster, "
        "see ANNEstimator.tune_ef_search)",
    )  # fmt: skip
    rt.add_argument(
        "--nprobe", type=int, default=8, help="faiss-ivf: inverted lists scanned per query (default 8; see "
        "ANNEstimator.tune_nprobe)",
    )  # fmt: skip
    rt.add_argument("--batch-size", type=int, default=256, help="queries per routing batch, >= 1 (default 256)")
    rt.add_argument("--state", type=Path, help="router state JSON: resumed if present, written after routing")
    rt.add_argument("--seed", type=seed_int, help="seed of the learning phase (default 0)")
    run = sub.add_parser("run", help="PORT and the baselines on your RouterBench-schema file (Table 1 metrics)")
    run.add_argument("--data", type=Path, required=True, help="RouterBench-schema .pkl or .csv, >= 100 rows")
    run.add_argument("--embeddings", type=Path, help=".npy of prompt embeddings, one row per file row")
    run.add_argument("--embed", choices=("minilm",), help="embed the prompts with MiniLM-L6 (the [text] extra)")
    run.add_argument("--budget-multiple", type=float, default=1.0, help="total budget / cheapest model's (default 1)")
    run.add_argument("--split", choices=SPLITS, default="weighted", help="budget split (default weighted)")
    run.add_argument("--n-stream", type=int, help="stream length (default: the official 10,000/36,497 share)")
    run.add_argument("--batch-size", type=int, default=256, help="queries per routing batch (default 256)")
    run.add_argument("--seed", type=seed_int, default=0, help="seed of the split and every draw (default 0)")
    run.add_argument("--drop-missing", action="store_true", help="drop rows with missing score/cost cells")
    run.add_argument("--out", type=Path, required=True, help="directory for <router>.json, results.json, the plot")
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        try:
            run_reproduce(functools.partial(reproduce, n_seeds=args.seeds), args)
        except (FileNotFoundError, ModuleNotFoundError, ValueError) as exc:  # missing RouterBench copy or `text` extra
            rep.error(str(exc))
        return 0
    try:
        return _route(args) if args.command == "route" else _run(args)
    except (ValueError, FileNotFoundError, ModuleNotFoundError) as exc:
        print(f"nips25-routing {args.command}: error: {exc}", file=sys.stderr)
        return 2
