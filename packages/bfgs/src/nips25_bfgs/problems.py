"""The paper's test problems on real data shipped with scikit-learn, plus the synthetic ones, ready to solve.

``breast_cancer`` (569 x 30, l2-logistic) and ``digits`` (1797 x 64, 10-class softmax, d = 640) come from files
bundled inside scikit-learn (``load_breast_cancer``, ``load_digits``: no download). Features are standardised
(zero mean, unit variance; constant columns left at zero). ``hard_cubic`` and ``logsumexp`` are synthetic.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import Partial

from nips25_bfgs.objectives import hard_cubic, logistic_l2, logsumexp_reg, softmax_l2
from nips25_shared import jax_key

__all__ = ["PROBLEMS", "Problem", "load_problem", "standardize"]

PROBLEMS = ("breast_cancer", "digits", "hard_cubic", "logsumexp")


class Problem(NamedTuple):
    """A named objective with its start: ``fun`` ``(d,) -> scalar``, ``x0`` ``(d,)``, and a description."""

    name: str
    fun: Partial
    x0: jax.Array
    description: str


def standardize(X: np.ndarray) -> np.ndarray:
    """Columns to zero mean and unit variance (constant columns become zero). ``X``: ``(n, d)``."""
    X = np.asarray(X, dtype=np.float64)
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def load_problem(name: str, *, lam: float | None = None, seed: int = 0) -> Problem:
    """Build one of :data:`PROBLEMS` in the current JAX float dtype (call under ``jax.enable_x64(True)``).

    Args:
        name: ``"breast_cancer"`` (l2-logistic, x0 = 0), ``"digits"`` (softmax, x0 = 0), ``"hard_cubic"``
            (d = 50, x0 ~ N(0, I) from ``seed``), ``"logsumexp"`` (m = 100, d = 50, data and x0 = 0 from ``seed``).
        lam: regulariser; defaults to ``1/n`` for the data sets, ``1e-2`` for ``hard_cubic``, ``1e-3`` for
            ``logsumexp``.
        seed: seed of the synthetic problems (through ``nips25_shared.jax_key``).

    Returns:
        :class:`Problem`.

    Raises:
        ValueError: unknown ``name`` or bad ``lam``.

    Example:
        >>> import jax
        >>> with jax.enable_x64(True):
        ...     p = load_problem("breast_cancer")
        ...     print(p.x0.shape, p.x0.dtype)
        (30,) float64
    """
    from sklearn.datasets import load_breast_cancer, load_digits

    if name not in PROBLEMS:
        raise ValueError(f"name must be one of {PROBLEMS}, got {name!r}")
    dtype = jnp.result_type(float)
    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
        lam_ = 1.0 / X.shape[0] if lam is None else lam
        fun = logistic_l2(jnp.asarray(standardize(X), dtype), jnp.asarray(2.0 * y - 1.0, dtype), lam=lam_)
        return Problem(name, fun, jnp.zeros(X.shape[1], dtype), f"l2-logistic, breast cancer 569x30, lam={lam_:.3g}")
    if name == "digits":
        X, labels = load_digits(return_X_y=True)
        lam_ = 1.0 / X.shape[0] if lam is None else lam
        fun = softmax_l2(jnp.asarray(standardize(X), dtype), labels, lam=lam_, n_classes=10)
        return Problem(name, fun, jnp.zeros(X.shape[1] * 10, dtype), f"softmax, digits 1797x64x10, lam={lam_:.3g}")
    k_prob, k_x0 = jax.random.split(jax_key(seed))
    if name == "hard_cubic":
        lam_ = 1e-2 if lam is None else lam
        fun = hard_cubic(50, lam=lam_, key=k_prob)
        return Problem(name, fun, jax.random.normal(k_x0, (50,), dtype), f"hard cubic d=50, lam={lam_:.3g}")
    lam_ = 1e-3 if lam is None else lam
    ka, kb = jax.random.split(k_prob)
    fun = logsumexp_reg(jax.random.normal(ka, (100, 50), dtype), jax.random.normal(kb, (100,), dtype), mu=lam_)
    return Problem(name, fun, jnp.zeros(50, dtype), f"log-sum-exp m=100 d=50, mu={lam_:.3g}")
