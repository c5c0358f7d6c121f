"""Regressions behind the covariance-measure tests: named scikit-learn models or any scikit-learn regressor.

The GCM and PCM are only as good as the regressions they use (Shah & Peters 2020, Thm. 6). The official code of
the paper uses pycomets' ``LM`` (ordinary least squares), ``KRR`` (RBF kernel ridge with ``alpha`` in
``{0.1, 1, 10}`` chosen by cross-validation), ``RF`` and ``XGB``; here they are scikit-learn estimators.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import RegressorMixin, clone
from sklearn.ensemble import RandomForestRegressor
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import GridSearchCV

__all__ = ["REGRESSORS", "Regressor", "is_linear", "make_regressor", "residuals"]

REGRESSORS = ("lm", "krr", "rf")
Regressor = str | RegressorMixin


def make_regressor(regressor: Any, *, random_state: int | None = None) -> Any:
    """Return a fresh (unfitted) scikit-learn regressor for ``regressor``.

    Args:
        regressor: ``"lm"`` (ordinary least squares with intercept), ``"krr"`` (RBF kernel ridge, ``alpha`` in
            ``{0.1, 1, 10}`` by 5-fold cross-validation, the paper's ``KRR`` grid; default ``gamma = 1/p``),
            ``"rf"`` (random forest, 100 trees, ``min_samples_leaf=5``) or any scikit-learn regressor
            (cloned, never fitted in place). Limitation of ``"krr"``: when the response is an exact function of
            the covariates (a perfect measurement of a conditioning latent) the ridge leaves a small residual that
            is pure bias, and the GCM tests it as signal; perfect measurements of 3-latent location-scale SCMs
            (n = 200, seeds 0-5) score T-MEX ``[1, 0, 2, 0, 2, 0]`` (mean 0.83 vs ~0.3 expected). See README, Limits.
        random_state: seed of the random forest; ignored by the deterministic regressions.

    Returns:
        An unfitted estimator with ``fit(X, y)`` and ``predict(X)`` supporting multi-output ``y``.

    Raises:
        ValueError: if ``regressor`` is an unknown name.
        TypeError: if ``regressor`` is neither a name nor an estimator with ``fit`` and ``predict``.
    """
    if isinstance(regressor, str):
        if regressor == "lm":
            return LinearRegression()
        if regressor == "krr":
            return GridSearchCV(KernelRidge(kernel="rbf"), {"alpha": [0.1, 1.0, 10.0]}, cv=5)
        if regressor == "rf":
            return RandomForestRegressor(n_estimators=100, min_samples_leaf=5, random_state=random_state, n_jobs=1)
        raise ValueError(f"regressor must be one of {REGRESSORS} or a scikit-learn regressor, got {regressor!r}")
    if not (hasattr(regressor, "fit") and hasattr(regressor, "predict")):
        raise TypeError(f"regressor must be a name in {REGRESSORS} or an estimator, got {type(regressor).__name__}")
    return clone(regressor)


def is_linear(regressor: Any) -> bool:
    """Whether ``regressor`` is ordinary least squares, whose multi-output fit equals separate fits."""
    return (isinstance(regressor, str) and regressor == "lm") or type(regressor) is LinearRegression


def residuals(
    target: NDArray[np.float64],
    covariates: NDArray[np.float64] | None,
    regressor: Any = "lm",
    *,
    random_state: int | None = None,
) -> NDArray[np.float64]:
    r"""In-sample residuals :math:`r = y - \hat f(z)` of ``target`` regressed on ``covariates``.

    Args:
        target: ``(n, d)`` responses (each column is regressed; multi-output fit).
        covariates: ``(n, p)`` regressors, or ``None`` for a marginal test (the residual is ``y`` minus its mean).
        regressor: see :func:`make_regressor`; ``"lm"`` is solved directly with ``numpy.linalg.lstsq``
            (identical to scikit-learn's ``LinearRegression``, without its per-call overhead).
        random_state: seed of randomised regressions.

    Returns:
        ``(n, d)`` residuals.

    Raises:
        ValueError: ``"lm"`` with ``n`` at most the rank of ``[1, covariates]`` (the fit interpolates);
            ``"krr"`` with ``n < 10`` (its 5-fold CV needs two samples per fold).
    """
    if covariates is None:
        return target - target.mean(axis=0, keepdims=True)
    if is_linear(regressor):
        design = np.hstack([np.ones((covariates.shape[0], 1)), covariates])
        beta, _, rank, _ = np.linalg.lstsq(design, target, rcond=None)
        if rank >= design.shape[0]:  # exact interpolation: every residual is zero and every p-value would be 1
            raise ValueError(
                f"regressor='lm' needs n > {rank} samples ({rank - 1} covariates + intercept), got n = "
                f"{design.shape[0]}: with so few samples the regression interpolates and the test has no power"
            )
        return np.asarray(target - design @ beta, dtype=np.float64)
    if isinstance(regressor, str) and regressor == "krr" and target.shape[0] < 10:
        raise ValueError(
            "regressor='krr' selects alpha by 5-fold cross-validation, which needs n >= 10 samples, "
            f"got n = {target.shape[0]}"
        )
    model = make_regressor(regressor, random_state=random_state)
    y = target[:, 0] if target.shape[1] == 1 else target
    model.fit(covariates, y)
    pred = np.asarray(model.predict(covariates), dtype=np.float64).reshape(target.shape[0], -1)
    return target - pred
