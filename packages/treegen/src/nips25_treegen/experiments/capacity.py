"""Issue 40.5: is the network's capacity what separates TreeGen from stochastic greedy? A network-size sweep.

The quick profile's data (Ginkgo QCD jets, N = 6 and 8, 2000 training jets per N, data seed 0), training budget
(2000 steps, batch 64) and test jets (25 per N), with only the network's width / depth changed, each size trained
with ``len(seeds)`` network seeds (initialisation, batch order and flow draws; the jets stay the same). Every
network is sampled with the 0.2 decoder (``"auto"``) exactly as in ``reproduce`` (M = 60, 20 steps, sampler seed =
network seed), so the (48, 2) network of seed 0 is the quick profile's network and reproduces its numbers.

Metric: TV to the exact trellis posterior on the 25 N = 6 test jets (the TV claim's jets); per jet the TV is
averaged over the seeds, and a size's SE is the larger of the SE over jets and the SE of the seeds' means
(``|m_0 - m_1| / 2`` for two seeds), so a network-seed effect shared by every jet is not hidden. Paired
differences (the same jets) use the same rule. Secondary: the best-of-M gap to the MAP on all 50 test jets.

Decision rule (fixed before the run, :func:`decide`), with ``L`` the largest size, ``M`` the quick profile's size
and ``G`` stochastic greedy with the same M on the same jets:

* ``"capacity closes the gap"`` if ``TV_L - TV_G <= 2 SE`` (the largest network is not worse than stochastic
  greedy beyond noise);
* else ``"capacity is a lever, not the whole gap"`` if ``TV_L - TV_M < -2 SE`` (a bigger network is better, but
  still worse than stochastic greedy); the share of the gap ``TV_M - TV_G`` it closed is reported;
* else ``"not capacity (at this training budget)"`` if ``2 SE(TV_L - TV_M)`` is below a quarter of
  ``TV_M - TV_G`` (the sweep could see a quarter of the gap and saw no gain);
* else ``"undecided"``.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nips25_shared import get_logger, seed_everything
from nips25_shared.logs import is_main_rank
from nips25_treegen.baselines import stochastic_greedy
from nips25_treegen.ginkgo import simulate, tree_log_lik
from nips25_treegen.reproduce import PROFILES, ReproduceConfig
from nips25_treegen.trellis import Trellis, total_variation

__all__ = ["CapacityConfig", "capacity_sweep", "decide", "summarise"]

_LOG = get_logger(__name__)


@dataclass(frozen=True)
class CapacityConfig:
    """The sweep's levels.

    Attributes:
        sizes: ``(d_model, n_layers)`` of each network, smallest first; the quick profile's size must be one.
        seeds: network seeds per size (at least 2 for a seed SE).
        base: the profile whose data, training budget, test jets and sampler are held fixed.
    """

    sizes: tuple[tuple[int, int], ...] = ((24, 1), (48, 2), (96, 3))
    seeds: tuple[int, ...] = (0, 1)
    base: ReproduceConfig = field(default_factory=lambda: PROFILES["quick"])

    def __post_init__(self) -> None:
        if len(self.sizes) < 2 or any(d < 1 or k < 1 for d, k in self.sizes):
            raise ValueError(f"sizes must hold >= 2 (d_model >= 1, n_layers >= 1) pairs, got {self.sizes}")
        if (self.base.d_model, self.base.n_layers) not in self.sizes:
            raise ValueError(f"sizes must include the base profile's ({self.base.d_model}, {self.base.n_layers})")
        if len(self.seeds) < 2 or len(set(self.seeds)) != len(self.seeds) or min(self.seeds) < 0:
            raise ValueError(f"seeds must be >= 2 distinct ints >= 0, got {self.seeds}")


def _jets(base: ReproduceConfig) -> tuple[list, list]:
    train_jets, test_jets = [], []
    for k, n in enumerate(base.leaf_counts):  # the seeds of reproduce's data seed 0
        train_jets += simulate(base.n_train, n_leaves=(n, n), seed=2 * k)
        test_jets += simulate(base.n_test, n_leaves=(n, n), seed=2 * k + 1)
    return train_jets, test_jets


def _run_one(base: ReproduceConfig, size: tuple[int, int], seed: int, train_jets: list, test_jets: list) -> dict:
    import torch

    from nips25_treegen.model import TrainConfig, TreeGen, TreeGenConfig, train

    start = time.perf_counter()
    seed_everything(seed)
    model = TreeGen(TreeGenConfig(n_max=max(base.leaf_counts), d_model=size[0], n_layers=size[1]))
    losses = train(model, train_jets, TrainConfig(steps=base.train_steps, batch_size=base.batch_size, seed=seed))
    train_s = time.perf_counter() - start
    rows = []
    with torch.no_grad():
        for n in base.leaf_counts:
            group = [j for j in test_jets if j.n_leaves == n]
            samples = model.sample(
                np.stack([j.leaves for j in group]),
                n_samples=base.n_samples,
                n_steps=base.n_steps,
                seed=seed,
                decoder=base.decoder,
            )
            for jet, trees in zip(group, samples):
                tr = Trellis(jet.leaves, lam_root=1.5)
                lls = np.array([tree_log_lik(jet.leaves, p) for p in trees])
                row = {"n": n, "gap": tr.map_log_lik() - float(lls.max()), "valid": float(np.isfinite(lls).mean())}
                if n <= base.tv_max_leaves:
                    row["tv"] = total_variation(tr, trees)
                rows.append(row)
    return {
        "d_model": size[0],
        "n_layers": size[1],
        "seed": seed,
        "n_parameters": int(sum(p.numel() for p in model.parameters())),
        "final_loss": float(np.mean(losses[-50:])),
        "train_s": train_s,
        "wall_s": time.perf_counter() - start,
        "rows": rows,
    }


def _references(base: ReproduceConfig, test_jets: list) -> list[dict[str, float]]:
    """Stochastic greedy's and exact sampling's TV with the same M on the N <= tv_max_leaves test jets."""
    rng = np.random.default_rng(0)
    out = []
    for jet in (j for j in test_jets if j.n_leaves <= base.tv_max_leaves):
        tr = Trellis(jet.leaves, lam_root=1.5)
        sg = np.stack(stochastic_greedy(jet.leaves, n_samples=base.n_samples, seed=rng))
        exact = np.stack(tr.sample(base.n_samples, seed=rng))
        out.append({"tv_sgreedy": total_variation(tr, sg), "tv_exact": total_variation(tr, exact)})
    return out


def _per_jet(runs: list[dict], size: tuple[int, int], key: str) -> np.ndarray:
    """``(seeds, jets)`` values of ``key`` for one size (jets in test order, those that have ``key``)."""
    mine = [r for r in runs if (r["d_model"], r["n_layers"]) == tuple(size)]
    return np.array([[row[key] for row in r["rows"] if key in row] for r in sorted(mine, key=lambda r: r["seed"])])


def _mean_se(values: np.ndarray) -> tuple[float, float]:
    """Mean and SE of ``(seeds, jets)`` values: the larger of the SE over jets and over seeds' means."""
    per_jet = values.mean(0)
    se_jets = per_jet.std(ddof=1) / np.sqrt(per_jet.size)
    seed_means = values.mean(1)
    se_seeds = seed_means.std(ddof=1) / np.sqrt(seed_means.size)
    return float(per_jet.mean()), float(max(se_jets, se_seeds))


