"""Known-answer tests of the ERP/perspective geometry."""

import numpy as np
import py360convert
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_st2360d import (
    ST2360D,
    IndependentOracle,
    RoomScene,
    ST2360DConfig,
    distance_to_z,
    e2p,
    erp_rays,
    p2e,
    rays_to_erp_coords,
    view_rotation,
    z_to_distance,
)
from nips25_st2360d.scenes import Box


def smooth_panorama(h: int, w: int) -> np.ndarray:
    """A smooth function on the sphere (polynomial in the ray), so bilinear sampling errors are O(pixel^2)."""
    r = erp_rays(h, w)
    return np.stack([r[..., 0] + 0.5 * r[..., 1] ** 2 + 0.3 * r[..., 2], r[..., 1] * r[..., 2], r[..., 0] ** 2], -1)


@pytest.mark.parametrize(("yaw", "pitch"), [(0.0, 0.0), (30.0, 20.0), (-120.0, -50.0), (180.0, 10.0), (0.0, 90.0)])
def test_round_trip_e2p_p2e_on_smooth_panorama(yaw, pitch):
    """p2e(e2p(x)) = x inside the view, up to bilinear interpolation error (< 1e-3), across the seam and the pole."""
    erp = smooth_panorama(256, 512)
    frame = e2p(erp, yaw=yaw, pitch=pitch, fov=90.0, size=256)
    back, valid = p2e(frame, yaw=yaw, pitch=pitch, fov=90.0, h=256, w=512)
    assert valid.mean() > 0.1
    assert np.abs(back - erp)[valid].max() < 1e-3


@pytest.mark.parametrize(("yaw", "pitch"), [(0.0, 0.0), (45.0, 30.0), (-100.0, -60.0), (120.0, 80.0)])
def test_e2p_agrees_with_py360convert(yaw, pitch):
    """Our e2p uses py360convert's convention: same frame on views away from the +-180 seam."""
    erp = smooth_panorama(128, 256).astype(np.float32)
    ours = e2p(erp, yaw=yaw, pitch=pitch, fov=90.0, size=64)
    ref = py360convert.e2p(erp, 90.0, yaw, pitch, (64, 64))
    np.testing.assert_allclose(ours, ref, atol=1e-4)


def test_e2p_has_no_seam_at_180_degrees():
    """A view centred on the +-180 seam of a smooth panorama is smooth (py360convert #46 leaves a black column)."""
    erp = smooth_panorama(128, 256)
    frame = e2p(erp, yaw=180.0, pitch=0.0, fov=60.0, size=65)
    jumps = np.abs(np.diff(frame[..., 0], axis=1)).max()
    assert jumps < 0.05


@settings(max_examples=20, deadline=None)
@given(yaw=st.floats(-180, 180), pitch=st.floats(-80, 80))
def test_e2p_rolls_with_yaw(yaw, pitch):
    """Rolling the ERP by a quarter turn to the right equals looking 90 degrees further right."""
    erp = smooth_panorama(32, 64)
    a = e2p(erp, yaw=yaw, pitch=pitch, fov=80.0, size=16)
    b = e2p(np.roll(erp, 16, axis=1), yaw=yaw + 90.0, pitch=pitch, fov=80.0, size=16)
    np.testing.assert_allclose(a, b, atol=1e-3)  # float32 longitudes are ill-conditioned next to the pole


def test_view_rotation_is_a_rotation_mapping_the_axis():
    r = view_rotation(30.0, 40.0)
    np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(r) == pytest.approx(1.0)
    p, y = np.deg2rad(40.0), np.deg2rad(30.0)
    np.testing.assert_allclose(r @ [0, 0, 1], [np.cos(p) * np.sin(y), np.sin(p), np.cos(p) * np.cos(y)], atol=1e-12)


def test_erp_rays_are_unit_and_invert_to_pixel_centres():
    r = erp_rays(16, 32)
    np.testing.assert_allclose(np.linalg.norm(r, axis=-1), 1.0, atol=1e-6)
    row, col = rays_to_erp_coords(r.astype(np.float64), 16, 32)
    np.testing.assert_allclose(row, np.arange(16)[:, None] * np.ones((1, 32)), atol=1e-4)
    np.testing.assert_allclose(col, np.ones((16, 1)) * np.arange(32)[None, :], atol=1e-4)


def test_z_to_distance_closed_form():
    """rho = z * ||(x_n, y_n, 1)||: the corner ray of a 90-degree frame is (1, 1, 1), so rho = sqrt(3) z."""
    z = np.full((5, 5), 2.0)
    rho = z_to_distance(z, fov=90.0)
    assert rho[0, 0] == pytest.approx(2.0 * np.sqrt(3.0), rel=1e-6)
    assert rho[2, 2] == pytest.approx(2.0)
    assert rho[0, 2] == pytest.approx(2.0 * np.sqrt(2.0), rel=1e-6)
    np.testing.assert_allclose(distance_to_z(rho, fov=90.0), z, rtol=1e-6)


