"""The optax interface: a user-driven loop reproduces bfgs() iterate by iterate; the search composes alone."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from nips25_bfgs import bfgs, bfgs_transform, scale_by_bfgs, scale_by_weak_wolfe_linesearch, weak_wolfe


def test_optax_loop_matches_solver_iterates(small_logistic):
    """Eight update() calls with value_and_grad_from_state give the first eight iterates of bfgs() (1e-12)."""
    fun, x0, _, _ = small_logistic
    ref = bfgs(fun, x0, B0=0.5, tol=1e-14, history=True)  # same static settings as other tests: one compile
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
        assert float(optax.tree.get(state, "eta")) == float(ref.history.eta[t])
    assert int(optax.tree.get(state, "n_iter")) == 8 and int(ref.n_iter) > 8
    assert float(optax.tree.get(state, "value")) == pytest.approx(float(fun(x)), rel=1e-14)


def test_linesearch_alone_gives_weak_wolfe_steps_and_reusable_value_and_grad(small_logistic):
    """Gradient descent with the weak-Wolfe search (no BFGS): every step meets both conditions, and the state's
    value/grad equal f and grad f at the new params (what value_and_grad_from_state reuses)."""
    fun, x0, _, _ = small_logistic
    ls = weak_wolfe(alpha=1e-4, beta=0.9)
    opt = optax.chain(optax.scale(-1.0), scale_by_weak_wolfe_linesearch(ls))
    value_and_grad = optax.value_and_grad_from_state(fun)
    x, state = x0, opt.init(x0)
    for _ in range(3):
        value, grad = value_and_grad(x, state=state)
        updates, state = opt.update(grad, state, x, value=value, grad=grad, value_fn=fun)
        eta = float(optax.tree.get(state, "eta"))
        x_new = optax.apply_updates(x, updates)
        slope0 = float(jnp.vdot(grad, -grad))
        assert bool(optax.tree.get(state, "ls_success"))
        assert float(fun(x_new)) <= float(value) + ls.alpha * eta * slope0
        assert float(jnp.vdot(jax.grad(fun)(x_new), -grad)) >= ls.beta * slope0
        assert float(optax.tree.get(state, "value")) == pytest.approx(float(fun(x_new)), rel=1e-14)
        np.testing.assert_allclose(
            np.asarray(optax.tree.get(state, "grad")), np.asarray(jax.grad(fun)(x_new)), atol=1e-14
        )
        x = x_new


def test_scale_by_bfgs_recovers_a_quadratic_hessian_from_its_own_pairs():
    """Fed the gradients of f = x^T Q x / 2 along conjugate steps, scale_by_bfgs ends with H = Q^-1, so its output
    is Q^-1 g (the hereditary property, through the optax state)."""
    rng = np.random.default_rng(3)
    G = rng.normal(size=(3, 3))
    Q = G @ G.T + np.eye(3)
    opt = scale_by_bfgs()
    x = jnp.zeros(3)
    state = opt.init(x)
    S = []  # Q-conjugate steps by Gram-Schmidt in the Q inner product
    for v in rng.normal(size=(3, 3)):
        for u in S:
            v = v - (u @ Q @ v) / (u @ Q @ u) * u
        S.append(v)
    for s in S:
        _, state = opt.update(jnp.asarray(Q) @ x, state, x)
        x = x + jnp.asarray(s)
    g = jnp.asarray(Q) @ x
    out, state = opt.update(g, state, x)
    np.testing.assert_allclose(np.asarray(out), np.linalg.solve(Q, np.asarray(g)), rtol=1e-9, atol=1e-9)
    assert int(state.n_skipped) == 0


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
        opt.update(jnp.ones(2), opt.init(jnp.zeros(2)), jnp.zeros(2), value=jnp.asarray(0.0), grad=jnp.ones(2))
    with pytest.raises(ValueError, match="params"):
        scale_by_bfgs().update(jnp.ones(2), scale_by_bfgs().init(jnp.zeros(2)))


@pytest.mark.parametrize("B0", [-1.0, 0, "eye"])
def test_bad_scalar_or_string_B0_raises_at_construction(B0):
    """bfgs_transform validates a scalar or string B0 when built, not at init()."""
    with pytest.raises(ValueError, match="B0"):
        bfgs_transform(B0=B0)
