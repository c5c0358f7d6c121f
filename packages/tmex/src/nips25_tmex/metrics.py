"""Baseline representation metrics the paper compares T-MEX with: MCC and R² (Yao et al. 2025, Sec. 5)."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy import stats
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import r2_score
from sklearn.model_selection import KFold, cross_val_predict

from nips25_tmex.regression import is_linear, make_regressor
from nips25_tmex.validation import as_matrix, check_same_rows

__all__ = ["correlation_matrix", "mcc", "mean_r2"]


def correlation_matrix(
    latents: Any, representation: Any, *, method: Literal["pearson", "spearman"] = "pearson"
) -> NDArray[np.float64]:
    """Absolute correlations ``(k, d)`` between each latent and each representation column.

    Raises:
        ValueError: malformed input, mismatched ``n``, unknown ``method``, or a constant column.
    """
    if method not in ("pearson", "spearman"):
        raise ValueError(f"method must be 'pearson' or 'spearman', got {method!r}")
    z = as_matrix(latents, "latents", min_rows=3)
    h = as_matrix(representation, "representation", min_rows=3)
    check_same_rows(latents=z, representation=h)
    if method == "spearman":
        z = np.apply_along_axis(stats.rankdata, 0, z)
        h = np.apply_along_axis(stats.rankdata, 0, h)
    for name, a in (("latents", z), ("representation", h)):
        if np.any(a.std(axis=0) == 0):
            raise ValueError(f"{name} has a constant column; its correlation is undefined")
    zc = (z - z.mean(0)) / z.std(0)
    hc = (h - h.mean(0)) / h.std(0)
    return np.asarray(np.abs(zc.T @ hc) / z.shape[0], dtype=np.float64)


def mcc(latents: Any, representation: Any, *, method: Literal["pearson", "spearman"] = "pearson") -> float:
    r"""Mean correlation coefficient: mean :math:`|\rho|` over the best one-to-one matching of latents and columns.

    .. math:: \mathrm{MCC} = \max_{\pi} \frac{1}{k} \sum_{j \in \mathrm{dom}\,\pi} |\rho(Z_j, \hat Z_{\pi(j)})|

    solved with the Hungarian algorithm (``scipy.optimize.linear_sum_assignment``). The mean is over the ``k``
    latents: with fewer columns than latents (``d < k``) the unmatched latents count 0, so a representation that
    misses a latent cannot score 1 (dividing by ``min(k, d)`` would give ``z[:, :2]`` a perfect score for a
    3-latent ``z``). Extra columns (``d > k``) are not penalised.

    Args:
        latents: ``(n, k)`` true latents.
        representation: ``(n, d)`` learned features.
        method: ``"pearson"`` or ``"spearman"`` correlation.

    Returns:
        MCC in ``[0, 1]``.

    Raises:
        ValueError: malformed input, mismatched ``n``, unknown ``method``, a constant column.

    References:
        Hyvärinen & Morioka 2016 (MCC); Yao et al., NeurIPS 2025, Sec. 5 (baseline).

    Example:
        >>> import numpy as np
        >>> z = np.random.default_rng(0).normal(size=(100, 3))
        >>> round(mcc(z, -z[:, ::-1]), 6)
        1.0
        >>> round(mcc(z, z[:, :2]), 6)  # misses a latent: 2 of 3 matched
        0.666667
    """
    c = correlation_matrix(latents, representation, method=method)
    rows, cols = linear_sum_assignment(-c)
    return float(c[rows, cols].sum() / c.shape[0])


def mean_r2(latents: Any, representation: Any, *, regressor: Any = "lm", cv: int = 5, random_state: int = 0) -> float:
    r"""Mean over latents of the out-of-fold :math:`R^2` of predicting :math:`Z_j` from the representation.

    .. math::
        \overline{R^2} = \frac1k \sum_j \Big(1 - \frac{\sum_i (Z_{ij} - \hat Z_{ij})^2}
        {\sum_i (Z_{ij} - \bar Z_j)^2}\Big)

    with :math:`\hat Z_{ij}` a ``cv``-fold cross-validated prediction of the regression of :math:`Z_j` on all
    features.

    Args:
        latents: ``(n, k)`` true latents.
        representation: ``(n, d)`` learned features.
        regressor: ``"lm"`` (default), ``"krr"``, ``"rf"`` or a scikit-learn regressor.
        cv: number of folds, ``>= 2``.
        random_state: seed of the fold shuffle.

    Returns:
        Mean :math:`R^2` (at most 1; may be negative for a useless representation).

    Raises:
        ValueError: malformed input, mismatched ``n``, ``cv`` out of range.

    References:
        Yao et al., NeurIPS 2025, Sec. 5 (R² baseline).

    Example:
        >>> import numpy as np
        >>> z = np.random.default_rng(0).normal(size=(200, 2))
        >>> round(mean_r2(z, z @ np.array([[1.0, 2.0], [3.0, 4.0]])), 6)
        1.0
    """
    z = as_matrix(latents, "latents", min_rows=3)
    h = as_matrix(representation, "representation", min_rows=3)
    check_same_rows(latents=z, representation=h)
    if isinstance(cv, bool) or not isinstance(cv, (int, np.integer)) or not 2 <= cv <= z.shape[0]:
        raise ValueError(f"cv must be an integer in [2, n], got {cv!r}")
    folds = KFold(n_splits=int(cv), shuffle=True, random_state=random_state)
    if is_linear(regressor):
        pred_all = cross_val_predict(make_regressor(regressor), h, z, cv=folds).reshape(z.shape)
        return float(np.mean([r2_score(z[:, j], pred_all[:, j]) for j in range(z.shape[1])]))
    scores = []
    for j in range(z.shape[1]):
        pred = cross_val_predict(make_regressor(regressor, random_state=random_state), h, z[:, j], cv=folds)
        scores.append(r2_score(z[:, j], pred))
    return float(np.mean(scores))
