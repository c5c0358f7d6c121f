r"""The simulation grid behind ``reproduce`` and ``nips25-gnnclt simulate``: one CSBM draw per :math:`\nu`, every
depth :math:`k` on it, and the theorem's checks (W1, covariance error, collapse, cross-entropy equivalence)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax import Array

from nips25_gnnclt._checks import check_int, check_positive
from nips25_gnnclt.cross_entropy import ce_risk, risk_gap, sample_mixture, train_ce_head
from nips25_gnnclt.csbm import CSBM
from nips25_gnnclt.limits import covariance_error, limit_covs, limit_means, naive_covs, scaled_centered
from nips25_gnnclt.oversmoothing import empirical_collapse_ratio
from nips25_gnnclt.sampling import sample_csbm
from nips25_gnnclt.wasserstein import sliced_w1_to_mixture
from nips25_shared import get_logger, progress

__all__ = ["GridConfig", "clt_grid", "default_model"]

log = get_logger(__name__)


def default_model() -> CSBM:
    r"""The experiment's CSBM: :math:`K = 2`, :math:`\pi = (1/2, 1/2)`, :math:`B = [[1.5, 0.5], [0.5, 1]]`,
    :math:`M = I_2`, :math:`\Sigma = 0.25 I_2`."""
    return CSBM(pi=[0.5, 0.5], B=[[1.5, 0.5], [0.5, 1.0]], means=np.eye(2), cov=0.25 * np.eye(2))


@dataclass(frozen=True)
class GridConfig:
    """Sizes of one simulation grid.

    Attributes:
        n: nodes per graph.
        nus: degree scales :math:`\\nu` (one graph each).
        ks: depths :math:`k \\ge 1`.
        n_proj: random directions of the sliced W1.
        head_per_class: embeddings per class used for the cross-entropy heads and the matching W1.
        head_steps: L-BFGS iterations per head.
        l2: ridge weight of the heads.
        centering: ``"plug-in"`` (empirical :math:`\\hat\\pi, \\hat M, \\hat\\Sigma` of the draw) or
            ``"population"`` (the model's own parameters).
    """

    n: int = 40_000
    nus: tuple[float, ...] = (25.0, 100.0, 400.0)
    ks: tuple[int, ...] = (1, 2, 3)
    n_proj: int = 32
    head_per_class: int = 500
    head_steps: int = 100
    l2: float = 1e-3
    centering: str = "plug-in"

    def __post_init__(self) -> None:
        check_int(self.n, "n", minimum=16)
        if not self.nus or not self.ks:
            raise ValueError("nus and ks must be non-empty")
        for nu in self.nus:
            check_positive(nu, "nus[i]")
        for k in self.ks:
            check_int(k, "ks[i]", minimum=1)
        check_int(self.n_proj, "n_proj", minimum=1)
        check_int(self.head_per_class, "head_per_class", minimum=2)
        check_int(self.head_steps, "head_steps", minimum=1)
        if not np.isfinite(self.l2) or self.l2 < 0:
            raise ValueError(f"l2 must be finite and >= 0, got {self.l2}")
        if self.centering not in ("plug-in", "population"):
            raise ValueError(f"centering must be 'plug-in' or 'population', got {self.centering!r}")


def _cell(
    model: CSBM, fitted: CSBM, H: Array, y: np.ndarray, nu: float, k: int, cfg: GridConfig, key: Array
) -> dict[str, Any]:
    k_dir, k_sub, k_gmm, k_head = jax.random.split(key, 4)
    k_floor, k_naive = jax.random.split(jax.random.fold_in(key, 1))
    Z = np.asarray(scaled_centered(H, y, fitted, nu=nu, k=k), np.float64)  # host metrics in float64
    zeros = np.zeros((fitted.n_classes, fitted.dim))
    covs, covs_naive = limit_covs(fitted, k), naive_covs(fitted, k)

    def to_theory_and_naive(sample: np.ndarray) -> tuple[float, float]:
        return (
            sliced_w1_to_mixture(sample, fitted.pi, zeros, covs, k_dir, n_proj=cfg.n_proj),
            sliced_w1_to_mixture(sample, fitted.pi, zeros, covs_naive, k_dir, n_proj=cfg.n_proj),
        )

    w1, w1_naive = to_theory_and_naive(Z)
    # positive control: a sample of the limit mixture itself, the same labels, estimator and directions
    floor, floor_naive = to_theory_and_naive(np.asarray(sample_mixture(k_floor, zeros, covs, y), np.float64))
    U = np.asarray(H, np.float64) / nu**k
    # cross-entropy heads on a class-balanced subsample of embeddings and on an equal-size mixture sample
    rng = np.random.default_rng(np.asarray(jax.random.key_data(k_sub)).ravel())
    idx = np.concatenate(
        [rng.choice(np.flatnonzero(y == c), cfg.head_per_class, replace=False) for c in range(model.n_classes)]
    )
    P, y_s = U[idx], y[idx]
    means = limit_means(fitted, k)
    G = np.asarray(sample_mixture(k_gmm, means, covs / nu, y_s), np.float64)
    # negative control: the same heads on a sample of the naive Gaussian, which is not the limit
    G_naive = np.asarray(sample_mixture(k_naive, means, covs_naive / nu, y_s), np.float64)
    head_p, head_g, head_n = (
        train_ce_head(X, y_s, k_head, n_classes=model.n_classes, l2=cfg.l2, steps=cfg.head_steps)
        for X in (P, G, G_naive)
    )
    gap_p, gap_g = risk_gap(head_p, P, y_s, G, y_s), risk_gap(head_g, P, y_s, G, y_s)

    def objective(head: Any, X: np.ndarray) -> float:
        return float(ce_risk(head, X, y_s)) + 0.5 * cfg.l2 * float(np.sum(np.asarray(head.W) ** 2))

    min_gap = abs(objective(head_p, P) - objective(head_g, G))
    min_gap_naive = abs(objective(head_p, P) - objective(head_n, G_naive))
    min_bound = max(gap_p.lipschitz, gap_g.lipschitz) * gap_p.w1
    u = means[0] - means[1]
    u = u / np.linalg.norm(u)
    return {
        "nu": nu,
        "k": k,
        "average_degree": model.average_degree(nu),
        "w1_sliced": w1,
        "w1_sliced_naive": w1_naive,
        "w1_floor": floor,
        "w1_floor_naive": floor_naive,
        "cov_error": covariance_error(Z, y, fitted, k),
        "collapse_ratio": empirical_collapse_ratio(U, y, model.n_classes),
        "risk_emb": float(ce_risk(head_p, P, y_s)),
        "risk_gmm": float(ce_risk(head_g, G, y_s)),
        "gap_emb_head": gap_p.gap,
        "bound_emb_head": gap_p.bound,
        "gap_gmm_head": gap_g.gap,
        "bound_gmm_head": gap_g.bound,
        "min_objective_gap": min_gap,
        "min_objective_bound": min_bound,
        "min_objective_gap_naive": min_gap_naive,
        "w1_matching": gap_p.w1,
        "projection": U @ u,
        "labels": y,
        "projection_means": means @ u,
        "projection_vars": np.einsum("i,cij,j->c", u, covs / nu, u),
    }


def clt_grid(model: CSBM, key: Array, cfg: GridConfig, *, ks: Sequence[int] | None = None) -> list[dict[str, Any]]:
    r"""Run the grid: for each :math:`\nu` one CSBM draw, then :math:`A^k X` for every :math:`k` by repeated
    sparse products, and per :math:`(\nu, k)` the metrics of :func:`_cell`.

    Returns:
        One dict per :math:`(\nu, k)` with ``w1_sliced``, ``w1_sliced_naive``, ``w1_floor`` and
        ``w1_floor_naive`` (the same two distances for a sample of the limit mixture itself: the readout's floor),
        ``cov_error``, ``collapse_ratio``, the cross-entropy risks, gaps and bounds, ``min_objective_gap_naive``
        (heads on the naive Gaussian instead of the limit), and the projection on the class-mean direction.
    """
    if not isinstance(model, CSBM):
        raise TypeError(f"model must be a CSBM, got {type(model).__name__}")
    depths = sorted(ks if ks is not None else cfg.ks)
    rows = []
    for i, nu in enumerate(progress(cfg.nus, desc="nu")):
        k_graph, k_cells = jax.random.split(jax.random.fold_in(key, i))
        sample = sample_csbm(model, k_graph, n=cfg.n, nu=float(nu))
        y = np.asarray(sample.y)
        fitted = model.conditioned_on(y, np.asarray(sample.X)) if cfg.centering == "plug-in" else model
        H = sample.X
        for k in range(1, max(depths) + 1):
            H = sample.A @ H
            if k in depths:
                rows.append(_cell(model, fitted, H, y, float(nu), k, cfg, jax.random.fold_in(k_cells, k)))
                log.debug("nu=%s k=%d w1=%.4f", nu, k, rows[-1]["w1_sliced"])
    return rows
