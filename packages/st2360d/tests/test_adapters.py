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


def _fake_vda_package(root):
    """A stand-in ``video_depth_anything`` package with VDA's constructor and forward signature (tiny network)."""
    pkg = root / "video_depth_anything"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "video_depth.py").write_text(
        "import torch\n"
        "class VideoDepthAnything(torch.nn.Module):\n"
        "    def __init__(self, encoder='vitl', features=256, out_channels=(1,), metric=False):\n"
        "        super().__init__()\n"
        "        self.proj = torch.nn.Conv2d(3, 1, 1)\n"
        "        self.temporal = torch.nn.Linear(features, features)\n"
        "    def forward(self, x):\n"
        "        b, t = x.shape[:2]\n"
        "        y = self.proj(x.flatten(0, 1)).squeeze(1)\n"
        "        return torch.nn.functional.softplus(y).unflatten(0, (b, t))\n"
    )


def test_video_depth_anything_loads_a_local_checkpoint_strictly(tmp_path, monkeypatch):
    """The loader imports VDA's class from a local clone, builds the encoder config and loads the .pth strictly."""
    import sys

    from nips25_st2360d.adapters import load_video_depth_anything

    _fake_vda_package(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "video_depth_anything", raising=False)
    monkeypatch.delitem(sys.modules, "video_depth_anything.video_depth", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    from video_depth_anything.video_depth import VideoDepthAnything

    torch.manual_seed(0)
    net = VideoDepthAnything(encoder="vits", features=64, out_channels=[48, 96, 192, 384])
    torch.save(net.state_dict(), tmp_path / "video_depth_anything_vits.pth")
    model = load_video_depth_anything(tmp_path / "video_depth_anything_vits.pth", encoder="vits", repo_path=tmp_path)
    assert model.output == "disparity"
    with torch.inference_mode():
        ref = net(frames_to_tensor(FRAMES)[None])[0].numpy()
    np.testing.assert_allclose(model.predict(FRAMES), np.maximum(ref, 1e-3 * ref.max()), rtol=1e-6)
    # Longer than one window: VDA's multi-window inference (the stand-in is per-frame, so windows agree exactly).
    long = np.random.default_rng(3).integers(0, 256, (40, 14, 14, 3)).astype(np.uint8)
    with torch.inference_mode():
        ref_long = net(frames_to_tensor(long)[None])[0].numpy()
    assert model.window == 32
    np.testing.assert_allclose(model.predict(long), np.maximum(ref_long, 1e-3 * ref_long.max()), rtol=1e-4)
    torch.save({"proj.weight": torch.zeros(1, 3, 1, 1)}, tmp_path / "bad.pth")
    with pytest.raises(RuntimeError):
        load_video_depth_anything(tmp_path / "bad.pth", encoder="vits", repo_path=tmp_path)


def test_video_depth_anything_loader_rejects_bad_input(tmp_path):
    from nips25_st2360d.adapters import load_video_depth_anything

    with pytest.raises(ValueError, match="ckpt_path"):
        load_video_depth_anything(tmp_path / "missing.pth")
    (tmp_path / "w.pth").write_bytes(b"")
    with pytest.raises(ValueError, match="encoder"):
        load_video_depth_anything(tmp_path / "w.pth", encoder="vitg")
    with pytest.raises(ValueError, match="repo_path"):
        load_video_depth_anything(tmp_path / "w.pth", repo_path=tmp_path)


def test_video_depth_anything_loader_explains_missing_code(tmp_path, monkeypatch):
    import sys

    from nips25_st2360d.adapters import load_video_depth_anything

    monkeypatch.setitem(sys.modules, "video_depth_anything", None)
    monkeypatch.setitem(sys.modules, "video_depth_anything.video_depth", None)
    (tmp_path / "w.pth").write_bytes(b"")
    with pytest.raises(ImportError, match="Video-Depth-Anything"):
        load_video_depth_anything(tmp_path / "w.pth")
