"""Noise models: stationary variance and autocorrelation of the exact OU / white transitions."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from nips25_olfaction import OUNoise, WhiteNoise
from nips25_olfaction.noise import noise_step


def _path(sigma, decay, n=40_000, width=64):
    def step(xi, k):
        nxt = noise_step(xi, k, jnp.float32(sigma), decay)
        return nxt, nxt

    xi0 = sigma * jax.random.normal(jax.random.key(1), (width,))
    _, path = jax.lax.scan(step, xi0, jax.random.split(jax.random.key(2), n))
    return np.asarray(path)


def test_ou_stationary_variance_and_autocorrelation():
    """Var = sigma^2 within 5%; lag-k autocorrelation = exp(-k dt / tau) within 0.03."""
    noise, dt = OUNoise(3.0, tau=20e-3), 0.5e-3
    path = _path(noise.sigma, noise.decay_over(dt))
    assert path.var() == pytest.approx(9.0, rel=0.05)
    for lag in (10, 40):
        x = path[:-lag].ravel()
        y = path[lag:].ravel()
        assert np.corrcoef(x, y)[0, 1] == pytest.approx(math.exp(-lag * dt / noise.tau), abs=0.03)


def test_white_noise_is_uncorrelated_with_variance_sigma2():
    path = _path(2.0, WhiteNoise(2.0).decay_over(0.5e-3), n=5000)
    assert path.var() == pytest.approx(4.0, rel=0.05)
    assert abs(np.corrcoef(path[:-1].ravel(), path[1:].ravel())[0, 1]) < 0.03


@pytest.mark.parametrize("bad", [{"sigma": -1.0}, {"sigma": float("nan")}, {"sigma": 1.0, "tau": 0.0}])
def test_bad_noise(bad):
    with pytest.raises(ValueError, match="sigma|tau"):
        OUNoise(**bad)
