"""The perception baseline: NCC agrees with scikit-image, and clean scenes are detected exactly."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_commono import SceneGenerator, TemplateMatcher, control_example, evaluate, normalized_cross_correlation
from skimage.feature import match_template


def test_ncc_agrees_with_skimage_match_template() -> None:
    rng = np.random.default_rng(0)
    image = rng.random((31, 27, 3))
    templates = rng.random((3, 7, 5, 3))
    templates[1] = image[4:11, 9:14]  # an exact crop scores 1 at its position
    ours = normalized_cross_correlation(image, templates)
    for t in range(3):
        ref = match_template(image, templates[t])[..., 0]
        np.testing.assert_allclose(ours[t], ref, atol=1e-9)
    assert ours[1, 4, 9] == pytest.approx(1.0)


def test_template_matcher_finds_every_placed_glyph_on_clean_scenes(library) -> None:  # type: ignore[no-untyped-def]
    """Plain background, no brightness change, matching at full resolution: placed objects score ~1."""
    gen = SceneGenerator(library, n_objects=(3, 6), canvas=100, background="plain", brightness=0.0, seed=4,
                         object_size=(0.9, 0.9))  # fmt: skip
    size = gen.config.size_range_px[0]
    matcher = TemplateMatcher(library, sizes=(size,), downsample=1, threshold=0.99, template_background=0.85)
    for ex in gen.examples(6):
        for which in (0, 1):
            ctl = control_example(ex, which=which)
            scores = matcher.scores(ctl)[0]
            present = [i for i, o in enumerate(ctl.meta["option_objects"]) if o in ctl.meta["scene_objects"][which]]
            assert np.all(scores[present] > 0.99)
            assert matcher.select(ctl) >= frozenset(present) or not present
        assert matcher.select(ex) >= ex.common


def test_calibrate_picks_best_grid_threshold(library, examples) -> None:  # type: ignore[no-untyped-def]
    matcher = TemplateMatcher(library, sizes=(16, 19), downsample=1)
    controls = [control_example(ex) for ex in examples[:12]]
    grid = [-0.5, 0.5, 0.8, 0.9, 0.99]
    t = matcher.calibrate(controls, grid=grid)
    accs = [np.mean([matcher.select(c, threshold=g) == c.answer for c in controls]) for g in grid]
    assert t == grid[int(np.argmax(accs))]
    assert evaluate(matcher, controls).accuracy == pytest.approx(max(accs))