def test_cube_room_ray_distance_closed_form():
    """In an axis-aligned cube of half-size L the ray distance is L / max(|x|, |y|, |z|) at every ERP pixel."""
    half = 2.5
    scene = RoomScene(Box((-half,) * 3, (half,) * 3))
    r = erp_rays(64, 128).reshape(-1, 3).astype(np.float64)
    np.testing.assert_allclose(scene.ray_distance(r), half / np.abs(r).max(axis=1), rtol=1e-9)


def test_pipeline_with_exact_depth_reconstructs_the_cube():
    """Exact per-frame z-depth -> rho -> p2e -> blend gives the cube's ray distance (AbsRel < 2e-3, bilinear)."""
    half = 2.5
    scene = RoomScene(Box((-half,) * 3, (half,) * 3))
    model = IndependentOracle(scene.ray_distance, sigma=0.0, noise=0.0, tilt=0.0)
    out = ST2360D(model, ST2360DConfig(frame_size=96)).predict(np.zeros((64, 128, 3), np.uint8), show_progress=False)
    gt = half / np.abs(erp_rays(64, 128)).max(axis=-1)
    assert out.valid.all()
    assert np.mean(np.abs(out.depth - gt) / gt) < 2e-3


@pytest.mark.parametrize("output", ["depth", "disparity"])
@pytest.mark.parametrize("sampler", ["sus", "cubemap", "fibonacci"])
def test_sphere_gives_constant_depth(output, sampler):
    """A sphere of radius R around the camera gives rho = R everywhere (checks z->rho and the blending)."""
    model = IndependentOracle(lambda r: np.full(len(r), 3.5), sigma=0.0, noise=0.0, tilt=0.0, output=output)
    out = ST2360D(model, ST2360DConfig(sampler=sampler, frame_size=40)).predict(
        np.zeros((32, 64, 3), np.uint8), show_progress=False
    )
    assert out.valid.all()
    np.testing.assert_allclose(out.depth, 3.5, rtol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"erp": np.zeros((4,))}, "erp"),
        ({"erp": np.full((8, 16), np.nan)}, "erp"),
        ({"erp": np.zeros((0, 16))}, "erp"),
        ({"pitch": 95.0}, "pitch"),
        ({"fov": 180.0}, "fov"),
        ({"size": 1}, "size"),
        ({"mode": "cubic"}, "mode"),
    ],
)
def test_e2p_rejects_bad_input(kwargs, match):
    args = {"erp": np.zeros((8, 16)), "yaw": 0.0, "pitch": 0.0, "fov": 90.0, "size": 8, **kwargs}
    with pytest.raises(ValueError, match=match):
        e2p(args.pop("erp"), **args)


def test_geometry_rejects_bad_types_and_shapes():
    with pytest.raises(TypeError, match="erp"):
        e2p([[0.0]], yaw=0.0, pitch=0.0, fov=90.0, size=8)
    with pytest.raises(ValueError, match="frame"):
        p2e(np.zeros((8, 9)), yaw=0.0, pitch=0.0, fov=90.0, h=8, w=16)
    with pytest.raises(ValueError, match="rays"):
        p2e(np.zeros((8, 8)), yaw=0.0, pitch=0.0, fov=90.0, h=8, w=16, rays=np.zeros((4, 4, 3)))
    with pytest.raises(ValueError, match="h"):
        erp_rays(1, 8)
    with pytest.raises(ValueError, match="z"):
        z_to_distance(np.zeros((3, 4)), fov=90.0)
    with pytest.raises(TypeError, match="yaw"):
        view_rotation("a", 0.0)
    with pytest.raises(ValueError, match="yaw"):
        view_rotation(float("nan"), 0.0)


@pytest.mark.parametrize("fov", [60.0, 90.0, 120.0])
def test_p2e_mask_equals_brute_force_frustum_test(fov):
    """The latitude band p2e restricts itself to loses no pixel: its mask equals the full frustum test."""
    from nips25_st2360d import coverage, sus_views

    for yaw, pitch in [*sus_views().tolist(), [10.0, 89.0], [-170.0, -89.0]]:
        _, valid = p2e(np.ones((8, 8)), yaw=yaw, pitch=pitch, fov=fov, h=48, w=96)
        np.testing.assert_array_equal(valid, coverage(np.array([[yaw, pitch]]), fov=fov, h=48, w=96) > 0)


