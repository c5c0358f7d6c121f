r"""Oversmoothing as collapse: the class-mean matrix :math:`Q^k M` tends to rank one as depth grows.

:math:`Q^k \approx \lambda_1^k u v^\top`, so :math:`\sigma_2/\sigma_1(Q^k M)` decays like
:math:`(|\lambda_2|/\lambda_1)^k`; the two are equal when :math:`Q` is symmetric and :math:`M` has orthonormal rows.
Every ratio is a float for concrete host input and a JAX scalar under ``jit``/``vmap`` or for JAX input.
"""

from __future__ import annotations

from typing import Any

from nips25_gnnclt._checks import array_module, check_int, concretely, real_array, scalar_out
from nips25_gnnclt.csbm import CSBM
from nips25_gnnclt.limits import class_moments, limit_means

__all__ = ["collapse_ratio", "eigenvalue_ratio", "empirical_collapse_ratio", "singular_value_ratio"]


def singular_value_ratio(means: Any) -> Any:
    r""":math:`\sigma_2/\sigma_1` of a ``(K, d)`` class-mean matrix (0 means collapsed onto a line).

    Args:
        means: ``(K, d)`` real matrix, ``K, d >= 2``.

    Returns:
        The ratio in ``[0, 1]``: a float for host input, a JAX scalar for JAX input.

    Raises:
        ValueError: if ``min(K, d) < 2``, the matrix is zero, or holds NaN/inf (values checked when concrete;
            a traced zero matrix gives NaN).

    Example:
        >>> singular_value_ratio([[2.0, 0.0], [0.0, 1.0]])
        0.5
    """
    m = real_array(means, "means", ndim=2)
    if min(m.shape) < 2:
        raise ValueError(f"means must have at least 2 rows and 2 columns for sigma_2, got shape {m.shape}")
    s = array_module(m).linalg.svd(m, compute_uv=False)
    if concretely(lambda: s[0] == 0, s):
        raise ValueError("means is the zero matrix; its singular value ratio is undefined")
    return scalar_out(s[1] / s[0])


def collapse_ratio(model: CSBM, k: int) -> Any:
    r"""Theory's collapse ratio :math:`\sigma_2/\sigma_1(Q^k M)` of the limit class means at depth ``k``.

    Args:
        model: the CSBM.
        k: number of hops, ``>= 1`` (as for :func:`limit_covs`; depth 0 has no aggregation to collapse).

    Raises:
        ValueError: if ``k < 1`` or the means have fewer than 2 rows or columns.

    Example:
        >>> m = CSBM(pi=[0.5, 0.5], B=[[1.5, 0.5], [0.5, 1.0]], means=[[1.0, 0], [0, 1.0]], cov=[[1.0, 0], [0, 1.0]])
        >>> round(collapse_ratio(m, 2) / eigenvalue_ratio(m) ** 2, 12)
        1.0
    """
    return singular_value_ratio(limit_means(model, check_int(k, "k", minimum=1)))


def eigenvalue_ratio(model: CSBM) -> Any:
    r""":math:`|\lambda_2|/\lambda_1` of :math:`Q = B\,\mathrm{diag}(\pi)` (eigenvalues ordered by modulus).

    :math:`Q` is similar to the symmetric :math:`\mathrm{diag}(\pi)^{1/2} B\,\mathrm{diag}(\pi)^{1/2}`, so its
    eigenvalues are real.

    Args:
        model: the CSBM (``K >= 2``).

    Returns:
        The ratio in ``[0, 1]``, the predicted per-hop collapse factor of :func:`collapse_ratio`.

    Raises:
        TypeError: if ``model`` is not a CSBM.
        ValueError: if ``K < 2``.
    """
    if not isinstance(model, CSBM):
        raise TypeError(f"model must be a CSBM, got {type(model).__name__}")
    if model.n_classes < 2:
        raise ValueError("eigenvalue_ratio needs K >= 2 classes")
    xp = array_module(model.pi, model.B)
    root = xp.sqrt(model.pi)
    lam = xp.linalg.eigvalsh(root[:, None] * model.B * root[None, :])
    mods = xp.sort(xp.abs(lam))[::-1]
    return scalar_out(mods[1] / mods[0])


def empirical_collapse_ratio(H: Any, y: Any, n_classes: int) -> Any:
    r""":math:`\sigma_2/\sigma_1` of the empirical class means of the embeddings ``H``, to compare with
    :func:`collapse_ratio` (any scale of ``H``: the ratio is scale-free).

    Args:
        H: ``(n, d)`` embeddings, e.g. :math:`A^k X`, ``d >= 2``.
        y: ``(n,)`` integer labels in ``[0, K)``, at least 2 per class.
        n_classes: ``K >= 2``.

    Returns:
        The ratio in ``[0, 1]`` (a float for host input, a JAX scalar for JAX input).

    Raises:
        ValueError: on shape mismatches, NaN/inf, labels out of range, or fewer than 2 classes or columns.
    """
    means, _ = class_moments(H, y, n_classes)
    return singular_value_ratio(means)
