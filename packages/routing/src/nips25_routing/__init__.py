"""nips25-routing: PORT, training-free online routing of a query stream across many LLMs under per-model budgets.

Reference: Fangzhou Wu and Sandeep Silwal, "Efficient Training-Free Online Routing for High-Volume Multi-LLM
Serving", NeurIPS 2025, arXiv:2509.02718.
"""

from importlib.metadata import PackageNotFoundError, version

from nips25_routing.baselines import (
    BatchSplitRouter,
    GreedyRouter,
    RandomRouter,
    batch_assignment,
    offline_lp_actions,
)
from nips25_routing.budgets import SPLITS, BudgetLedger, split_budget, total_budget
from nips25_routing.compare import DUAL_FORMS, ONLINE_BASELINES, ROUTERS, compare_routers, stream_budgets
from nips25_routing.dual import DualFit, dual_objective, fit_dual, lp_oracle
from nips25_routing.estimation import (
    BACKENDS,
    EF_SEARCH_CANDIDATES,
    NPROBE_CANDIDATES,
    ANNEstimator,
    l2_normalize,
    recall_at_k,
)
from nips25_routing.history import HistoryStore, RoutingTable, load_routerbench, prompt_text
from nips25_routing.port import PORTConfig, PORTRouter
from nips25_routing.run import run_routerbench
from nips25_routing.simulation import Router, RoutingResult, evaluate_actions, simulate
from nips25_routing.text_zoo import (
    TEXT_ZOO_MODELS,
    MiniLMEncoder,
    SentenceEncoder,
    encoder_macs,
    load_chatterbot_topics,
    text_zoo,
)
from nips25_routing.ties import argmax_random_ties
from nips25_routing.zoo import ZOO_MODELS, ZooSplit, digits_zoo

try:
    __version__ = version("nips25-routing")
except PackageNotFoundError:  # pragma: no cover - source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "BACKENDS",
    "DUAL_FORMS",
    "EF_SEARCH_CANDIDATES",
    "NPROBE_CANDIDATES",
    "ONLINE_BASELINES",
    "ROUTERS",
    "SPLITS",
    "TEXT_ZOO_MODELS",
    "ZOO_MODELS",
    "ANNEstimator",
    "BatchSplitRouter",
    "BudgetLedger",
    "DualFit",
    "GreedyRouter",
    "HistoryStore",
    "MiniLMEncoder",
    "PORTConfig",
    "PORTRouter",
    "RandomRouter",
    "Router",
    "RoutingResult",
    "RoutingTable",
    "SentenceEncoder",
    "ZooSplit",
    "__version__",
    "argmax_random_ties",
    "batch_assignment",
    "compare_routers",
    "digits_zoo",
    "dual_objective",
    "encoder_macs",
    "evaluate_actions",
    "fit_dual",
    "l2_normalize",
    "load_chatterbot_topics",
    "load_routerbench",
    "lp_oracle",
    "offline_lp_actions",
    "prompt_text",
    "recall_at_k",
    "run_routerbench",
    "simulate",
    "split_budget",
    "stream_budgets",
    "text_zoo",
    "total_budget",
]
