"""Real-model loading code on tiny random-init configurations (no weights are downloaded)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from nips25_st2360d import ST2360D, ST2360DConfig, VideoDepthModel  # noqa: E402
from nips25_st2360d.adapters import DepthAnythingV2, TorchVideoModel, frames_to_tensor  # noqa: E402

FRAMES = np.random.default_rng(0).integers(0, 256, (3, 42, 42, 3)).astype(np.uint8)


def test_depth_anything_v2_reloads_from_a_local_directory_identically(tiny_dav2_dir):
    """Two loads of the saved tiny DA-V2 give bit-identical predictions; the output is relative disparity."""
    a, b = DepthAnythingV2(tiny_dav2_dir), DepthAnythingV2(tiny_dav2_dir)
    assert isinstance(a, VideoDepthModel) and a.output == "disparity"
    pa, pb = a.predict(FRAMES), b.predict(FRAMES)
    assert pa.shape == (3, 42, 42) and pa.dtype == np.float32
    np.testing.assert_array_equal(pa, pb)
    assert (pa > 0).all() and pa.std() > 0


def test_depth_anything_v2_matches_the_transformers_forward(tiny_dav2_dir):
    from transformers import DepthAnythingForDepthEstimation

    net = DepthAnythingForDepthEstimation.from_pretrained(str(tiny_dav2_dir), local_files_only=True).eval()
    with torch.inference_mode():
        ref = net(pixel_values=frames_to_tensor(FRAMES)).predicted_depth.numpy()
    np.testing.assert_allclose(DepthAnythingV2(tiny_dav2_dir).predict(FRAMES), np.maximum(ref, 1e-3 * ref.max()),
                               rtol=1e-5)  # fmt: skip


def test_depth_anything_v2_runs_inside_st2360d(tiny_dav2_dir):
    erp = np.random.default_rng(1).integers(0, 256, (32, 64, 3)).astype(np.uint8)
    out = ST2360D(DepthAnythingV2(tiny_dav2_dir), ST2360DConfig(sampler="cubemap", frame_size=28)).predict(
        erp, show_progress=False
    )
    assert out.valid.all() and np.isfinite(out.depth).all() and (out.depth > 0).all()


def test_torch_video_model_wraps_a_clip_module():
    class Clip(torch.nn.Module):
        def forward(self, x):  # (1, T, 3, s, s) -> (1, T, s, s): mean intensity + 1, a known function
            return x.mean(dim=2) + 10.0

    model = TorchVideoModel(Clip(), output="depth")
    pred = model.predict(FRAMES)
    x = frames_to_tensor(FRAMES).mean(dim=1).numpy() + 10.0
    np.testing.assert_allclose(pred, x, rtol=1e-5)


def test_frames_to_tensor_normalises_and_rounds_to_patch_multiple():
    x = frames_to_tensor(np.full((1, 40, 40, 3), 255, np.uint8))
    assert tuple(x.shape) == (1, 3, 42, 42)
    np.testing.assert_allclose(x[0, :, 5, 5].numpy(), (1 - np.array([0.485, 0.456, 0.406])) / [0.229, 0.224, 0.225],
                               rtol=1e-4)  # fmt: skip


def test_adapters_reject_bad_input(tmp_path):
    with pytest.raises(ValueError, match="path"):
        DepthAnythingV2(tmp_path / "missing")
    with pytest.raises(ValueError, match="path"):
        DepthAnythingV2(tmp_path)
    with pytest.raises(TypeError, match="module"):
        TorchVideoModel(lambda x: x)
    with pytest.raises(ValueError, match="output"):
        TorchVideoModel(torch.nn.Identity(), output="normals")
    with pytest.raises(TypeError, match="frames"):
        frames_to_tensor(FRAMES.astype(np.float32))
    with pytest.raises(ValueError, match="module output"):
        TorchVideoModel(torch.nn.Identity()).predict(FRAMES)
