"""The optax interface: a user-driven loop reproduces bfgs() iterate by iterate."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from nips25_bfgs import bfgs, bfgs_transform


def test_optax_loop_matches_solver_iterates(small_logistic):
    """Eight update() calls with value_and_grad_from_state give the first eight iterates of bfgs() (1e-12)."""
    fun, x0, _, _ = small_logistic
    ref = bfgs(fun, x0, B0=0.5, tol=1e-14)  # same static settings as other tests: one shared compile
    opt = bfgs_transform(B0=0.5)
    value_and_grad = optax.value_and_grad_from_state(fun)

    @jax.jit
    def step(x, state):
        value, grad = value_and_grad(x, state=state)
        updates, state = opt.update(grad, state, x, value=value, grad=grad, value_fn=fun)
        return optax.apply_updates(x, updates), state

    x, state = x0, opt.init(x0)
    for t in range(8):
        x, state = step(x, state)
        np.testing.assert_allclose(np.asarray(x), np.asarray(ref.history.x[t + 1]), atol=1e-12)
        assert float(state.eta) == float(ref.history.eta[t])
    assert int(state.n_iter) == 8 and int(ref.n_iter) > 8
    assert float(state.value) == pytest.approx(float(fun(x)), rel=1e-14)


def test_transform_bad_input():
    with pytest.raises(ValueError, match="B0"):
        bfgs_transform(B0="hessian")
    with pytest.raises(ValueError, match="form"):
        bfgs_transform(form="sr1")
    with pytest.raises(TypeError, match="line_search"):
        bfgs_transform(line_search="wolfe")
    opt = bfgs_transform(B0=jnp.eye(2))
    with pytest.raises(ValueError, match="B0"):
        opt.init(jnp.zeros(3))
    with pytest.raises(ValueError, match="value_fn"):
        opt.update(jnp.ones(2), opt.init(jnp.zeros(2)), jnp.zeros(2), value=jnp.asarray(0.0))


@pytest.mark.parametrize("B0", [-1.0, 0, "eye"])
def test_bad_scalar_or_string_B0_raises_at_construction(B0):
    """bfgs_transform validates a scalar or string B0 when built, not at init()."""
    with pytest.raises(ValueError, match="B0"):
        bfgs_transform(B0=B0)
