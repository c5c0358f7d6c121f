"""nips25-fedrw: FedRW, privacy-preserving soft deduplication by sample reweighting in federated LM training.

Ye, Luo, Dong, Yang, "FedRW: Efficient Privacy-Preserving Data Reweighting for Enhancing Federated Learning of
Language Models", NeurIPS 2025, arXiv:2511.07505.
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from nips25_fedrw.corpus import (
    CORPORA,
    load_corpus,
    overlapping_clients,
    plant_duplicates,
    plant_hot_duplicates,
    split_clients,
)
from nips25_fedrw.count_encoding import answerer_items, capped_counts, querier_items
from nips25_fedrw.dedup import DedupResult, ep_mpd_hard_dedup, trusted_party_dedup
from nips25_fedrw.ep_mpd import EG_PSI_TYPES, ep_mpd_dedup, tree_levels
from nips25_fedrw.intersection import OpenMinedPSI, PlainOracle, PSIBackend, PSIRun
from nips25_fedrw.leakage import ItemInference, client_inferences
from nips25_fedrw.ppmpr import (
    ClientView,
    PPMPRResult,
    contribution_vectors,
    plaintext_frequencies,
    ppmpr,
    ppmpr_in_process,
)
from nips25_fedrw.samples import Client, canonicalize
from nips25_fedrw.schedule import round_robin_schedule
from nips25_fedrw.secure_sum import run_party, secure_sum
from nips25_fedrw.simulate import SimulationResult, simulate
from nips25_fedrw.weights import WEIGHT_KINDS, sample_weights

if TYPE_CHECKING:
    from nips25_fedrw.fedavg import CausalLM, FedAvgConfig, fedavg_train, perplexity
    from nips25_fedrw.gpt2 import GPT2LM, load_gpt2
    from nips25_fedrw.loss import weighted_lm_loss
    from nips25_fedrw.model import LMConfig, TinyCausalLM, encode_samples

# The torch-based names load on first use, so that the protocol's client processes start without importing torch.
_LAZY = {
    "CausalLM": "fedavg",
    "GPT2LM": "gpt2",
    "load_gpt2": "gpt2",
    "FedAvgConfig": "fedavg",
    "fedavg_train": "fedavg",
    "perplexity": "fedavg",
    "weighted_lm_loss": "loss",
    "LMConfig": "model",
    "TinyCausalLM": "model",
    "encode_samples": "model",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"nips25_fedrw.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'nips25_fedrw' has no attribute {name!r}")


try:
    __version__ = version("nips25-fedrw")
except PackageNotFoundError:  # pragma: no cover - source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "CORPORA",
    "EG_PSI_TYPES",
    "GPT2LM",
    "WEIGHT_KINDS",
    "CausalLM",
    "Client",
    "ClientView",
    "DedupResult",
    "FedAvgConfig",
    "ItemInference",
    "LMConfig",
    "OpenMinedPSI",
    "PPMPRResult",
    "PSIBackend",
    "PSIRun",
    "PlainOracle",
    "SimulationResult",
    "TinyCausalLM",
    "__version__",
    "answerer_items",
    "canonicalize",
    "capped_counts",
    "client_inferences",
    "contribution_vectors",
    "encode_samples",
    "ep_mpd_dedup",
    "ep_mpd_hard_dedup",
    "fedavg_train",
    "load_corpus",
    "load_gpt2",
    "overlapping_clients",
    "perplexity",
    "plaintext_frequencies",
    "plant_duplicates",
    "plant_hot_duplicates",
    "ppmpr",
    "ppmpr_in_process",
    "querier_items",
    "round_robin_schedule",
    "run_party",
    "sample_weights",
    "secure_sum",
    "simulate",
    "split_clients",
    "tree_levels",
    "trusted_party_dedup",
    "weighted_lm_loss",
]
