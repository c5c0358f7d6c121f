"""The generalised covariance measure (GCM) test of conditional independence (Shah & Peters 2020).

T-MEX (Yao et al. 2025, Sec. 4) tests every pair ``(block, latent)`` with the GCM: the default of the paper's code.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy import special, stats

from nips25_tmex.regression import residuals
from nips25_tmex.validation import as_yxz

__all__ = ["CITestResult", "DegenerateResidualWarning", "gcm_from_residuals", "gcm_test", "gcm_univariate_columns"]

TestType = Literal["max", "quadratic"]
TEST_TYPES = ("max", "quadratic")


class DegenerateResidualWarning(UserWarning):
    """A residual is (numerically) zero, e.g. the response is a function of the conditioning set; p is set to 1."""


@dataclass(frozen=True)
class CITestResult:
    """Result of a conditional-independence test of ``H0: Y ⟂ X | Z``.

    Attributes:
        pvalue: p-value in ``[0, 1]``; 1 when every residual product is degenerate.
        statistic: the test statistic (signed ``T`` for a univariate GCM/PCM; ``T >= 0`` otherwise).
        df: degrees of freedom (number of residual products used; 1 for univariate tests).
        test: name of the test that produced it.
    """

    pvalue: float
    statistic: float
    df: int
    test: str


def _check_test_type(test_type: Any) -> None:
    if test_type not in TEST_TYPES:
        raise ValueError(f"test_type must be one of {TEST_TYPES}, got {test_type!r}")


def _check_b(B: Any) -> None:
    if isinstance(B, bool) or not isinstance(B, (int, np.integer)) or B < 1:
        raise ValueError(f"B must be a positive integer (bootstrap draws), got {B!r}")


def gcm_from_residuals(
    r_x: NDArray[np.float64],
    r_y: NDArray[np.float64],
    *,
    test_type: TestType = "max",
    B: int = 499,
    rng: np.random.Generator | None = None,
    keep_x: NDArray[np.bool_] | None = None,
    keep_y: NDArray[np.bool_] | None = None,
) -> CITestResult:
    r"""GCM test from residuals ``r_x = X - E[X|Z]`` and ``r_y = Y - E[Y|Z]`` (Shah & Peters 2020, Sec. 3 & 4).

    With products :math:`R_{il} = r_{X,ia} r_{Y,ib}` for :math:`l = (a, b)`, :math:`L = d_X d_Y`:

    * :math:`L = 1`: :math:`T = \sqrt{n}\,\bar R / \sqrt{\overline{R^2} - \bar R^2}`, :math:`p = 2\Phi(-|T|)`.
    * ``"quadratic"``: :math:`T = n\,\bar R^\top \hat\Sigma^{-1} \bar R`, :math:`p = 1 - F_{\chi^2_L}(T)`.
    * ``"max"``: :math:`T = \max_l \sqrt{n}|\bar R_l| / \hat\sigma_l`; :math:`p = (1 + \#\{b: T^*_b \ge T\})/(B+1)`
      with the Gaussian multiplier bootstrap
      :math:`T^*_b = \max_l |\sum_i e_{ib} (R_{il} - \bar R_l)/\hat\sigma_l| / \sqrt{n}`, :math:`e_{ib} \sim N(0,1)`.

    Args:
        r_x: ``(n, d_X)`` residuals of ``X`` on ``Z``.
        r_y: ``(n, d_Y)`` residuals of ``Y`` on ``Z``.
        test_type: ``"max"`` (the paper's choice, normalised as in Shah & Peters) or ``"quadratic"``.
        B: bootstrap draws of the ``"max"`` test.
        rng: generator of the bootstrap multipliers (``default_rng(0)`` when ``None``).
        keep_x, keep_y: boolean masks of non-degenerate residual columns; products of dropped columns are
            left out. Every product dropped gives ``p = 1`` with a :class:`DegenerateResidualWarning`.

    Returns:
        :class:`CITestResult`.
    """
    _check_test_type(test_type)
    _check_b(B)
    n = r_x.shape[0]
    kx = np.ones(r_x.shape[1], bool) if keep_x is None else keep_x
    ky = np.ones(r_y.shape[1], bool) if keep_y is None else keep_y
    R = (r_x[:, kx, None] * r_y[:, None, ky]).reshape(n, -1)
    sd = R.std(axis=0)
    scale = np.sqrt(np.mean(r_x[:, kx] ** 2)) * np.sqrt(np.mean(r_y[:, ky] ** 2)) if R.size else 0.0
    R = R[:, sd > 1e-12 * max(scale, np.finfo(float).tiny)] if R.size else R
    L = R.shape[1]
    if L == 0:
        warnings.warn(
            "every residual product is degenerate (a residual is numerically zero); p-value set to 1",
            DegenerateResidualWarning,
            stacklevel=2,
        )
        return CITestResult(pvalue=1.0, statistic=0.0, df=0, test="gcm")
    mean = R.mean(axis=0)
    sd = R.std(axis=0)
    if L == 1:
        t = float(np.sqrt(n) * mean[0] / sd[0])
        return CITestResult(pvalue=float(2.0 * special.ndtr(-abs(t))), statistic=t, df=1, test="gcm")
    if test_type == "quadratic":
        cov = np.cov(R, rowvar=False, bias=True)
        rank = int(np.linalg.matrix_rank(cov))
        t = float(n * mean @ np.linalg.pinv(cov) @ mean)
        return CITestResult(pvalue=float(stats.chi2.sf(t, rank)), statistic=t, df=rank, test="gcm-quadratic")
    gen = rng if rng is not None else np.random.default_rng(0)
    t = float(np.sqrt(n) * np.max(np.abs(mean) / sd))
    normalised = (R - mean) / sd
    boot = np.max(np.abs(gen.standard_normal((B, n)) @ normalised), axis=1) / np.sqrt(n)
    p = (1.0 + float(np.sum(boot >= t))) / (B + 1.0)
    return CITestResult(pvalue=p, statistic=t, df=L, test="gcm-max")


def gcm_univariate_columns(
    r_x: NDArray[np.float64], r_y: NDArray[np.float64], *, keep_x: bool, keep_y: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    r"""Univariate GCM of one residual ``r_x`` against every column of ``r_y`` at once (Shah & Peters 2020, Sec. 3).

    Column :math:`b` gives what :func:`gcm_from_residuals` gives for ``(r_x, r_y[:, [b]])``:
    :math:`T_b = \sqrt{n}\,\bar R_b / \operatorname{sd}(R_b)` with :math:`R_{ib} = r_{X,i} r_{Y,ib}` and
    :math:`p_b = 2\Phi(-|T_b|)`; a dropped or degenerate product gives ``p = 1, T = 0``. One vectorised pass
    instead of one call per column (T-MEX with 1-D blocks runs ``m`` tests per latent on the same ``r_x``).

    Args:
        r_x: ``(n, 1)`` residuals of ``X`` on ``Z``.
        r_y: ``(n, m)`` residuals of ``m`` one-dimensional responses on ``Z``.
        keep_x: whether ``r_x`` is non-degenerate (see :func:`degenerate_columns`).
        keep_y: ``(m,)`` mask of non-degenerate columns of ``r_y``.

    Returns:
        ``(pvalues, statistics, n_degenerate)``: two ``(m,)`` float64 arrays and the number of columns set to
        ``p = 1`` (the caller warns once with :class:`DegenerateResidualWarning`).
    """
    n, m = r_y.shape
    R = r_x[:, :1] * r_y
    sd = R.std(axis=0)
    scale = np.sqrt(np.mean(r_x[:, 0] ** 2)) * np.sqrt(np.mean(r_y**2, axis=0))
    ok = keep_y & bool(keep_x) & (sd > 1e-12 * np.maximum(scale, np.finfo(float).tiny))
    t = np.zeros(m)
    t[ok] = np.sqrt(n) * R[:, ok].mean(axis=0) / sd[ok]
    p = np.where(ok, 2.0 * special.ndtr(-np.abs(t)), 1.0)
    return p, t, int(m - ok.sum())


def degenerate_columns(resid: NDArray[np.float64], target: NDArray[np.float64], tol: float) -> NDArray[np.bool_]:
    """Mask of residual columns to keep: residual variance above ``tol`` times the target's variance."""
    var_t = target.var(axis=0)
    return (resid.var(axis=0) > tol * var_t) & (var_t > 0)


def gcm_test(
    Y: Any,
    X: Any,
    Z: Any = None,
    *,
    regressor: Any = "lm",
    test_type: TestType = "max",
    B: int = 499,
    degenerate_tol: float = 1e-10,
    random_state: int | None = 0,
) -> CITestResult:
    r"""Generalised covariance measure test of :math:`H_0: Y \perp X \mid Z` (Shah & Peters 2020).

    Regress ``Y`` on ``Z`` and ``X`` on ``Z`` (in-sample residuals, as pycomets and the paper's code), then test
    that the residual products have mean zero; see :func:`gcm_from_residuals` for the statistics.

    Args:
        Y: ``(n,)`` or ``(n, d_Y)`` response (in T-MEX: a learned block :math:`\hat Z_i`).
        X: ``(n,)`` or ``(n, d_X)`` (in T-MEX: one latent :math:`Z_j`).
        Z: ``(n, d_Z)`` conditioning set (in T-MEX: :math:`Z_{-j}`), or ``None`` for a marginal test.
        regressor: ``"lm"``, ``"krr"``, ``"rf"`` or any scikit-learn regressor (used for both regressions).
        test_type: ``"max"`` (default, the paper's calls) or ``"quadratic"``; 1-D ``X`` and ``Y`` always use the
            univariate test.
        B: multiplier-bootstrap draws of the ``"max"`` test (paper: 499).
        degenerate_tol: a residual column whose variance is at most ``degenerate_tol`` times its variable's
            variance is treated as zero (e.g. ``Y`` is a function of ``Z``); all-degenerate gives ``p = 1``.
        random_state: seed of the bootstrap and of randomised regressions.

    Returns:
        :class:`CITestResult` with ``pvalue``, ``statistic`` and ``df``.

    Raises:
        ValueError: wrong shapes, NaN/inf, fewer than 3 rows, mismatched ``n``, bad ``test_type``/``B``.
        TypeError: non-numeric input.

    References:
        Shah & Peters, "The hardness of conditional independence testing and the generalised covariance
        measure", Ann. Statist. 2020, Sec. 3 (univariate) and Sec. 4 (max statistic). Yao et al., NeurIPS 2025,
        Sec. 4 (T-MEX uses the GCM).

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> z = rng.normal(size=(500, 1)); x = z + rng.normal(size=(500, 1)); y = z + rng.normal(size=(500, 1))
        >>> gcm_test(y, x, z).pvalue > 0.01
        True
    """
    _check_test_type(test_type)
    _check_b(B)
    if not 0.0 <= float(degenerate_tol) < 1.0:
        raise ValueError(f"degenerate_tol must be in [0, 1), got {degenerate_tol}")
    y, x, z = as_yxz(Y, X, Z, min_rows=3)
    r_y = residuals(y, z, regressor, random_state=random_state)
    r_x = residuals(x, z, regressor, random_state=random_state)
    return gcm_from_residuals(
        r_x,
        r_y,
        test_type=test_type,
        B=B,
        rng=np.random.default_rng(random_state),
        keep_x=degenerate_columns(r_x, x, degenerate_tol),
        keep_y=degenerate_columns(r_y, y, degenerate_tol),
    )
