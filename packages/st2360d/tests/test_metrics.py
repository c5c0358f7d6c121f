"""Depth metrics and alignment: hand values, identities, invariances, real stereo ground truth."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_st2360d import align, depth_metrics, fit_alignment

GT = np.linspace(0.5, 7.0, 200).reshape(10, 20)


def test_hand_computed_values():
    """pred (1, 2) vs gt (2, 2): AbsRel 0.25, SqRel 0.25, RMSE sqrt(0.5), RMSElog log(2)/sqrt(2), delta_k 0.5.

    The second pixel is exact; the first has ratio 2 > 1.25^3, so it fails every delta threshold.
    """
    m = depth_metrics(np.array([1.0, 2.0]), np.array([2.0, 2.0]))
    assert m["abs_rel"] == pytest.approx(0.25)
    assert m["sq_rel"] == pytest.approx(0.25)
    assert m["rmse"] == pytest.approx(np.sqrt(0.5))
    assert m["rmse_log"] == pytest.approx(np.log(2.0) / np.sqrt(2.0))
    assert (m["delta1"], m["delta2"], m["delta3"]) == (0.5, 0.5, 0.5)


@pytest.mark.parametrize("mode", ["none", "median", "lsq_scale", "lsq_affine"])
def test_pred_equal_gt_is_perfect(mode):
    m = depth_metrics(GT.copy(), GT, align_mode=mode)
    assert m["abs_rel"] == pytest.approx(0.0, abs=1e-9)
    assert m["rmse"] == pytest.approx(0.0, abs=1e-9)
    assert m["delta1"] == 1.0


def test_scaled_prediction_with_and_without_alignment():
    """pred = 1.3 gt: delta1 = 0 and AbsRel = 0.3 unaligned; perfect after median or least-squares scaling."""
    raw = depth_metrics(1.3 * GT, GT, align_mode="none")
    assert raw["delta1"] == 0.0 and raw["delta2"] == 1.0
    assert raw["abs_rel"] == pytest.approx(0.3)
    for mode in ("median", "lsq_scale"):
        m = depth_metrics(1.3 * GT, GT, align_mode=mode)
        assert m["delta1"] == 1.0 and m["abs_rel"] == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(c=st.floats(0.01, 100.0), seed=st.integers(0, 1000))
def test_aligned_metrics_are_invariant_to_prediction_scale(c, seed):
    pred = GT * np.exp(np.random.default_rng(seed).normal(0, 0.2, GT.shape))
    for mode in ("median", "lsq_scale", "lsq_affine"):
        a, b = depth_metrics(pred, GT, align_mode=mode), depth_metrics(c * pred, GT, align_mode=mode)
        assert a["abs_rel"] == pytest.approx(b["abs_rel"], rel=1e-7, abs=1e-12)


def test_lsq_affine_recovers_scale_and_shift_exactly():
    s, t = fit_alignment((GT - 0.7) / 2.5, GT, mode="lsq_affine")
    assert (s, t) == (pytest.approx(2.5), pytest.approx(0.7))


def test_max_depth_cap_and_mask():
    gt = np.array([1.0, 5.0, 20.0])
    m = depth_metrics(np.array([1.0, 5.0, 1.0]), gt, max_depth=10.0)
    assert m["n_valid"] == 2 and m["abs_rel"] == 0.0
    m = depth_metrics(np.array([1.0, 9.0, 20.0]), gt, mask=np.array([True, False, True]), max_depth=30.0)
    assert m["n_valid"] == 2 and m["abs_rel"] == 0.0


def test_disparity_affine_alignment_on_real_stereo_ground_truth():
    """scikit-image's Middlebury motorcycle: depth = f B / disp; an affine disparity map aligns back exactly."""
    from skimage.data import stereo_motorcycle

    _, _, disp = stereo_motorcycle()
    ok = np.isfinite(disp) & (disp > 0)
    depth = np.where(ok, 3740.0 * 0.193 / np.where(ok, disp, 1.0), 0.0)  # Middlebury-style f (px) and baseline (m)
    pred_disp = np.where(ok, 0.5 * disp + 3.0, 1.0)
    m = depth_metrics(pred_disp, depth, mask=ok, align_mode="disparity_affine", max_depth=1e3)
    assert m["n_valid"] > 0.5 * disp.size
    assert m["abs_rel"] < 1e-6 and m["delta1"] == 1.0
    blurred = depth_metrics(np.where(ok, disp, 1.0) ** 0.8, depth, mask=ok, align_mode="disparity_affine",
                            max_depth=1e3)  # fmt: skip
    assert 1e-3 < blurred["abs_rel"] < 0.5


@pytest.mark.parametrize(
    ("call", "err", "match"),
    [
        (lambda: depth_metrics(GT, GT[:2]), ValueError, "same shape"),
        (lambda: depth_metrics(GT * np.nan, GT), ValueError, "pred"),
        (lambda: depth_metrics(GT, GT * np.inf), ValueError, "gt"),
        (lambda: depth_metrics(np.zeros(0), np.zeros(0)), ValueError, "pred"),
        (lambda: depth_metrics(GT, GT, max_depth=0.0), ValueError, "max_depth"),
        (lambda: depth_metrics(GT, GT, min_depth=20.0), ValueError, "min_depth"),
        (lambda: depth_metrics(GT, GT, align_mode="mean"), ValueError, "mode"),
        (lambda: depth_metrics(GT, GT, max_depth=0.1), ValueError, "no valid pixel"),
        (lambda: depth_metrics(-GT, GT), ValueError, "positive"),
        (lambda: depth_metrics(GT, GT, mask=np.ones(3, bool)), ValueError, "mask"),
        (lambda: depth_metrics("a", GT), TypeError, "pred"),
        (lambda: align(GT, GT, min_depth=0.0), ValueError, "min_depth"),
        (lambda: fit_alignment(GT, GT, mask=np.zeros(GT.shape, bool)), ValueError, "mask"),
    ],
)
def test_metrics_reject_bad_input(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_inf_ground_truth_at_masked_pixels_is_accepted():
    """Issue 31.5: released ground truth marks missing returns with inf (or NaN); outside the mask they are ignored,
    and the metrics equal those computed on the finite pixels alone. Inside the mask they are an error."""
    gt = GT.copy()
    gt[:3] = np.inf
    gt[3] = np.nan
    pred = 1.2 * GT
    mask = np.isfinite(gt)
    ours = depth_metrics(pred, gt, mask=mask, align_mode="lsq_scale")
    ref = depth_metrics(pred[mask], GT[mask], align_mode="lsq_scale")
    assert ours == pytest.approx(ref)
    with pytest.raises(ValueError, match="inside mask"):
        depth_metrics(pred, gt, mask=np.ones_like(mask))
    with pytest.raises(ValueError, match="pass a mask"):
        depth_metrics(pred, gt)


@pytest.mark.parametrize("mask_dtype", [np.float64, np.uint8, np.int64])
def test_a_non_bool_mask_is_refused(mask_dtype):
    """Review 0.2.1: a float confidence map (or any numeric array) passed as ``mask`` was cast silently to bool,
    so every non-zero pixel (0.5, 0.01, NaN) was evaluated."""
    gt = np.array([1.0, 2.0, 4.0])
    with pytest.raises(TypeError, match="mask must be a bool array"):
        depth_metrics(gt, gt, mask=np.array([1, 0, 1], dtype=mask_dtype))
    with pytest.raises(TypeError, match="mask must be a bool array"):
        fit_alignment(gt, gt, mask=np.array([0.5, 0.5, 1.0]))
