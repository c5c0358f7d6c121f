"""Headline experiment: zero-shot node classification on unseen graphs after training on 1, 3, 5, 7, 9 graphs.

One protocol for every arm (issue #28, CONTRACT §4a):

* **Graphs.** A pool of offline real graphs (:data:`POOL`: kNN graphs over scikit-learn tables, Karate, Davis'
  Southern women, the Drosophila connectome, ten disjoint two-class digits tasks) and three fixed validation graphs
  (:data:`VALIDATION`) that never train and never score a claim.
* **One training configuration, chosen once.** Every (lr, epochs) of the profile's grid is scored by the mean
  validation accuracy of TS-Mean trained on the first 1 and the first 9 graphs of a selection order (the two ends
  of the curve, so that no inner size is the tuning point), ties broken at random; the winner trains every size,
  every order and the positive control. lp_ratio 0.5 (the official default), TS-Mean, hidden 16, 2 layers,
  ``n_hops=-1``.
* **Random orders.** Order ``o`` (seed ``seed + o``) permutes the pool; size ``k`` trains on its first ``k``
  graphs (nested); the graphs after the first 9 are that order's held-out test graphs, the same for every size.
* **Positive control.** A contextual-SBM family (:mod:`nips25_gfm.experiments.csbm`): order ``o`` trains on 9
  fresh graphs of the family, a fixed set of family graphs is held out. Transfer is planted (one mechanism), so the
  curve must rise if the measurement can see the effect.
* **Baselines** on each held-out graph: the training-free least-squares ensemble (GraphAny style), a GCN trained on
  the graph's own labels, the best constant.

Runs in ``workers`` processes (one torch thread each). Profile ``paper`` runs the same protocol on the paper's
graphs read from a local directory of ``<name>.npz`` files (:func:`~nips25_gfm.datasets.load_graph_file`) named by
``NIPS25_GFM_DATA`` (CLI: ``--data-dir``); nothing is downloaded.
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import itertools
import multiprocessing
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nips25_gfm.baselines import LinearGNNEnsemble, PerGraphGNN, majority_accuracy
from nips25_gfm.datasets import PAPER_GRAPHS, load_dataset, load_graph_file
from nips25_gfm.experiments.csbm import csbm_family
from nips25_gfm.model import TSGNN
from nips25_gfm.training import FitConfig, PreparedGraph, fit, predict, prepare, zero_shot_accuracy
from nips25_shared import Claim, Report, get_logger, seed_everything
from nips25_shared.logs import is_main_rank

__all__ = [
    "DATA_ENV",
    "PAPER_PCA",
    "PAPER_POOL",
    "PAPER_VALIDATION",
    "POOL",
    "PROFILES",
    "TITLE",
    "VALIDATION",
    "ReproduceProfile",
    "reproduce",
]

TITLE = "Equivariance Everywhere All At Once: A Recipe for Graph Foundation Models"
VALIDATION = ("wine", "digits45a", "drosophila_left")
POOL = (
    "iris", "breast_cancer", "karate", "davis", "drosophila_right", "digits01a", "digits01b", "digits23a",
    "digits23b", "digits45b", "digits67a", "digits67b", "digits89a", "digits89b",
)  # fmt: skip
# The paper's graphs: three fixed validation graphs outside the official training multisets, the other 26 in the pool.
PAPER_VALIDATION = ("wiki_cs", "deezer", "brazil")
PAPER_POOL = tuple(n for n in PAPER_GRAPHS if n not in PAPER_VALIDATION)
_CONTROL_HELD_SEED = 12345
DATA_ENV = "NIPS25_GFM_DATA"
# The only graphs whose features the official code reduces by PCA (helpers/datasets.py, get_pca_components).
PAPER_PCA: dict[str, int] = {"full_cora": 2048, "co_cs": 2048, "co_physics": 1024}
_log = get_logger(__name__)

# Criteria, fixed before the first run of this design (README, "Results").
CLAIM1_MARGIN = 0.0  # mean paired (TS-Mean - LS ensemble) accuracy over orders >= margin
CHANCE_MARGIN = 0.0  # zero-shot accuracy > best constant + margin on every held-out graph
GROWTH_SE = 2.0  # last - first > GROWTH_SE * SE(paired), and no step drops by more than GROWTH_SE * SE(its paired)


@dataclass(frozen=True)
class ReproduceProfile:
    """Size of the experiment.

    Attributes:
        sizes: nested training-set sizes.
        orders: random orders of the pool (one seed each).
        lrs, epochs: the grid of the one training configuration (chosen on the validation graphs).
        lp_ratio: fraction of training labels fed.
        hidden: TS-Mean width.
        gcn_epochs: epochs of the per-graph GCN.
        pool, validation: graph names (pool: training and test graphs; validation: selection only).
        control_graphs: training graphs per order of the positive control (0: no control).
        control_held: fixed held-out graphs of the control family.
        source: ``"offline"`` (:func:`~nips25_gfm.datasets.load_dataset`) or ``"directory"``.
        workers: processes running the trainings (one torch thread each).
    """

    sizes: tuple[int, ...]
    orders: int
    lrs: tuple[float, ...]
    epochs: tuple[int, ...]
    lp_ratio: float = 0.5
    hidden: int = 16
    gcn_epochs: int = 100
    pool: tuple[str, ...] = POOL
    validation: tuple[str, ...] = VALIDATION
    control_graphs: int = 9
    control_held: int = 8
    source: str = "offline"
    workers: int = 2

    def __post_init__(self) -> None:
        if not self.sizes or min(self.sizes) < 1 or max(self.sizes) >= len(self.pool):
            raise ValueError(f"sizes: expected sizes in [1, {len(self.pool) - 1}], got {self.sizes}")
        if self.orders < 1 or not self.lrs or not self.epochs or self.workers < 1:
            raise ValueError("orders, lrs, epochs, workers: expected at least one each")


PROFILES: dict[str, ReproduceProfile] = {
    "tiny": ReproduceProfile(
        (1, 2), 2, (1e-2,), (2,), hidden=4, gcn_epochs=2, pool=("iris", "davis", "karate"),
        validation=("digits45a",), control_graphs=2, control_held=2, workers=1,
    ),
    "quick": ReproduceProfile((1, 3, 5, 7, 9), 5, (1e-2, 3e-2), (25, 50)),
    "paper": ReproduceProfile(
        (1, 3, 5, 7, 9), 5, (1e-3, 3e-3, 1e-2, 3e-2), (100, 300, 500), gcn_epochs=200, pool=PAPER_POOL,
        validation=PAPER_VALIDATION, source="directory",
    ),
}  # fmt: skip


@functools.lru_cache(maxsize=256)
def _graph(name: str, seed: int, source: str, directory: str) -> PreparedGraph:
    """A prepared graph: ``csbm:<family seed>:<i>``, an offline data set or ``<directory>/<name>.npz``."""
    if name.startswith("csbm:"):
        _, family, i = name.split(":")
        task = csbm_family(int(i) + 1, seed=int(family), prefix=f"csbm{family}_")[int(i)]
    elif source == "offline":
        task = load_dataset(name, seed=seed, max_features=None)
    else:
        task = load_graph_file(Path(directory) / f"{name}.npz", name=name, seed=seed, max_features=PAPER_PCA.get(name))
    return prepare(task)


def _train_job(job: dict[str, Any]) -> dict[str, Any]:
    """Train TS-Mean on ``job["train"]`` and score ``job["held"]`` at every epoch of ``job["checkpoints"]``."""
    torch.set_num_threads(1)
    os.environ.setdefault("TQDM_DISABLE", "1")  # 100+ short trainings: no progress bar each
    src = (job["source"], job["directory"])
    train = [_graph(n, job["seed"], *src) for n in job["train"]]
    held = {n: _graph(n, job["seed"], *src) for n in job["held"]}
    seed_everything(job["seed"])
    model = TSGNN(hidden=job["hidden"])
    scores: dict[int, dict[str, float]] = {}

    def score(epoch: int, m: TSGNN) -> None:
        if epoch in job["checkpoints"]:
            scores[epoch] = {n: zero_shot_accuracy(m, g) for n, g in held.items()}

    cfg = FitConfig(epochs=max(job["checkpoints"]), lr=job["lr"], lp_ratio=job["lp_ratio"])
    fit(model, train, config=cfg, seed=job["seed"], use_accelerate=False, callback=score)
    shapes_ok = True
    for g in [*train, *held.values()]:
        logits = predict(model, g)
        shapes_ok &= tuple(logits.shape) == (g.task.num_nodes, g.task.num_classes) and bool(logits.isfinite().all())
    return {
        "scores": scores,
        "shapes_ok": shapes_ok,
        "parameters": model.num_parameters(),
        "graphs_F_C": {g.task.name: [g.task.num_features, g.task.num_classes] for g in [*train, *held.values()]},
    }


def _baseline_job(job: dict[str, Any]) -> dict[str, Any]:
    """LS ensemble, GCN on own labels and best constant on one graph."""
    torch.set_num_threads(1)
    task = _graph(job["name"], job["seed"], job["source"], job["directory"]).task
    _, info = PerGraphGNN.train_on(task, epochs=job["gcn_epochs"], seed=job["seed"])
    return {
        "ls_ensemble": LinearGNNEnsemble().score(task),
        "gcn_own_labels": info["test_accuracy"],
        "constant": majority_accuracy(task),
    }


def _run_jobs(fn: Any, jobs: list[dict[str, Any]], workers: int) -> list[dict[str, Any]]:
    if workers <= 1 or len(jobs) <= 1:
        return [fn(j) for j in jobs]
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        return list(pool.map(fn, jobs))


def _order(pool: tuple[str, ...], seed: int) -> list[str]:
    return [pool[i] for i in np.random.default_rng([seed, 7]).permutation(len(pool))]


def _se(values: list[float]) -> float:
    return float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else float("nan")


def _grows(runs: dict[int, list[float]], sizes: tuple[int, ...]) -> tuple[bool, dict[str, float]]:
    """The growth criterion on paired per-order accuracies: ``(holds, {"gain", "gain_se", ...})``."""
    first, last = np.asarray(runs[sizes[0]]), np.asarray(runs[sizes[-1]])
    gain = last - first
    gain_se = _se(list(gain))
    ok = bool(gain.mean() > GROWTH_SE * (gain_se if np.isfinite(gain_se) else 0.0))
    worst = 0.0
    for a, b in itertools.pairwise(sizes):
        step = np.asarray(runs[b]) - np.asarray(runs[a])
        se = _se(list(step))
        drop = -float(step.mean())
        if drop > GROWTH_SE * (se if np.isfinite(se) else 0.0):
            ok = False
        worst = max(worst, drop)
    return ok, {"gain": float(gain.mean()), "gain_se": gain_se, "largest_step_drop": worst}


def _figure(
    out_dir: Path, sizes: tuple[int, ...], curves: dict[str, tuple[list[float], list[float]]], per_graph: dict[str, Any]
) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for label, (mean, se) in curves.items():
        axes[0].errorbar(sizes, mean, yerr=se, marker="o", capsize=3, label=label)
    axes[0].set_xlabel("training graphs")
    axes[0].set_ylabel("mean zero-shot test accuracy (held-out), +- SE")
    axes[0].set_xticks(list(sizes))
    axes[0].legend(fontsize=8)
    names = list(per_graph)
    methods = ["ts_mean", "ls_ensemble", "gcn_own_labels", "constant"]
    width = 0.2
    for i, m in enumerate(methods):
        axes[1].bar(np.arange(len(names)) + i * width, [per_graph[n][m] for n in names], width, label=m)
    axes[1].set_xticks(np.arange(len(names)) + 1.5 * width, names, rotation=40, ha="right", fontsize=7)
    axes[1].set_ylabel("test accuracy (mean over orders holding it out)")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    name = "zero_shot.png"
    if is_main_rank():  # under a distributed launch every rank draws the figure; the main rank writes it
        fig.savefig(out_dir / name, dpi=120)
    plt.close(fig)
    return name


def reproduce(*, profile: str = "quick", seed: int = 0, out_dir: Path) -> Report:
    """Run the headline experiment and return the claim report (figure ``zero_shot.png`` in ``out_dir``).

    Args:
        profile: ``"quick"`` (CPU, about 4 minutes on 2 cores), ``"tiny"`` (smoke test) or ``"paper"`` (the
            paper's graphs from the directory named by ``NIPS25_GFM_DATA``; CPU-hours).
        seed: first seed (order ``o`` uses ``seed + o``; the selection order ``seed + 1000``).
        out_dir: directory for the figure.

    Raises:
        ValueError: unknown ``profile``.
        FileNotFoundError: profile ``"paper"`` without ``NIPS25_GFM_DATA`` or with graph files missing (named).
    """
    if profile not in PROFILES:
        raise ValueError(f"profile: expected one of {sorted(PROFILES)}, got {profile!r}")
    cfg = PROFILES[profile]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    directory = ""
    if cfg.source == "directory":
        directory = os.environ.get(DATA_ENV, "")
        if not directory:
            raise FileNotFoundError(
                f"profile 'paper' reads the paper's graphs ({', '.join(cfg.pool[:3])}, ...) as <name>.npz files from "
                f"a local directory: set {DATA_ENV} (CLI: --data-dir DIR); format in nips25_gfm.load_graph_file"
            )
        names = (*cfg.pool, *cfg.validation)
        missing = [n for n in names if not (Path(directory) / f"{n}.npz").is_file()]
        if missing:
            raise FileNotFoundError(
                f"directory: {directory} lacks {len(missing)} of {len(names)} graph files: "
                + ", ".join(f"{n}.npz" for n in missing)
            )
    with _threads(1):
        return _run(cfg, profile, seed, out_dir, directory)


@contextmanager
def _threads(n: int | None) -> Iterator[None]:
    """torch's intra-op thread count set to ``n`` inside the block (unchanged when ``None``), then restored."""
    old = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def _run(cfg: ReproduceProfile, profile: str, seed: int, out_dir: Path, directory: str) -> Report:
    """The body of :func:`reproduce` for one resolved profile."""
    start = time.perf_counter()
    common = {"source": cfg.source, "directory": directory, "hidden": cfg.hidden, "lp_ratio": cfg.lp_ratio}
    largest = max(cfg.sizes)
    sel_sizes = sorted({min(cfg.sizes), largest})
    # 1. One training configuration, chosen on the validation graphs (sizes 1 and 9 of a selection order).
    sel_order = _order(cfg.pool, seed + 1000)
    sel_jobs = [
        {
            **common,
            "train": sel_order[:k],
            "held": list(cfg.validation),
            "lr": lr,
            "checkpoints": list(cfg.epochs),
            "seed": seed + 1000,
        }
        for lr in cfg.lrs
        for k in sel_sizes
    ]
    # 2. The curves: real pool and positive control, every order and size, with the chosen configuration.
    sel_out = _run_jobs(_train_job, sel_jobs, cfg.workers)
    grid: dict[str, float] = {}
    for lr in cfg.lrs:
        for e in cfg.epochs:
            vals = [
                np.mean(list(o["scores"][e].values())) for j, o in zip(sel_jobs, sel_out, strict=True) if j["lr"] == lr
            ]
            grid[f"lr={lr:g},epochs={e}"] = float(np.mean(vals))
    best = max(grid.values())
    tied = [key for key, v in grid.items() if v == best]
    chosen = tied[int(np.random.default_rng([seed, 11]).integers(len(tied)))]
    lr = float(chosen.split(",")[0].split("=")[1])
    epochs = int(chosen.split(",")[1].split("=")[1])
    _log.info("chosen on the validation graphs: %s (grid %s)", chosen, grid)
    orders = [seed + o for o in range(cfg.orders)]
    real_orders = {s: _order(cfg.pool, s) for s in orders}
    control_held = [f"csbm:{_CONTROL_HELD_SEED}:{i}" for i in range(cfg.control_held)] if cfg.control_graphs else []
    jobs: list[dict[str, Any]] = []
    for s in orders:
        for k in cfg.sizes:
            jobs.append(
                {
                    **common,
                    "arm": "real",
                    "order": s,
                    "size": k,
                    "train": real_orders[s][:k],
                    "held": real_orders[s][largest:],
                    "lr": lr,
                    "checkpoints": [epochs],
                    "seed": s,
                }
            )
            if cfg.control_graphs:
                train = [f"csbm:{s}:{i}" for i in range(cfg.control_graphs)][:k]
                jobs.append(
                    {
                        **common,
                        "arm": "control",
                        "order": s,
                        "size": k,
                        "train": train,
                        "held": control_held,
                        "lr": lr,
                        "checkpoints": [epochs],
                        "seed": s,
                    }
                )
    held_pairs = sorted({(n, s) for s in orders for n in real_orders[s][largest:]})
    held_pairs += [(n, orders[0]) for n in control_held]
    base_jobs = [{**common, "name": n, "seed": s, "gcn_epochs": cfg.gcn_epochs} for n, s in held_pairs]
    out = _run_jobs(_train_job, jobs, cfg.workers)
    base = dict(zip(held_pairs, _run_jobs(_baseline_job, base_jobs, cfg.workers), strict=True))

    curve_runs: dict[str, dict[int, list[float]]] = {
        "real": {k: [] for k in cfg.sizes},
        "control": {k: [] for k in cfg.sizes},
    }
    ts_acc: dict[str, list[float]] = {}
    paired: list[float] = []
    ls_order: list[float] = []
    ts_order: list[float] = []
    runs_everywhere, n_params, shapes = True, set(), {}
    control_top: dict[str, float] = {}
    for job, res in zip(jobs, out, strict=True):
        accs = res["scores"][epochs]
        curve_runs[job["arm"]][job["size"]].append(float(np.mean(list(accs.values()))))
        runs_everywhere &= res["shapes_ok"]
        n_params.add(res["parameters"])
        shapes.update(res["graphs_F_C"])
        if job["size"] == largest and job["arm"] == "real":
            s = job["order"]
            ls = [base[(n, s)]["ls_ensemble"] for n in accs]
            for n, a in accs.items():
                ts_acc.setdefault(n, []).append(a)
            ts_order.append(float(np.mean(list(accs.values()))))
            ls_order.append(float(np.mean(ls)))
            paired.append(ts_order[-1] - ls_order[-1])
        if job["size"] == largest and job["arm"] == "control" and job["order"] == orders[0]:
            control_top = accs
    per_graph: dict[str, dict[str, float]] = {}
    for n, accs_n in sorted(ts_acc.items()):
        rows = [base[(n, s)] for s in orders if (n, s) in base]
        per_graph[n] = {
            "ts_mean": float(np.mean(accs_n)),
            "held_out_in_orders": len(accs_n),
            **{m: float(np.mean([r[m] for r in rows])) for m in ("ls_ensemble", "gcn_own_labels", "constant")},
        }
    curves = {
        arm: ([float(np.mean(r[k])) for k in cfg.sizes], [_se(r[k]) for k in cfg.sizes])
        for arm, r in curve_runs.items()
        if cfg.control_graphs or arm == "real"
    }
    fig = _figure(
        out_dir,
        cfg.sizes,
        {"real graphs": curves["real"], **({"CSBM control": curves["control"]} if "control" in curves else {})},
        per_graph,
    )
    real_ok, real_stats = _grows(curve_runs["real"], cfg.sizes)
    scale = (
        f"{len(cfg.pool)} offline pool graphs (kNN tables, Karate, Davis, Drosophila, digits tasks), {cfg.orders} "
        f"random orders, sizes {list(cfg.sizes)}, one configuration for every size (lr {lr:g}, {epochs} epochs, "
        f"lp_ratio {cfg.lp_ratio:g}) chosen on {len(cfg.validation)} validation graphs; CPU; the paper trains on "
        "Cora (Table 1) or nested official sets (Fig. 3) and tests on 28 / 20 graphs"
        if cfg.source == "offline"
        else f"the paper's graphs from a local directory: pool of {len(cfg.pool)}, {cfg.orders} random orders, "
        f"lr {lr:g}, {epochs} epochs chosen on {', '.join(cfg.validation)}"
    )
    claim1_se = _se(paired)
    claims = [
        Claim(
            id="zero-shot-beats-ls-ensemble",
            statement="Zero-shot TS-Mean beats the training-free least-squares ensemble (GraphAny) on average",
            paper="Table 1: TS-Mean/TS-GAT > GraphAny on the 28-graph average (numbers not retrieved)",
            measured={
                "ts_mean": float(np.mean(ts_order)),
                "ls_ensemble": float(np.mean(ls_order)),
                "paired_difference": float(np.mean(paired)),
                "paired_se": claim1_se,
                "n_orders": len(paired),
                "gcn_own_labels": float(np.mean([v["gcn_own_labels"] for v in per_graph.values()])),
            },
            criterion=f"mean over orders of the paired (TS-Mean on {largest} graphs - LS ensemble) accuracy on the "
            f"order's held-out graphs >= {CLAIM1_MARGIN}",
            holds=float(np.mean(paired)) >= CLAIM1_MARGIN,
            scale_note=scale,
        ),
        Claim(
            id="above-chance-everywhere",
            statement="Zero-shot TS-Mean is above chance on every held-out graph",
            paper=None,
            measured={n: {"ts_mean": v["ts_mean"], "constant": v["constant"]} for n, v in per_graph.items()},
            criterion=f"mean accuracy over the orders holding a graph out > best constant + {CHANCE_MARGIN}, on every "
            "graph held out by some order",
            holds=all(v["ts_mean"] > v["constant"] + CHANCE_MARGIN for v in per_graph.values()),
            scale_note=scale,
        ),
        Claim(
            id="more-graphs-help",
            statement="Zero-shot accuracy grows as training graphs are added",
            paper="Fig. 3 / Table 7: accuracy rises with 1 -> 3 -> 5 -> 7 -> 9 training graphs",
            measured={
                "curve": dict(zip(map(str, cfg.sizes), curves["real"][0], strict=True)),
                "se": dict(zip(map(str, cfg.sizes), curves["real"][1], strict=True)),
                **real_stats,
                "n_orders": cfg.orders,
            },
            criterion=f"paired over orders: mean(acc[{largest}] - acc[{min(cfg.sizes)}]) > {GROWTH_SE:g} SE and no "
            f"step drops by more than {GROWTH_SE:g} SE of its paired difference",
            holds=real_ok,
            scale_note=scale,
        ),
    ]
    if cfg.control_graphs:
        ctrl_ok, ctrl_stats = _grows(curve_runs["control"], cfg.sizes)
        ctrl_ls = float(np.mean([base[(n, orders[0])]["ls_ensemble"] for n in control_held]))
        claims.append(
            Claim(
                id="positive-control-csbm-rises",
                statement="Positive control: on a contextual-SBM family (planted transfer) the same measurement "
                "sees accuracy grow with training graphs",
                paper=None,
                measured={
                    "curve": dict(zip(map(str, cfg.sizes), curves["control"][0], strict=True)),
                    "se": dict(zip(map(str, cfg.sizes), curves["control"][1], strict=True)),
                    **ctrl_stats,
                    "ls_ensemble": ctrl_ls,
                    "n_orders": cfg.orders,
                    "held_out_graphs": len(control_held),
                    "first_order_largest_size": control_top,
                },
                criterion="the growth criterion of more-graphs-help on the control family; if it fails, the "
                "measurement is broken, not the paper",
                holds=ctrl_ok,
                scale_note=f"{cfg.control_graphs} CSBM training graphs per order (N 60-120, F 4-32, C 2-4, "
                f"homophily 0.8, degree 4, signal 0.3, 3 labels per class), {len(control_held)} fixed held-out",
            )
        )
    claims.append(
        Claim(
            id="one-model-any-graph",
            statement="One parameter set runs on every graph regardless of its feature and class counts",
            paper="Sec. 4: parameter count independent of F and C",
            measured={"parameters": sorted(n_params), "graphs_F_C": shapes},
            criterion="finite logits of shape [N, C] on every graph, one parameter count",
            holds=runs_everywhere and len(n_params) == 1,
            scale_note=scale,
        )
    )
    return Report(
        package="gfm",
        title=TITLE,
        profile=profile,
        seed=seed,
        config={
            **asdict(cfg),
            "selection_grid": grid,
            "chosen": {"lr": lr, "epochs": epochs},
            "orders": {str(s): real_orders[s] for s in orders},
        },
        claims=claims,
        wall_time_s=time.perf_counter() - start,
        figures=[fig],
        notes=(
            "All graphs offline (scikit-learn, networkx, graspologic's Drosophila connectome); "
            if cfg.source == "offline"
            else f"Graphs read from {directory}; "
        )
        + f"validation graphs {list(cfg.validation)}; selection grid (mean validation accuracy) {grid}; "
        + "per held-out graph: "
        + "; ".join(f"{n}: {v}" for n, v in per_graph.items()),
    )
