"""Smoke test of the headline experiment, the data readers and the CLI."""

import json

import numpy as np
import pytest
from nips25_conformal.cli import main
from nips25_conformal.datasets import load_japanese_vowels, transform_digits
from nips25_conformal.reproduce import ExperimentConfig, reproduce, run_experiment


def test_reproduce_tiny_report_structure(tmp_path):
    """The tiny profile returns eight computed claims (three per dataset, then the two stress cases) and its figure."""
    pytest.importorskip("sktime")
    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path)
    assert report.package == "conformal" and report.profile == "tiny"
    assert [c.id for c in report.claims] == [
        *(f"{k}-{d}" for d in ("japanese_vowels", "digits") for k in ("coverage", "size-shrinks", "majority-refined")),
        "aggregate-then-calibrate-correlated-views",
        "aggregate-then-calibrate-frames-as-views",
    ]
    for claim in report.claims:
        assert isinstance(claim.holds, bool) and claim.measured
    assert (tmp_path / report.figures[0]).stat().st_size > 0


def test_experiment_deterministic_under_seed():
    """Same seed, same per-class coverages and sizes (digits, no optional data needed)."""
    config = ExperimentConfig("digits", n_train=20, n_cal=20, n_splits=1, instances_per_class=3, n_mc=500)
    a, b = run_experiment(config, seed=3), run_experiment(config, seed=3)
    for method in a["size"]:
        for m in a["size"][method]:
            np.testing.assert_array_equal(a["coverage"][method][m], b["coverage"][method][m])
            np.testing.assert_array_equal(a["size"][method][m], b["size"][method][m])


def test_japanese_vowels_known_counts(tmp_path):
    """UCI JapaneseVowels: 640 utterances, 61/65/118/74/59/54/70/80/59 per speaker, 12 coefficients, 7-29 frames."""
    pytest.importorskip("sktime")
    series, y = load_japanese_vowels()
    assert len(series) == 640
    np.testing.assert_array_equal(np.bincount(y)[1:], [61, 65, 118, 74, 59, 54, 70, 80, 59])
    lengths = [s.shape[0] for s in series]
    assert all(s.shape[1] == 12 for s in series) and min(lengths) == 7 and max(lengths) == 29
    with pytest.raises(FileNotFoundError, match="path"):
        load_japanese_vowels(tmp_path)


def test_transform_digits_identity_and_bad_input():
    """Zero angle and zero shift leave images unchanged; bad shapes and ranges are refused."""
    from sklearn.datasets import load_digits

    images = load_digits().images[:5]
    out = transform_digits(images, rng=np.random.default_rng(0), max_angle=0.0, max_shift=0.0)
    np.testing.assert_allclose(out, images.reshape(5, 64), atol=1e-12)
    with pytest.raises(ValueError, match="images must be"):
        transform_digits(images[0], rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="max_angle"):
        transform_digits(images, rng=np.random.default_rng(0), max_angle=-1.0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"dataset": "mnist"}, "dataset must be"), ({"n_cal": 0}, "n_cal must be"), ({"alpha": 1.0}, "alpha must be")],
)
def test_experiment_config_validation(kwargs, match):
    base = {"dataset": "digits", "n_train": 10, "n_cal": 10, "n_splits": 1}
    with pytest.raises(ValueError, match=match):
        ExperimentConfig(**{**base, **kwargs})


def test_reproduce_rejects_unknown_profile(tmp_path):
    with pytest.raises(ValueError, match="profile must be one of"):
        reproduce(profile="huge", out_dir=tmp_path)


def test_cli_demo_prints_every_method(capsys):
    assert main(["demo", "--data", "digits", "--m", "3", "--splits", "1", "-q"]) == 0
    out = capsys.readouterr().out
    assert "majority_refined" in out and "bonferroni" in out


def test_cli_reproduce_help():
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "--help"])
    assert exc.value.code == 0


def test_report_json_roundtrip(tmp_path):
    """The CLI writes results.json whose claims carry criteria and computed holds."""
    pytest.importorskip("sktime")
    from nips25_shared import run_reproduce

    class Args:
        verbose, quiet, seed, out, profile = 0, 1, 0, tmp_path, "tiny"

    run_reproduce(reproduce, Args())  # type: ignore[arg-type]
    data = json.loads((tmp_path / "results.json").read_text())
    assert len(data["claims"]) == 8 and all("criterion" in c for c in data["claims"])


def test_frames_as_views_shapes_and_determinism():
    """Frames of one utterance as views: per-split, per-class coverage in [0, 1] for both arms, same under a seed."""
    pytest.importorskip("sktime")
    from nips25_conformal.reproduce import run_frames_as_views

    config = ExperimentConfig("japanese_vowels", n_train=10, n_cal=25, n_splits=2, instances_per_class=4, n_mc=500)
    a, b = run_frames_as_views(config, seed=1), run_frames_as_views(config, seed=1)
    assert sorted(a) == [3, 5]
    for m, arms in a.items():
        for arm in ("sum", "aggregate_then_calibrate"):
            assert arms[arm].shape == (2, 9)
            assert np.all((arms[arm] >= 0) & (arms[arm] <= 1))
            np.testing.assert_array_equal(arms[arm], b[m][arm])
