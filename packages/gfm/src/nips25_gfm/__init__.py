"""nips25-gfm: graph foundation models from node, label and feature symmetries (TS-GNN on DGL).

Reference implementation of Finkelshtein, Ceylan, Bronstein, Levie, "Equivariance Everywhere All At Once: A Recipe
for Graph Foundation Models" (NeurIPS 2025): one parameter set classifies the nodes of an unseen graph with any
number of features and classes, zero-shot, given its labelled nodes.
"""

from importlib.metadata import PackageNotFoundError, version

from nips25_gfm.baselines import LinearGNNEnsemble, PerGraphGNN, linear_gnn_channels, majority_accuracy
from nips25_gfm.datasets import (
    DATASETS,
    GRAPH_LAYOUTS,
    PAPER_GRAPHS,
    convert_graph_file,
    load_dataset,
    load_graph_dir,
    load_graph_file,
    save_graph_file,
)
from nips25_gfm.graphs import (
    GraphTask,
    from_adjacency,
    from_networkx,
    from_tabular_knn,
    import_dgl,
    normalized_adjacency,
    preprocess_features,
    select_split,
    stratified_split,
)
from nips25_gfm.inference import class_ids, zero_shot
from nips25_gfm.layers import MeanConv, SetGATConv, TSLayer
from nips25_gfm.least_squares import Conversions, LinearMap, ridge_lstsq, ridge_lstsq_cv, xy_conversions
from nips25_gfm.model import TSGNN, TSGNNConfig
from nips25_gfm.planetoid import load_planetoid
from nips25_gfm.training import (
    FitConfig,
    PreparedGraph,
    accuracy,
    fit,
    predict,
    prepare,
    sample_fed_labels,
    zero_shot_accuracy,
)

try:
    __version__ = version("nips25-gfm")
except PackageNotFoundError:  # pragma: no cover - source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "DATASETS",
    "GRAPH_LAYOUTS",
    "PAPER_GRAPHS",
    "TSGNN",
    "Conversions",
    "FitConfig",
    "GraphTask",
    "LinearGNNEnsemble",
    "LinearMap",
    "MeanConv",
    "PerGraphGNN",
    "PreparedGraph",
    "SetGATConv",
    "TSGNNConfig",
    "TSLayer",
    "__version__",
    "accuracy",
    "class_ids",
    "convert_graph_file",
    "fit",
    "from_adjacency",
    "from_networkx",
    "from_tabular_knn",
    "import_dgl",
    "linear_gnn_channels",
    "load_dataset",
    "load_graph_dir",
    "load_graph_file",
    "load_planetoid",
    "majority_accuracy",
    "normalized_adjacency",
    "predict",
    "prepare",
    "preprocess_features",
    "ridge_lstsq",
    "ridge_lstsq_cv",
    "sample_fed_labels",
    "save_graph_file",
    "select_split",
    "stratified_split",
    "xy_conversions",
    "zero_shot",
    "zero_shot_accuracy",
]