def test_helpers_reject_bad_input():
    """The smaller public helpers name the argument they reject."""
    from nips25_st2360d import (
        Box,
        RoomScene,
        Sphere,
        blend_weights,
        frame_ray_norm,
        frame_rays,
        make_views,
        perspective_grid,
        render_room,
    )

    cases = [
        (lambda: perspective_grid(0.0, 8), ValueError, "fov"),
        (lambda: perspective_grid(90.0, 1), ValueError, "size"),
        (lambda: frame_ray_norm(90.0, 0), ValueError, "size"),
        (lambda: rays_to_erp_coords(np.zeros((4, 2)), 8, 16), ValueError, "rays"),
        (lambda: rays_to_erp_coords(np.zeros((4, 3)), 8, 2), ValueError, "w"),
        (lambda: distance_to_z(np.full((3, 3), np.inf), fov=90.0), ValueError, "rho"),
        (lambda: blend_weights(fov=90.0, size=8, blend="gauss"), ValueError, "blend"),
        (lambda: blend_weights(fov=90.0, size=8, power=-2.0), ValueError, "power"),
        (lambda: make_views({"sampler": "sus"}), TypeError, "config"),
        (lambda: frame_rays(np.zeros((2, 3)), fov=90.0, size=4), ValueError, "views"),
        (lambda: render_room(-1), ValueError, "seed"),
        (lambda: render_room(0, h=1), ValueError, "h"),
        (lambda: render_room(0, h=16, w=48), ValueError, "w = 2 h"),
        (lambda: RoomScene.random(0, n_boxes=-1), ValueError, "n_boxes"),
        (lambda: Box((0.0, 0.0, 0.0), (1.0, -1.0, 1.0)), ValueError, "lo"),
        (lambda: Box((0.0, 0.0), (1.0, 1.0, 1.0)), ValueError, "lo"),
        (lambda: Sphere((0.0, 0.0, 3.0), 0.0), ValueError, "radius"),
        (lambda: Sphere((0.0, np.nan, 3.0), 1.0), ValueError, "center"),
        (lambda: RoomScene(Box((1.0, 1.0, 1.0), (2.0, 2.0, 2.0))), ValueError, "room"),
        (lambda: RoomScene("room"), TypeError, "room"),
        (lambda: RoomScene(Box((-3.0,) * 3, (3.0,) * 3), spheres=(Sphere((0.0, 0.0, 0.5), 1.0),)), ValueError,
         "spheres"),
        (lambda: RoomScene(Box((-3.0,) * 3, (3.0,) * 3)).ray_distance(np.ones((2, 2))), ValueError, "rays"),
    ]  # fmt: skip
    for call, err, match in cases:
        with pytest.raises(err, match=match):
            call()


def test_depth_conversions_reject_negative_depth():
    """Review: a negative z-depth or distance was converted silently."""
    from nips25_st2360d import distance_to_z, z_to_distance

    with pytest.raises(ValueError, match="z must be a depth"):
        z_to_distance(-np.ones((4, 4)), fov=90.0)
    with pytest.raises(ValueError, match="rho must be a distance"):
        distance_to_z(-np.ones((4, 4)), fov=90.0)
    assert z_to_distance(np.zeros((4, 4)), fov=90.0).max() == 0.0  # 0 marks a missing pixel


@pytest.mark.parametrize("order", [0, 1])
def test_sampling_map_equals_scipy_map_coordinates(order):
    """Known answer: the precomputed taps give scipy's bilinear / nearest interpolation, edges and corners included."""
    from nips25_st2360d import SamplingMap
    from scipy.ndimage import map_coordinates

    rng = np.random.default_rng(0)
    img = rng.normal(size=(7, 9, 2))
    row = np.concatenate([rng.uniform(0, 6, 200), [0.0, 6.0, 6.0, 0.0, 5.5]])
    col = np.concatenate([rng.uniform(0, 8, 200), [0.0, 8.0, 0.0, 8.0, 7.9]])
    m = SamplingMap.from_coords(np.arange(row.size), row, col, source_shape=(7, 9), target_shape=(1, row.size),
                                order=order)  # fmt: skip
    ref = np.stack([map_coordinates(img[..., c], [row, col], order=order, mode="nearest") for c in range(2)], -1)
    np.testing.assert_allclose(m.sample(img), ref, atol=1e-5)
    np.testing.assert_allclose(m.sample(img[..., 0]), ref[:, 0], atol=1e-5)
    with pytest.raises(ValueError, match="img"):
        m.sample(np.zeros((3, 3)))


def test_p2e_rejects_a_panorama_size_that_is_not_2_to_1():
    with pytest.raises(ValueError, match="width = 2 x height"):
        p2e(np.ones((8, 8)), yaw=0.0, pitch=0.0, fov=90.0, h=10, w=16)
