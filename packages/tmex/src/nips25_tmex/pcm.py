"""The projected covariance measure (PCM) test of conditional mean independence (Lundborg et al. 2022)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from nips25_tmex.gcm import CITestResult
from nips25_tmex.regression import make_regressor, residuals
from nips25_tmex.validation import as_yxz

__all__ = ["pcm_test"]


def _fit_predict(regressor: Any, x: NDArray[np.float64], y: NDArray[np.float64], seed: int) -> Any:
    model = make_regressor(regressor, random_state=seed)
    model.fit(x, y)
    return model


def _pcm_once(
    y: NDArray[np.float64],
    x: NDArray[np.float64],
    z: NDArray[np.float64] | None,
    *,
    regressor: Any,
    split: float,
    estimate_variance: bool,
    rng: np.random.Generator,
) -> tuple[float, float]:
    n = y.shape[0]
    perm = rng.permutation(n)
    n1 = int(np.floor(split * n))
    a, b = perm[:n1], perm[n1:]
    seed = int(rng.integers(2**31 - 1))
    xz = x if z is None else np.hstack([x, z])
    g = _fit_predict(regressor, xz[a], y[a], seed)
    g_a = g.predict(xz[a])
    if z is None:
        m_a = np.full_like(g_a, g_a.mean())
        m_model = None
    else:
        m_model = _fit_predict(regressor, z[a], g_a, seed)
        m_a = m_model.predict(z[a])
    v_model = None
    if estimate_variance:
        v_model = _fit_predict(regressor, xz[a], (y[a] - g_a) ** 2, seed)

    def direction(rows: NDArray[np.intp]) -> NDArray[np.float64]:
        base = np.full(rows.size, m_a.mean()) if m_model is None or z is None else m_model.predict(z[rows])
        f = g.predict(xz[rows]) - base
        if v_model is not None:
            f = f / np.maximum(v_model.predict(xz[rows]), 1e-6)
        return np.asarray(f, dtype=np.float64)

    h_b = direction(b)[:, None]
    zb = None if z is None else z[b]
    r_y = residuals(y[b][:, None], zb, regressor, random_state=seed)[:, 0]
    r_h = residuals(h_b, zb, regressor, random_state=seed)[:, 0]
    prod = r_y * r_h
    sd = prod.std()
    if sd <= 0.0:
        return 0.0, 1.0
    t = float(np.sqrt(b.size) * prod.mean() / sd)
    return t, float(stats.norm.sf(t))


def pcm_test(
    Y: Any,
    X: Any,
    Z: Any = None,
    *,
    regressor: Any = "lm",
    split: float = 0.5,
    reps: int = 9,
    estimate_variance: bool = False,
    random_state: int | None = 0,
) -> CITestResult:
    r"""Projected covariance measure test of :math:`H_0: E[Y \mid X, Z] = E[Y \mid Z]` (Lundborg et al. 2022).

    Per repetition the sample is split. On the first part, :math:`\hat g(x,z) \approx E[Y|X=x,Z=z]`,
    :math:`\hat m(z) \approx E[\hat g(X,Z)|Z=z]` and the direction :math:`\hat h = \hat g - \hat m` (divided by a
    fitted conditional variance when ``estimate_variance``). On the second part, with residuals
    :math:`r_Y = Y - \hat E[Y|Z]` and :math:`r_h = \hat h - \hat E[\hat h|Z]`, the products
    :math:`L_i = r_{Y,i} r_{h,i}` give :math:`T = \sqrt{n_2}\,\bar L/\hat\sigma_L` and the one-sided
    :math:`p = 1 - \Phi(T)`. The ``reps`` p-values are combined as :math:`\min(1, 2\,\mathrm{median}(p))`.
    A multi-column ``Y`` is tested column by column and the p-values are Bonferroni-combined.

    Args:
        Y: ``(n,)`` or ``(n, d_Y)`` response.
        X: ``(n,)`` or ``(n, d_X)`` variable whose significance is tested.
        Z: ``(n, d_Z)`` conditioning set or ``None`` (marginal test).
        regressor: ``"lm"``, ``"krr"``, ``"rf"`` or a scikit-learn regressor, used for every regression.
        split: fraction of the sample used to learn the direction (paper's code: 0.5), in ``(0, 1)``.
        reps: number of random splits (paper's code: 9), ``>= 1``.
        estimate_variance: divide the direction by a regression estimate of the conditional variance
            (paper's code: ``False``).
        random_state: seed of the sample splits and of randomised regressions.

    Returns:
        :class:`~nips25_tmex.gcm.CITestResult` (``statistic`` is the median ``T`` over repetitions).

    Raises:
        ValueError: wrong shapes, NaN/inf, too few rows, mismatched ``n``, ``split``/``reps`` out of range.

    References:
        Lundborg, Kim, Shah & Samworth, "The projected covariance measure for assumption-lean variable
        significance testing", arXiv:2211.02039, Algorithm 1. Yao et al., NeurIPS 2025 (PCM in Sec. 5.1).

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> x = rng.normal(size=400); y = x + rng.normal(size=400)
        >>> pcm_test(y, x).pvalue < 0.01
        True
    """
    if not 0.0 < float(split) < 1.0:
        raise ValueError(f"split must be in (0, 1), got {split}")
    if isinstance(reps, bool) or not isinstance(reps, (int, np.integer)) or reps < 1:
        raise ValueError(f"reps must be a positive integer, got {reps!r}")
    y, x, z = as_yxz(Y, X, Z, min_rows=8)
    rng = np.random.default_rng(random_state)
    col_p, col_t = [], []
    for c in range(y.shape[1]):
        runs = [
            _pcm_once(y[:, c], x, z, regressor=regressor, split=split, estimate_variance=estimate_variance, rng=rng)
            for _ in range(reps)
        ]
        ts, ps = zip(*runs)
        col_p.append(min(1.0, 2.0 * float(np.median(ps))) if reps > 1 else float(ps[0]))
        col_t.append(float(np.median(ts)))
    p = min(1.0, y.shape[1] * min(col_p))
    return CITestResult(pvalue=p, statistic=max(col_t), df=1, test="pcm")
