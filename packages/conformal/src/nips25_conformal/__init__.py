"""nips25-conformal: class-conditional conformal prediction for multiple inputs by p-value aggregation.

Reference implementation of Fermanian, Hebiri, Salmon, "Class conditional conformal prediction for multiple
inputs by p-value aggregation", NeurIPS 2025 (arXiv:2507.07150).
"""

from importlib.metadata import PackageNotFoundError, version

from nips25_conformal.aggregate_then_calibrate import COMBINERS, AggregateThenCalibrate
from nips25_conformal.aggregation import (
    AggregationStatistic,
    AreaEnvelopeStatistic,
    DistanceEnvelopeStatistic,
    FisherStatistic,
    NullDistribution,
    OrderStatistic,
    QuantileEnvelopeStatistic,
    SumStatistic,
    aggregate_pvalue,
    get_statistic,
    null_distribution,
)
from nips25_conformal.baselines import VIEW_RULES, combine_view_pvalues
from nips25_conformal.classifier import AGGREGATIONS, MultiInputConformalClassifier, multi_input_pvalues
from nips25_conformal.exchangeability import (
    ExchangeabilityDiagnostic,
    ExchangeabilityWarning,
    exchangeability_diagnostic,
)
from nips25_conformal.metrics import mean_set_size, per_class_coverage
from nips25_conformal.null_law import NullLaw
from nips25_conformal.pvalues import MondrianCalibration, class_conditional_pvalues

try:
    __version__ = version("nips25-conformal")
except PackageNotFoundError:  # pragma: no cover - source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "AGGREGATIONS",
    "COMBINERS",
    "VIEW_RULES",
    "AggregateThenCalibrate",
    "AggregationStatistic",
    "AreaEnvelopeStatistic",
    "DistanceEnvelopeStatistic",
    "ExchangeabilityDiagnostic",
    "ExchangeabilityWarning",
    "FisherStatistic",
    "MondrianCalibration",
    "MultiInputConformalClassifier",
    "NullDistribution",
    "NullLaw",
    "OrderStatistic",
    "QuantileEnvelopeStatistic",
    "SumStatistic",
    "__version__",
    "aggregate_pvalue",
    "class_conditional_pvalues",
    "combine_view_pvalues",
    "exchangeability_diagnostic",
    "get_statistic",
    "mean_set_size",
    "multi_input_pvalues",
    "null_distribution",
    "per_class_coverage",
]
