"""Headline experiment: under persistent noise, naive algorithms degrade while the meta-algorithm holds up.

The paper (Bhawalkar et al., NeurIPS 2025) is theoretical and reports no experiments; the claims checked here are
the issue's qualitative ones, with criteria fixed in this file before running:

1. max-cut on networkx's social graphs, randomised double greedy: the meta-wrapped version reaches at least half
   the optimum (or of the total weight, an upper bound, where the optimum is unknown) and beats double greedy run
   directly on the noisy oracle for sigma >= 0.2;
2. facility location on scikit-learn's digits under a partition matroid: meta-wrapped measured continuous greedy
   stays within the smoothing lemma's factor ``1 - h/(r - h)`` of the noiseless greedy value at every sigma,
   while measured continuous greedy on the noisy oracle degrades as sigma grows;
3. the query counts: the reduction costs ``m`` oracle queries per surrogate value.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from nips25_shared import Claim, Report, get_logger, jax_key, progress
from nips25_submodular.continuous_greedy import measured_continuous_greedy
from nips25_submodular.double_greedy import double_greedy
from nips25_submodular.greedy import greedy
from nips25_submodular.instances import digits_facility_location, max_cut_graph
from nips25_submodular.matroids import Free
from nips25_submodular.meta import PRACTICAL, noisy_meta
from nips25_submodular.oracle import PersistentNoisyOracle
from nips25_submodular.selection import Selection
from nips25_submodular.smoothing import smoothing_factor, theory_params

__all__ = ["PROFILES", "TITLE", "reproduce"]

TITLE = "A Unified Approach to Submodular Maximization Under Noise"
PROFILES: dict[str, dict[str, Any]] = {
    "tiny": {
        "graphs": ("davis",),
        "sigmas": (0.0, 1.0),
        "maxcut_seeds": 2,
        "decide_seeds": 3,
        "digits": {"n_per_class": 4, "cap": 2, "gamma_scale": 4.0},
        "digits_seeds": 1,
        "mcg": {"delta": 0.5, "n_samples": 1},
    },
    "quick": {
        "graphs": ("davis", "karate", "les_mis"),
        "sigmas": (0.0, 0.05, 0.2, 1.0),
        "maxcut_seeds": 10,
        "decide_seeds": 500,
        "digits": {"n_per_class": 24, "cap": 6, "gamma_scale": 4.0},
        "digits_seeds": 5,
        "mcg": {"delta": 0.05, "n_samples": 4},
    },
    "paper": {
        "graphs": ("davis", "florentine", "karate", "les_mis"),
        "sigmas": (0.0, 0.05, 0.2, 1.0),
        "maxcut_seeds": 20,
        "decide_seeds": 500,
        "digits": {"n_per_class": 24, "cap": 6, "gamma_scale": 4.0},
        "digits_seeds": 20,
        "mcg": {"delta": 0.02, "n_samples": 10},
    },
}
# Criteria, fixed before any run.
BEAT_SIGMA_MIN = 0.2  # claim 1: meta must beat naive for every sigma >= this
HALF = 0.5  # claim 1: meta reaches at least this fraction of the optimum (upper bound)
SE_MARGIN = 2.0  # differences must exceed this many standard errors
# Issue 41 (fixed before the rerun): the Davis cell at sigma = 1 sat at 0.492 OPT within 0.5 SE of 0.5; its seed count
# ``decide_seeds`` is set so that SE <= 0.004 (half the 0.008 gap) given the per-seed SD 0.084 measured at 40 seeds.
DECIDE_CELL = ("davis", 1.0)
NONVOID_T = 1  # claim 2: t = 1 and m = h (all subsets), h maximising the smoothing factor at r = n


def nonvoid_h(r: int) -> int:
    """The ``h`` in ``[2, r/2)`` maximising the non-monotone smoothing factor with ``t = 1`` at rank ``r``."""
    return max(range(2, r // 2), key=lambda h: smoothing_factor(r, h, NONVOID_T, monotone=False))


_log = get_logger(__name__)


def _se(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1) / np.sqrt(x.size)) if x.size > 1 else 0.0


def _maxcut(cfg: dict[str, Any], seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    insts = {g: max_cut_graph(g) for g in cfg["graphs"]}
    runs = [
        (g, s, r)
        for g in cfg["graphs"]
        for s in cfg["sigmas"]
        for r in range(cfg["decide_seeds"] if (g, s) == DECIDE_CELL else cfg["maxcut_seeds"])
    ]
    for g, sigma, rep in progress(runs, desc="max-cut"):
        inst = insts[g]
        assert inst.opt is not None  # bundled graphs store their certified optimum
        h_nv = nonvoid_h(inst.f.n)
        nonvoid: dict[str, Any] = {"monotone": False, "preset": None, "h": h_nv, "t": NONVOID_T, "m": h_nv}
        key = jax.random.fold_in(jax_key(seed), rep)
        k_noise, k_naive, k_meta, k_clean = jax.random.split(key, 4)
        k_nv, k_rand = jax.random.split(k_meta)
        oracle = PersistentNoisyOracle(inst.f, sigma=sigma, key=k_noise)
        names = ("naive", "meta", "meta_nonvoid", "noiseless", "random")
        rows = out.setdefault(g, {}).setdefault(str(sigma), {**{k: [] for k in names}, "queries": {}})
        sels = {
            "noiseless": double_greedy(inst.f, key=k_clean),
            "naive": double_greedy(oracle, key=k_naive),
            "meta": noisy_meta(oracle, Free(inst.f.n), "double_greedy", key=k_meta, monotone=False),
            "meta_nonvoid": noisy_meta(oracle, Free(inst.f.n), "double_greedy", key=k_nv, **nonvoid),
        }
        for name, sel in sels.items():
            rows[name].append(float(inst.f(sel.mask)) / inst.opt)
            rows["queries"][name] = sel.queries
        rows["random"].append(float(inst.f(jax.random.bernoulli(k_rand, 0.5, (inst.f.n,)))) / inst.opt)
    return {"results": out, "instances": insts}


def _digits(cfg: dict[str, Any], seed: int) -> dict[str, Any]:
    inst = digits_facility_location(**cfg["digits"], seed=seed)
    f, matroid = inst.f, inst.matroid
    reference = float(f(greedy(f, matroid).mask))
    out: dict[str, Any] = {}
    runs = [(s, r) for s in cfg["sigmas"] for r in range(cfg["digits_seeds"])]
    for sigma, rep in progress(runs, desc="digits"):
        key = jax.random.fold_in(jax_key(seed + 1), rep)
        k_noise, k_naive, k_meta, k_rand = jax.random.split(key, 4)
        oracle = PersistentNoisyOracle(f, sigma=sigma, key=k_noise)
        names = ("naive_mcg", "meta_mcg", "meta_mcg_complete", "naive_greedy", "random_base")
        rows = out.setdefault(str(sigma), {**{k: [] for k in names}, "complete_is_base": [], "completed": []})
        sels = {
            "naive_mcg": measured_continuous_greedy(oracle, matroid, key=k_naive, monotone=True, **cfg["mcg"]),
            "meta_mcg_complete": noisy_meta(  # one run; its plain output S_H + H' is read from info below
                oracle,
                matroid,
                "measured_continuous_greedy",
                key=k_meta,
                monotone=True,
                inner_kwargs=cfg["mcg"],
                complete=True,
            ),
            "naive_greedy": greedy(oracle, matroid),
        }
        done = sels["meta_mcg_complete"]
        inner = done.info["inner_selection"]
        sels["meta_mcg"] = Selection(mask=inner.mask | done.info["H_prime"], queries=inner.queries)
        rows["complete_is_base"].append(int(done.mask.sum()) == matroid.rank and bool(matroid.independent(done.mask)))
        rows["completed"].append(done.info["completed"])
        for name, sel in sels.items():
            rows[name].append(float(f(sel.mask)) / reference)
            rows.setdefault("queries", {})[name] = sel.queries
        rows["random_base"].append(float(f(matroid.random_base(k_rand))) / reference)
    return {"results": out, "reference": reference, "n": f.n, "rank": matroid.rank}


def _figure(maxcut: dict[str, Any], digits: dict[str, Any], sigmas: tuple[float, ...], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for g, per_sigma in maxcut["results"].items():
        for name, style in (("naive", "--o"), ("meta", "-s")):
            means = [np.mean(per_sigma[str(s)][name]) for s in sigmas]
            ses = [_se(np.asarray(per_sigma[str(s)][name])) for s in sigmas]
            ax1.errorbar(sigmas, means, yerr=ses, fmt=style, label=f"{g} {name}", capsize=3)
    ax1.axhline(HALF, color="grey", lw=0.8)
    ax1.set(xscale="symlog", xlabel="noise sigma", ylabel="cut / exact OPT", title="max-cut, double greedy")
    ax1.legend(fontsize=7)
    for name in ("naive_mcg", "meta_mcg", "meta_mcg_complete", "naive_greedy", "random_base"):
        means = [np.mean(digits["results"][str(s)][name]) for s in sigmas]
        ses = [_se(np.asarray(digits["results"][str(s)][name])) for s in sigmas]
        ax2.errorbar(sigmas, means, yerr=ses, fmt="-o", label=name, capsize=3)
    ax2.set(xscale="symlog", xlabel="noise sigma", ylabel="f(S) / noiseless greedy", title="digits facility location")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(*, profile: str = "quick", seed: int = 0, out_dir: Path) -> Report:
    """Run the headline experiment and return its :class:`nips25_shared.Report` (figure saved into ``out_dir``).

    Args:
        profile: ``"tiny"`` (smoke test), ``"quick"`` (default, ~1-2 min on 2 cores) or ``"paper"`` (the brief's
            full configuration: 20 seeds, all four graphs, ``delta=0.02``; CPU, tens of minutes).
        seed: base seed of the noise and the algorithms.
        out_dir: directory for the figure.

    Returns:
        The report with claims ``maxcut-meta-half-opt``, ``maxcut-meta-nonvoid-guarantee``,
        ``maxcut-meta-beats-naive``, ``partition-meta-mcg-near-noiseless``, ``partition-meta-completion``,
        ``partition-naive-mcg-degrades`` and ``meta-query-overhead``.

    Raises:
        ValueError: if ``profile`` is unknown.
    """
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {sorted(PROFILES)}, got {profile!r}")
    cfg = PROFILES[profile]
    start = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sigmas = tuple(cfg["sigmas"])
    maxcut = _maxcut(cfg, seed)
    digits = _digits(cfg, seed)
    _figure(maxcut, digits, sigmas, out_dir / "noise_sweep.png")
    h, t, m = PRACTICAL.h, PRACTICAL.t, PRACTICAL.m
    claims: list[Claim] = []
    scale = (
        f"Paper: theory only, no experiments. Ours: practical preset h={h}, t={t}, m={m} (voids the worst-case "
        f"guarantee), multiplicative Gaussian noise, {cfg['maxcut_seeds']} seeds per graph and sigma."
    )

    rho = {
        g: {
            "practical": smoothing_factor(inst.f.n, h, t, monotone=False),
            "nonvoid": smoothing_factor(inst.f.n, nonvoid_h(inst.f.n), NONVOID_T, monotone=False),
            "nonvoid_h": nonvoid_h(inst.f.n),
        }
        for g, inst in maxcut["instances"].items()
    }

    def cell(g: str, sigma: float, arm: str) -> dict[str, float]:
        v = np.asarray(maxcut["results"][g][str(sigma)][arm])
        return {"mean": float(v.mean()), "se": _se(v), "n": int(v.size)}

    half = {
        g: {
            str(s): {
                **cell(g, s, "meta"),
                "decided": abs(cell(g, s, "meta")["mean"] - HALF) > SE_MARGIN * cell(g, s, "meta")["se"],
            }
            for s in sigmas
        }
        for g in maxcut["results"]
    }
    claims.append(
        Claim(
            id="maxcut-meta-half-opt",
            statement="Meta-wrapped double greedy reaches at least half the optimum under persistent noise "
            "(1/2 guarantee, unconstrained case).",
            paper="1/2 - O(eps) (Theorem, unconstrained; as the smoothing factor rho -> 1)",
            measured={
                "mean meta cut / exact OPT (mean, se, n, decided = |mean - 0.5| > 2 se)": half,
                "exact OPT (HiGHS MILP, gap 0)": {g: inst.opt for g, inst in maxcut["instances"].items()},
                "smoothing factor rho (practical preset) and theorem bound rho/2": {
                    g: {"rho": r["practical"], "bound": r["practical"] / 2} for g, r in rho.items()
                },
            },
            criterion=f"for every graph and sigma, mean(meta) / OPT >= {HALF} (OPT exact, by MILP; the Davis cell at "
            f"sigma=1 with {cfg['decide_seeds']} seeds)",
            holds=all(v["mean"] >= HALF for per in half.values() for v in per.values()),
            scale_note=scale
            + " With h=8, t=3 the smoothing factor rho is "
            + ", ".join(f"{g} {r['practical']:.3f}" for g, r in rho.items())
            + ": the theorem itself promises only rho/2 of OPT here, so this is the paper's asymptotic rate, not its "
            "guarantee at these sizes. Old design divided by the total edge weight where OPT was unknown.",
        )
    )
    nonvoid = {g: {str(s): cell(g, s, "meta_nonvoid") for s in sigmas} for g in maxcut["results"]}
    controls = {
        g: {
            "noiseless double greedy": {str(s): cell(g, s, "noiseless") for s in sigmas},
            "uniform random set": {str(s): cell(g, s, "random") for s in sigmas},
        }
        for g in maxcut["results"]
    }
    claims.append(
        Claim(
            id="maxcut-meta-nonvoid-guarantee",
            statement="Where the smoothing factor rho is non-void, meta-wrapped double greedy keeps the theorem's "
            "rho/2 of the optimum at every noise level.",
            paper="rho * (1/2) - O(eps) (smoothing lemma x double greedy)",
            measured={
                "mean meta(t=1, m=h) cut / OPT": nonvoid,
                "rho and h": {
                    g: {"rho": r["nonvoid"], "h": r["nonvoid_h"], "bound": r["nonvoid"] / 2} for g, r in rho.items()
                },
                "controls": controls,
            },
            criterion="for every graph and sigma, mean(meta with t=1, m=h, h maximising rho) / OPT >= rho/2 "
            "(no slack for the unspecified O(eps)); positive control: noiseless double greedy >= 1/2 OPT",
            holds=all(nonvoid[g][str(s)]["mean"] >= rho[g]["nonvoid"] / 2 for g in nonvoid for s in sigmas),
            scale_note=scale.replace(f"h={h}, t={t}, m={m}", "t=1, m=h")
            + " rho = "
            + ", ".join(f"{g} {r['nonvoid']:.3f} (h={r['nonvoid_h']})" for g, r in rho.items())
            + ". On max-cut a uniform random set already cuts half the total weight, so rho/2 is a weak bar; the "
            "control row shows it.",
        )
    )
    beats: dict[str, dict[str, Any]] = {}
    ok = True
    for g, per_sigma in maxcut["results"].items():
        for s in sigmas:
            if s < BEAT_SIGMA_MIN:
                continue
            diff = np.asarray(per_sigma[str(s)]["meta"]) - np.asarray(per_sigma[str(s)]["naive"])
            beats.setdefault(g, {})[str(s)] = {
                "naive": float(np.mean(per_sigma[str(s)]["naive"])),
                "meta": float(np.mean(per_sigma[str(s)]["meta"])),
                "diff_se": _se(diff),
            }
            ok &= bool(diff.mean() > SE_MARGIN * _se(diff))
    claims.append(
        Claim(
            id="maxcut-meta-beats-naive",
            statement="Under persistent noise, double greedy run directly on the noisy oracle degrades while the "
            "meta-wrapped one stays near the noiseless value.",
            paper=None,
            measured=beats,
            criterion=f"for every graph and sigma >= {BEAT_SIGMA_MIN}: mean(meta - naive) > {SE_MARGIN} x SE of the "
            "paired difference (same noise realisation)",
            holds=ok,
            scale_note=scale,
        )
    )
    factor = smoothing_factor(digits["rank"], h, t, monotone=True)
    res = digits["results"]
    meta_means = {str(s): float(np.mean(res[str(s)]["meta_mcg"])) for s in sigmas}
    claims.append(
        Claim(
            id="partition-meta-mcg-near-noiseless",
            statement="Meta-wrapped measured continuous greedy under a partition matroid stays close to the "
            "noiseless greedy value at every noise level.",
            paper="1 - 1/e - O(eps) (monotone, matroid)",
            measured={
                "mean meta-MCG / noiseless greedy": meta_means,
                "se": {str(s): _se(np.asarray(res[str(s)]["meta_mcg"])) for s in sigmas},
                "smoothing factor rho (monotone, r, h)": factor,
            },
            criterion=f"for every sigma, mean(meta-MCG) / greedy >= 1 - h/(r - h) = {factor:.3f} (the smoothing "
            f"lemma's factor, r = {digits['rank']})",
            holds=all(v >= factor for v in meta_means.values()),
            scale_note=f"digits: n = {digits['n']}, rank {digits['rank']}, {cfg['digits_seeds']} seeds, "
            f"MCG delta={cfg['mcg']['delta']}, {cfg['mcg']['n_samples']} samples per step; h={h}, t={t}, m={m}.",
        )
    )
    gain = {str(s): np.asarray(res[str(s)]["meta_mcg_complete"]) - np.asarray(res[str(s)]["meta_mcg"]) for s in sigmas}
    claims.append(
        Claim(
            id="partition-meta-completion",
            statement="For monotone f the meta output S_H + H' is never a base; completing it greedily with the "
            "oracle fills the base and raises the value.",
            paper=None,
            measured={
                "mean meta-MCG + completion / greedy": {
                    str(s): float(np.mean(res[str(s)]["meta_mcg_complete"])) for s in sigmas
                },
                "mean paired gain (completion - plain)": {
                    str(s): {"mean": float(g.mean()), "se": _se(g), "n": int(g.size)} for s, g in gain.items()
                },
                "elements added": {str(s): float(np.mean(res[str(s)]["completed"])) for s in sigmas},
                "smoothing factor rho": factor,
            },
            criterion=f"every completed set is a base of the matroid, and at every sigma the paired gain > {SE_MARGIN} "
            "x its SE",
            holds=all(all(res[str(s)]["complete_is_base"]) for s in sigmas)
            and all(g.mean() > SE_MARGIN * _se(g) for g in gain.values()),
            scale_note=f"digits: n = {digits['n']}, rank {digits['rank']}, {cfg['digits_seeds']} seeds; the "
            "completion uses the noisy oracle's gains (monotone f: adding never lowers the true value).",
        )
    )
    lo, hi = np.asarray(res[str(sigmas[0])]["naive_mcg"]), np.asarray(res[str(sigmas[-1])]["naive_mcg"])
    pooled = float(np.hypot(_se(lo), _se(hi)))
    claims.append(
        Claim(
            id="partition-naive-mcg-degrades",
            statement="Measured continuous greedy run directly on the noisy oracle degrades as the noise grows.",
            paper=None,
            measured={
                "mean naive-MCG / greedy": {str(s): float(np.mean(res[str(s)]["naive_mcg"])) for s in sigmas},
                "mean naive-greedy / greedy": {str(s): float(np.mean(res[str(s)]["naive_greedy"])) for s in sigmas},
                "mean random base / greedy": {str(s): float(np.mean(res[str(s)]["random_base"])) for s in sigmas},
            },
            criterion=f"mean(naive-MCG at sigma={sigmas[-1]}) < mean(naive-MCG at sigma={sigmas[0]}) - {SE_MARGIN} x "
            "pooled SE",
            holds=bool(hi.mean() < lo.mean() - SE_MARGIN * pooled),
            scale_note=f"digits: n = {digits['n']}, rank {digits['rank']}, {cfg['digits_seeds']} seeds.",
        )
    )
    queries: dict[str, Any] = {}
    exact = True
    for g, inst in maxcut["instances"].items():
        q = maxcut["results"][g][str(sigmas[-1])]["queries"]
        expected = m * (2 + 2 * (inst.f.n - h))
        queries[g] = {"naive_dg": q["naive"], "meta_dg": q["meta"], "expected_meta": expected}
        exact &= q["meta"] == expected
    queries["digits"] = res[str(sigmas[-1])]["queries"]
    claims.append(
        Claim(
            id="meta-query-overhead",
            statement="The reduction spends m oracle queries per surrogate value: m x the inner algorithm's queries "
            "on the contracted instance.",
            paper="m * Q(A) queries",
            measured=queries,
            criterion="for every graph, meta double greedy's queries == m * (2 + 2 (n - h))",
            holds=exact,
            scale_note=f"m = {m}; the theory's m would be far larger (see config.theory_params).",
        )
    )
    theory = {
        g: theory_params(inst.f.n, inst.f.n, eps=0.1, nu=1.0, delta=0.1).__dict__
        for g, inst in maxcut["instances"].items()
    }
    theory["digits"] = theory_params(digits["n"], digits["rank"], eps=0.1, nu=1.0, delta=0.1, monotone=True).__dict__
    config = {
        **cfg,
        "preset": {"h": h, "t": t, "m": m, "name": "practical"},
        "noise": "gaussian, multiplicative",
        "smoothing_factor": {**rho, "digits": factor},
        "maxcut_opt": {g: inst.opt for g, inst in maxcut["instances"].items()},
        "digits_greedy_reference": digits["reference"],
        "theory_params(eps=0.1, nu=1, delta=0.1)": theory,
    }
    notes = (
        "The practical preset (h=8, t=3, m=56) voids the paper's worst-case guarantee; the theory's parameters "
        "(config.theory_params) are infeasible on every instance here (r <= 2h); config.smoothing_factor gives the "
        "smoothing lemma's rho for every setting. Max-cut values are divided by the exact optimum (HiGHS MILP, "
        "gap 0). Values are noiseless f of the "
        "returned set. Data: networkx's bundled graphs and scikit-learn's bundled digits."
    )
    _log.info("reproduce done in %.1f s", time.perf_counter() - start)
    return Report(
        package="submodular",
        title=TITLE,
        profile=profile,
        seed=seed,
        config=config,
        claims=claims,
        wall_time_s=time.perf_counter() - start,
        figures=["noise_sweep.png"],
        notes=notes,
    )
