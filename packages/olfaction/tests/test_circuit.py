"""Wiring, lateral inhibition, determinism and bad input of the circuit simulation."""

import itertools
from dataclasses import replace

import jax
import numpy as np
import pytest
from nips25_olfaction import (
    Circuit,
    CircuitParams,
    OUNoise,
    WhiteNoise,
    olsen_pn,
    random_claws,
    simulate,
    synthetic_odors,
)

PARAMS = CircuitParams(window=0.05, w_pn=4e-3)


@pytest.fixture(scope="module")
def odors():
    return olsen_pn(synthetic_odors(np.random.default_rng(0), 6))


@pytest.mark.parametrize("claws", [1, 6, 24])
def test_exactly_the_configured_claws(claws):
    c = np.asarray(random_claws(jax.random.key(3), 500, 24, claws))
    assert set(np.unique(c)) <= {0.0, 1.0}
    assert (c.sum(axis=1) == claws).all()


def test_same_key_same_wiring_and_spikes(odors):
    a = Circuit.random(jax.random.key(1), n_pn=24, n_kc=200, params=PARAMS)
    b = Circuit.random(jax.random.key(1), n_pn=24, n_kc=200, params=PARAMS)
    np.testing.assert_array_equal(a.connectivity, b.connectivity)
    x = simulate(a, odors, noise=OUNoise(20.0), n_trials=3, key=jax.random.key(5))
    y = simulate(b, odors, noise=OUNoise(20.0), n_trials=3, key=jax.random.key(5))
    np.testing.assert_array_equal(x, y)
    z = simulate(a, odors, noise=OUNoise(20.0), n_trials=3, key=jax.random.key(6))
    assert not np.array_equal(x, z)


def test_li_off_equals_feed_forward(odors):
    """li=False gives spike counts identical to the LI circuit with zero inhibition strength."""
    base = Circuit.random(jax.random.key(1), n_pn=24, n_kc=200, params=PARAMS)
    off = simulate(base.with_condition("none"), odors, noise=OUNoise(10.0), n_trials=2, key=jax.random.key(0))
    zero = replace(base, params=replace(PARAMS, w_li=0.0)).with_condition("LI")
    np.testing.assert_array_equal(off, simulate(zero, odors, noise=OUNoise(10.0), n_trials=2, key=jax.random.key(0)))


def test_activity_decreases_with_inhibition(odors):
    base = Circuit.random(jax.random.key(1), n_pn=24, n_kc=300, params=PARAMS).with_condition("LI")
    totals = [
        float(
            np.asarray(
                simulate(
                    replace(base, params=replace(PARAMS, w_li=w)),
                    odors,
                    noise=WhiteNoise(0.0),
                    n_trials=1,
                    key=jax.random.key(0),
                )
            ).sum()
        )
        for w in (0.0, 0.01, 0.05, 0.2)
    ]
    assert all(a >= b for a, b in itertools.pairwise(totals))
    assert totals[0] > totals[-1]


