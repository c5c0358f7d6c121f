"""The potential Psi(A) = tr A - d - log det A: closed values, positivity, affine invariance of Psi(B~)."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_bfgs import psi, psi_weighted, weighted_matrix


@pytest.mark.parametrize("c", [1e-3, 0.5, 1.0, 2.0, 1e3])
def test_closed_values(c):
    """Psi(I) = 0 and Psi(cI) = d (c - 1 - log c)."""
    d = 5
    assert float(psi(c * jnp.eye(d))) == pytest.approx(d * (c - 1.0 - math.log(c)), rel=1e-12, abs=1e-13)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), d=st.integers(1, 6))
def test_nonnegative_and_eigen_formula(seed, d):
    """Psi(A) = sum_i (lambda_i - 1 - log lambda_i) >= 0 on random SPD matrices."""
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(d, d))
    A = G @ G.T + 0.1 * np.eye(d)
    lam = np.linalg.eigvalsh(A)
    expected = float(np.sum(lam - 1.0 - np.log(lam)))
    got = float(psi(jnp.asarray(A)))
    assert got >= -1e-12
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-10)


def test_weighted_potential_invariant_under_change_of_variables():
    """Psi(H*^-1/2 B H*^-1/2) equals Psi of the pulled-back pair (A^T B A, A^T H* A), in both forms."""
    rng = np.random.default_rng(1)
    d = 6
    G1, G2, A = rng.normal(size=(3, d, d))
    B, H = G1 @ G1.T + np.eye(d), G2 @ G2.T + np.eye(d)
    base = float(psi(weighted_matrix(jnp.asarray(B), jnp.asarray(H))))
    pulled = float(psi_weighted(jnp.asarray(A.T @ B @ A), jnp.asarray(A.T @ H @ A)))
    inverse = float(psi_weighted(jnp.asarray(np.linalg.inv(B)), jnp.asarray(H), inverse=True))
    assert pulled == pytest.approx(base, rel=1e-9)
    assert inverse == pytest.approx(base, rel=1e-9)


def test_psi_rejects_non_square_and_indefinite():
    """psi of a non-square or indefinite concrete matrix raises ValueError naming A (not a broadcast error / nan)."""
    with pytest.raises(ValueError, match="A must be square"):
        psi(jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="A must be positive definite"):
        psi(-jnp.eye(3))
