"""nips25-bfgs: BFGS with weak-Wolfe log-bisection and affine-invariant diagnostics (Jin & Mokhtari, NeurIPS 2025)."""

from importlib.metadata import PackageNotFoundError, version

from nips25_bfgs.initial_hessian import InitialHessian, initial_hessian
from nips25_bfgs.linesearch import LineSearchResult, WeakWolfe, weak_wolfe, weak_wolfe_log_bisection
from nips25_bfgs.minimiser import BFGS, BFGSMinimiserState
from nips25_bfgs.newton import NewtonResult, newton_solve
from nips25_bfgs.objectives import (
    affine_pullback,
    hard_cubic,
    logistic_l2,
    logsumexp_reg,
    random_affine_map,
    softmax_l2,
)
from nips25_bfgs.potential import psi, psi_weighted, weighted_matrix
from nips25_bfgs.problems import PROBLEMS, Problem, load_problem
from nips25_bfgs.solver import (
    CONVERGED,
    F_STAR_TOO_HIGH,
    LINE_SEARCH_FAILED,
    MAX_ITER,
    NON_FINITE,
    STATUS_MESSAGES,
    BFGSResult,
    History,
    bfgs,
)
from nips25_bfgs.transform import (
    ScaleByBFGSState,
    WeakWolfeLinesearchState,
    bfgs_transform,
    scale_by_bfgs,
    scale_by_weak_wolfe_linesearch,
)
from nips25_bfgs.update import bfgs_update, inverse_bfgs_update

try:
    __version__ = version("nips25-bfgs")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "BFGS",
    "CONVERGED",
    "F_STAR_TOO_HIGH",
    "LINE_SEARCH_FAILED",
    "MAX_ITER",
    "NON_FINITE",
    "PROBLEMS",
    "STATUS_MESSAGES",
    "BFGSMinimiserState",
    "BFGSResult",
    "History",
    "InitialHessian",
    "LineSearchResult",
    "NewtonResult",
    "Problem",
    "ScaleByBFGSState",
    "WeakWolfe",
    "WeakWolfeLinesearchState",
    "__version__",
    "affine_pullback",
    "bfgs",
    "bfgs_transform",
    "bfgs_update",
    "hard_cubic",
    "initial_hessian",
    "inverse_bfgs_update",
    "load_problem",
    "logistic_l2",
    "logsumexp_reg",
    "newton_solve",
    "psi",
    "psi_weighted",
    "random_affine_map",
    "scale_by_bfgs",
    "scale_by_weak_wolfe_linesearch",
    "softmax_l2",
    "weak_wolfe",
    "weak_wolfe_log_bisection",
    "weighted_matrix",
]