def summarise(runs: list[dict], references: list[dict[str, float]], config: CapacityConfig) -> dict[str, Any]:
    """Per-size means with SE, paired differences to the quick size and to stochastic greedy, and the verdict."""
    sg = np.array([r["tv_sgreedy"] for r in references])
    quick = (config.base.d_model, config.base.n_layers)
    tv_quick = _per_jet(runs, quick, "tv")
    sizes: dict[str, dict[str, Any]] = {}
    for size in config.sizes:
        tv, gap = _per_jet(runs, size, "tv"), _per_jet(runs, size, "gap")
        sizes[f"{size[0]}x{size[1]}"] = {
            "d_model": size[0],
            "n_layers": size[1],
            "n_parameters": next(r["n_parameters"] for r in runs if (r["d_model"], r["n_layers"]) == size),
            "tv": _mean_se(tv),
            "tv_per_seed": [float(v) for v in tv.mean(1)],
            "tv_minus_quick": _mean_se(tv - tv_quick),
            "tv_minus_sgreedy": _mean_se(tv - sg[None]),
            "gap_to_map": _mean_se(gap),
            "gap_per_seed": [float(v) for v in gap.mean(1)],
            "valid": float(_per_jet(runs, size, "valid").mean()),
            "final_loss": [r["final_loss"] for r in runs if (r["d_model"], r["n_layers"]) == size],
        }
    largest = sizes[f"{config.sizes[-1][0]}x{config.sizes[-1][1]}"]
    gap_quick_sg = sizes[f"{quick[0]}x{quick[1]}"]["tv_minus_sgreedy"][0]
    return {
        "sizes": sizes,
        "tv_stochastic_greedy": (float(sg.mean()), float(sg.std(ddof=1) / np.sqrt(sg.size))),
        "tv_exact_sampler": float(np.mean([r["tv_exact"] for r in references])),
        "n_tv_jets": int(sg.size),
        "n_gap_jets": int(_per_jet(runs, quick, "gap").shape[1]),
        "share_of_gap_closed_by_largest": float(-largest["tv_minus_quick"][0] / gap_quick_sg)
        if gap_quick_sg > 0
        else float("nan"),
        "verdict": decide(largest["tv_minus_sgreedy"], largest["tv_minus_quick"], gap_quick_sg),
    }


