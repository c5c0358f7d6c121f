"""The ST²360D pipeline: configuration, merge identities, per-frame alignment baseline, determinism, 4K input."""

import numpy as np
import pytest
from nips25_st2360d import (
    ST2360D,
    IndependentOracle,
    OracleVDE,
    ST2360DConfig,
    blend_weights,
    depth_metrics,
    make_views,
    render_room,
)

RGB, GT, SCENE = render_room(3, h=48, w=96)


def test_global_scale_passes_through_unchanged():
    """No per-frame alignment: a model off by one constant factor gives the truth times that factor."""

    class Scaled(IndependentOracle):
        def predict(self, frames, *, views, fov):
            return 1.7 * super().predict(frames, views=views, fov=fov)

    model = Scaled(SCENE.ray_distance, sigma=0.0, noise=0.0, tilt=0.0)
    out = ST2360D(model, ST2360DConfig(frame_size=64)).predict(RGB, show_progress=False)
    exact = ST2360D(IndependentOracle(SCENE.ray_distance, sigma=0.0, noise=0.0, tilt=0.0),
                    ST2360DConfig(frame_size=64)).predict(RGB, show_progress=False)  # fmt: skip
    np.testing.assert_allclose(out.depth, 1.7 * exact.depth, rtol=1e-5)
    assert (out.frame_scales == 1.0).all()


def test_overlap_alignment_removes_pure_per_frame_scales():
    """With scale-only errors, chaining overlap alignments makes every frame agree: exact up to one global scale."""
    model = IndependentOracle(SCENE.ray_distance, sigma=0.2, noise=0.0, tilt=0.0, seed=4)
    cfg = ST2360DConfig(frame_size=64, frame_alignment="overlap")
    out = ST2360D(model, cfg).predict(RGB, show_progress=False)
    no_align = ST2360D(model, ST2360DConfig(frame_size=64)).predict(RGB, show_progress=False)
    aligned = depth_metrics(out.depth, GT, align_mode="median")["abs_rel"]
    assert aligned < 0.01
    assert depth_metrics(no_align.depth, GT, align_mode="median")["abs_rel"] > 5 * aligned
    assert not np.allclose(out.frame_scales, 1.0)


@pytest.mark.parametrize("output", ["depth", "disparity"])
@pytest.mark.parametrize("tilt", [0.0, 0.03])
def test_global_alignment_is_at_least_as_good_as_per_patch_for_a_drift_free_consistent_model(output, tilt):
    """Known answer for the merge and the per-patch baseline: with no scale drift and a temporally consistent error
    (a constant 1.3 scale and one tilt field over the sequence), per-frame overlap alignment finds nothing to
    correct (every frame scale 1) and one global alignment is at least as good; with no tilt both are exact up to
    resampling. (With pixel noise, the overlap medians jitter by ~0.003 and either may win by ~1e-4: not tested.)"""

    class Consistent(OracleVDE):
        def predict(self, frames, *, views, fov):
            pred = super().predict(frames, views=views, fov=fov)
            return 1.3 * pred if self.output == "depth" else pred / 1.3

    model = Consistent(SCENE.ray_distance, sigma_dir=0.0, sigma_time=0.0, noise=0.0, tilt=tilt, output=output, seed=5)
    res = {}
    for alignment in ("none", "overlap", "global"):
        cfg = ST2360DConfig(frame_size=48, frame_alignment=alignment)
        out = ST2360D(model, cfg).predict(RGB, show_progress=False)
        res[alignment] = depth_metrics(out.depth, GT, align_mode="median")["abs_rel"]
        assert np.abs(np.log(out.frame_scales)).max() < 1e-3, alignment
    assert res["none"] <= res["overlap"] + 5e-5  # overlap medians move frame scales by up to ~1e-4
    assert res["none"] <= res["global"] + 5e-5
    if tilt == 0.0:  # both reach the exact model's floor (resampling error of 48-px frames on a 48 x 96 panorama)
        exact = IndependentOracle(SCENE.ray_distance, sigma=0.0, noise=0.0, tilt=0.0, output=output)
        out = ST2360D(exact, ST2360DConfig(frame_size=48)).predict(RGB, show_progress=False)
        floor = depth_metrics(out.depth, GT, align_mode="median")["abs_rel"]
        assert res["none"] == pytest.approx(floor, abs=1e-6) and res["overlap"] < floor + 1e-3


def test_global_alignment_recovers_pure_per_frame_scales():
    """Known answer: with scale-only errors, the joint fit of all pairwise overlaps recovers every frame's scale up
    to one common factor (log-scales equal -log s_t minus their mean, to resampling error), and the merge is exact."""
    model = IndependentOracle(SCENE.ray_distance, sigma=0.2, noise=0.0, tilt=0.0, seed=4)
    cfg = ST2360DConfig(frame_size=64, frame_alignment="global")
    st = ST2360D(model, cfg)
    out = st.predict(RGB, show_progress=False)
    true_log = model.frame_log_scales(out.views, fov=cfg.fov)
    np.testing.assert_allclose(np.log(out.frame_scales), -(true_log - true_log.mean()), atol=2e-3)
    assert depth_metrics(out.depth, GT, align_mode="median")["abs_rel"] < 0.01


