"""nips25-market: Smooth Quadratic Prediction Markets (Nueve & Waggoner, NeurIPS 2025) in JAX.

Cost-function market makers (LMSR, quadratic, and the paper's Smooth Quadratic Prediction Market), myopic traders
with budgets and buy-only securities, simulation of trade sequences and market-maker losses, adaptive liquidity,
and poll-driven traders for the 2016 US presidential election.

Importing the package does not change JAX's global configuration. The markets are meant to run in float64: turn
it on for the program (``jax.config.update("jax_enable_x64", True)``) or for a block (``with float64(): ...``);
a market built with float64 off warns once (:mod:`nips25_market.precision`).

Modules are layered: ``_checks``, ``precision``, ``trace`` < ``cost_functions`` < ``smooth_quadratic`` <
``traders`` < ``simulation`` < ``liquidity``, ``polls`` < ``reproduce``, ``cli``; none imports one above it.
"""

from importlib.metadata import PackageNotFoundError, version

from nips25_market.cost_functions import DCFMM, LMSR, CostFunctionMarket, QuadraticDCFMM, project_simplex
from nips25_market.liquidity import VolumeLiquidity, b_for_loss_budget, simulate_adaptive
from nips25_market.polls import PollMarkets, load_polls_2016, poll_beliefs, synthetic_polls
from nips25_market.precision import float64
from nips25_market.simulation import (
    Trace,
    realized_loss,
    replay,
    replay_batch,
    simulate,
    simulate_batch,
    worst_outcome_loss,
)
from nips25_market.smooth_quadratic import SmoothQuadratic
from nips25_market.traders import MyopicTrader, worst_case_spend

try:
    __version__ = version("nips25-market")
except PackageNotFoundError:  # pragma: no cover - source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "DCFMM",
    "LMSR",
    "CostFunctionMarket",
    "MyopicTrader",
    "PollMarkets",
    "QuadraticDCFMM",
    "SmoothQuadratic",
    "Trace",
    "VolumeLiquidity",
    "__version__",
    "b_for_loss_budget",
    "float64",
    "load_polls_2016",
    "poll_beliefs",
    "project_simplex",
    "realized_loss",
    "replay",
    "replay_batch",
    "simulate",
    "simulate_adaptive",
    "simulate_batch",
    "synthetic_polls",
    "worst_case_spend",
    "worst_outcome_loss",
]
