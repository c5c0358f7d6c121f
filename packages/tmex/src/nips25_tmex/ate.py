"""The downstream check of the paper: the ATE of a treatment on an outcome, adjusting for a learned confounder."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from nips25_tmex.validation import as_matrix, check_same_rows

__all__ = ["ATEResult", "ate_ols"]


@dataclass(frozen=True)
class ATEResult:
    """OLS estimate of an average treatment effect.

    Attributes:
        estimate: coefficient of the treatment.
        std_error: its classical (homoscedastic) standard error.
    """

    estimate: float
    std_error: float


def ate_ols(outcome: Any, treatment: Any, adjustment: Any = None) -> ATEResult:
    r"""ATE of a treatment: the OLS coefficient of ``treatment`` in ``outcome ~ 1 + treatment + adjustment``.

    With design :math:`D = [1, x, A]` and :math:`\hat\beta = (D^\top D)^{-1} D^\top y`, the estimate is
    :math:`\hat\beta_x` and its standard error :math:`\sqrt{\hat\sigma^2 [(D^\top D)^{-1}]_{xx}}` with
    :math:`\hat\sigma^2 = \lVert y - D\hat\beta\rVert^2/(n - p)`. In the paper's Sec. 5.1 the adjustment set is the
    learned confounder :math:`\hat z_0`; the estimate is unbiased when :math:`\hat z_0` is an affine measurement of
    :math:`z_0` alone (a linear SCM), and biased when it leaks descendants of the treatment.

    Args:
        outcome: ``(n,)`` outcome :math:`y`.
        treatment: ``(n,)`` treatment :math:`x`.
        adjustment: ``(n, p)`` adjustment variables, or ``None`` (unadjusted).

    Returns:
        :class:`ATEResult` with ``estimate`` and ``std_error``.

    Raises:
        ValueError: malformed input, mismatched ``n``, multi-column ``outcome``/``treatment``, too few rows
            or a rank-deficient design.

    References:
        Yao et al., NeurIPS 2025, Sec. 5.1 (``comp_ate``: OLS of y on the learned z0 and x).

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> c = rng.normal(size=2000); x = c + rng.normal(size=2000); y = 2 * x + c + rng.normal(size=2000)
        >>> abs(ate_ols(y, x, c).estimate - 2) < 0.1
        True
    """
    y = as_matrix(outcome, "outcome", min_rows=3)
    x = as_matrix(treatment, "treatment", min_rows=3)
    for name, a in (("outcome", y), ("treatment", x)):
        if a.shape[1] != 1:
            raise ValueError(f"{name} must be one variable (n,) or (n, 1), got shape {a.shape}")
    parts = [np.ones_like(x), x]
    if adjustment is not None:
        adj = as_matrix(adjustment, "adjustment", min_rows=3)
        check_same_rows(outcome=y, treatment=x, adjustment=adj)
        parts.append(adj)
    else:
        check_same_rows(outcome=y, treatment=x)
    design = np.hstack(parts)
    n, p = design.shape
    if n <= p:
        raise ValueError(f"outcome needs more rows ({n}) than regressors ({p})")
    if np.linalg.matrix_rank(design) < p:
        raise ValueError("the design [1, treatment, adjustment] is rank-deficient; the ATE is not identified")
    beta, *_ = np.linalg.lstsq(design, y[:, 0], rcond=None)
    resid = y[:, 0] - design @ beta
    sigma2 = float(resid @ resid) / (n - p)
    cov = sigma2 * np.linalg.inv(design.T @ design)
    return ATEResult(estimate=float(beta[1]), std_error=float(np.sqrt(cov[1, 1])))
