"""The weak-Wolfe log-bisection search: trial sequences against hand computations, conditions, bad input."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from nips25_bfgs import WeakWolfe, weak_wolfe, weak_wolfe_log_bisection


def _trials(res) -> list[float]:
    t = np.asarray(res.trials)
    return t[~np.isnan(t)].tolist()


def test_doubling_until_curvature_holds():
    """phi(t) = (t - 10)^2, phi'(0) = -20, beta = 0.5: curvature needs phi'(t) >= -10, first true at t = 8.

    Armijo holds on 1, 2, 4 but the slopes -18, -16, -12 are too steep, so the step doubles: trials 1, 2, 4, 8.
    """
    phi = lambda t: ((t - 10.0) ** 2, 2.0 * (t - 10.0), t)  # noqa: E731
    res = weak_wolfe_log_bisection(phi, 100.0, -20.0, line_search=WeakWolfe(beta=0.5))
    assert _trials(res) == [1.0, 2.0, 4.0, 8.0]
    assert bool(res.success) and float(res.eta) == 8.0 and int(res.n_trials) == 4
    assert float(res.aux) == 8.0


def test_halving_after_armijo_fails():
    """phi(t) = (t - 0.3)^2: at t = 1 Armijo fails (0.49 > 0.09), at t = 1/2 both conditions hold."""
    phi = lambda t: ((t - 0.3) ** 2, 2.0 * (t - 0.3), None)  # noqa: E731
    res = weak_wolfe_log_bisection(phi, 0.09, -0.6)
    assert _trials(res) == [1.0, 0.5]
    assert float(res.eta) == 0.5 and bool(res.success)


def test_geometric_bisection_sequence():
    """phi(t) = -t for t <= 3, -t + 100 (t - 3)^2 beyond: slopes -1 fail curvature until the wall at 3.

    Hand computation: 1, 2 (curvature fails, double), 4 (Armijo fails), then geometric means in log t:
    2^1.5 (curvature fails), 2^1.75 = 3.36 (Armijo fails), 2^1.625 = 3.08 (accepted: f = -2.37, slope 15.9).
    """

    def phi(t):
        wall = jnp.where(t > 3.0, t - 3.0, 0.0)
        return -t + 100.0 * wall**2, -1.0 + 200.0 * wall, None

    res = weak_wolfe_log_bisection(phi, 0.0, -1.0)
    np.testing.assert_allclose(_trials(res), 2.0 ** np.array([0.0, 1.0, 2.0, 1.5, 1.75, 1.625]), rtol=1e-14)
    assert bool(res.success)


def test_accepted_step_meets_both_conditions_and_nan_is_rejected():
    """A start where every trial above 1/8 overflows (NaN) still ends at a finite weak-Wolfe step."""

    def phi(t):
        value = jnp.where(t > 0.125, jnp.nan, (t - 0.1) ** 2)
        return value, jnp.where(t > 0.125, jnp.nan, 2.0 * (t - 0.1)), None

    f0, s0 = 0.01, -0.2
    res = weak_wolfe_log_bisection(phi, f0, s0)
    eta = float(res.eta)
    assert bool(res.success) and np.isfinite(float(res.value))
    assert float(res.value) <= f0 + 1e-4 * eta * s0
    assert float(res.slope) >= 0.9 * s0


def test_failure_is_reported_not_nan():
    """A direction that is not a descent direction is reported as a failed search with no trial."""
    res = weak_wolfe_log_bisection(lambda t: (t, 1.0 + 0.0 * t, None), 0.0, 1.0)
    assert not bool(res.success) and int(res.n_trials) == 0


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 0.5}, "alpha"),
        ({"alpha": 0.3, "beta": 0.2}, "beta"),
        ({"beta": 1.0}, "beta"),
        ({"eta0": 0.0}, "eta0"),
        ({"max_trials": 0}, "max_trials"),
        ({"alpha": float("nan")}, "alpha"),
    ],
)
def test_bad_constants_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        weak_wolfe(**kwargs)
