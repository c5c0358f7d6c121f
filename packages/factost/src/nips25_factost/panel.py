"""Spatio-temporal panels: a (time, node) array with timestamps, calendar features and optional coordinates.

Conventions follow torch-spatiotemporal / BasicTS: inputs ``[B, L, N]``, targets ``[B, H, N]``; missing values are
``NaN`` and are ignored by the masked metrics (:mod:`nips25_factost.metrics`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["CALENDAR_FEATURES", "STPanel", "Windows", "calendar_features", "make_windows", "split_panel"]

#: Calendar features and their number of categories. ``time_of_day`` is used only for sub-daily panels.
CALENDAR_FEATURES: dict[str, int] = {"day_of_week": 7, "month": 12, "time_of_day": 24}


def calendar_features(timestamps: pd.DatetimeIndex, *, sub_daily: bool | None = None) -> tuple[np.ndarray, dict]:
    """Integer calendar indices per time step (STMF's time metadata, FactoST Stage 2).

    Args:
        timestamps: ``(T,)`` datetimes.
        sub_daily: add ``time_of_day`` (hour, 24 classes); inferred from the median step when ``None``.

    Returns:
        ``(codes, sizes)``: ``codes`` ``(T, C)`` int64 (day of week 0..6, month 0..11[, hour 0..23]) and the ordered
        ``{feature: n_categories}`` mapping.

    Raises:
        TypeError: if ``timestamps`` is not a ``DatetimeIndex``.
        ValueError: if it is empty.
    """
    if not isinstance(timestamps, pd.DatetimeIndex):
        raise TypeError(f"timestamps must be a pandas DatetimeIndex, got {type(timestamps).__name__}")
    if len(timestamps) == 0:
        raise ValueError("timestamps must not be empty")
    if sub_daily is None:
        sub_daily = len(timestamps) > 1 and pd.Series(timestamps).diff().median() < pd.Timedelta(days=1)
    cols = [np.asarray(timestamps.dayofweek), np.asarray(timestamps.month) - 1]
    sizes = {"day_of_week": 7, "month": 12}
    if sub_daily:
        cols.append(np.asarray(timestamps.hour))
        sizes["time_of_day"] = 24
    return np.stack(cols, axis=1).astype(np.int64), sizes


@dataclass(frozen=True)
class STPanel:
    """A spatio-temporal panel ``X in R^{T x N}`` with timestamps and optional node coordinates.

    Args:
        values: ``(T, N)`` float; ``NaN`` marks a missing value, ``inf`` is rejected.
        timestamps: ``(T,)`` strictly increasing datetimes (anything ``pd.DatetimeIndex`` accepts).
        coords: ``(N, 2)`` finite node coordinates (e.g. latitude, longitude in degrees) or ``None``.
        name: a label for reports.
        node_names: ``N`` names; ``node0..`` when omitted.

    Raises:
        ValueError: on wrong shapes, ``inf``, all-missing nodes, empty panels, unsorted timestamps.

    Example:
        >>> import numpy as np, pandas as pd
        >>> p = STPanel(np.ones((30, 2)), pd.date_range("2020-01-01", periods=30, freq="D"))
        >>> p.n_times, p.n_nodes
        (30, 2)
    """

    values: np.ndarray
    timestamps: pd.DatetimeIndex
    coords: np.ndarray | None = None
    name: str = "panel"
    node_names: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        values = np.asarray(self.values)
        if values.dtype.kind not in "fiu":
            raise TypeError(f"values must be numeric, got dtype {values.dtype}")
        values = values.astype(np.float64)
        if values.ndim != 2:
            raise ValueError(f"values must be a (T, N) array, got shape {values.shape}")
        if values.shape[0] == 0 or values.shape[1] == 0:
            raise ValueError(f"values must be non-empty, got shape {values.shape}")
        names = self.node_names if self.node_names is not None and len(self.node_names) == values.shape[1] else None

        def node(j: int) -> str:
            return f"node {j}" if names is None else f"node {j} ({names[j]!r})"

        if np.isinf(values).any():
            row, col = (int(i) for i in np.argwhere(np.isinf(values))[0])
            raise ValueError(f"values must not contain inf (use NaN for missing values): {node(col)}, row {row}")
        if np.isnan(values).all(axis=0).any():
            empty = [node(int(j)) for j in np.flatnonzero(np.isnan(values).all(axis=0))]
            raise ValueError(f"values: every node needs at least one observed value; no value for {', '.join(empty)}")
        try:
            ts = pd.DatetimeIndex(self.timestamps)
        except (TypeError, ValueError) as err:
            raise TypeError(f"timestamps must be convertible to a DatetimeIndex: {err}") from err
        if len(ts) != values.shape[0]:
            raise ValueError(f"timestamps has length {len(ts)}, expected T={values.shape[0]} (rows of values)")
        if len(ts) > 1 and not (ts[1:] > ts[:-1]).all():
            row = int(np.flatnonzero(~(ts[1:] > ts[:-1]))[0]) + 1
            raise ValueError(f"timestamps must be strictly increasing; row {row} ({ts[row]}) does not follow row "
                             f"{row - 1} ({ts[row - 1]})")  # fmt: skip
        coords = None
        if self.coords is not None:
            coords = np.asarray(self.coords, dtype=np.float64)
            if coords.shape != (values.shape[1], 2):
                raise ValueError(f"coords must have shape (N, 2) = ({values.shape[1]}, 2), got {coords.shape}")
            if not np.isfinite(coords).all():
                raise ValueError("coords must be finite")
        names = tuple(self.node_names) or tuple(f"node{i}" for i in range(values.shape[1]))
        if len(names) != values.shape[1]:
            raise ValueError(f"node_names has {len(names)} entries, expected N={values.shape[1]}")
        values.setflags(write=False)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "timestamps", ts)
        object.__setattr__(self, "coords", coords)
        object.__setattr__(self, "node_names", names)

    @property
    def n_times(self) -> int:
        """Number of time steps ``T``."""
        return int(self.values.shape[0])

    @property
    def n_nodes(self) -> int:
        """Number of nodes ``N``."""
        return int(self.values.shape[1])

    def calendar(self) -> tuple[np.ndarray, dict[str, int]]:
        """``(codes (T, C) int64, {feature: n_categories})`` from :func:`calendar_features`."""
        return calendar_features(self.timestamps)

    def slice(self, start: int, stop: int) -> STPanel:
        """The time steps ``start:stop`` as a new panel (same nodes and coordinates)."""
        if not 0 <= start < stop <= self.n_times:
            raise ValueError(f"slice: need 0 <= start < stop <= T={self.n_times}, got start={start}, stop={stop}")
        return STPanel(self.values[start:stop], self.timestamps[start:stop], self.coords, self.name, self.node_names)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, *, coords: np.ndarray | None = None, name: str = "panel") -> STPanel:
        """A panel from a DataFrame indexed by timestamps with one column per node."""
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
        return cls(frame.to_numpy(dtype=np.float64), pd.DatetimeIndex(frame.index), coords, name,
                   tuple(map(str, frame.columns)))  # fmt: skip


@dataclass(frozen=True)
class Windows:
    """Sliding forecasting windows of a panel.

    Attributes:
        x: ``(W, L, N)`` contexts (NaN where missing).
        y: ``(W, H, N)`` targets (NaN where missing).
        calendar: ``(W, L + H, C)`` int64 calendar codes of the context and the (known) future steps.
        start: ``(W,)`` index of each window's first step in the panel.
    """

    x: np.ndarray
    y: np.ndarray
    calendar: np.ndarray
    start: np.ndarray

    def __len__(self) -> int:
        return int(self.x.shape[0])

    def take(self, index: Sequence[int] | np.ndarray) -> Windows:
        """A subset of the windows."""
        idx = np.asarray(index)
        return Windows(self.x[idx], self.y[idx], self.calendar[idx], self.start[idx])


def make_windows(panel: STPanel, *, context: int, horizon: int, stride: int = 1) -> Windows:
    """All windows ``(x_{t-L+1..t}, y_{t+1..t+H})`` of a panel with step ``stride``.

    Args:
        panel: the panel.
        context: ``L >= 1`` context steps.
        horizon: ``H >= 1`` forecast steps.
        stride: step between window starts, ``>= 1``.

    Returns:
        :class:`Windows` with ``W = floor((T - L - H) / stride) + 1`` windows.

    Raises:
        TypeError: if ``panel`` is not an :class:`STPanel`.
        ValueError: if a length is out of range or the panel is shorter than ``L + H``.
    """
    if not isinstance(panel, STPanel):
        raise TypeError(f"panel must be an STPanel, got {type(panel).__name__}")
    for label, value in (("context", context), ("horizon", horizon), ("stride", stride)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{label} must be an integer >= 1, got {value!r}")
    span = context + horizon
    if panel.n_times < span:
        raise ValueError(f"panel has T={panel.n_times} steps, fewer than context + horizon = {span}")
    cal, _ = panel.calendar()
    starts = np.arange(0, panel.n_times - span + 1, stride)
    idx = starts[:, None] + np.arange(span)[None, :]
    vals = panel.values[idx]
    return Windows(vals[:, :context].copy(), vals[:, context:].copy(), cal[idx], starts)


def split_panel(panel: STPanel, *, train: float = 0.7, val: float = 0.1) -> tuple[STPanel, STPanel, STPanel]:
    """Chronological train / validation / test split (fractions of ``T``; test is the rest).

    Raises:
        ValueError: if the fractions are not in ``(0, 1)`` with ``train + val < 1``, or a part would be empty.
    """
    if not isinstance(panel, STPanel):
        raise TypeError(f"panel must be an STPanel, got {type(panel).__name__}")
    if not (0.0 < train < 1.0 and 0.0 <= val < 1.0 and train + val < 1.0):
        raise ValueError(f"train, val must satisfy 0 < train, 0 <= val, train + val < 1; got {train}, {val}")
    a = round(train * panel.n_times)
    b = round((train + val) * panel.n_times)
    if a < 1 or b >= panel.n_times or (val > 0 and b <= a):
        raise ValueError(f"split of T={panel.n_times} with train={train}, val={val} leaves an empty part")
    val_part = panel.slice(a, b) if b > a else panel.slice(a, a + 1)
    return panel.slice(0, a), val_part, panel.slice(b, panel.n_times)
