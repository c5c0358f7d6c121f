"""Smoke test of the reproduction, the CLI (user errors exit 2) and the README quickstart."""

import re
from pathlib import Path

import numpy as np
import pytest
from nips25_st2360d.cli import main
from nips25_st2360d.reproduce import PIPELINES, paired_difference, reproduce

from nips25_shared import Report

README = Path(__file__).resolve().parents[1] / "README.md"


def test_reproduce_tiny_profile_report_structure(tmp_path):
    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path)
    assert isinstance(report, Report) and report.package == "st2360d"
    ids = [c.id for c in report.claims]
    assert ids == ["exact-depth-reconstruction", "positive-control-exactly-consistent",
                   "st2360d-beats-patch-pipelines", "consistent-frames-align-better", "lgs-beats-random-order",
                   "roll-equivariance"]  # fmt: skip
    for claim in report.claims:
        assert isinstance(claim.holds, bool) and claim.criterion
    abs_rel = report.claims[2].measured["abs_rel"]
    assert set(abs_rel) == set(PIPELINES)  # every arm, the old simulator's and the control
    assert all(np.isfinite(v) and v >= 0 for v in abs_rel.values())
    diff = report.claims[2].measured["c_vs_b"]
    assert diff["n"] == 2 and diff["se"] >= 0 and isinstance(diff["holds_2se"], bool)
    assert "old_design_window_sim" in report.claims[2].measured
    assert report.figures and all((tmp_path / f).is_file() for f in report.figures)


def test_paired_difference_known_values():
    """Mean and SE (ddof 1) of per-room differences, and the 2-SE decision."""
    out = paired_difference([0.3, 0.5, 0.4], [0.1, 0.2, 0.3])  # differences 0.2, 0.3, 0.1
    assert out["mean"] == pytest.approx(0.2) and out["se"] == pytest.approx(0.1 / np.sqrt(3))
    assert out["holds_2se"] and out["wins"] == 1.0 and out["n"] == 3
    assert not paired_difference([0.1, 0.3], [0.2, 0.1])["holds_2se"]


def test_reproduce_rejects_unknown_profile(tmp_path):
    with pytest.raises(ValueError, match="profile"):
        reproduce(profile="huge", out_dir=tmp_path)


def test_cli_run_with_a_local_model(tmp_path, tiny_dav2_dir, capsys):
    from skimage.io import imsave

    img = tmp_path / "pano.png"
    imsave(img, np.random.default_rng(0).integers(0, 256, (32, 64, 3)).astype(np.uint8))
    out = tmp_path / "depth.npy"
    argv = ["run", str(img), "--model-path", str(tiny_dav2_dir), "--out", str(out), "--frame-size", "28"]
    assert main([*argv, "--sampler", "cubemap", "-q"]) == 0
    assert np.load(out).shape == (32, 64)
    assert "frame alignment overlap" in capsys.readouterr().out  # an image model's frames are aligned by default
    assert main([*argv, "--frame-alignment", "global", "-q"]) == 0
    assert np.load(out).shape == (32, 64)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "missing.png", "--model-path", ".", "--out", "d.npy"], "config.json"),
        (["run", "{img}", "--model-path", "nowhere", "--out", "d.npy"], "--model-path"),
        (["run", "{img}", "--model-path", "{model}", "--out", "d.txt"], "--out"),
        (["run", "missing.png", "--model-path", "{model}", "--out", "d.npy"], "IMAGE"),
        (["run", "{bad}", "--model-path", "{model}", "--out", "d.npy"], "width = 2 x height"),
        (["run", "{img}", "--model-path", "{model}", "--out", "d.npy", "--fov", "0"], "fov"),
        (
            ["run", "{img}", "--model-path", "{model}", "--out", "d.npy", "--frame-alignment", "bundle"],
            "--frame-alignment",
        ),
        (["run", "{img}", "--model-path", "{model}", "--out", "{tmp}/img.png/d.npy"], "--out"),  # review 0.2.1
        (["run", "{tiny}", "--model-path", "{model}", "--out", "d.npy"], "IMAGE"),  # review 0.2.1: was a traceback
        (["reproduce", "--profile", "huge"], "profile"),
        (["reproduce", "--seed", "-1", "--out", "{tmp}"], "--seed"),  # review: was a traceback
        (["reproduce", "--profile", "quick", "--out", "/proc/none/r"], "--out"),  # review: was a traceback
    ],
)
def test_cli_user_errors_exit_2(argv, message, tmp_path, tiny_dav2_dir, capsys):
    from skimage.io import imsave

    imsave(tmp_path / "img.png", np.zeros((16, 32, 3), np.uint8), check_contrast=False)
    imsave(tmp_path / "bad.png", np.zeros((16, 16, 3), np.uint8), check_contrast=False)
    imsave(tmp_path / "tiny.png", np.zeros((1, 2, 3), np.uint8), check_contrast=False)
    fmt = {"img": tmp_path / "img.png", "bad": tmp_path / "bad.png", "tiny": tmp_path / "tiny.png",
           "model": tiny_dav2_dir, "tmp": tmp_path}  # fmt: skip
    argv = [a.format(**fmt) for a in argv]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_readme_quickstart_runs():
    """The README's quickstart block runs exactly as written."""
    block = re.search(r"## Quickstart\s+```python\n(.*?)```", README.read_text(), re.S)
    assert block is not None
    namespace: dict = {}
    exec(compile(block.group(1), "README-quickstart", "exec"), namespace)
    assert namespace["metrics"]["abs_rel"] < 0.5


def test_cli_reads_a_16_bit_panorama_on_its_full_range(tmp_path, monkeypatch):
    """Review 0.2.1: a 16-bit panorama was divided by its own maximum, so a dark image was brightened before the
    model saw it; it is read on the full 16-bit range now (v16 = 257 v8 gives back v8 exactly)."""
    import argparse

    import skimage.io
    from nips25_st2360d.cli import _read_panorama

    v8 = np.random.default_rng(0).integers(0, 100, (16, 32, 3)).astype(np.uint8)  # dark: max 99
    (tmp_path / "p16.png").write_bytes(b"")  # PIL cannot write 16-bit RGB: the decoder's output is given directly
    monkeypatch.setattr(skimage.io, "imread", lambda path: v8.astype(np.uint16) * 257)
    out = _read_panorama(argparse.ArgumentParser(), tmp_path / "p16.png")
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, v8)


@pytest.mark.parametrize(("scale", "dtype"), [(1 / 255, np.float32), (1.0, np.float64)])
def test_cli_reads_a_float_panorama_on_its_scale_not_its_max(tmp_path, monkeypatch, scale, dtype):
    """Review 0.2.2: float images above 1 were divided by their own maximum (a dark 0-255 float image was
    brightened); [0, 1] floats and 0-255 floats now both give back the 8-bit values, and other ranges are refused."""
    import argparse

    import skimage.io
    from nips25_st2360d.cli import _read_panorama

    v8 = np.random.default_rng(1).integers(0, 100, (16, 32, 3)).astype(np.uint8)  # dark: max 99
    (tmp_path / "pf.png").write_bytes(b"")
    monkeypatch.setattr(skimage.io, "imread", lambda path: (v8 * scale).astype(dtype))
    np.testing.assert_array_equal(_read_panorama(argparse.ArgumentParser(), tmp_path / "pf.png"), v8)
    monkeypatch.setattr(skimage.io, "imread", lambda path: (v8 * 4.0).astype(dtype))
    with pytest.raises(SystemExit):
        _read_panorama(argparse.ArgumentParser(), tmp_path / "pf.png")
