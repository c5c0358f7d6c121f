r"""Polynomial GNN features :math:`p(A)X\,W = \sum_j a_j A^j X\,W` by Horner's rule, on a sparse adjacency."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from jax.experimental import sparse as jsparse

from nips25_gnnclt._checks import as_float_matrix, check_int, concretely, real_array

__all__ = ["graph_power", "poly_features"]


@jax.jit
def _horner(A: jsparse.BCOO | Array, X: Array, coeffs: Array) -> Array:
    def step(h: Array, a: Array) -> tuple[Array, None]:
        return A @ h + a * X, None

    h, _ = jax.lax.scan(step, coeffs[-1] * X, coeffs[-2::-1])
    return h


def _check_adjacency(A: Any, n: int) -> jsparse.BCOO | Array:
    if not isinstance(A, (jsparse.BCOO, np.ndarray, Array)):
        raise TypeError(f"A must be a jax.experimental.sparse.BCOO or a dense array, got {type(A).__name__}")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be a square (n, n) matrix, got shape {A.shape}")
    if A.shape[0] != n:
        raise ValueError(f"X must have {A.shape[0]} rows (one per node of A), got {n}")
    if isinstance(A, jsparse.BCOO):
        return A
    return jnp.asarray(real_array(A, "A", ndim=2), jnp.result_type(float))


def poly_features(A: Any, X: Any, coeffs: Sequence[float] | Array, *, weights: Sequence[Any] | None = None) -> Array:
    r"""Embeddings of a linear polynomial GNN, :math:`H = p(A)\,X\,W` with :math:`p(A) = \sum_{j=0}^{k} a_j A^j`.

    Horner's rule: :math:`H \leftarrow a_k X`, then :math:`H \leftarrow A H + a_j X` for :math:`j = k-1, \dots, 0`;
    ``k`` sparse products, no power of :math:`A` is ever formed. With ``weights``
    :math:`(W^{(0)}, \dots, W^{(L-1)})` the result is right-multiplied by :math:`W = W^{(0)} \cdots W^{(L-1)}`
    (the linear poly-GNN :math:`A^k X W^{(0)}\cdots W^{(k-1)}`); means map as :math:`m \mapsto m W`, covariances
    as :math:`\Gamma \mapsto W^\top \Gamma W`. jit-compiled; ``A`` may be a ``BCOO`` (any ``n``) or dense.
    Traceable: ``A`` (dense or ``BCOO``), ``X``, ``coeffs`` and ``weights`` may be traced (``jax.jit``,
    ``jax.vmap`` over graphs, features or coefficients); NaN/inf and :math:`a_k = 0` are checked when concrete.

    Args:
        A: ``(n, n)`` adjacency, ``jax.experimental.sparse.BCOO`` or dense array.
        X: ``(n, d)`` node features.
        coeffs: ``(k + 1,)`` coefficients :math:`a_0, \dots, a_k`, finite, :math:`a_k \ne 0` (a sequence or an
            array; its length, the degree, is static).
        weights: optional sequence of ``(d_l, d_{l+1})`` matrices with ``d_0 = d``.

    Returns:
        ``(n, d_L)`` embeddings (float32 unless x64 is enabled).

    Raises:
        TypeError: if ``A`` is neither ``BCOO`` nor an array.
        ValueError: on shape mismatches, NaN/inf, empty ``coeffs`` or :math:`a_k = 0`.

    References:
        Vinas & Amini, NeurIPS 2025 (poly-GNN :math:`Z^{(\ell+1)} = \phi(A Z^{(\ell)} W^{(\ell)})`, linear case).

    Example:
        >>> A = jnp.array([[0.0, 1.0], [1.0, 0.0]])
        >>> poly_features(A, jnp.eye(2), [1.0, 0.0, 2.0]).tolist()  # I + 2 A^2 = 3 I
        [[3.0, 0.0], [0.0, 3.0]]
    """
    x = as_float_matrix(X, "X")
    a = _check_adjacency(A, x.shape[0])
    c = real_array(coeffs, "coeffs", ndim=1)
    if concretely(lambda: c[-1] == 0, c):
        raise ValueError("coeffs[-1] (the top coefficient a_k) must be non-zero")
    c = jnp.asarray(c, x.dtype)
    h = c[0] * x if c.shape[0] == 1 else _horner(a, x, c)
    if weights is not None:
        for i, w in enumerate(weights):
            w_arr = as_float_matrix(w, f"weights[{i}]")
            if w_arr.shape[0] != h.shape[1]:
                raise ValueError(f"weights[{i}] must have {h.shape[1]} rows, got shape {w_arr.shape}")
            h = h @ w_arr
    return h


def graph_power(A: Any, X: Any, k: int) -> Array:
    r"""The :math:`k`-hop aggregation :math:`A^k X` (``k`` sparse products), the embedding the CLT is stated for.

    Args:
        A: ``(n, n)`` adjacency (``BCOO`` or dense).
        X: ``(n, d)`` features.
        k: number of hops, ``>= 0``.

    Returns:
        ``(n, d)`` array :math:`A^k X`.

    Raises:
        ValueError: on ``k < 0`` or shape mismatches.

    Example:
        >>> graph_power(jnp.array([[0.0, 2.0], [2.0, 0.0]]), jnp.eye(2), 2).tolist()
        [[4.0, 0.0], [0.0, 4.0]]
    """
    k = check_int(k, "k", minimum=0)
    return poly_features(A, X, [0.0] * k + [1.0])
