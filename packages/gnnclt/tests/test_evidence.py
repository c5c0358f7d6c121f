"""Known-answer tests of the replicate statistics that decide the claims of ``reproduce`` (0.2.2 design)."""

import numpy as np
import pytest
from nips25_gnnclt.evidence import Z_SE, log_log_slope, mean_se, paired_excess


def test_mean_se_hand_computed():
    mean, se = mean_se([1.0, 2.0, 3.0, 6.0])
    assert mean == pytest.approx(3.0)
    assert se == pytest.approx(np.sqrt(((4 + 1 + 0 + 9) / 3) / 4))  # sd / sqrt(R), ddof = 1


def test_gap_series_that_falls_with_nu_passes():
    """Synthetic min-objective gaps ~ 0.2 / nu plus small replicate noise: the paired fall is many SEs wide."""
    nus = np.array([25.0, 100.0, 400.0])
    noise = np.array([[0.0004, -0.0002, 0.0001], [-0.0003, 0.0001, 0.0], [0.0002, 0.0002, -0.0001]])
    gaps = 0.2 / nus + noise
    res = paired_excess(gaps[:, 0], gaps[:, -1])
    assert res["holds"] and res["mean"] == pytest.approx(0.2 / 25 - 0.2 / 400, abs=1e-3)
    slope = log_log_slope(nus, gaps)
    assert slope["mean"] == pytest.approx(-1.0, abs=0.05) and slope["mean"] < -Z_SE * slope["se"]


def test_flat_or_rising_gap_series_fails():
    """A gap that does not fall (same level, replicate noise) or rises must not pass."""
    lo = np.array([0.010, 0.004, 0.008, 0.002, 0.006])
    flat = np.array([0.006, 0.008, 0.002, 0.010, 0.004])  # a permutation: mean difference exactly 0
    assert paired_excess(lo, flat)["mean"] == pytest.approx(0.0, abs=1e-15)
    assert not paired_excess(lo, flat)["holds"]
    assert not paired_excess(lo, lo + 0.001)["holds"]


def test_a_fall_within_two_se_fails_and_beyond_passes():
    """Differences with mean 0.1 and SE 0.091: they fail at z = 2 and the verdict flips exactly at z = mean / SE."""
    d = np.array([0.3, -0.1, 0.2, 0.0])  # mean 0.1, SE = sd / 2
    se = d.std(ddof=1) / 2
    assert Z_SE * se > 0.1  # so the pair fails at z = 2 ...
    assert not paired_excess(d, np.zeros(4))["holds"]
    assert paired_excess(d, np.zeros(4), z=0.1 / se - 1e-9)["holds"]  # ... and passes just below its own z
    assert not paired_excess(d, np.zeros(4), z=0.1 / se + 1e-9)["holds"]


def test_pairing_matters():
    """A shared replicate effect cancels in the paired difference: unpaired the spread would hide the fall."""
    shared = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    a, b = shared + 0.1, shared + np.array([0.0, 0.01, -0.01, 0.005, -0.005])
    assert paired_excess(a, b)["holds"]
    assert paired_excess(a, b)["se"] < 0.01


def test_identical_differences_have_zero_se():
    assert paired_excess([2.0, 3.0], [1.0, 2.0]) == {"mean": 1.0, "se": 0.0, "holds": True}
    assert not paired_excess([1.0, 2.0], [1.0, 2.0])["holds"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: mean_se([1.0]), "values"),
        (lambda: mean_se([1.0, np.nan]), "values"),
        (lambda: paired_excess([1.0, 2.0], [1.0, 2.0, 3.0]), "pair up"),
        (lambda: paired_excess([1.0, 2.0], [1.0, 2.0], z=0.0), "z"),
        (lambda: log_log_slope([1.0, -1.0], np.ones((2, 2))), "x"),
        (lambda: log_log_slope([1.0, 2.0], np.ones((2, 3))), "values"),
        (lambda: log_log_slope([1.0, 2.0], -np.ones((2, 2))), "values"),
    ],
)
def test_bad_input_names_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()
