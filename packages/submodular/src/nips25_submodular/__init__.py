"""nips25-submodular: submodular maximisation under a persistent noisy value oracle, in JAX.

Reference implementation of Bhawalkar, Cai, Feng, Liaw & Lin, "A Unified Approach to Submodular Maximization
Under Noise", NeurIPS 2025 (arXiv:2510.21128): persistent noisy oracles, set functions, matroids, the exact
algorithms (greedy, measured continuous greedy, double greedy) and the smoothing meta-algorithm.
"""

from importlib.metadata import PackageNotFoundError, version

from nips25_submodular.continuous_greedy import measured_continuous_greedy, multilinear, pipage_rounding
from nips25_submodular.double_greedy import double_greedy
from nips25_submodular.greedy import greedy
from nips25_submodular.instances import (
    MAX_CUT_GRAPHS,
    digits_facility_location,
    exact_max_cut,
    max_cut_graph,
    read_edgelist,
)
from nips25_submodular.matroids import Free, Partition, Uniform
from nips25_submodular.meta import INNER_ALGORITHMS, PRACTICAL, VOID_GUARANTEE, MetaParams, noisy_meta, run_inner
from nips25_submodular.oracle import NOISE_FAMILIES, PersistentNoisyOracle, set_key
from nips25_submodular.selection import Selection
from nips25_submodular.selector import FacilityLocationSelection
from nips25_submodular.set_functions import (
    CallableSetFunction,
    Coverage,
    FacilityLocation,
    GraphCut,
    Modular,
    SetFunction,
    check_submodular,
)
from nips25_submodular.smoothing import (
    SmoothedSurrogate,
    TheoryParams,
    smoothing_factor,
    smoothing_subsets,
    theory_params,
)
from nips25_submodular.sweep import SWEEP_ALGORITHMS, noisy_sweep

try:
    __version__ = version("nips25-submodular")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "INNER_ALGORITHMS",
    "MAX_CUT_GRAPHS",
    "NOISE_FAMILIES",
    "PRACTICAL",
    "SWEEP_ALGORITHMS",
    "VOID_GUARANTEE",
    "CallableSetFunction",
    "Coverage",
    "FacilityLocation",
    "FacilityLocationSelection",
    "Free",
    "GraphCut",
    "MetaParams",
    "Modular",
    "Partition",
    "PersistentNoisyOracle",
    "Selection",
    "SetFunction",
    "SmoothedSurrogate",
    "TheoryParams",
    "Uniform",
    "__version__",
    "check_submodular",
    "digits_facility_location",
    "double_greedy",
    "exact_max_cut",
    "greedy",
    "max_cut_graph",
    "measured_continuous_greedy",
    "multilinear",
    "noisy_meta",
    "noisy_sweep",
    "pipage_rounding",
    "read_edgelist",
    "run_inner",
    "set_key",
    "smoothing_factor",
    "smoothing_subsets",
    "theory_params",
]