def test_raster_sums_to_counts(odors):
    c = Circuit.random(jax.random.key(1), n_pn=24, n_kc=50, params=PARAMS)
    counts = simulate(c, odors[:2], noise=OUNoise(5.0), n_trials=2, key=jax.random.key(0))
    raster = simulate(c, odors[:2], noise=OUNoise(5.0), n_trials=2, key=jax.random.key(0), record="raster")
    assert raster.shape == (2, 2, PARAMS.n_steps, 50)
    np.testing.assert_array_equal(np.asarray(raster).sum(axis=2), counts)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pn_rates": np.ones((2, 5))}, "PNs"),
        ({"pn_rates": np.full((2, 24), np.nan)}, "finite"),
        ({"pn_rates": np.ones(24)}, "shape"),
        ({"n_trials": 0}, "n_trials"),
        ({"noise": 3.0}, "noise"),
        ({"record": "voltage"}, "record"),
    ],
)
def test_bad_input(kwargs, match, odors):
    c = Circuit.random(jax.random.key(1), n_pn=24, n_kc=10, params=PARAMS)
    args = {"pn_rates": odors, "noise": WhiteNoise(0.0), "n_trials": 1, "key": jax.random.key(0)} | kwargs
    with pytest.raises((ValueError, TypeError), match=match):
        simulate(c, **args)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"tau_m": 0.0}, "tau_m"), ({"dt": 0.1}, "dt"), ({"theta": 0.0}, "theta"), ({"w_li": -1.0}, "w_li")],
)
def test_bad_params(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CircuitParams(**kwargs)


def test_bad_wiring_and_condition():
    with pytest.raises(ValueError, match="claws"):
        random_claws(jax.random.key(0), 5, 4, 5)
    with pytest.raises(ValueError, match="connectivity"):
        Circuit(np.full((2, 2), 0.5))
    with pytest.raises(ValueError, match="condition"):
        Circuit.random(jax.random.key(0), n_pn=4, n_kc=3, claws=2).with_condition("APL")


def test_time_varying_drive_equals_constant_and_onset_matters(odors):
    """A (K, T, n_pn) drive that is constant in time equals the (K, n_pn) drive; an input switched off after the
    onset gives fewer spikes."""
    c = Circuit.random(jax.random.key(1), n_pn=24, n_kc=80, params=PARAMS)
    const = simulate(c, odors, noise=OUNoise(5.0), n_trials=2, key=jax.random.key(0))
    steps = np.broadcast_to(odors[:, None, :], (odors.shape[0], PARAMS.n_steps, 24))
    np.testing.assert_array_equal(simulate(c, steps, noise=OUNoise(5.0), n_trials=2, key=jax.random.key(0)), const)
    pulse = steps.copy()
    pulse[:, PARAMS.n_steps // 4 :] = 0.0
    assert float(simulate(c, pulse, noise=WhiteNoise(0.0), n_trials=1, key=jax.random.key(0)).sum()) < float(
        const.sum()
    )
    with pytest.raises(ValueError, match="T="):
        simulate(c, steps[:, :3], noise=WhiteNoise(0.0), n_trials=1, key=jax.random.key(0))


def test_matched_calibration_equalises_sparseness(odors):
    """calibrate_matched: every condition reaches the same active fraction (within tolerance) on its odours."""
    from nips25_olfaction import calibrate_matched

    c = Circuit.random(jax.random.key(2), n_pn=24, n_kc=200, params=PARAMS)
    matched = calibrate_matched(odors, c, tolerance=0.02)
    for cond, p in matched.items():
        counts = simulate(
            replace(c, params=p).with_condition(cond), odors, noise=WhiteNoise(0.0), n_trials=1, key=jax.random.key(0)
        )
        assert abs(float(np.mean(np.asarray(counts) > 0)) - 0.10) <= 0.02, cond
    assert matched["LI+SFA"].w_li >= matched["LI"].w_li  # SFA lowers the rate, so LI+SFA needs more inhibition


@pytest.mark.parametrize("n_trials", [1, 3, 9])
def test_chunked_cpu_path_equals_one_vmap(odors, n_trials):
    """The CPU path (odours in sequential chunks, padded when the chunk does not divide K) gives the same counts and
    rasters as one vmap over every odour and trial."""
    from nips25_olfaction import circuit as circuit_mod

    c = Circuit.random(jax.random.key(3), n_pn=24, n_kc=40, params=replace(PARAMS, w_li=0.03, g_sfa=0.2))
    five = odors[:5]  # 5 odours: chunks of 8 // n_trials do not divide 5 for n_trials = 3
    p = c.params
    gains = np.asarray([p.w_pn, p.w_li, p.g_sfa], np.float32)
    structure = replace(p, w_pn=0.0, w_li=0.0, g_sfa=0.0)
    args = (c.connectivity, jax.numpy.asarray(five, "float32"), jax.random.key(4), gains, np.float32(20.0), structure,
            OUNoise(20.0).decay_over(p.dt), n_trials)  # fmt: skip
    for raster in (False, True):
        whole = circuit_mod._simulate_jit(*args, raster, 0)
        chunked = circuit_mod._simulate_jit(*args, raster, circuit_mod._TRIALS_PER_CHUNK)
        np.testing.assert_array_equal(np.asarray(chunked), np.asarray(whole))
    public = simulate(c, five, noise=OUNoise(20.0), n_trials=n_trials, key=jax.random.key(4))
    np.testing.assert_array_equal(np.asarray(public), np.asarray(circuit_mod._simulate_jit(*args, False, 0)))
