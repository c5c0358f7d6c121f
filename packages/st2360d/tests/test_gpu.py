"""The model adapters on a CUDA device (tiny random-init Depth Anything V2 from ``conftest``), against the CPU.

Skipped where no CUDA GPU is present. Frames are resized and normalised on the CPU and moved to the device, so CPU
and CUDA see the same input; float32 convolutions and attention then round differently (cuDNN vs oneDNN, TF32 off),
about 1e-6 relative per op through 4 ViT layers and the DPT neck, so ``rtol=1e-3`` with an absolute floor of
``1e-4 * max`` for pixels near the clipped background.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from nips25_st2360d import ST2360D, ST2360DConfig  # noqa: E402
from nips25_st2360d.adapters import DepthAnythingV2, TorchVideoModel, frames_to_tensor  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

FRAMES = np.random.default_rng(0).integers(0, 256, (3, 42, 42, 3)).astype(np.uint8)


@pytest.fixture(autouse=True)
def _no_tf32():
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def test_depth_anything_v2_on_cuda_equals_cpu(tiny_dav2_dir):
    """``DepthAnythingV2(device="cuda")`` holds its weights on cuda and predicts the CPU disparity."""
    want = DepthAnythingV2(tiny_dav2_dir).predict(FRAMES)
    model = DepthAnythingV2(tiny_dav2_dir, device="cuda", batch_size=2)
    assert all(p.is_cuda for p in model.net.parameters())
    got = model.predict(FRAMES)
    assert got.shape == (3, 42, 42) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * float(want.max()))


def test_torch_video_model_on_cuda_gives_the_known_function():
    """A clip module on cuda (mean intensity + 10) returns exactly that function of the normalised frames."""

    class Clip(torch.nn.Module):
        def forward(self, x):
            assert x.is_cuda
            return x.mean(dim=2) + 10.0

    pred = TorchVideoModel(Clip(), output="depth", device="cuda").predict(FRAMES)
    np.testing.assert_allclose(pred, frames_to_tensor(FRAMES).mean(dim=1).numpy() + 10.0, rtol=1e-5)


def test_st2360d_pipeline_with_a_cuda_model_equals_the_cpu_pipeline(tiny_dav2_dir):
    """The whole panorama pipeline (cubemap views, alignment, merge) with the model on cuda matches the CPU run."""
    erp = np.random.default_rng(1).integers(0, 256, (32, 64, 3)).astype(np.uint8)
    cfg = ST2360DConfig(sampler="cubemap", frame_size=28)
    want = ST2360D(DepthAnythingV2(tiny_dav2_dir), cfg).predict(erp, show_progress=False)
    got = ST2360D(DepthAnythingV2(tiny_dav2_dir, device="cuda"), cfg).predict(erp, show_progress=False)
    assert got.valid.all() and np.isfinite(got.depth).all() and (got.depth > 0).all()
    np.testing.assert_allclose(got.depth, want.depth, rtol=1e-3, atol=1e-4 * float(want.depth.max()))
