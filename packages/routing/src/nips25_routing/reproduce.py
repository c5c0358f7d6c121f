"""The headline experiment: PORT against the paper's baselines at budgets 0.25x-2x, several seeds (Table 1, Fig. 3).

Default input (``quick``): digits-zoo, real handwritten digits routed among seven real scikit-learn classifiers of
very different cost (see :mod:`nips25_routing.zoo`). ``text``: text-zoo, chatterbot-corpus utterances embedded by
MiniLM-L6 and routed among six topic classifiers (see :mod:`nips25_routing.text_zoo`). ``paper``: the paper's
RouterBench run from a local copy (``NIPS25_ROUTERBENCH`` = the RouterBench ``.pkl``/``.csv``,
``NIPS25_ROUTERBENCH_EMBEDDINGS`` = a ``.npy`` of its prompt embeddings, one row per table row, e.g.
bge-base-en-v1.5 as in the paper).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nips25_routing.baselines import BatchSplitRouter, GreedyRouter, RandomRouter, offline_lp_actions
from nips25_routing.budgets import split_budget, total_budget
from nips25_routing.estimation import ANNEstimator
from nips25_routing.history import HistoryStore, load_routerbench
from nips25_routing.port import PORTRouter
from nips25_routing.simulation import RoutingResult, evaluate_actions, simulate
from nips25_routing.text_zoo import text_zoo
from nips25_routing.zoo import digits_zoo
from nips25_shared import Claim, Report, get_logger, progress, seed_everything

__all__ = ["ONLINE_BASELINES", "PROFILES", "ROUTERS", "TITLE", "Profile", "reproduce", "run_instance"]

log = get_logger(__name__)
TITLE = "Efficient Training-Free Online Routing for High-Volume Multi-LLM Serving"
ROUTERS: tuple[str, ...] = (
    "PORT", "Random", "Greedy-Perf", "Greedy-Cost", "KNN-Perf", "KNN-Cost", "BatchSplit", "Approx-Opt", "Optimum",
)  # fmt: skip
ONLINE_BASELINES: tuple[str, ...] = ("Random", "Greedy-Perf", "Greedy-Cost", "KNN-Perf", "KNN-Cost", "BatchSplit")

# Criteria, fixed before any run (contract, section 4).
RELATIVE_MIN = 0.70  # PORT / Approx-Opt performance at budget 1x
LATENCY_VS_KNN_MAX = 3.0  # PORT per-query routing time / exact kNN's ("within a small factor")
LATENCY_VS_BATCHSPLIT_MAX = 0.1  # PORT / BatchSplit ("far below": an order of magnitude)


@dataclass(frozen=True)
class Profile:
    """Size of one reproduction run."""

    data: str
    n_stream: int
    n_seeds: int
    budgets: tuple[float, ...]
    batch_size: int = 256


PROFILES: dict[str, Profile] = {
    "tiny": Profile("digits-zoo", n_stream=400, n_seeds=1, budgets=(1.0,), batch_size=128),
    "quick": Profile("digits-zoo", n_stream=5000, n_seeds=5, budgets=(0.25, 0.5, 1.0, 2.0)),
    # the text variant: chatterbot utterances embedded by MiniLM-L6 (needs the `text` extra)
    "text": Profile("text-zoo", n_stream=5000, n_seeds=5, budgets=(0.25, 0.5, 1.0, 2.0)),
    "paper": Profile("routerbench", n_stream=10_000, n_seeds=5, budgets=(0.25, 0.5, 1.0, 2.0)),
}

Instance = tuple[HistoryStore, np.ndarray, np.ndarray, np.ndarray]


def run_instance(
    history: HistoryStore,
    embeddings: np.ndarray,
    quality: np.ndarray,
    cost: np.ndarray,
    *,
    budget_multiple: float,
    seed: int,
    batch_size: int = 256,
    split: str = "weighted",
) -> dict[str, RoutingResult]:
    """Route one stream with PORT (paper defaults) and every baseline under one budget; return each result.

    Args:
        history: the history store.
        embeddings: ``(N, D)`` stream embeddings in arrival order.
        quality: ``(N, M)`` true stream quality.
        cost: ``(N, M)`` true stream cost.
        budget_multiple: total budget as a multiple of the cheapest model's cost for the whole stream.
        seed: seed of PORT's learning phase and of Random.
        batch_size: queries per ``route`` call.
        split: budget split (see :func:`~nips25_routing.split_budget`).

    Returns:
        ``{router name: RoutingResult}`` for every name in :data:`ROUTERS`.
    """
    budgets = split_budget(
        split,  # type: ignore[arg-type]
        history.quality.mean(axis=0),
        history.cost.mean(axis=0),
        total_budget(cost, budget_multiple),
    )
    ann = ANNEstimator(history, backend="faiss-hnsw")
    exact = ANNEstimator(history, backend="sklearn")
    n = quality.shape[0]
    online: dict[str, Callable[[], Any]] = {
        "PORT": lambda: PORTRouter(ann, budgets, n_total=n, seed=seed),
        "Random": lambda: RandomRouter(history.n_models, seed=seed),
        "Greedy-Perf": lambda: GreedyRouter(ann, budgets, kind="perf"),
        "Greedy-Cost": lambda: GreedyRouter(ann, budgets, kind="cost"),
        "KNN-Perf": lambda: GreedyRouter(exact, budgets, kind="perf"),
        "KNN-Cost": lambda: GreedyRouter(exact, budgets, kind="cost"),
        "BatchSplit": lambda: BatchSplitRouter(ann, budgets),
    }
    out = {
        name: simulate(make(), embeddings, quality, cost, budgets, batch_size=batch_size)
        for name, make in online.items()
    }
    d_hat, g_hat = ann.estimate(embeddings)
    out["Approx-Opt"] = evaluate_actions(offline_lp_actions(d_hat, g_hat, budgets), quality, cost, budgets)
    out["Optimum"] = evaluate_actions(offline_lp_actions(quality, cost, budgets), quality, cost, budgets)
    return out


def _routerbench_instances(profile: Profile) -> Callable[[int], Instance]:
    table_path = os.environ.get("NIPS25_ROUTERBENCH")
    emb_path = os.environ.get("NIPS25_ROUTERBENCH_EMBEDDINGS")
    if not table_path or not emb_path:
        raise FileNotFoundError(
            "profile 'paper' routes RouterBench and needs a local copy: set NIPS25_ROUTERBENCH to the RouterBench "
            "table (.pkl or .csv, columns 'prompt', '<model>', '<model>|total_cost') and "
            "NIPS25_ROUTERBENCH_EMBEDDINGS to a .npy of its prompt embeddings (one row per table row). "
            "Nothing is downloaded; the default input is profile 'quick' (digits-zoo)."
        )
    table = load_routerbench(table_path)
    emb = np.load(emb_path)
    if emb.ndim != 2 or emb.shape[0] != len(table.prompts):
        raise ValueError(f"NIPS25_ROUTERBENCH_EMBEDDINGS must have {len(table.prompts)} rows, got shape {emb.shape}")
    if len(table.prompts) <= profile.n_stream:
        raise ValueError(f"the RouterBench table has {len(table.prompts)} rows, need more than {profile.n_stream}")

    def make(seed: int) -> Instance:
        order = np.random.default_rng(seed).permutation(len(table.prompts))
        stream, hist = order[: profile.n_stream], order[profile.n_stream :]
        return table.to_history(emb[hist], hist), emb[stream], table.quality[stream], table.cost[stream]

    return make


def _zoo_instances(profile: Profile) -> Callable[[int], Instance]:
    zoo = text_zoo if profile.data == "text-zoo" else digits_zoo

    def make(seed: int) -> Instance:
        z = zoo(seed=seed, n_stream=profile.n_stream)
        return z.history, z.stream_embeddings, z.stream_quality, z.stream_cost

    return make


def _figure(results: dict[float, dict[str, list[dict[str, float]]]], out_dir: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    budgets = sorted(results)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name in ROUTERS:
        for ax, key in zip(axes, ("quality", "throughput"), strict=True):
            vals = np.array([[r[key] for r in results[b][name]] for b in budgets])
            style = "-o" if name == "PORT" else ("--" if name in ("Approx-Opt", "Optimum") else "-.")
            ax.errorbar(budgets, vals.mean(axis=1), yerr=vals.std(axis=1), fmt=style, label=name, capsize=2)
    for ax, label in zip(axes, ("Performance (sum of quality of served queries)", "Throughput (queries served)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("budget (multiple of cheapest model serving all)")
        ax.set_ylabel(label)
    axes[1].legend(fontsize=7)
    fig.suptitle("PORT vs baselines (mean ± std over seeds)")
    fig.tight_layout()
    name = "port_vs_baselines.png"
    fig.savefig(out_dir / name, dpi=120)
    plt.close(fig)
    return name


def _mean(results: dict[float, dict[str, list[dict[str, float]]]], b: float, name: str, key: str) -> float:
    return float(np.mean([r[key] for r in results[b][name]]))


def reproduce(*, profile: str = "quick", seed: int = 0, out_dir: Path) -> Report:
    """Run the headline experiment and return its :class:`~nips25_shared.Report` (claims with fixed criteria).

    Args:
        profile: ``"tiny"`` (test smoke run), ``"quick"`` (digits-zoo, 5 seeds, 4 budgets), ``"text"`` (text-zoo:
            MiniLM embeddings of chatterbot utterances, same sizes; the ``text`` extra) or ``"paper"`` (RouterBench
            from a local copy; see the module docstring).
        seed: first seed; seeds ``seed .. seed + n_seeds - 1`` set the split, the arrival order and PORT's draws.
        out_dir: directory for the figure.

    Raises:
        ValueError: on an unknown profile.
        FileNotFoundError: for ``"paper"`` without the RouterBench files.
    """
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {sorted(PROFILES)}, got {profile!r}")
    start = time.perf_counter()
    prof = PROFILES[profile]
    make = _routerbench_instances(prof) if prof.data == "routerbench" else _zoo_instances(prof)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    seeds = [seed + s for s in range(prof.n_seeds)]
    results: dict[float, dict[str, list[dict[str, float]]]] = {b: {n: [] for n in ROUTERS} for b in prof.budgets}
    for s in progress(seeds, desc="seeds"):
        seed_everything(s)
        history, emb, quality, cost = make(s)
        for b in prof.budgets:
            for name, res in run_instance(
                history, emb, quality, cost, budget_multiple=b, seed=s, batch_size=prof.batch_size
            ).items():
                results[b][name].append(res.as_dict())
    figure = _figure(results, out_dir)
    claims = _claims(results, prof)
    table = {
        str(b): {n: {k: _mean(results, b, n, k) for k in ("quality", "cost", "ratio", "throughput")} for n in ROUTERS}
        for b in prof.budgets
    }
    return Report(
        package="routing",
        title=TITLE,
        profile=profile,
        seed=seed,
        config={
            "data": prof.data,
            "n_stream": prof.n_stream,
            "seeds": seeds,
            "budget_multiples": list(prof.budgets),
            "batch_size": prof.batch_size,
            "split": "weighted",
            "port": {"alpha": 1e-4, "eps": 0.025, "k": 5, "backend": "faiss-hnsw", "solver": "lp", "clip_zero": False},
            "mean_results": table,
        },
        claims=claims,
        wall_time_s=time.perf_counter() - start,
        figures=[figure],
        notes=(
            "digits-zoo: scikit-learn's 1,797 bundled handwritten digits; seven scikit-learn classifiers (fitted on "
            "30% of them) stand in for the LLMs, quality = 1[correct], cost = multiply-adds x $1e-7. The stream is "
            "drawn with replacement from ~630 held-out digits; the history is another ~630."
            if prof.data == "digits-zoo"
            else "text-zoo: ~1,680 distinct chatterbot-corpus utterances over 12 topics, embedded by MiniLM-L6; six "
            "topic classifiers (3 bag-of-words, 3 on MiniLM embeddings; fitted on 30%) stand in for the LLMs, quality "
            "= 1[correct topic], cost = the model's own multiply-adds x $1e-7 (the MiniLM pass, which the router "
            "runs for every query anyway, is not charged)."
            if prof.data == "text-zoo"
            else "RouterBench from a local copy."
        ),
    )


def _claims(results: dict[float, dict[str, list[dict[str, float]]]], prof: Profile) -> list[Claim]:
    scale = (
        f"{prof.data}, N={prof.n_stream}, {prof.n_seeds} seed(s), budgets {list(prof.budgets)}; "
        "paper: RouterBench/SPROUT/Open LLM Leaderboard, 11-18 LLMs, N=10,000, bge embeddings."
    )
    budgets = prof.budgets
    ref = 1.0 if 1.0 in budgets else budgets[len(budgets) // 2]
    port_q = {str(b): _mean(results, b, "PORT", "quality") for b in budgets}
    best_q = {str(b): max(_mean(results, b, n, "quality") for n in ONLINE_BASELINES) for b in budgets}
    best_name = {}
    for b in budgets:
        means = {n: _mean(results, b, n, "quality") for n in ONLINE_BASELINES}
        best_name[str(b)] = max(means, key=means.__getitem__)
    rel = {str(b): port_q[str(b)] / max(_mean(results, b, "Approx-Opt", "quality"), 1e-12) for b in budgets}
    port_t = {str(b): _mean(results, b, "PORT", "throughput") for b in budgets}
    best_t = {str(b): max(_mean(results, b, n, "throughput") for n in ONLINE_BASELINES) for b in budgets}
    per_query = {
        n: float(np.median([r["route_s"] / r["n_queries"] for r in results[ref][n]]))
        for n in ("PORT", "KNN-Perf", "BatchSplit")
    }
    return [
        Claim(
            id="port-beats-online-baselines",
            statement="PORT's total quality (Performance) beats every training-free online baseline at every budget.",
            paper={"RouterBench 1x": {"PORT": 2718.6, "BatchSplit": 1838.05, "Random": 1384.25, "Greedy-Perf": 1012.1}},
            measured={"PORT": port_q, "best_baseline": best_q, "best_baseline_name": best_name},
            criterion="at every budget multiple, mean(PORT) > max over Random, Greedy-Perf/Cost, KNN-Perf/Cost, "
            "BatchSplit of their means over seeds",
            holds=all(port_q[k] > best_q[k] for k in port_q),
            scale_note=scale,
        ),
        Claim(
            id="port-near-approx-opt",
            statement="PORT reaches a large share of the estimate-based offline LP optimum (Approx-Opt).",
            paper={"RouterBench": 0.8466, "SPROUT": 0.7599, "Leaderboard": 0.767},
            measured={"relative_at_ref_budget": rel[str(ref)], "relative_by_budget": rel, "ref_budget": ref},
            criterion=f"mean(PORT) / mean(Approx-Opt) >= {RELATIVE_MIN} at budget {ref}x",
            holds=bool(rel[str(ref)] >= RELATIVE_MIN),
            scale_note=scale,
        ),
        Claim(
            id="port-throughput",
            statement="PORT serves more queries (throughput) than every online baseline.",
            paper={"RouterBench 1x": {"PORT": 5195, "BatchSplit": 3903}},
            measured={"PORT": port_t, "best_baseline": best_t},
            criterion="at every budget multiple, mean throughput of PORT > the best online baseline's mean",
            holds=all(port_t[k] > best_t[k] for k in port_t),
            scale_note=scale,
        ),
        Claim(
            id="port-latency",
            statement="PORT's per-query routing time is within a small factor of plain kNN and far below BatchSplit.",
            paper=None,
            measured={f"{k}_ms_per_query": 1e3 * v for k, v in per_query.items()},
            criterion=f"median over seeds at budget {ref}x: PORT <= {LATENCY_VS_KNN_MAX} x exact kNN (KNN-Perf) and "
            f"<= {LATENCY_VS_BATCHSPLIT_MAX} x BatchSplit, seconds inside route() per query",
            holds=bool(
                per_query["PORT"] <= LATENCY_VS_KNN_MAX * per_query["KNN-Perf"]
                and per_query["PORT"] <= LATENCY_VS_BATCHSPLIT_MAX * per_query["BatchSplit"]
            ),
            scale_note=scale + f" History of the zoo's held-out half, batch {prof.batch_size}; 2 shared CPU cores.",
        ),
    ]
