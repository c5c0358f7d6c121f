"""The optimistix adapter: optimistix.minimise(fn, nips25_bfgs.BFGS(...), y0) runs the iteration of bfgs()."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
import pytest
from nips25_bfgs import BFGS, bfgs, weak_wolfe


def test_minimise_equals_bfgs_iteration_for_iteration(small_logistic):
    """Same B0 and the same invariant stop (g^T H g / 2 <= atol, rtol = 0): optimistix.minimise with BFGS takes
    exactly bfgs()'s iterations and ends at its point (1e-12); f and the counts agree."""
    fun, x0, _, _ = small_logistic
    ref = bfgs(fun, x0, B0=0.5, tol=1e-14)
    sol = optx.minimise(lambda y, args: fun(y), BFGS(rtol=0.0, atol=1e-14, B0=0.5), x0, max_steps=500)
    assert sol.result == optx.RESULTS.successful
    assert int(sol.stats["n_iter"]) == int(ref.n_iter) == int(sol.stats["num_steps"])
    assert int(sol.stats["n_fev"]) == int(ref.n_fev)
    np.testing.assert_allclose(np.asarray(sol.value), np.asarray(ref.x), atol=1e-12)


def test_minimise_pytree_args_aux_and_hessian_start():
    """A dict y0, args and has_aux pass through; B0="hessian" on a quadratic converges in one unit step to Q^-1 b."""
    rng = np.random.default_rng(4)
    G = rng.normal(size=(3, 3))
    Q, b = jnp.asarray(G @ G.T + np.eye(3)), jnp.asarray(rng.normal(size=3))

    def fn(p, args):
        z = jnp.concatenate([p["a"], p["b"]])
        return 0.5 * z @ args[0] @ z - args[1] @ z, {"norm": jnp.linalg.norm(z)}

    y0 = {"a": jnp.zeros(2), "b": jnp.zeros(1)}
    solver = BFGS(rtol=1e-12, atol=1e-14, B0="hessian")
    sol = optx.minimise(fn, solver, y0, args=(Q, b), has_aux=True)
    z = np.concatenate([sol.value["a"], sol.value["b"]])
    np.testing.assert_allclose(z, np.linalg.solve(Q, b), rtol=1e-10)
    assert int(sol.stats["n_iter"]) == 1 and bool(sol.state.unit_step)
    assert float(sol.aux["norm"]) == pytest.approx(float(np.linalg.norm(z)), rel=1e-12)


def test_failed_search_is_reported_not_nan():
    """B0 = 1e-6 I makes the first trial step 1e6 times too long; with one trial allowed the search fails and
    optimistix reports nonlinear_divergence with the start kept (throw=False), never NaN."""
    fn = lambda y, args: jnp.sum((y - 1.0) ** 2)  # noqa: E731
    solver = BFGS(rtol=1e-10, atol=1e-10, B0=1e-6, line_search=weak_wolfe(max_trials=1))
    sol = optx.minimise(fn, solver, jnp.zeros(2), throw=False)
    assert sol.result == optx.RESULTS.nonlinear_divergence
    np.testing.assert_array_equal(np.asarray(sol.value), np.zeros(2))


def test_cauchy_termination_and_jit_vmap(small_logistic):
    """termination="cauchy" (optimistix's own test on the change of y and f) stops near bfgs()'s minimiser; a vmapped,
    jitted minimise over two starts equals the two separate solves."""
    fun, x0, _, _ = small_logistic
    ref = bfgs(fun, x0, B0=0.5, tol=1e-14).x
    solver = BFGS(rtol=1e-10, atol=1e-10, B0=0.5, termination="cauchy")
    solve = lambda z: optx.minimise(lambda y, args: fun(y), solver, z, max_steps=500).value  # noqa: E731
    starts = jnp.stack([x0, -x0])
    out = np.asarray(jax.jit(jax.vmap(solve))(starts))
    np.testing.assert_allclose(out, np.stack([np.asarray(solve(z)) for z in starts]), atol=1e-12)
    np.testing.assert_allclose(out, np.stack([ref, ref]), atol=1e-5)  # a step-size test: weaker than the decrement


@pytest.mark.parametrize(
    ("kwargs", "exc", "name"),
    [
        ({"rtol": -1.0}, ValueError, "rtol"),
        ({"atol": float("nan")}, ValueError, "atol"),
        ({"form": "sr1"}, ValueError, "form"),
        ({"termination": "grad"}, ValueError, "termination"),
        ({"B0": "scaled"}, ValueError, "B0"),
        ({"B0": -1.0}, ValueError, "B0"),
        ({"line_search": 0.9}, TypeError, "line_search"),
    ],
)
def test_bad_construction_raises(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        BFGS(**{"rtol": 1e-8, "atol": 1e-8, **kwargs})
