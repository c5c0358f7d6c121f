"""Real-image clips with exact masks, and the weight-free tracking baseline."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_sama.segmentation_metrics import jandf
from nips25_sama.synthetic import make_clip, make_scene
from nips25_sama.tracking import track_backprojection


def test_masks_are_exact_and_motion_is_linear():
    """One object moving right by 3 px/frame: mask_t is mask_0 shifted by 3t, the pixels under it are the same
    sprite pixels, and every pixel outside the masks is the unchanged background."""
    frames, masks = make_scene(["rocket"], ["right"], "grass", n_frames=4, size=96, object_size=24, speed=3.0, seed=3)
    m = masks[0]
    for t in range(4):
        assert np.array_equal(m[t], np.roll(m[0], 3 * t, axis=1))
        assert np.array_equal(frames[t][m[t]], frames[0][m[0]])
    outside = ~(m[0] | m[3])
    assert np.array_equal(frames[0][outside], frames[3][outside])
    f2, m2 = make_scene(
        ["rocket", "cat"], ["right", "down"], "grass", n_frames=4, size=96, object_size=24, speed=3.0, seed=3
    )
    assert not (m2[0] & m2[1]).any()  # visible pixels are exclusive (occlusion)
    f3, m3 = make_scene(
        ["rocket", "cat"], ["right", "down"], "grass", n_frames=4, size=96, object_size=24, speed=3.0, seed=3
    )
    assert np.array_equal(f2, f3) and np.array_equal(m2, m3)  # deterministic


def test_tracker_follows_a_moving_object():
    frames, masks = make_clip("cat", "gravel", n_frames=6, size=96, motion="left", seed=1)
    tracked = track_backprojection(frames, masks[0])
    static = np.repeat(masks[:1], len(masks), axis=0)
    assert jandf(tracked, masks)[2] > jandf(static, masks)[2]
    assert np.array_equal(tracked[0], masks[0])


def test_bad_inputs():
    with pytest.raises(ValueError, match="objects"):
        make_scene(["dragon"], ["left"])
    with pytest.raises(ValueError, match="motions"):
        make_scene(["cat"], ["sideways"])
    with pytest.raises(ValueError, match="exceeds"):
        make_scene(["cat"], ["left"], size=32, object_size=30, speed=3.0)
    with pytest.raises(ValueError, match="n_frames"):
        make_clip("cat", "grass", n_frames=0)
    frames, masks = make_clip("cat", "grass", n_frames=2, size=32)
    with pytest.raises(ValueError, match="first_mask must be non-empty"):
        track_backprojection(frames, np.zeros((32, 32), bool))
    with pytest.raises(ValueError, match="first_mask must have shape"):
        track_backprojection(frames, masks[0][:10])
    with pytest.raises(ValueError, match="bins"):
        track_backprojection(frames, masks[0], bins=1)


def test_name_by_colour_names_every_object_of_a_scene_and_describe_motion():
    """Each rendered object is named from its first-frame pixels; the centroid shift gives the planted motion."""
    from nips25_sama.synthetic import OBJECTS, make_scene, object_pixels
    from nips25_sama.tracking import describe_motion, name_by_colour

    templates = {o: object_pixels(o) for o in OBJECTS}
    frames, masks = make_scene(["cat", "rocket"], ["left", "down"], "gravel", n_frames=6, seed=4)
    assert [name_by_colour(frames[0], m[0], templates) for m in masks] == ["cat", "rocket"]
    assert [describe_motion(m) for m in masks] == ["moves left", "moves down"]
    assert describe_motion(np.repeat(masks[0][:1], 3, axis=0)) == "stays"
    with pytest.raises(ValueError, match="mask"):
        name_by_colour(frames[0], np.zeros(frames.shape[1:3], bool), templates)
    with pytest.raises(ValueError, match="obj"):
        object_pixels("dog")
