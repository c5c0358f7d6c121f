r"""Real-graph check: fit a CSBM to a connectome with known cell types and compare class means of :math:`A^k X`.

For an SBM the class means of :math:`A^k X` are :math:`\approx \hat\nu^k \hat Q^k \hat M`; on a real graph the
difference measures how far the graph is from an SBM at the level the theorem uses (the class means), while
:math:`k = 1` matches by construction of the fit up to feature noise.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import sparse as jsparse

from nips25_gnnclt._checks import as_labels, check_int, check_positive, finite_array
from nips25_gnnclt.csbm import fit_csbm
from nips25_gnnclt.graph_files import read_labelled_graph
from nips25_gnnclt.limits import class_moments, limit_means

__all__ = ["class_mean_check", "load_drosophila_left", "symmetrize_binarize"]


def load_drosophila_left() -> tuple[np.ndarray, np.ndarray]:
    """The left larval *Drosophila* mushroom-body connectome (Eichler et al., Nature 2017), embedded.

    Returns:
        ``(A, cell_types)``: ``(209, 209)`` int64 directed synapse counts and ``(209,)`` cell-type strings
        (``"K"`` Kenyon, ``"P"`` projection, ``"O"`` output, ``"I"`` input neurons).

    Example:
        >>> A, types = load_drosophila_left()
        >>> A.shape, sorted(map(str, set(types)))
        ((209, 209), ['I', 'K', 'O', 'P'])
    """
    root = resources.files("nips25_gnnclt") / "data"
    with (
        resources.as_file(root / "drosophila_left_edges.csv") as edges,
        resources.as_file(root / "drosophila_left_labels.csv") as labels,
    ):
        A, y, classes = read_labelled_graph(edges, labels, weight="synapses", label="cell_type")
    return A.astype(np.int64), classes[y]


def symmetrize_binarize(A: Any) -> np.ndarray:
    """``1[A_ij > 0 or A_ji > 0]`` with a zero diagonal (an undirected simple graph), float64.

    Args:
        A: ``(n, n)`` adjacency with finite, non-negative entries (weights or counts, directed or not).

    Returns:
        ``(n, n)`` float64 symmetric 0/1 matrix with a zero diagonal.

    Raises:
        ValueError: a non-square ``A``, NaN/inf or a negative entry (which would otherwise cancel or drop an edge
            without a word).
    """
    a = finite_array(A, "A")
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"A must be a square (n, n) matrix, got shape {a.shape}")
    if np.any(a < 0):
        i, j = np.argwhere(a < 0)[0]
        raise ValueError(f"A must have non-negative entries (edge weights), got A[{i}, {j}] = {a[i, j]:g}")
    s = ((a + a.T) > 0).astype(np.float64)
    np.fill_diagonal(s, 0.0)
    return s


def class_mean_check(
    A: Any, y: Any, key: jax.Array, *, ks: tuple[int, ...] = (1, 2, 3), noise: float = 0.5
) -> dict[str, Any]:
    r"""Attach features :math:`x_i = e_{y_i} + \varepsilon_i`, :math:`\varepsilon_i \sim N(0, \mathtt{noise}^2 I_K)`,
    fit a CSBM, and compare the empirical class means of :math:`A^k X` with :math:`\hat\nu^k \hat Q^k \hat M`.

    Args:
        A: ``(n, n)`` adjacency (symmetrised and binarised here).
        y: ``(n,)`` integer classes ``0..K-1``, all present.
        key: JAX PRNG key for the features.
        ks: depths ``>= 1`` to compare.
        noise: feature-noise standard deviation ``> 0``.

    Returns:
        ``{"nu_hat", "n", "K", "per_k": {k: {"rel_error", "cosine", "empirical", "predicted"}}}`` where
        ``rel_error`` is :math:`\|\hat E - P\|_F/\|P\|_F` and ``cosine`` the cosine of the flattened matrices.

    Raises:
        ValueError: on a non-square ``A``, NaN/inf or negative entries in ``A``, labels of the wrong length or out
            of range, ``noise <= 0`` or a depth ``< 1``.
        TypeError: non-integer labels (encode class names first, e.g. ``np.unique(names, return_inverse=True)``).
    """
    s = symmetrize_binarize(A)
    lab = np.asarray(as_labels(y, "y", n=s.shape[0]))
    noise = check_positive(noise, "noise")
    k_classes = int(np.max(lab)) + 1 if lab.size else 0
    x = np.eye(max(k_classes, 1))[lab] + noise * np.asarray(jax.random.normal(key, (lab.shape[0], max(k_classes, 1))))
    model, nu_hat = fit_csbm(s, lab, x)
    a_sparse = jsparse.BCOO.fromdense(jnp.asarray(s, jnp.float32))
    out: dict[str, Any] = {"nu_hat": nu_hat, "n": int(s.shape[0]), "K": model.n_classes, "per_k": {}}
    depths = sorted({check_int(k, "ks[i]", minimum=1) for k in ks})
    if not depths:
        raise ValueError("ks must name at least one depth")
    h = jnp.asarray(x, jnp.float32)
    for k in range(1, depths[-1] + 1):
        h = a_sparse @ h
        if k not in depths:
            continue
        emp, _ = class_moments(h, lab, model.n_classes)
        pred = nu_hat**k * limit_means(model, k)
        out["per_k"][k] = {
            "rel_error": float(np.linalg.norm(emp - pred) / np.linalg.norm(pred)),
            "cosine": float((emp * pred).sum() / (np.linalg.norm(emp) * np.linalg.norm(pred))),
            "empirical": emp,
            "predicted": pred,
        }
    return out
