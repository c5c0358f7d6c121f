"""The BFGS updates: secant equations, positive definiteness, direct/inverse agreement (hypothesis)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_bfgs import bfgs_update, inverse_bfgs_update


def _spd(rng: np.random.Generator, d: int) -> np.ndarray:
    G = rng.normal(size=(d, d))
    return G @ G.T + 0.5 * np.eye(d)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), d=st.integers(1, 6))
def test_secant_pd_and_inverse_agree(seed, d):
    """B+ s = y and H+ y = s (secant), B+ is PD (Cholesky succeeds) and H+ = (B+)^-1, whenever s^T y > 0."""
    rng = np.random.default_rng(seed)
    B = _spd(rng, d)
    s = rng.normal(size=d)
    y = _spd(rng, d) @ s  # y = G s with G SPD gives s^T y > 0
    Bp = np.asarray(bfgs_update(jnp.asarray(B), jnp.asarray(s), jnp.asarray(y)))
    Hp = np.asarray(inverse_bfgs_update(jnp.asarray(np.linalg.inv(B)), jnp.asarray(s), jnp.asarray(y)))
    scale = np.linalg.norm(y) + np.linalg.norm(B) * np.linalg.norm(s)
    np.testing.assert_allclose(Bp @ s, y, atol=1e-10 * scale)
    np.testing.assert_allclose(Hp @ y, s, atol=1e-10 * (np.linalg.norm(s) + np.linalg.norm(Hp) * np.linalg.norm(y)))
    np.linalg.cholesky(Bp)
    np.testing.assert_allclose(Hp @ Bp, np.eye(d), atol=1e-8 * np.linalg.cond(Bp))


def test_update_on_quadratic_recovers_hessian_in_d_steps():
    """Hereditary property: pairs (s_i, Q s_i) with Q-conjugate s_i give H_k y_j = s_j for j < k, so B_d = Q."""
    rng = np.random.default_rng(3)
    d = 4
    Q = _spd(rng, d)
    # Q-conjugate directions by Gram-Schmidt in the Q inner product
    S = []
    for v in rng.normal(size=(d, d)):
        for u in S:
            v = v - (u @ Q @ v) / (u @ Q @ u) * u
        S.append(v)
    B = jnp.eye(d)
    for s in S:
        B = bfgs_update(B, jnp.asarray(s), jnp.asarray(Q @ s))
    np.testing.assert_allclose(np.asarray(B), Q, atol=1e-9)


def test_update_rejects_bad_shapes_and_negative_curvature():
    """Mismatched shapes raise ValueError naming the argument; s^T y <= 0 (concrete) raises on the curvature."""
    import pytest

    eye = jnp.eye(3)
    with pytest.raises(ValueError, match="s must have shape"):
        bfgs_update(eye, jnp.ones(2), jnp.ones(3))
    with pytest.raises(ValueError, match="y must have shape"):
        inverse_bfgs_update(eye, jnp.ones(3), jnp.ones(4))
    with pytest.raises(ValueError, match="B must be square"):
        bfgs_update(jnp.ones((2, 3)), jnp.ones(2), jnp.ones(2))
    for update in (bfgs_update, inverse_bfgs_update):
        with pytest.raises(ValueError, match=r"s\^T y > 0"):
            update(eye, jnp.ones(3), -jnp.ones(3))


def test_inverse_update_finite_flags_an_overflowing_coefficient():
    """With s^T y near the underflow, rho^2 y^T H y + rho overflows: the flag says so (the solver then skips the pair);
    on an ordinary pair the update is inverse_update's and the flag is true."""
    from nips25_bfgs.update import inverse_update, inverse_update_finite

    H = jnp.eye(2)
    s, y = jnp.array([1.0, 0.0]), jnp.array([2.0, 0.0])
    upd, ok = inverse_update_finite(H, s, y)
    assert bool(ok) and np.array_equal(np.asarray(upd), np.asarray(inverse_update(H, s, y)))
    tiny = jnp.array([1e-160, 0.0])
    _, ok = inverse_update_finite(H, tiny, tiny)  # s^T y = 1e-320 (subnormal): rho = inf
    assert not bool(ok)