def test_sampling_maps_are_cached_per_panorama_size():
    """The per-view maps are built once per size and reused; a new size rebuilds them; results are unchanged."""
    model = IndependentOracle(SCENE.ray_distance, sigma=0.1, seed=1)
    st = ST2360D(model, ST2360DConfig(frame_size=32))
    first = st.predict(RGB, show_progress=False).depth
    maps = st.sampling_maps(*RGB.shape[:2])
    assert st.sampling_maps(*RGB.shape[:2])[1][0] is maps[1][0]
    np.testing.assert_array_equal(st.predict(RGB, show_progress=False).depth, first)
    uncached = ST2360D(model, ST2360DConfig(frame_size=32, cache_maps=False)).predict(RGB, show_progress=False)
    np.testing.assert_array_equal(uncached.depth, first)
    small = st.predict(RGB, out_hw=(24, 48), show_progress=False).depth
    assert small.shape == (24, 48) and st.sampling_maps(24, 48)[1][0].target_shape == (24, 48)


@pytest.mark.parametrize("shape", [(48, 48, 3), (48, 100, 3)])
def test_pipeline_rejects_a_panorama_that_is_not_2_to_1(shape):
    st = ST2360D(IndependentOracle(SCENE.ray_distance), ST2360DConfig(frame_size=16))
    with pytest.raises(ValueError, match="width = 2 x height"):
        st.predict(np.zeros(shape, np.uint8), show_progress=False)
    with pytest.raises(ValueError, match="out_hw"):
        st.predict(RGB, out_hw=(30, 50), show_progress=False)


def test_pipeline_is_deterministic():
    model = OracleVDE(SCENE.ray_distance, seed=2)
    a = ST2360D(model, ST2360DConfig(frame_size=32)).predict(RGB, show_progress=False).depth
    b = ST2360D(model, ST2360DConfig(frame_size=32)).predict(RGB, show_progress=False).depth
    np.testing.assert_array_equal(a, b)


def test_make_views_orders_and_offsets():
    lgs = make_views(ST2360DConfig())
    assert lgs.shape == (24, 2) and lgs[0].tolist() == [0.0, 0.0]
    rnd = make_views(ST2360DConfig(order="random", order_seed=1))
    assert sorted(map(tuple, rnd)) == sorted(map(tuple, lgs))
    shifted = make_views(ST2360DConfig(yaw_offset=90.0))
    assert shifted[0].tolist() == [90.0, 0.0]
    assert make_views(ST2360DConfig(sampler="cubemap")).shape == (6, 2)


def test_blend_weights_known_values():
    w = blend_weights(fov=90.0, size=5, blend="cos", power=2.0)
    assert w[2, 2] == pytest.approx(1.0) and w[0, 0] == pytest.approx(1.0 / 3.0)
    b = blend_weights(fov=90.0, size=5, blend="border", power=1.0)
    assert b[2, 2] == pytest.approx(1.2) and b[0, 0] == pytest.approx(0.2)
    assert (blend_weights(fov=90.0, size=5, blend="uniform") == 1.0).all()


def test_4k_panorama_input():
    """A 4096 x 2048 panorama goes through (frames are sampled from the full-resolution image)."""
    erp = np.zeros((2048, 4096, 3), np.uint8)
    model = IndependentOracle(lambda r: np.full(len(r), 2.0), sigma=0.0, noise=0.0, tilt=0.0)
    out = ST2360D(model, ST2360DConfig(sampler="cubemap", frame_size=32)).predict(
        erp, out_hw=(64, 128), show_progress=False
    )
    np.testing.assert_allclose(out.depth, 2.0, rtol=1e-5)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sampler", "icosahedron"),
        ("order", "zigzag"),
        ("fov", 0.0),
        ("fov", 200.0),
        ("frame_size", 4),
        ("n_eq", 0),
        ("blend", "gauss"),
        ("power", -1.0),
        ("frame_alignment", "bundle"),
        ("yaw_offset", float("nan")),
        ("min_overlap", 0),
    ],
)
def test_config_rejects_out_of_range_fields(field, value):
    with pytest.raises(ValueError, match=field):
        ST2360DConfig(**{field: value})


def test_cubemap_needs_90_degrees():
    with pytest.raises(ValueError, match="fov"):
        ST2360DConfig(sampler="cubemap", fov=60.0)


def test_pipeline_rejects_bad_input():
    model = IndependentOracle(SCENE.ray_distance)
    st = ST2360D(model, ST2360DConfig(frame_size=16))
    with pytest.raises(TypeError, match="erp"):
        st.predict(RGB.astype(np.float32))
    with pytest.raises(ValueError, match="erp"):
        st.predict(RGB[..., :2])
    with pytest.raises(ValueError, match="erp"):
        st.predict(np.zeros((0, 8, 3), np.uint8))
    with pytest.raises(ValueError, match="out_hw"):
        st.predict(RGB, out_hw=(1, 8))
    with pytest.raises(TypeError, match="model"):
        ST2360D(object())
    with pytest.raises(TypeError, match="config"):
        ST2360D(model, {"fov": 90})

    class Broken:
        output = "depth"

        def predict(self, frames, *, views, fov):
            return np.full(frames.shape[:3], np.nan, np.float32)

    with pytest.raises(ValueError, match="model output"):
        ST2360D(Broken(), ST2360DConfig(frame_size=16)).predict(RGB)
