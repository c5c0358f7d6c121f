"""The headline experiments: affine invariance (B), convergence from any PD B0 with its phases (A), SciPy side by side.

Everything runs in float64 inside ``jax.enable_x64(True)``; :math:`f_*` comes from a Newton solve.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nips25_bfgs.baselines import has_optimistix, optimistix_bfgs, scipy_bfgs
from nips25_bfgs.initial_hessian import initial_hessian
from nips25_bfgs.newton import newton_solve
from nips25_bfgs.objectives import affine_pullback, random_affine_map
from nips25_bfgs.potential import psi_weighted
from nips25_bfgs.problems import load_problem
from nips25_bfgs.solver import CONVERGED, BFGSResult, History, bfgs
from nips25_shared import Claim, Report, get_logger, jax_key, progress

__all__ = ["PROFILES", "TITLE", "phase_summary", "reproduce"]

TITLE = "Affine-Invariant Global Non-Asymptotic Convergence Analysis of BFGS under Self-Concordance"
GAP = 1e-10  # the target gap f - f*
OLD_MISMATCH_TOL = 1e-6  # the first design's fixed iterate tolerance (below float64's floor at cond(A) = 1e6)
EPS = float(np.finfo(np.float64).eps)
RATIO_TOL = 0.1  # superlinear: each of the last three gap ratios below this
N_RATIOS = 3
FLOOR_ULPS = 1e3  # gap floor: f - f* is resolved down to FLOOR_ULPS * eps * max(1, |f*|)
PSI_SCALES = (1.0, 4.0, 16.0)  # B0 = c H*: Psi(B~0) = d (c - 1 - log c) = 0, 1.61 d, 12.2 d

PROFILES: dict[str, dict[str, Any]] = {
    "tiny": {
        "invariance_problem": "breast_cancer",
        "conds": (1.0, 1e2),
        "n_maps": 1,
        "problems": ("breast_cancer",),
        "scales": (1.0,),
        "psi_scales": (1.0,),
        "max_iter": 1000,
        "optimistix": False,
    },
    "quick": {
        "invariance_problem": "breast_cancer",
        "conds": (1.0, 1e2, 1e4, 1e6),
        "n_maps": 3,
        "problems": ("breast_cancer", "digits", "hard_cubic", "logsumexp"),
        "scales": (1e-3, 1e-2, 1e-1, 1.0, 1e1, 1e2, 1e3),
        "psi_scales": PSI_SCALES,
        "max_iter": 3000,
        "optimistix": True,
    },
}
PROFILES["paper"] = {**PROFILES["quick"], "n_maps": 10, "max_iter": 5000}  # 10 random maps per cond(A)

log = get_logger(__name__)


def _history(res: BFGSResult) -> History:
    if res.history is None:
        raise ValueError("res must come from bfgs(..., history=True)")
    return res.history


def phase_summary(res: BFGSResult) -> dict[str, Any]:
    """Phases of one run: iterations, t0 (first index after the last non-unit step), unit-step tail, last ratios.

    Args:
        res: a :class:`BFGSResult` run with ``f_star`` (so ``history.gap`` is filled).

    Returns:
        ``{"n_iter", "converged", "final_gap", "t0", "unit_tail", "last_ratios"}`` with the last
        ``N_RATIOS`` ratios :math:`(f_{t+1} - f_*) / (f_t - f_*)`.
    """
    n = int(res.n_iter)
    unit = np.asarray(_history(res).unit_step[:n])
    non_unit = np.flatnonzero(~unit)
    t0 = int(non_unit[-1]) + 1 if non_unit.size else 0
    gaps = np.asarray(_history(res).gap[: n + 1], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = gaps[1:] / gaps[:-1]
    return {
        "n_iter": n,
        "converged": int(res.status) == CONVERGED,
        "final_gap": float(gaps[-1]),
        "t0": t0,
        "unit_tail": n - t0,
        "last_ratios": [float(r) for r in ratios[-N_RATIOS:]],
    }


def _count(res: BFGSResult) -> int | None:
    return int(res.n_iter) if int(res.status) == CONVERGED else None


def mismatch_floor(cond: float, d: int, n_iter: int) -> float:
    r"""Float64 floor of the relative iterate mismatch :math:`\max_t \|A y_t - x_t\| / \max(1, \|x_*\|)`.

    :math:`F(\kappa) = \gamma_d (T + \kappa(A)^2)` with :math:`\gamma_d = d\varepsilon` (the relative rounding of a
    length-:math:`d` inner product) and :math:`T` iterations: each step rounds at :math:`\gamma_d`, and in
    :math:`y = A^{-1}x` coordinates the gradient :math:`A^\top g` and the approximation :math:`A^{-1} H A^{-\top}`
    carry :math:`\|A\|` and :math:`\|A^{-1}\|^2`, so a rounding there maps back through :math:`A` amplified by up
    to :math:`\|A\|^2\|A^{-1}\|^2 = \kappa(A)^2`.
    """
    return d * EPS * (n_iter + cond**2)


def _mapped_mismatch(ref: BFGSResult, pulled: BFGSResult, A: jax.Array, scale: float) -> float:
    n = min(int(pulled.n_iter), int(ref.n_iter)) + 1
    mapped = np.asarray(_history(pulled).x[:n]) @ np.asarray(A).T
    return float(np.max(np.linalg.norm(mapped - np.asarray(_history(ref).x[:n]), axis=1))) / scale


def _invariance(cfg: dict[str, Any], seed: int, out_dir: Path) -> tuple[list[Claim], dict[str, Any]]:
    prob = load_problem(cfg["invariance_problem"], seed=seed)
    ref = newton_solve(prob.fun, prob.x0)
    f_star = float(ref.f)
    d = int(prob.x0.shape[0])
    x_scale = max(1.0, float(jnp.linalg.norm(ref.x)))
    run = functools.partial(bfgs, f_star=f_star, tol=GAP, max_iter=cfg["max_iter"], history=True)
    base = run(prob.fun, prob.x0, B0="hessian")
    base_id = run(prob.fun, prob.x0)
    rows: dict[str, dict[str, list[Any]]] = {}
    mismatch: dict[str, float] = {}
    mismatch_id: dict[str, float] = {}
    same_eta: dict[str, bool] = {}
    keys = jax.random.split(jax_key(seed), cfg["n_maps"])
    items = [(c, k) for c in cfg["conds"] for k in range(cfg["n_maps"])]
    for cond, k in progress(items, desc="affine invariance"):
        key = f"{cond:.0e}"
        A = random_affine_map(d, cond=cond, key=keys[k])
        g = affine_pullback(prob.fun, A)
        y0 = jnp.linalg.solve(A, prob.x0)
        row = rows.setdefault(key, {m: [] for m in ("ours_hessian", "ours_identity", "scipy", "optimistix")})
        inv = run(g, y0, B0="hessian")
        inv_id = run(g, y0)
        mismatch[key] = max(mismatch.get(key, 0.0), _mapped_mismatch(base, inv, A, x_scale))
        mismatch_id[key] = max(mismatch_id.get(key, 0.0), _mapped_mismatch(base_id, inv_id, A, x_scale))
        n = int(base.n_iter)
        eta_equal = int(inv.n_iter) == n and bool(np.array_equal(_history(inv).eta[:n], _history(base).eta[:n]))
        same_eta[key] = same_eta.get(key, True) and eta_equal
        row["ours_hessian"].append(_count(inv))
        row["ours_identity"].append(_count(inv_id))
        row["scipy"].append(scipy_bfgs(g, y0, f_star=f_star, gap=GAP, max_iter=cfg["max_iter"]).iters_to_gap)
        if cfg["optimistix"] and has_optimistix():
            row["optimistix"].append(
                optimistix_bfgs(g, y0, f_star=f_star, gap=GAP, max_steps=4 * cfg["max_iter"]).iters_to_gap
            )
    inv_counts = [c for r in rows.values() for c in r["ours_hessian"]]
    flat = None not in inv_counts and len(set(inv_counts)) == 1
    n_base = int(base.n_iter)
    floor = {k: mismatch_floor(float(k), d, n_base) for k in rows}
    below_floor = all(mismatch[k] <= floor[k] for k in rows)
    # control: B0 = I is invariant under an orthogonal A (cond 1) and not otherwise; the readout must see both
    control = {k: (mismatch_id[k] <= floor[k]) if float(k) == 1.0 else (mismatch_id[k] > floor[k]) for k in rows}
    first, last = rows[f"{cfg['conds'][0]:.0e}"], rows[f"{cfg['conds'][-1]:.0e}"]

    def grows(method: str) -> bool | None:
        if not first[method]:
            return None
        big = max(first[method]) if None not in first[method] else float("inf")
        lo = [float("inf") if c is None else c for c in last[method]]
        return min(lo) > big

    growth = {m: grows(m) for m in ("ours_identity", "scipy", "optimistix")}
    old_holds = bool(flat and max(mismatch.values()) <= OLD_MISMATCH_TOL)
    claims = [
        Claim(
            id="affine-invariance",
            statement="With B0 = Hessian at x0, BFGS on f(Ay) gives iterates A^-1 x_t, so its iteration count is "
            "flat from cond(A) = 1 to 1e6.",
            paper="iterates invariant; iteration count independent of cond(A)",
            measured={
                "iterations_by_cond": {k: v["ours_hessian"] for k, v in rows.items()},
                "max_rel_mismatch_by_cond": mismatch,
                "float64_floor_by_cond": floor,
                "mismatch_over_cond2_eps": {k: mismatch[k] / (max(1.0, float(k)) ** 2 * EPS) for k in rows},
                "same_eta_sequence_by_cond": same_eta,
                "control_identity_mismatch_by_cond": mismatch_id,
                "control_sees_invariance_and_its_break": control,
                "old_design": {"criterion": f"equal counts and mismatch <= {OLD_MISMATCH_TOL:g}", "holds": old_holds},
            },
            criterion=f"same iteration count to a {GAP:g} gap for every cond(A) and map, and max_t ||A y_t - x_t|| "
            "/ max(1, ||x*||) <= F(cond) = d eps (T + cond(A)^2) (float64 floor, T = iterations), with the control "
            "(B0 = I on the same maps) below F at cond 1 (orthogonal A: invariant) and above F at cond > 1",
            holds=bool(flat and below_floor and all(control.values())),
            scale_note=f"{prob.description}; A = U diag(sigma) V^T with {cfg['n_maps']} random map(s) per cond. "
            f"F replaces the first design's fixed {OLD_MISMATCH_TOL:g}, which is below float64's floor at cond 1e6.",
        ),
        Claim(
            id="identity-start-grows",
            statement="Identity-initialised BFGS (ours, SciPy, optimistix) needs more iterations as cond(A) grows.",
            paper=None,
            measured={
                "iterations_by_cond": {k: {m: v[m] for m in v if m != "ours_hessian"} for k, v in rows.items()},
                "grows": growth,
            },
            criterion=f"for every identity-started method run, fewest iterations at cond {cfg['conds'][-1]:g} > most "
            f"at cond {cfg['conds'][0]:g} (None = gap not reached within the cap, counted as infinite)",
            holds=all(v for v in growth.values() if v is not None),
            scale_note="Direction only (the paper states no numbers); optimistix counts step calls (trial points).",
        ),
    ]
    return claims, {"rows": rows, "f_star": f_star}


def floor_ratios(gaps: np.ndarray, floor: float) -> np.ndarray:
    r"""Gap ratios :math:`r_t = \max(f_{t+1} - f_*, F) / (f_t - f_*)` for every :math:`t` with
    :math:`f_t - f_* \ge 10F`, where :math:`F` is the float64 floor of the gap.

    A later gap below the floor is replaced by the floor, so a ratio is never understated (rounding cannot fake a
    superlinear step); ratios from gaps within 10x of the floor are not counted at all.
    """
    g = np.asarray(gaps, dtype=np.float64)
    keep = g[:-1] >= 10.0 * floor
    return np.maximum(g[1:], floor)[keep] / g[:-1][keep]


def superlinear_visible(ratios: np.ndarray) -> bool:
    """The readout of the superlinear phase: at least ``N_RATIOS`` ratios, the last ``N_RATIOS`` each below
    ``RATIO_TOL``."""
    r = np.asarray(ratios)
    return bool(r.size >= N_RATIOS and np.all(r[-N_RATIOS:] < RATIO_TOL))


def _newton_gaps(fun: Any, x0: jax.Array, f_star: float, floor: float, max_steps: int = 60) -> np.ndarray:
    """Positive control: the gaps of damped Newton (Armijo halving from the unit step), a method whose final phase
    is quadratic, from the same start and measured the same way."""
    value_and_grad = jax.jit(jax.value_and_grad(fun))
    hess = jax.jit(jax.hessian(fun))
    x = x0
    f, g = value_and_grad(x)
    gaps = [float(f) - f_star]
    for _ in range(max_steps):
        if gaps[-1] <= floor:
            break
        d = -jnp.linalg.solve(hess(x), g)
        slope, eta = float(jnp.vdot(g, d)), 1.0
        f_new, g_new = value_and_grad(x + d)
        while not float(f_new) <= float(f) + 1e-4 * eta * slope and eta > 1e-12:
            eta *= 0.5
            f_new, g_new = value_and_grad(x + eta * d)
        x, f, g = x + eta * d, f_new, g_new
        gaps.append(float(f) - f_star)
    return np.asarray(gaps)


def _phases(cfg: dict[str, Any], seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    runs: dict[str, dict[str, Any]] = {}
    curves: dict[str, dict[str, np.ndarray]] = {}
    scipy_rows: dict[str, Any] = {}
    small_psi: dict[str, dict[str, Any]] = {}
    for name in progress(cfg["problems"], desc="problems"):
        prob = load_problem(name, seed=seed)
        ref = newton_solve(prob.fun, prob.x0)
        f_star = float(ref.f)
        runs[name], curves[name] = {}, {}
        for b0 in ["hessian", *cfg["scales"]]:
            label = "hessian" if b0 == "hessian" else f"{b0:g}*I"
            res = bfgs(prob.fun, prob.x0, B0=b0, f_star=f_star, tol=GAP, max_iter=cfg["max_iter"], history=True)
            runs[name][label] = phase_summary(res)
            runs[name][label]["n_fev"] = int(res.n_fev)
            runs[name][label]["psi0"] = float(psi_weighted(initial_hessian(b0, prob.fun, prob.x0), ref.hess))
            n = int(res.n_iter)
            curves[name][label] = np.asarray(_history(res).gap[: n + 1])
        sp = scipy_bfgs(prob.fun, prob.x0, f_star=f_star, gap=GAP, max_iter=cfg["max_iter"])
        scipy_rows[name] = {"iters_to_gap": sp.iters_to_gap, "nit": sp.n_iter, "nfev": sp.n_fev, "njev": sp.n_gev}
        small_psi[name] = _small_psi(cfg, prob, ref, f_star)
        log.info("%s: %s", name, {k: v["n_iter"] for k, v in runs[name].items()})
    return {"runs": runs, "scipy": scipy_rows, "small_psi": small_psi}, curves


def _small_psi(cfg: dict[str, Any], prob: Any, ref: Any, f_star: float) -> dict[str, Any]:
    """Runs to the float64 gap floor from B0 = c H* (Psi(B~0) = d (c - 1 - log c)), and the Newton control."""
    floor = FLOOR_ULPS * EPS * max(1.0, abs(f_star))
    out: dict[str, Any] = {"floor": floor}
    newton = floor_ratios(_newton_gaps(prob.fun, prob.x0, f_star, floor), floor)
    out["newton_control"] = {"ratios": newton.tolist(), "visible": superlinear_visible(newton)}
    for c in cfg["psi_scales"]:
        B0 = c * ref.hess
        res = bfgs(prob.fun, prob.x0, B0=B0, f_star=f_star, tol=floor, max_iter=cfg["max_iter"], history=True)
        n = int(res.n_iter)
        ratios = floor_ratios(np.asarray(_history(res).gap[: n + 1]), floor)
        summary = phase_summary(res)
        out[f"{c:g}*H*"] = {
            "psi0": float(psi_weighted(B0, ref.hess)),
            "n_iter": n,
            "converged": int(res.status) == CONVERGED,
            "t0": summary["t0"],
            "unit_tail": summary["unit_tail"],
            "ratios": ratios.tolist(),
            "visible": superlinear_visible(ratios),
        }
    return out


def _figures(
    out_dir: Path, curves: dict[str, dict[str, np.ndarray]], rows: dict[str, Any], phases: dict[str, Any]
) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(curves)
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names):
        for label, gaps in curves[name].items():
            rel = np.maximum(gaps / gaps[0], 1e-18)
            ax.semilogy(rel, label=label, lw=1.4 if label == "hessian" else 0.9)
        ax.set_title(name)
        ax.set_xlabel("iteration t")
        ax.set_ylabel("(f_t - f*) / (f_0 - f*)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "phases.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    conds = [float(k) for k in rows]
    for method in ("ours_hessian", "ours_identity", "scipy", "optimistix"):
        ys = [np.nan if not v[method] or None in v[method] else float(np.mean(v[method])) for v in rows.values()]
        if not all(np.isnan(ys)):
            ax.loglog(conds, ys, marker="o", label=method)
    ax.set_xlabel("cond(A)")
    ax.set_ylabel(f"iterations to gap {GAP:g}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "affine_invariance.png", dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(2, len(names), figsize=(4.2 * len(names), 6.6), squeeze=False)
    for j, name in enumerate(names):
        small = phases["small_psi"][name]
        ax = axes[0][j]
        ax.semilogy(small["newton_control"]["ratios"], "k--", marker=".", label="Newton (control)")
        for label, run in small.items():
            if label.endswith("H*"):
                ax.semilogy(run["ratios"], marker=".", label=f"B0={label}, Psi={run['psi0']:.0f}")
        ax.axhline(RATIO_TOL, color="grey", lw=0.6)
        ax.set_title(f"{name}: to the float64 floor")
        ax.set_xlabel("iteration t")
        ax.set_ylabel("floor-aware gap ratio")
        ax.legend(fontsize=6)
        ax = axes[1][j]
        for label, gaps in curves[name].items():
            psi0 = phases["runs"][name][label]["psi0"]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratios = gaps[1:] / gaps[:-1]
            ax.semilogy(np.arange(ratios.size) / max(psi0, 1.0), ratios, lw=0.8, label=f"{label} (Psi={psi0:.0f})")
        ax.axhline(RATIO_TOL, color="grey", lw=0.6)
        ax.set_xscale("log")
        ax.set_xlabel("t / Psi(B~0)")
        ax.set_ylabel(f"gap ratio (stop at {GAP:g})")
        ax.legend(fontsize=5)
    fig.tight_layout()
    fig.savefig(out_dir / "superlinear.png", dpi=110)
    plt.close(fig)
    return ["phases.png", "affine_invariance.png", "superlinear.png"]


def reproduce(*, profile: str = "quick", seed: int = 0, out_dir: Path) -> Report:
    """Run the three claims of the issue and return the :class:`nips25_shared.Report`.

    Args:
        profile: ``"quick"`` (default; 4 problems, cond(A) up to 1e6 with 3 maps each, a few minutes on 2
            cores), ``"paper"`` (10 random maps per cond, higher caps) or ``"tiny"`` (smoke test).
        seed: seed of the random maps and the synthetic problems.
        out_dir: where the figures are written.

    Returns:
        The report with claims ``affine-invariance``, ``identity-start-grows``, ``any-B0-reaches-gap``,
        ``unit-steps-superlinear`` and ``fewer-iterations-than-scipy``.

    Raises:
        ValueError: unknown ``profile``.
    """
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {tuple(PROFILES)}, got {profile!r}")
    cfg = PROFILES[profile]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with jax.enable_x64(True):
        inv_claims, inv = _invariance(cfg, seed, out_dir)
        phases, curves = _phases(cfg, seed)
    figures = _figures(out_dir, curves, inv["rows"], phases)
    runs = phases["runs"]
    flat_runs = [(p, b, r) for p, per in runs.items() for b, r in per.items()]
    all_conv = all(r["converged"] for _, _, r in flat_runs)
    old_superlinear = all(
        r["converged"] and r["unit_tail"] >= N_RATIOS and all(x < RATIO_TOL for x in r["last_ratios"])
        for _, _, r in flat_runs
    )
    unit_tails = all(r["converged"] and r["unit_tail"] >= N_RATIOS for _, _, r in flat_runs)
    small = phases["small_psi"]
    control_ok = {p: small[p]["newton_control"]["visible"] for p in small}
    zero_psi = {p: small[p]["1*H*"]["visible"] and small[p]["1*H*"]["unit_tail"] >= N_RATIOS for p in small}
    superlinear = bool(unit_tails and all(control_ok.values()) and all(zero_psi.values()))
    ours_h = {p: runs[p]["hessian"]["n_iter"] if runs[p]["hessian"]["converged"] else None for p in runs}
    scipy_it = {p: phases["scipy"][p]["iters_to_gap"] for p in runs}
    ours_i = {p: runs[p]["1*I"]["n_iter"] if "1*I" in runs[p] and runs[p]["1*I"]["converged"] else None for p in runs}
    fewer = all(ours_h[p] is not None and (scipy_it[p] is None or ours_h[p] <= scipy_it[p]) for p in runs)
    scale_note = f"problems {list(runs)}; B0 in {{Hessian at x0}} + {{c*I, c in {list(cfg['scales'])}}}; float64."
    claims = [
        *inv_claims,
        Claim(
            id="any-B0-reaches-gap",
            statement="From any positive-definite B0 BFGS with weak-Wolfe steps converges globally (linear phase "
            "first).",
            paper="global linear rate for any PD B0, constants affine invariant",
            measured={
                p: {b: r["n_iter"] if r["converged"] else None for b, r in per.items()} for p, per in runs.items()
            },
            criterion=f"every (problem, B0) run reaches f - f* <= {GAP:g} within {cfg['max_iter']} iterations",
            holds=all_conv,
            scale_note=scale_note,
        ),
        Claim(
            id="unit-steps-superlinear",
            statement="After a finite t0 the unit step is always accepted and the gap ratios go to zero "
            "(superlinear rate).",
            paper="eta_t = 1 for t >= t0, rate (C/t)^t",
            measured={
                "unit_tail_in_every_run": unit_tails,
                "newton_control_visible": control_ok,
                "zero_psi_start_visible": zero_psi,
                "small_psi_runs": {p: {k: v for k, v in small[p].items() if k != "newton_control"} for p in small},
                "newton_control_ratios": {p: small[p]["newton_control"]["ratios"] for p in small},
                "phase_runs": {
                    p: {
                        b: {"t0": r["t0"], "n_iter": r["n_iter"], "psi0": r["psi0"], "last_ratios": r["last_ratios"]}
                        for b, r in per.items()
                    }
                    for p, per in runs.items()
                },
                "old_design": {
                    "criterion": f"in every run the last {N_RATIOS} steps are unit steps and the last {N_RATIOS} "
                    f"ratios are each < {RATIO_TOL:g}, at the stop f - f* <= {GAP:g}",
                    "holds": old_superlinear,
                },
            },
            criterion=f"(a) every phase run (all problems and B0) ends with >= {N_RATIOS} unit steps after its last "
            f"non-unit step; (b) on every problem, from B0 = H* (Psi(B~0) = 0) run to the float64 gap floor "
            f"F = {FLOOR_ULPS:g} eps max(1, |f*|), the last {N_RATIOS} floor-aware ratios "
            f"max(f_t+1 - f*, F)/(f_t - f*) (counted while f_t - f* >= 10 F) are each < {RATIO_TOL:g} with a unit "
            f"tail >= {N_RATIOS}; (c) the positive control (damped Newton, same start, same readout) shows the same "
            "on every problem",
            holds=superlinear,
            scale_note=scale_note + " The theory's (C/t)^t has C proportional to Psi(B~0) (369 from the Hessian at "
            "x0 and 8912 from I on breast cancer), so it bites only at t of order Psi; the phase runs end at t/Psi < 1 "
            "and are shown against t/Psi, while part (b) tests starts where Psi is small.",
        ),
        Claim(
            id="fewer-iterations-than-scipy",
            statement="Iteration counts side by side with SciPy's BFGS; with B0 = Hessian at x0 ours needs no more.",
            paper=None,
            measured={"ours_hessian": ours_h, "ours_identity": ours_i, "scipy_identity": scipy_it},
            criterion=f"on every problem, ours with B0 = Hessian at x0 reaches f - f* <= {GAP:g} in no more "
            "iterations than SciPy BFGS (identity start, strong Wolfe, gtol 1e-12)",
            holds=fewer,
            scale_note="Our comparison; the paper reports no SciPy numbers. Counts are iterations (accepted steps).",
        ),
    ]
    config = {
        **{k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()},
        "gap": GAP,
        "line_search": {"alpha": 1e-4, "beta": 0.9, "eta0": 1.0, "max_trials": 60},
        "stop": "f_gap",
        "form": "inverse",
        "scipy": phases["scipy"],
        "phase_runs": runs,
        "optimistix_installed": has_optimistix(),
    }
    return Report(
        package="bfgs",
        title=TITLE,
        profile=profile,
        seed=seed,
        config=config,
        claims=claims,
        wall_time_s=time.perf_counter() - start,
        figures=figures,
        notes="f* from a float64 Newton solve. Data: scikit-learn's bundled breast-cancer and digits files "
        "(standardised); hard cubic and log-sum-exp are synthetic (seeded). Paper numbers were not retrieved.",
    )
