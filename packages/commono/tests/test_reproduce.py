"""Smoke test of reproduce in its tiny profile: report structure and computed claims (not that they hold)."""

from __future__ import annotations

from dataclasses import replace

from nips25_commono.reproduce import PROFILES, reproduce

from nips25_shared import write_report


def test_reproduce_tiny_profile(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Also the fallback path: the emoji font forced missing, reproduce uses procedural objects and says so."""
    import nips25_commono.library as library_module

    monkeypatch.setattr(library_module, "DEFAULT_EMOJI_FONT", tmp_path / "no-such-font.ttf")
    cfg = replace(PROFILES["tiny"], library="emoji")
    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path, config=cfg)
    assert report.config["library"].startswith("procedural objects: the emoji font is MISSING")
    assert "no-such-font.ttf" in report.config["library"] and "Data: procedural objects" in report.notes
    assert report.package == "commono" and report.profile == "tiny"
    ids = [c.id for c in report.claims]
    assert ids == [
        "control-beats-cross-scene",
        "similar-objects-hallucinate",
        "complex-scenes-harder",
        "noisy-oracle-closed-form",
    ]
    for claim in report.claims:
        assert isinstance(claim.holds, bool) and claim.criterion and claim.measured
    assert 0.0 <= report.claims[2].measured["accuracy_3_8"] <= 1.0
    assert all((tmp_path / f).is_file() for f in report.figures) and len(report.figures) == 2
    assert "TemplateMatcher" in report.notes
    assert (write_report(report, tmp_path)).is_file()


def test_same_seed_same_scores(library) -> None:  # type: ignore[no-untyped-def]
    """Determinism: the same seed gives the same questions, calibration and scores."""
    from nips25_commono import SceneGenerator, TemplateMatcher, control_example, evaluate

    def run() -> tuple[float, float, tuple]:
        gen = SceneGenerator(library, n_objects=(3, 5), canvas=100, seed=11)
        matcher = TemplateMatcher(library, sizes=gen.config.size_range_px, downsample=1)
        t = matcher.calibrate([control_example(ex) for ex in gen.examples(6, start=100)])
        rep = evaluate(matcher, gen.examples(8))
        return t, rep.accuracy, rep.predictions

    assert run() == run()
