"""nips25-shared: seeds, logging, dataset caching and claim reports for the nips25 packages.

Thin on purpose: numpy, platformdirs, filelock and tqdm are its only dependencies; torch and jax are
imported lazily, and only when installed.
"""

from importlib.metadata import PackageNotFoundError, version

from nips25_shared.cache import CacheError, FetchError, cache_dir, cached, fetch
from nips25_shared.cli import add_common_arguments, positive_int, run_reproduce, seed_int
from nips25_shared.logs import configure_logging, get_logger, is_quiet, progress
from nips25_shared.reports import Claim, Report, environment, load_report, summarize, write_report
from nips25_shared.seeds import jax_key, seed_everything

try:
    __version__ = version("nips25-shared")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "CacheError",
    "Claim",
    "FetchError",
    "Report",
    "__version__",
    "add_common_arguments",
    "cache_dir",
    "cached",
    "configure_logging",
    "environment",
    "fetch",
    "get_logger",
    "is_quiet",
    "jax_key",
    "load_report",
    "positive_int",
    "progress",
    "run_reproduce",
    "seed_everything",
    "seed_int",
    "summarize",
    "write_report",
]
