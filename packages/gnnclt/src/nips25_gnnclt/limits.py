r"""The theorem's limiting Gaussian mixture: means :math:`Q^k M`, covariances :math:`\Gamma^{(k)}_c`, centring.

With :math:`Q = B\,\mathrm{diag}(\pi)` and :math:`m^{(k)} = Q^k M` (rows indexed by class):

* uncentred, :math:`\nu^k`-normalised: :math:`(A^k X)_i / \nu^k \approx N(m^{(k)}_{y_i}, \Gamma^{(k)}_{y_i}/\nu)`;
* centred, :math:`\nu^{k-1/2}`-scaled:
  :math:`Z_i = \big((A^k X)_i - \nu^k m^{(k)}_{y_i}\big)/\nu^{k-1/2} \Rightarrow N(0, \Gamma^{(k)}_{y_i})`, so the
  empirical law of :math:`Z` tends (in :math:`W_1`) to :math:`\sum_c \pi_c N(0, \Gamma^{(k)}_c)`;
* :math:`\Gamma^{(1)}_c = \sum_{c'} Q_{cc'}(\mu_{c'}\mu_{c'}^\top + \Sigma)`,
  :math:`\Gamma^{(k)}_c = \sum_{c'} Q_{cc'}\, m^{(k-1)}_{c'} m^{(k-1)\top}_{c'}` for :math:`k \ge 2` (the last hop's
  random neighbour counts; feature noise is :math:`O(\nu^{k/2}) \ll \nu^{k-1/2}` and drops out).

These formulas are the researcher's derivation of the theorem (its text was not available); they are checked by
simulation in the tests and in ``reproduce``.

Every function here is traceable: under ``jax.jit``/``jax.vmap`` (over models, ``nu``, embeddings or labels) it
computes with ``jax.numpy``; on a model with concrete parameters it returns float64 numpy arrays, as before.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import Array

from nips25_gnnclt._checks import (
    array_module,
    as_float_matrix,
    as_labels,
    check_int,
    check_positive,
    concretely,
    real_array,
    scalar_out,
)
from nips25_gnnclt.csbm import CSBM

__all__ = [
    "class_moments",
    "covariance_error",
    "limit_covs",
    "limit_means",
    "naive_covs",
    "scaled_centered",
    "uncentered_covs",
]


def _model(model: Any) -> CSBM:
    if not isinstance(model, CSBM):
        raise TypeError(f"model must be a CSBM, got {type(model).__name__}")
    return model


def limit_means(model: CSBM, k: int) -> Any:
    r"""Limit class means :math:`m^{(k)} = Q^k M` of :math:`A^k X/\nu^k`, with :math:`Q = B\,\mathrm{diag}(\pi)`.

    Args:
        model: the CSBM.
        k: number of hops, ``>= 0``.

    Returns:
        ``(K, d)`` array, float64 numpy for a concrete model (JAX for a traced one); row ``c`` is
        :math:`m^{(k)}_c`.

    Raises:
        TypeError: if ``model`` is not a CSBM.
        ValueError: if ``k < 0``.

    Example:
        >>> m = CSBM(pi=[0.5, 0.5], B=[[1.5, 0.5], [0.5, 1.0]], means=np.eye(2), cov=np.eye(2))
        >>> limit_means(m, 1).tolist()
        [[0.75, 0.25], [0.25, 0.5]]
    """
    model = _model(model)
    k = check_int(k, "k", minimum=0)
    xp = array_module(model.Q, model.means)
    return xp.linalg.matrix_power(model.Q, k) @ model.means


def limit_covs(model: CSBM, k: int) -> Any:
    r"""Limit class-conditional covariances :math:`\Gamma^{(k)}_c` of the centred, :math:`\nu^{k-1/2}`-scaled
    embeddings (see the module docstring for the formula).

    Args:
        model: the CSBM.
        k: number of hops, ``>= 1``.

    Returns:
        ``(K, d, d)`` float64 array of symmetric PSD matrices.

    Raises:
        ValueError: if ``k < 1``.

    Example:
        >>> m = CSBM(pi=[1.0], B=[[1.0]], means=[[2.0]], cov=[[0.5]])
        >>> limit_covs(m, 1).tolist()  # K = 1: mu mu^T + Sigma
        [[[4.5]]]
    """
    model = _model(model)
    k = check_int(k, "k", minimum=1)
    prev = limit_means(model, k - 1)
    xp = array_module(prev, model.cov)
    second = xp.einsum("ci,cj->cij", prev, prev)
    if k == 1:
        second = second + model.cov[None]
    return xp.einsum("ab,bij->aij", model.Q, second)


def uncentered_covs(model: CSBM, k: int, nu: Any) -> Any:
    r"""Covariances :math:`\Gamma^{(k)}_c/\nu` of the uncentred, :math:`\nu^k`-normalised embeddings
    :math:`A^k X/\nu^k`.

    Args:
        model: the CSBM.
        k: number of hops, ``>= 1``.
        nu: degree scale :math:`\nu > 0` (a float, or a JAX scalar).

    Returns:
        ``(K, d, d)`` float64 array (JAX for a traced model or ``nu``).

    Raises:
        TypeError: if ``model`` is not a CSBM.
        ValueError: if ``k < 1`` or ``nu`` is not finite and ``> 0``.
    """
    return limit_covs(model, k) / check_positive(nu, "nu")


def naive_covs(model: CSBM, k: int) -> Any:
    r"""Baseline that ignores graph randomness: the feature-noise-only covariance
    :math:`\sum_{c'} Q_{cc'}\Sigma` (what fixed neighbour counts would give), on the :math:`Z` scale.

    Args:
        model: the CSBM.
        k: number of hops, ``>= 1`` (checked only; the baseline does not depend on it).

    Returns:
        ``(K, d, d)`` float64 array (the same for every ``k >= 1``).

    Raises:
        TypeError: if ``model`` is not a CSBM.
        ValueError: if ``k < 1``.
    """
    model = _model(model)
    check_int(k, "k", minimum=1)
    return model.Q.sum(axis=1)[:, None, None] * model.cov[None]


def scaled_centered(H: Any, y: Any, model: CSBM, *, nu: Any, k: int) -> Array:
    r"""Centred, scaled embeddings :math:`Z_i = (H_i - \nu^k m^{(k)}_{y_i}) / \nu^{k-1/2}` with :math:`H = A^k X`.

    Args:
        H: ``(n, d)`` embeddings :math:`A^k X`.
        y: ``(n,)`` integer labels in ``[0, K)``.
        model: the CSBM whose means centre ``H`` (pass ``model.conditioned_on(y, X)`` for the plug-in centring).
        nu: degree scale :math:`\nu > 0` (a float or a JAX scalar, e.g. mapped over by ``jax.vmap``).
        k: number of hops, ``>= 1`` (static).

    Returns:
        ``(n, d)`` array :math:`Z` (JAX, in ``H``'s float dtype).

    Raises:
        ValueError: on mismatched shapes, NaN/inf, ``nu <= 0`` or ``k < 1``.

    Example:
        >>> m = CSBM(pi=[1.0], B=[[1.0]], means=[[1.0]], cov=[[1.0]])
        >>> scaled_centered(jnp.array([[6.0], [2.0]]), np.array([0, 0]), m, nu=4.0, k=1).tolist()
        [[1.0], [-1.0]]
    """
    model = _model(model)
    h = as_float_matrix(H, "H")
    lab = as_labels(y, "y", n=h.shape[0], n_classes=model.n_classes)
    nu = check_positive(nu, "nu")
    k = check_int(k, "k", minimum=1)
    if h.shape[1] != model.dim:
        raise ValueError(f"H must have {model.dim} columns to match the model, got {h.shape[1]}")
    centre = jnp.asarray(limit_means(model, k), h.dtype)[lab] * jnp.asarray(nu**k, h.dtype)
    return (h - centre) / jnp.asarray(nu ** (k - 0.5), h.dtype)


def class_moments(Z: Any, y: Any, n_classes: int) -> tuple[Any, Any]:
    r"""Empirical class means and (unbiased) covariances of the rows of ``Z``.

    Args:
        Z: ``(n, d)`` rows; a host array is reduced in float64 numpy, a JAX array (sharded or traced) with JAX.
        y: ``(n,)`` integer labels in ``[0, n_classes)``.
        n_classes: number of classes ``K >= 1`` (static).

    Returns:
        ``(means (K, d), covs (K, d, d))``.

    Raises:
        ValueError: if a class has fewer than 2 members (checked when concrete) or shapes mismatch.

    Example:
        >>> means, covs = class_moments(np.array([[0.0], [2.0], [5.0], [5.0]]), np.array([0, 0, 1, 1]), 2)
        >>> means.ravel().tolist(), covs.ravel().tolist()
        ([1.0, 5.0], [2.0, 0.0])
    """
    z = real_array(Z, "Z", ndim=2)
    k = check_int(n_classes, "n_classes", minimum=1)
    lab = as_labels(y, "y", n=z.shape[0], n_classes=k)
    xp = array_module(z, lab)
    onehot = (lab[:, None] == xp.arange(k)[None, :]).astype(z.dtype)
    counts = onehot.sum(axis=0)
    if concretely(lambda: counts.min() < 2, counts):
        got = np.asarray(counts).astype(int).tolist()
        raise ValueError(f"y must have at least 2 members per class, got counts {got}")
    means = (onehot.T @ z) / counts[:, None]
    resid = z - means[lab]
    covs = xp.einsum("nc,ni,nj->cij", onehot, resid, resid) / (counts - 1)[:, None, None]
    return means, covs


def covariance_error(Z: Any, y: Any, model: CSBM, k: int) -> Any:
    r"""Relative covariance error :math:`\max_c \max|\widehat{\mathrm{Cov}}(Z \mid c) - \Gamma^{(k)}_c| /
    \max_c \max|\Gamma^{(k)}_c|`.

    Args:
        Z: ``(n, d)`` centred, scaled embeddings (:func:`scaled_centered`).
        y: ``(n,)`` integer labels in ``[0, K)``, at least 2 per class.
        model: the CSBM whose :math:`\Gamma^{(k)}` is the reference.
        k: number of hops, ``>= 1``.

    Returns:
        A non-negative float (a JAX scalar for JAX input); unitless.

    Raises:
        TypeError: if ``model`` is not a CSBM or ``y`` is not integer.
        ValueError: on shape mismatches, NaN/inf, labels out of range or ``k < 1``.
    """
    model = _model(model)
    gamma = limit_covs(model, k)
    _, covs = class_moments(Z, y, model.n_classes)
    xp = array_module(covs, gamma)
    return scalar_out(xp.abs(covs - gamma).max() / xp.abs(gamma).max())
