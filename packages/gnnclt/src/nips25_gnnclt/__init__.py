"""nips25-gnnclt: a CLT for polynomial GNN embeddings on contextual SBMs (Vinas & Amini, NeurIPS 2025), in JAX.

Sample a CSBM in O(n nu) memory, compute poly-GNN embeddings by Horner's rule on a sparse adjacency, compute the
theorem's limiting Gaussian mixture, and measure how close they are (exact 1-D and sliced W1), how the class means
collapse with depth, and how cross-entropy training on embeddings compares with training on the mixture.
"""

from importlib.metadata import PackageNotFoundError, version

from nips25_gnnclt.connectome import class_mean_check, load_drosophila_left, symmetrize_binarize
from nips25_gnnclt.cross_entropy import (
    CEHead,
    RiskGap,
    ce_lipschitz,
    ce_risk,
    risk_gap,
    sample_mixture,
    train_ce_head,
)
from nips25_gnnclt.csbm import CSBM, fit_csbm
from nips25_gnnclt.experiment import GridConfig, clt_grid, default_model
from nips25_gnnclt.graph_files import read_labelled_graph
from nips25_gnnclt.limits import (
    class_moments,
    covariance_error,
    limit_covs,
    limit_means,
    naive_covs,
    scaled_centered,
    uncentered_covs,
)
from nips25_gnnclt.oversmoothing import (
    collapse_ratio,
    eigenvalue_ratio,
    empirical_collapse_ratio,
    singular_value_ratio,
)
from nips25_gnnclt.polynomial import graph_power, poly_features
from nips25_gnnclt.sampling import CSBMSample, sample_csbm
from nips25_gnnclt.sweep import METRICS, clt_metrics, clt_sweep
from nips25_gnnclt.wasserstein import sliced_w1, sliced_w1_to_mixture, w1_1d, w1_1d_to_mixture, w1_matching

try:
    __version__ = version("nips25-gnnclt")
except PackageNotFoundError:  # pragma: no cover - source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "CSBM",
    "METRICS",
    "CEHead",
    "CSBMSample",
    "GridConfig",
    "RiskGap",
    "__version__",
    "ce_lipschitz",
    "ce_risk",
    "class_mean_check",
    "class_moments",
    "clt_grid",
    "clt_metrics",
    "clt_sweep",
    "collapse_ratio",
    "covariance_error",
    "default_model",
    "eigenvalue_ratio",
    "empirical_collapse_ratio",
    "fit_csbm",
    "graph_power",
    "limit_covs",
    "limit_means",
    "load_drosophila_left",
    "naive_covs",
    "poly_features",
    "read_labelled_graph",
    "risk_gap",
    "sample_csbm",
    "sample_mixture",
    "scaled_centered",
    "singular_value_ratio",
    "sliced_w1",
    "sliced_w1_to_mixture",
    "symmetrize_binarize",
    "train_ce_head",
    "uncentered_covs",
    "w1_1d",
    "w1_1d_to_mixture",
    "w1_matching",
]
