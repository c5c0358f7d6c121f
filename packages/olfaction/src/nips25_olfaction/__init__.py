"""nips25-olfaction: lateral inhibition (LI) and spike-frequency adaptation (SFA) in a spiking model of the fly
olfactory circuit, after Li, Yu, Yu & Zang, "Seemingly Redundant Modules Enhance Robust Odor Learning in Fruit
Flies", NeurIPS 2025 (arXiv:2510.21315).
"""

from importlib.metadata import PackageNotFoundError, version

from nips25_olfaction.calibration import CalibrationTargets, calibrate, calibrate_matched, sfa_gain_for_ratio
from nips25_olfaction.circuit import Circuit, random_claws, simulate
from nips25_olfaction.flyhash import kwta_hash
from nips25_olfaction.lif import lif_rate, lif_v_inf
from nips25_olfaction.noise import OUNoise, WhiteNoise
from nips25_olfaction.odors import hard_subset, load_hallem, olsen_pn, read_hallem_csv, synthetic_odors
from nips25_olfaction.params import CONDITIONS, CircuitParams
from nips25_olfaction.readout import Readout, ReadoutClassifier, accuracy, fit_readout
from nips25_olfaction.reproduce import reproduce
from nips25_olfaction.sparseness import active_fraction, overlap, sparseness
from nips25_olfaction.sweep import SweepResult, simulate_noise_levels, sweep

try:
    __version__ = version("nips25-olfaction")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0.0.0"

__all__ = [
    "CONDITIONS",
    "CalibrationTargets",
    "Circuit",
    "CircuitParams",
    "OUNoise",
    "Readout",
    "ReadoutClassifier",
    "SweepResult",
    "WhiteNoise",
    "__version__",
    "accuracy",
    "active_fraction",
    "calibrate",
    "calibrate_matched",
    "fit_readout",
    "hard_subset",
    "kwta_hash",
    "lif_rate",
    "lif_v_inf",
    "load_hallem",
    "olsen_pn",
    "overlap",
    "random_claws",
    "read_hallem_csv",
    "reproduce",
    "sfa_gain_for_ratio",
    "simulate",
    "simulate_noise_levels",
    "sparseness",
    "sweep",
    "synthetic_odors",
]
