"""Objectives and problems: closed values, smoothness of the hard cubic, determinism, bad input."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from nips25_bfgs import affine_pullback, hard_cubic, load_problem, logistic_l2, logsumexp_reg, softmax_l2
from nips25_bfgs.objectives import _g_cubic


def test_closed_values_at_zero():
    """At 0: logistic = log 2, softmax = log K, log-sum-exp = logsumexp(-b); ||x||^2 pulled back by 2I is 4||y||^2."""
    rng = np.random.default_rng(0)
    X = jnp.asarray(rng.normal(size=(7, 3)))
    assert float(logistic_l2(X, jnp.ones(7), lam=1.0)(jnp.zeros(3))) == pytest.approx(math.log(2.0), rel=1e-14)
    labels = np.arange(7) % 4
    assert float(softmax_l2(X, labels, lam=1.0)(jnp.zeros(12))) == pytest.approx(math.log(4.0), rel=1e-14)
    b = rng.normal(size=7)
    expected = math.log(np.sum(np.exp(-b)))
    assert float(logsumexp_reg(X, jnp.asarray(b), mu=1.0)(jnp.zeros(3))) == pytest.approx(expected, rel=1e-14)
    g = affine_pullback(lambda x: jnp.sum(x**2), 2.0 * jnp.eye(3))
    assert float(g(jnp.ones(3))) == pytest.approx(12.0)


def test_hard_cubic_piece_is_c2_and_hessian_at_zero_is_lam():
    """g and its first two derivatives are continuous at |w| = Delta; the Hessian of f at 0 is lam I."""
    delta = 0.7
    d1 = jax.grad(_g_cubic)
    d2 = jax.jit(jax.grad(d1))
    d1 = jax.jit(d1)
    for fn in (_g_cubic, d1, d2):
        lo, hi = fn(jnp.asarray(delta - 1e-9), delta), fn(jnp.asarray(delta + 1e-9), delta)
        assert float(hi) == pytest.approx(float(lo), abs=1e-7)
    f = hard_cubic(6, lam=0.3, delta=delta, key=jax.random.key(0))
    np.testing.assert_allclose(np.asarray(jax.jit(jax.hessian(f))(jnp.zeros(6))), 0.3 * np.eye(6), atol=1e-12)


def test_problems_are_deterministic_per_seed():
    """Same seed, same synthetic problem and start; another seed, another problem."""
    with jax.enable_x64(True):
        a, b, c = (load_problem("hard_cubic", seed=s) for s in (4, 4, 5))
    np.testing.assert_array_equal(np.asarray(a.x0), np.asarray(b.x0))
    for leaf_a, leaf_b in zip(jax.tree.leaves(a.fun), jax.tree.leaves(b.fun)):
        np.testing.assert_array_equal(np.asarray(leaf_a), np.asarray(leaf_b))
    assert not np.array_equal(np.asarray(a.x0), np.asarray(c.x0))


def test_bad_inputs_raise_naming_the_argument():
    X = jnp.ones((4, 2))
    with pytest.raises(ValueError, match="y"):
        logistic_l2(X, jnp.array([0.0, 1.0, 1.0, 1.0]), lam=1.0)
    with pytest.raises(ValueError, match="y"):
        logistic_l2(X, jnp.ones(3), lam=1.0)
    with pytest.raises(ValueError, match="X"):
        logistic_l2(X.at[0, 0].set(jnp.nan), jnp.ones(4), lam=1.0)
    with pytest.raises(ValueError, match="lam"):
        logistic_l2(X, jnp.ones(4), lam=0.0)
    with pytest.raises(ValueError, match="labels"):
        softmax_l2(X, np.array([0, 1, 2, 5]), lam=1.0, n_classes=3)
    with pytest.raises(ValueError, match="X"):
        softmax_l2(jnp.ones((0, 2)), np.array([], dtype=int), lam=1.0)
    with pytest.raises(ValueError, match="mu"):
        logsumexp_reg(X, jnp.ones(4), mu=-1.0)
    with pytest.raises(ValueError, match="A"):
        affine_pullback(jnp.sum, jnp.zeros((3, 3)))
    with pytest.raises(ValueError, match="d"):
        hard_cubic(1, key=jax.random.key(0))
    with pytest.raises(ValueError, match="name"):
        load_problem("mnist")
