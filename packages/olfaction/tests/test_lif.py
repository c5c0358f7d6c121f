"""The KC neuron: f-I curve against its closed form, adaptation against its mean-field steady state."""

import itertools
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from nips25_olfaction import Circuit, CircuitParams, WhiteNoise, lif_rate, lif_v_inf, sfa_gain_for_ratio, simulate

FINE = CircuitParams(dt=2e-5, window=1.0)


def _single(v_inf: float, params: CircuitParams, *, sfa: bool = False, record="counts"):
    """One KC with one claw on one PN firing at 100 Hz, gain set so that its steady potential is v_inf."""
    p = replace(params, w_pn=v_inf / 100.0)
    circuit = Circuit(jnp.ones((1, 1), jnp.float32), li=False, sfa=sfa, params=p)
    return np.asarray(
        simulate(circuit, [[100.0]], noise=WhiteNoise(0.0), n_trials=1, key=jax.random.key(0), record=record)
    )


@pytest.mark.parametrize("v_inf", [1.2, 2.0, 4.0])
def test_f_i_curve_matches_closed_form(v_inf):
    """r = 1 / (t_ref + tau_m ln((V - V_r)/(V - theta))) within 2% (grid quantisation and window edges)."""
    rate = _single(v_inf, FINE)[0, 0, 0] / FINE.window
    assert rate == pytest.approx(lif_rate(v_inf, FINE), rel=0.02)


def test_below_threshold_is_silent():
    assert _single(0.95, FINE)[0, 0, 0] == 0.0
    assert lif_rate(0.95, FINE) == 0.0


def test_lif_inverse():
    for r in (5.0, 50.0, 300.0):
        assert lif_rate(lif_v_inf(r, FINE), FINE) == pytest.approx(r, rel=1e-6)  # exp(19.8) at 5 Hz costs digits


def test_adapted_rate_matches_mean_field_and_decays():
    """SFA with g from sfa_gain_for_ratio(ratio=0.5) halves the steady rate (mean-field, within 10%), and the late
    rate of a step response is below the early rate."""
    p = replace(FINE, window=1.0)
    g = sfa_gain_for_ratio(p, ratio=0.5, drive=2.0)
    p = replace(p, g_sfa=g)
    raster = _single(2.0, p, sfa=True, record="raster")[0, 0, :, 0]
    n = raster.size
    late = raster[n // 2 :].sum() / (p.window / 2)
    early = raster[: n // 20].sum() / (p.window / 20)
    assert late == pytest.approx(0.5 * lif_rate(2.0, p), rel=0.10)
    assert late < early


def test_rate_falls_as_adaptation_grows():
    rates = [_single(2.0, replace(FINE, g_sfa=g, window=0.3), sfa=True)[0, 0, 0] for g in (0.0, 0.05, 0.2, 0.8)]
    assert all(a > b for a, b in itertools.pairwise(rates))
