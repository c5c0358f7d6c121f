"""SUS ring counts and coverage, LGS order properties, the other samplers."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_st2360d import (
    coverage,
    cubemap_views,
    fibonacci_views,
    latlong_views,
    lgs_order,
    random_order,
    sus_ring_counts,
    sus_views,
    view_overlap,
)


def test_sus_default_rings_are_2_6_8_6_2():
    pitch, counts = sus_ring_counts()
    np.testing.assert_allclose(pitch, [-72.0, -36.0, 0.0, 36.0, 72.0])
    assert counts.tolist() == [2, 6, 8, 6, 2]
    assert sus_views().shape == (24, 2)


@settings(max_examples=30, deadline=None)
@given(n_eq=st.integers(1, 40), n_rings=st.integers(1, 12))
def test_sus_ring_counts_proportional_to_cos_latitude(n_eq, n_rings):
    """N_k = max(1, round(N_eq cos phi_k)): within rounding, views per ring are proportional to cos(latitude)."""
    pitch, counts = sus_ring_counts(n_eq=n_eq, n_rings=n_rings)
    expected = n_eq * np.cos(np.deg2rad(pitch))
    assert (np.abs(counts - np.maximum(1, expected)) <= 0.5 + 1e-9).all()
    views = sus_views(n_eq=n_eq, n_rings=n_rings)
    assert len(views) == counts.sum()
    assert (np.abs(views[:, 1]) < 90.0).all()


@pytest.mark.parametrize(
    "views", [sus_views(), cubemap_views(), fibonacci_views(n=24), latlong_views()], ids=["sus", "cube", "fib", "ll"]
)
def test_views_cover_the_whole_sphere(views):
    """The union of 90-degree views covers 100 % of the ERP pixels."""
    assert coverage(views, fov=90.0, h=96, w=192).min() >= 1


def test_sus_spreads_views_more_uniformly_than_latlong():
    """Lat-long oversamples the poles: its coverage count varies more than SUS's (same 5 rings)."""
    ll, sus = coverage(latlong_views(), fov=90.0), coverage(sus_views(), fov=90.0)
    assert ll[:4].mean() / ll[30:34].mean() > sus[:4].mean() / sus[30:34].mean()


def test_lgs_starts_on_equator_and_never_decreases_latitude():
    views = sus_views()
    order = lgs_order(views)
    assert sorted(order.tolist()) == list(range(len(views)))
    seq = views[order]
    assert seq[0, 1] == 0.0
    assert (np.diff(np.abs(seq[:, 1])) >= -1e-9).all()


def test_lgs_consecutive_frames_in_a_ring_overlap():
    """Within a ring, consecutive LGS frames share a large part of the frame (continuous sweep)."""
    seq = sus_views()[lgs_order(sus_views())]
    for a, b in itertools.pairwise(seq):
        if a[1] == b[1] and abs(a[1]) < 60:
            assert view_overlap(a, b, fov=90.0) > 0.3


def test_lgs_north_first_and_same_direction_options():
    seq = sus_views()[lgs_order(sus_views(), hemispheres="north_first", direction="same")]
    assert seq[0, 1] == 0.0
    assert (seq[8:14, 1] > 0).all() and (seq[16:22, 1] < 0).all()
    yaws = seq[:8, 0]
    assert (np.diff(np.unwrap(np.deg2rad(yaws))) > 0).all()


def test_view_overlap_known_values():
    assert view_overlap(np.array([0.0, 0.0]), np.array([0.0, 0.0]), fov=90.0) == pytest.approx(1.0)
    assert view_overlap(np.array([0.0, 0.0]), np.array([180.0, 0.0]), fov=90.0) == 0.0
    half = view_overlap(np.array([0.0, 0.0]), np.array([45.0, 0.0]), fov=90.0)
    assert 0.3 < half < 0.7


def test_random_order_is_a_deterministic_permutation():
    a, b = random_order(24, seed=3), random_order(24, seed=3)
    assert (a == b).all() and sorted(a.tolist()) == list(range(24))


def test_fibonacci_latitudes_are_area_uniform():
    v = fibonacci_views(n=100)
    np.testing.assert_allclose(np.sort(np.sin(np.deg2rad(v[:, 1]))), (2 * np.arange(100) + 1) / 100 - 1, atol=1e-9)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: sus_views(n_eq=0), "n_eq"),
        (lambda: sus_views(n_rings=0), "n_rings"),
        (lambda: sus_views(yaw_offset=float("inf")), "yaw_offset"),
        (lambda: lgs_order(np.zeros((3, 3))), "views"),
        (lambda: lgs_order(np.array([[0.0, 100.0]])), "pitch"),
        (lambda: lgs_order(np.zeros((0, 2))), "views"),
        (lambda: lgs_order(sus_views(), hemispheres="south"), "hemispheres"),
        (lambda: random_order(0), "n"),
        (lambda: fibonacci_views(n=0), "n"),
        (lambda: coverage(sus_views(), fov=0.0), "fov"),
        (lambda: view_overlap(np.zeros(3), np.zeros(2), fov=90.0), "view_a"),
    ],
)
def test_samplers_reject_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
