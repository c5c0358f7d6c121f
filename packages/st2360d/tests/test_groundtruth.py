"""Released ground truth (2D-3D-S 16-bit depth PNGs, float .npy) and `nips25-st2360d evaluate` on it."""

import json

import numpy as np
import pytest
from nips25_st2360d import depth_metrics, load_gt_depth
from nips25_st2360d.cli import main
from skimage.io import imsave


def _stanford_png(tmp_path, depth_m):
    """A fixture in 2D-3D-S's layout and encoding: area_1/pano/depth/*_depth.png, uint16, 1/512 m, 65535 missing."""
    raw = np.where(np.isfinite(depth_m), np.round(np.nan_to_num(depth_m) * 512.0), 65535).astype(np.uint16)
    path = tmp_path / "area_1" / "pano" / "depth" / "camera_0_office_1_frame_equirectangular_domain_depth.png"
    path.parent.mkdir(parents=True)
    imsave(path, raw, check_contrast=False)
    return path


def test_stanford2d3d_png_decodes_to_metres_with_missing_pixels(tmp_path):
    """Known answer: 1024 -> 2 m, 512 -> 1 m, 65535 -> missing, as 2D-3D-S encodes its depth."""
    depth_m = np.array([[2.0, 1.0, np.nan, 0.5], [3.0, 4.0, 5.0, np.nan]])
    depth, valid = load_gt_depth(_stanford_png(tmp_path, depth_m))
    assert depth.dtype == np.float64 and valid.dtype == np.bool_
    np.testing.assert_array_equal(valid, np.isfinite(depth_m))
    np.testing.assert_allclose(depth[valid], depth_m[np.isfinite(depth_m)], atol=1 / 1024)


def test_npy_ground_truth_marks_inf_nan_and_zero_missing(tmp_path):
    np.save(tmp_path / "gt.npy", np.array([[1.0, np.inf, np.nan], [0.0, -1.0, 2.5]]))
    depth, valid = load_gt_depth(tmp_path / "gt.npy")
    assert valid.tolist() == [[True, False, False], [False, False, True]]
    assert np.isnan(depth[~valid]).all() and depth[1, 2] == 2.5


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "none.png", "no such file"),
        (lambda p: (imsave(p / "rgb.png", np.zeros((4, 8, 3), np.uint8), check_contrast=False), p / "rgb.png")[1],
         "single-channel"),
        (lambda p: (imsave(p / "e.png", np.zeros((4, 8), np.uint8), check_contrast=False), p / "e.png")[1], "16-bit"),
        (lambda p: ((p / "empty.png").write_bytes(b""), p / "empty.png")[1], "cannot read"),
        (lambda p: (np.save(p / "m.npy", np.full((2, 4), np.inf)), p / "m.npy")[1], "no valid pixel"),
        (lambda p: (np.save(p / "s.npy", np.array(["a", "b"])), p / "s.npy")[1], "numeric"),
        (lambda p: ((p / "gt.exr").write_bytes(b"x"), p / "gt.exr")[1], r"\.png \(2D-3D-S\) or \.npy"),
    ],
)  # fmt: skip
def test_unreadable_ground_truth_names_the_file(tmp_path, make, message):
    path = make(tmp_path)
    with pytest.raises(ValueError, match=message) as err:
        load_gt_depth(path)
    assert str(path) in str(err.value)


def test_cli_evaluate_on_a_stanford2d3d_png_equals_depth_metrics(tmp_path, capsys):
    """`evaluate PRED.npy --gt DEPTH.png` gives depth_metrics on the decoded depth with its missing pixels masked."""
    rng = np.random.default_rng(0)
    depth_m = rng.uniform(0.5, 12.0, (8, 16))
    depth_m[0, :3] = np.nan  # no return
    gt_path = _stanford_png(tmp_path, depth_m)
    pred = 1.7 * np.nan_to_num(depth_m, nan=3.0) * rng.uniform(0.9, 1.1, depth_m.shape)
    np.save(tmp_path / "pred.npy", pred.astype(np.float32))
    assert main(["evaluate", str(tmp_path / "pred.npy"), "--gt", str(gt_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    gt, valid = load_gt_depth(gt_path)
    ref = depth_metrics(pred.astype(np.float32), gt, mask=valid, align_mode="median", max_depth=10.0)
    assert out["abs_rel"] == pytest.approx(ref["abs_rel"], rel=1e-12) and out["n_valid"] == ref["n_valid"]
    assert out["n_valid"] == int((valid & (gt <= 10.0)).sum()) < depth_m.size - 3


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["evaluate", "{tmp}/none.npy", "--gt", "{gt}"], "PRED"),
        (["evaluate", "{small}", "--gt", "{gt}"], "run on the panorama of the same size"),
        (["evaluate", "{pred}", "--gt", "{tmp}/none.png"], "--gt"),
        (["evaluate", "{pred}", "--gt", "{gt}", "--align", "bogus"], "--align"),
        (["evaluate", "{pred}", "--gt", "{gt}", "--max-depth", "0"], "max_depth"),
        (["evaluate", "{ints}", "--gt", "{gt}"], "2-D float"),
    ],
)
def test_cli_evaluate_user_errors_exit_2(argv, message, tmp_path, capsys):
    gt = _stanford_png(tmp_path, np.full((4, 8), 2.0))
    np.save(tmp_path / "pred.npy", np.full((4, 8), 1.0))
    np.save(tmp_path / "small.npy", np.full((2, 4), 1.0))
    np.save(tmp_path / "ints.npy", np.ones((4, 8), np.int64))
    fmt = {"tmp": tmp_path, "gt": gt, "pred": tmp_path / "pred.npy", "small": tmp_path / "small.npy",
           "ints": tmp_path / "ints.npy"}  # fmt: skip
    with pytest.raises(SystemExit) as exc:
        main([a.format(**fmt) for a in argv])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
