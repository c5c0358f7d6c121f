"""nips25-tmex: T-MEX, a test-based measurement-exclusivity score for causal representations.

Reference implementation of Yao, Huang, Cadei, Zhang & Locatello, "The Third Pillar of Causal Analysis? A
Measurement Perspective on Causal Representations", NeurIPS 2025 (arXiv:2505.17708).
"""

from importlib.metadata import PackageNotFoundError, version

from nips25_tmex.ate import ATEResult, ate_ols
from nips25_tmex.gcm import CITestResult, DegenerateResidualWarning, gcm_test
from nips25_tmex.kci import kci_available, kci_test
from nips25_tmex.measurement import TMEX, TMEXResult, tmex
from nips25_tmex.metrics import mcc, mean_r2
from nips25_tmex.pcm import pcm_test
from nips25_tmex.simulation import (
    KINDS,
    FiveLatentSCM,
    MultiViewMixing,
    corrupt_with_descendants,
    location_scale_scm,
    measurements,
    random_dag,
)

try:
    __version__ = version("nips25-tmex")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "KINDS",
    "TMEX",
    "ATEResult",
    "CITestResult",
    "DegenerateResidualWarning",
    "FiveLatentSCM",
    "MultiViewMixing",
    "TMEXResult",
    "__version__",
    "ate_ols",
    "corrupt_with_descendants",
    "gcm_test",
    "kci_available",
    "kci_test",
    "location_scale_scm",
    "mcc",
    "mean_r2",
    "measurements",
    "pcm_test",
    "random_dag",
    "tmex",
]
