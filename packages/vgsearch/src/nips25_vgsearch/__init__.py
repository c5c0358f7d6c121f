"""nips25-vgsearch: variable-granularity verifier-guided search for test-time scaling (Chen et al., NeurIPS 2025)."""

from importlib.metadata import PackageNotFoundError, version

from nips25_vgsearch.adaptive import AdaptiveG, difficulty_proxy
from nips25_vgsearch.arith import (
    ArithChainTask,
    TinyGenerator,
    TinyPRM,
    load_or_train_pair,
    train_tiny_generator,
    train_tiny_prm,
)
from nips25_vgsearch.flops import ComputeLedger, FlopsModel
from nips25_vgsearch.generator import STOP, Generator, Step, StepRequest, path_seed, step_seed
from nips25_vgsearch.hf import HFPRM, HFGenerator, load_generator, load_prm
from nips25_vgsearch.math500 import (
    MathDataError,
    MathProblem,
    exact_match,
    read_math_jsonl,
    search_problems,
    summarize_rows,
)
from nips25_vgsearch.repair import ArithRepairTask, RepairGenerator, RepairOracle, RepairPRM, load_or_train_repair_pair
from nips25_vgsearch.search import (
    PAPER,
    GapPolicy,
    PaperPreset,
    SearchConfig,
    SearchResult,
    beam_search,
    best_of_n,
    dvts,
    vg_search,
)
from nips25_vgsearch.simulator import MATH500_LEVEL_MIX, SimGenerator, SimPRM, StepChainTask, consecutive_gap_share
from nips25_vgsearch.sweep import SweepPoint, accuracy_at, pareto_front, run_sweep
from nips25_vgsearch.verifier import Verifier, aggregate_scores
from nips25_vgsearch.voting import extract_answer, final_answer

try:
    __version__ = version("nips25-vgsearch")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "HFPRM",
    "MATH500_LEVEL_MIX",
    "PAPER",
    "STOP",
    "AdaptiveG",
    "ArithChainTask",
    "ArithRepairTask",
    "ComputeLedger",
    "FlopsModel",
    "GapPolicy",
    "Generator",
    "HFGenerator",
    "MathDataError",
    "MathProblem",
    "PaperPreset",
    "RepairGenerator",
    "RepairOracle",
    "RepairPRM",
    "SearchConfig",
    "SearchResult",
    "SimGenerator",
    "SimPRM",
    "Step",
    "StepChainTask",
    "StepRequest",
    "SweepPoint",
    "TinyGenerator",
    "TinyPRM",
    "Verifier",
    "__version__",
    "accuracy_at",
    "aggregate_scores",
    "beam_search",
    "best_of_n",
    "consecutive_gap_share",
    "difficulty_proxy",
    "dvts",
    "exact_match",
    "extract_answer",
    "final_answer",
    "load_generator",
    "load_or_train_pair",
    "load_or_train_repair_pair",
    "load_prm",
    "pareto_front",
    "path_seed",
    "read_math_jsonl",
    "run_sweep",
    "search_problems",
    "step_seed",
    "summarize_rows",
    "train_tiny_generator",
    "train_tiny_prm",
    "vg_search",
]
