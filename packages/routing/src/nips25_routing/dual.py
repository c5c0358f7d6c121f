r"""The budget prices :math:`\gamma^*`: PORT's one-time dual fit, and the offline LP it is the dual of (Sec. 3.2).

The offline routing LP over queries :math:`j` and models :math:`i` is

.. math:: \max_x \sum_{j,i} \alpha_i d_{ji} x_{ji} \;\text{s.t.}\; \sum_j g_{ji} x_{ji} \le B_i,\;
          \sum_i x_{ji} \le 1,\; x \ge 0,

and its dual, restricted to the learning sample :math:`P` of the first :math:`\epsilon N` queries of the stream, is

.. math:: F(\gamma) = \epsilon \sum_i \gamma_i B_i + \sum_{j\in P} \max_i (\alpha_i \hat d_{ji} - \hat g_{ji}\gamma_i),

(with an outer :math:`\max(0, \cdot)` on each term of the sum in the textbook dual, ``clip_zero=True``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog, minimize

from nips25_routing.validation import as_matrix, as_vector

__all__ = ["DualFit", "alpha_vector", "dual_objective", "fit_dual", "lp_oracle"]

Solver = Literal["lp", "lbfgsb"]


def alpha_vector(alpha: Any, n_models: int) -> np.ndarray:
    """``alpha`` (a scalar or one value per model) as a positive ``(M,)`` float64 vector.

    Raises:
        ValueError: if a value is not finite and > 0, or the length is not ``n_models``.
    """
    arr = np.asarray(alpha, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(n_models, float(arr))
    if arr.shape != (n_models,):
        raise ValueError(f"alpha must be a scalar or have {n_models} entries, got shape {arr.shape}")
    if not np.isfinite(arr).all() or (arr <= 0).any():
        raise ValueError(f"alpha must be finite and > 0, got {arr}")
    return arr


def _check_instance(
    d_hat: Any, g_hat: Any, budgets: Any, names: tuple[str, str] = ("d_hat", "g_hat")
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = as_matrix(d_hat, names[0])
    g = as_matrix(g_hat, names[1], rows=d.shape[0], cols=d.shape[1])
    b = as_vector(budgets, "budgets", size=d.shape[1], nonnegative=True)
    if (g < 0).any():
        raise ValueError(f"{names[1]} must be >= 0")
    return d, g, b


def dual_objective(
    gamma: Any, d_hat: Any, g_hat: Any, budgets: Any, *, alpha: Any = 1e-4, eps: float = 0.025, clip_zero: bool = True
) -> float:
    r"""The sample dual :math:`F(\gamma)` of PORT (Sec. 3.2).

    .. math:: F(\gamma) = \epsilon\,\gamma^\top B + \sum_{j} \max_i(\alpha_i \hat d_{ji} - \hat g_{ji}\gamma_i)
              \quad(\text{each term clipped at } 0 \text{ when } \texttt{clip\_zero}).

    Args:
        gamma: ``(M,)`` budget prices, ``>= 0``.
        d_hat: ``(P, M)`` estimated quality of the learning sample.
        g_hat: ``(P, M)`` estimated cost of the learning sample, ``>= 0``.
        budgets: ``(M,)`` budgets of the whole stream, ``>= 0``.
        alpha: weight of quality against cost (scalar or ``(M,)``), ``> 0``.
        eps: learning fraction: the sample stands for ``eps`` of the stream, so it gets ``eps * budgets``.
        clip_zero: add the textbook :math:`\max(0,\cdot)` (the default; the official code omits it).

    Returns:
        :math:`F(\gamma)` as a float.

    Raises:
        ValueError: on mismatched shapes, NaN/inf, negative ``gamma``/costs/budgets, or ``eps`` outside ``(0, 1]``.

    Example:
        >>> dual_objective([0.0], [[1.0]], [[1.0]], [1.0], alpha=1.0, eps=1.0)
        1.0
    """
    d, g, b = _check_instance(d_hat, g_hat, budgets)
    gam = as_vector(gamma, "gamma", size=d.shape[1], nonnegative=True)
    _check_eps(eps)
    scores = d * alpha_vector(alpha, d.shape[1]) - g * gam
    best = scores.max(axis=1)
    if clip_zero:
        best = np.maximum(best, 0.0)
    return float(eps * gam @ b + best.sum())


def _check_eps(eps: float) -> None:
    if not isinstance(eps, (int, float)) or not 0.0 < eps <= 1.0:
        raise ValueError(f"eps must be in (0, 1], got {eps}")


@dataclass(frozen=True)
class DualFit:
    """Result of :func:`fit_dual`.

    Attributes:
        gamma: ``(M,)`` the minimiser :math:`\\gamma^*`.
        value: :math:`F(\\gamma^*)`.
        solver: ``"lp"`` or ``"lbfgsb"``.
    """

    gamma: np.ndarray
    value: float
    solver: str


def fit_dual(
    d_hat: Any,
    g_hat: Any,
    budgets: Any,
    *,
    alpha: Any = 1e-4,
    eps: float = 0.025,
    clip_zero: bool = True,
    gamma_max: float | None = None,
    solver: Solver = "lp",
) -> DualFit:
    r"""Minimise PORT's sample dual :math:`F(\gamma)` over :math:`0 \le \gamma_i \le \gamma_{max}` (Sec. 3.2).

    ``solver="lp"`` solves the equivalent LP exactly with HiGHS:
    :math:`\min_{\gamma,\beta} \epsilon B^\top\gamma + \sum_j \beta_j` s.t.
    :math:`\beta_j \ge \alpha_i\hat d_{ji} - \hat g_{ji}\gamma_i` (and :math:`\beta_j \ge 0` when ``clip_zero``).
    ``solver="lbfgsb"`` is the official code's route: scipy L-BFGS-B from :math:`\gamma = 1/M` (here with the
    exact subgradient in float64 instead of float32 finite differences).

    Args:
        d_hat: ``(P, M)`` estimated quality of the learning sample.
        g_hat: ``(P, M)`` estimated cost, ``>= 0``.
        budgets: ``(M,)`` budgets of the whole stream.
        alpha: weight of quality against cost, scalar or ``(M,)``, ``> 0``.
        eps: learning fraction in ``(0, 1]``.
        clip_zero: textbook dual with :math:`\max(0,\cdot)`.
        gamma_max: upper bound on every price (the official code uses 1); ``None`` (default) for unbounded.
        solver: ``"lp"`` (exact) or ``"lbfgsb"``.

    Returns:
        A :class:`DualFit`.

    Raises:
        ValueError: on bad inputs, or if the dual is unbounded below (``clip_zero=False`` with
            ``gamma_max=None`` and over-spent budgets).

    Example:
        >>> fit = fit_dual([[1.0]], [[1.0]], [10.0], alpha=1.0, eps=1.0, clip_zero=True, gamma_max=None)
        >>> round(fit.value, 9), fit.gamma.tolist()
        (1.0, [0.0])
    """
    d, g, b = _check_instance(d_hat, g_hat, budgets)
    _check_eps(eps)
    if gamma_max is not None and not (np.isfinite(gamma_max) and gamma_max > 0):
        raise ValueError(f"gamma_max must be > 0 or None, got {gamma_max}")
    if solver not in ("lp", "lbfgsb"):
        raise ValueError(f"solver must be 'lp' or 'lbfgsb', got {solver!r}")
    a = alpha_vector(alpha, d.shape[1])
    n, m = d.shape
    if solver == "lbfgsb":
        if gamma_max is None:
            raise ValueError("gamma_max must be finite for solver='lbfgsb'")
        gamma = _lbfgsb(d * a, g, b, eps=eps, clip_zero=clip_zero, gamma_max=gamma_max)
    else:
        rows = np.repeat(np.arange(n * m), 2)
        cols = np.empty(2 * n * m, dtype=np.int64)
        vals = np.empty(2 * n * m)
        j_idx, i_idx = np.divmod(np.arange(n * m), m)
        cols[0::2], vals[0::2] = i_idx, -g.ravel()
        cols[1::2], vals[1::2] = m + j_idx, -1.0
        a_ub = sp.csr_matrix((vals, (rows, cols)), shape=(n * m, m + n))
        c = np.concatenate([eps * b, np.ones(n)])
        bounds = [(0.0, gamma_max)] * m + [(0.0 if clip_zero else None, None)] * n
        res = linprog(c, A_ub=a_ub, b_ub=-(d * a).ravel(), bounds=bounds, method="highs")
        if res.status == 3:
            raise ValueError("the dual is unbounded below: set gamma_max or clip_zero=True")
        if not res.success:
            raise RuntimeError(f"HiGHS failed on the dual LP: {res.message}")
        gamma = np.clip(res.x[:m], 0.0, gamma_max)
    value = dual_objective(gamma, d, g, b, alpha=a, eps=eps, clip_zero=clip_zero)
    return DualFit(gamma=gamma, value=value, solver=solver)


def _lbfgsb(ad: np.ndarray, g: np.ndarray, b: np.ndarray, *, eps: float, clip_zero: bool, gamma_max: float) -> Any:
    n, m = ad.shape

    def f_and_grad(gamma: np.ndarray) -> tuple[float, np.ndarray]:
        scores = ad - g * gamma
        arg = scores.argmax(axis=1)
        best = scores[np.arange(n), arg]
        active = best > 0 if clip_zero else np.ones(n, dtype=bool)
        value = eps * gamma @ b + np.where(active, best, 0.0).sum()
        grad = eps * b - np.bincount(arg[active], weights=g[np.arange(n), arg][active], minlength=m)
        return float(value), grad

    res = minimize(f_and_grad, np.full(m, 1.0 / m), jac=True, method="L-BFGS-B", bounds=[(0.0, gamma_max)] * m)
    return np.asarray(res.x, dtype=np.float64)


def lp_oracle(quality: Any, cost: Any, budgets: Any, *, alpha: Any = 1.0) -> tuple[np.ndarray, float]:
    r"""The offline routing LP relaxation, solved with HiGHS (the Approx-Opt and Optimum references).

    .. math:: \max_x \sum_{j,i} \alpha_i d_{ji} x_{ji} \;\text{s.t.}\; \sum_j g_{ji} x_{ji} \le B_i,\;
              \sum_i x_{ji} \le 1,\; 0 \le x \le 1.

    Args:
        quality: ``(N, M)`` quality (true for Optimum, estimated for Approx-Opt).
        cost: ``(N, M)`` cost, ``>= 0``.
        budgets: ``(M,)`` budgets.
        alpha: per-model weight of quality, scalar or ``(M,)``.

    Returns:
        ``(x, value)``: the ``(N, M)`` fractional assignment and the LP optimum.

    Raises:
        ValueError: on mismatched shapes, NaN/inf or negative costs/budgets.

    Example:
        >>> x, v = lp_oracle([[1.0, 0.5]], [[2.0, 1.0]], [1.0, 1.0])
        >>> round(v, 6)  # x = (0.5, 0.5): model 0's budget allows half the query, model 1 takes the rest
        0.75
    """
    d, g, b = _check_instance(quality, cost, budgets, ("quality", "cost"))
    n, m = d.shape
    a = alpha_vector(alpha, m)
    k = np.arange(n * m)
    j_idx, i_idx = np.divmod(k, m)
    budget_rows = sp.csr_matrix((g.ravel(), (i_idx, k)), shape=(m, n * m))
    query_rows = sp.csr_matrix((np.ones(n * m), (j_idx, k)), shape=(n, n * m))
    res = linprog(
        -(d * a).ravel(),
        A_ub=sp.vstack([budget_rows, query_rows]).tocsr(),
        b_ub=np.concatenate([b, np.ones(n)]),
        bounds=(0.0, 1.0),
        method="highs",
    )
    if not res.success:
        raise RuntimeError(f"HiGHS failed on the routing LP: {res.message}")
    return res.x.reshape(n, m), float(-res.fun)