def decide(largest_minus_sgreedy: tuple[float, float], largest_minus_quick: tuple[float, float], gap: float) -> str:
    """The decision rule fixed before the run (module docstring), from ``(mean, SE)`` paired TV differences.

    Args:
        largest_minus_sgreedy: TV(largest network) - TV(stochastic greedy), mean and SE over the same jets.
        largest_minus_quick: TV(largest network) - TV(quick profile's network), mean and SE.
        gap: TV(quick network) - TV(stochastic greedy), the gap to be explained.

    Returns:
        One of ``"capacity closes the gap"``, ``"capacity is a lever, not the whole gap"``,
        ``"not capacity (at this training budget)"``, ``"undecided"``.

    Example:
        >>> decide((0.10, 0.01), (-0.05, 0.01), 0.15)
        'capacity is a lever, not the whole gap'
        >>> decide((0.15, 0.01), (0.0, 0.01), 0.15)
        'not capacity (at this training budget)'
    """
    (d_sg, se_sg), (d_q, se_q) = largest_minus_sgreedy, largest_minus_quick
    if d_sg <= 2 * se_sg:
        return "capacity closes the gap"
    if d_q < -2 * se_q:
        return "capacity is a lever, not the whole gap"
    if 2 * se_q < 0.25 * gap:
        return "not capacity (at this training budget)"
    return "undecided"


def capacity_sweep(config: CapacityConfig | None = None, *, out_dir: Path | None = None) -> dict[str, Any]:
    """Train and evaluate every (size, seed) of the sweep; returns the runs and :func:`summarise`'s summary.

    With ``out_dir``, ``capacity.json`` is rewritten after every run (so a cut-short sweep keeps what it did), on
    the main rank only. Single-process (each network trains on one process).
    """
    config = config or CapacityConfig()
    train_jets, test_jets = _jets(config.base)
    references = _references(config.base, test_jets)
    runs: list[dict] = []
    result: dict[str, Any] = {}
    for size in config.sizes:
        for seed in config.seeds:
            runs.append(_run_one(config.base, size, seed, train_jets, test_jets))
            tv = np.mean([row["tv"] for row in runs[-1]["rows"] if "tv" in row])
            _LOG.info("size %s seed %d: TV %.4f (%.0f s)", size, seed, tv, runs[-1]["wall_s"])
            done = {tuple(s) for s in config.sizes if len(_per_jet(runs, s, "tv")) == len(config.seeds)}
            summary = summarise(runs, references, config) if len(done) == len(config.sizes) else None
            result = {"config": asdict(config), "runs": runs, "references": references, "summary": summary}
            if out_dir is not None and is_main_rank():
                out_dir.mkdir(parents=True, exist_ok=True)
                (out_dir / "capacity.json").write_text(json.dumps(result, indent=1, default=float))
    return result


if __name__ == "__main__":  # python -m nips25_treegen.experiments.capacity OUT_DIR
    import sys

    import torch

    torch.set_num_threads(1)
    res = capacity_sweep(out_dir=Path(sys.argv[1] if len(sys.argv) > 1 else "reports/treegen-capacity"))
    print(json.dumps(res["summary"], indent=1, default=float))
