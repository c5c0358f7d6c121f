"""nips25-treegen: TreeGen, discrete Bayesian flow networks over binary hierarchies, with Ginkgo jet clustering.

Reference implementation of Kollovieh et al., "TreeGen: A Bayesian Generative Model for Hierarchies", NeurIPS 2025,
with the Ginkgo parton-shower simulator, the exact cluster trellis and the clustering baselines.
"""

from importlib.metadata import PackageNotFoundError, version

from nips25_treegen.baselines import beam, greedy, kt_cluster, stochastic_greedy, uniform_valid
from nips25_treegen.decoding import DECODERS, EXACT_MAX_LEAVES, decode_rows, decode_trees, table_log_prob
from nips25_treegen.flow import (
    DiscreteBayesianFlow,
    EntropySchedule,
    bayesian_update,
    entropy_ratio,
    flow_sample,
    sender_sample,
)
from nips25_treegen.ginkgo import (
    GinkgoConfig,
    Jet,
    child_log_density,
    invariant_mass2,
    simulate,
    split_log_lik,
    tree_log_lik,
)
from nips25_treegen.hierarchy import (
    children_of,
    clusters,
    decode,
    encode,
    is_binary_tree,
    leaf_masks,
    parents_from_masks,
    to_linkage,
)
from nips25_treegen.labelling import canonical_parents, canonical_rows, subset_mass2
from nips25_treegen.model import TrainConfig, TreeGen, TreeGenConfig, jet_features, row_layout, train
from nips25_treegen.trellis import (
    MAX_EXACT_LEAVES,
    Trellis,
    brute_force,
    enumerate_trees,
    n_split_evaluations,
    n_trees,
    total_variation,
)

try:
    __version__ = version("nips25-treegen")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "DECODERS",
    "EXACT_MAX_LEAVES",
    "MAX_EXACT_LEAVES",
    "DiscreteBayesianFlow",
    "EntropySchedule",
    "GinkgoConfig",
    "Jet",
    "TrainConfig",
    "TreeGen",
    "TreeGenConfig",
    "Trellis",
    "__version__",
    "bayesian_update",
    "beam",
    "brute_force",
    "canonical_parents",
    "canonical_rows",
    "child_log_density",
    "children_of",
    "clusters",
    "decode",
    "decode_rows",
    "decode_trees",
    "encode",
    "entropy_ratio",
    "enumerate_trees",
    "flow_sample",
    "greedy",
    "invariant_mass2",
    "is_binary_tree",
    "jet_features",
    "kt_cluster",
    "leaf_masks",
    "n_split_evaluations",
    "n_trees",
    "parents_from_masks",
    "row_layout",
    "sender_sample",
    "simulate",
    "split_log_lik",
    "stochastic_greedy",
    "subset_mass2",
    "table_log_prob",
    "to_linkage",
    "total_variation",
    "train",
    "tree_log_lik",
    "uniform_valid",
]
