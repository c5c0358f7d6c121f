"""0.2.1's one-pass inverse update gives the same iterates as 0.2.0's iteration (rebuilt here), bit for bit."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from nips25_bfgs import load_problem
from nips25_bfgs.iteration import Iterate, bfgs_iteration, direction
from nips25_bfgs.linesearch import WeakWolfe, weak_wolfe_log_bisection
from nips25_bfgs.update import curvature_ok, inverse_update


def _iteration_0_2_0(value_and_grad, it, *, line_search):
    """0.2.0's inverse-form iteration: update, select on s^T y, direction, then a second (d, d) select."""

    def phi(eta):
        x_new = it.x + eta * it.d
        (f_new, aux_new), g_new = value_and_grad(x_new)
        return f_new, jnp.vdot(g_new, it.d), (x_new, g_new, aux_new)

    res = weak_wolfe_log_bisection(phi, it.f, jnp.vdot(it.g, it.d), line_search=line_search)
    x_new, g_new, _ = res.aux
    s, y = x_new - it.x, g_new - it.g
    M_new = jnp.where(curvature_ok(s, y), inverse_update(it.M, s, y), it.M)
    d_new = direction(M_new, g_new, inverse=True)
    keep = res.success & jnp.all(jnp.isfinite(d_new))
    ok = res.success
    return Iterate(
        x=jnp.where(ok, x_new, it.x),
        f=jnp.where(ok, res.value, it.f),
        g=jnp.where(ok, g_new, it.g),
        M=jnp.where(keep, M_new, it.M),
        d=jnp.where(keep, d_new, it.d),
        aux=None,
    ), res.eta


@functools.partial(jax.jit, static_argnames=("steps", "old"))
def _run(fun, x0, *, steps, old):
    value_and_grad = jax.value_and_grad(lambda z: (fun(z), None), has_aux=True)
    (f0, _), g0 = value_and_grad(x0)
    H0 = jnp.eye(x0.shape[0], dtype=x0.dtype)
    it0 = Iterate(x=x0, f=f0, g=g0, M=H0, d=direction(H0, g0, inverse=True), aux=None)

    def body(it, _):
        if old:
            nxt, eta = _iteration_0_2_0(value_and_grad, it, line_search=WeakWolfe())
        else:
            nxt, info = bfgs_iteration(value_and_grad, it, line_search=WeakWolfe(), inverse=True)
            eta = info.eta
        return nxt, (nxt.x, eta)

    last, (xs, etas) = jax.lax.scan(body, it0, None, length=steps)
    return xs, etas, last.M


@pytest.mark.parametrize("name", ["breast_cancer", "logsumexp"])
def test_iterates_equal_0_2_0(name):
    """From B0 = I, 60 iterations (past the 1e-8 gap on each problem): every iterate, step size and the final H are
    those of 0.2.0's iteration. Bit for bit in this environment; asserted to 1e-12 relative so another CPU's
    rounding of the two compiled programs cannot fail it."""
    prob = load_problem(name)
    new, old = _run(prob.fun, prob.x0, steps=60, old=False), _run(prob.fun, prob.x0, steps=60, old=True)
    for a, b in zip(new, old, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * max(1.0, float(np.max(np.abs(b)))))
    assert np.array_equal(np.asarray(new[1]), np.asarray(old[1]))  # the step sizes: exactly
