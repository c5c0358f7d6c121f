"""Every test runs in float64 (the 1e-10 tolerances need it): x64 is switched on locally, for the session only."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.tree_util import Partial
from nips25_bfgs import logistic_l2


@pytest.fixture(autouse=True, scope="session")
def float64():
    with jax.enable_x64(True):
        yield


def _quadratic(Q: jax.Array, b: jax.Array, x: jax.Array) -> jax.Array:
    return 0.5 * x @ Q @ x - b @ x


@pytest.fixture(scope="session")
def quadratic():
    """Factory of f(x) = x^T Q x / 2 - b^T x (one module-level function: one compile per size)."""
    return lambda Q, b: Partial(_quadratic, jnp.asarray(Q), jnp.asarray(b))


@pytest.fixture(scope="session")
def small_logistic(float64):
    """A 10-d l2-logistic problem on fixed random data (40 rows), lam = 0.05, and a non-zero start."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 10))
    y = np.where(X @ rng.normal(size=10) + 0.5 * rng.normal(size=40) > 0, 1.0, -1.0)
    fun = logistic_l2(jnp.asarray(X), jnp.asarray(y), lam=0.05)
    return fun, jnp.asarray(rng.normal(size=10)), X, y
