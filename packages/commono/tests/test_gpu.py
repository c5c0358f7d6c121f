"""The open_clip detector on a CUDA device (tiny random-init architecture from ``conftest``), against the CPU.

Skipped where no CUDA GPU is present. The same weights are loaded on both devices from a local file; crops are
preprocessed on the CPU and moved to the device. Embeddings agree to float32 rounding (~1e-6, TF32 off); the
presence score is a softmax of ``exp(logit_scale) ~ 14`` times cosine similarities, so ``atol=1e-4`` on scores.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("open_clip")

from nips25_commono import OpenCLIPDetector, evaluate  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.fixture(autouse=True)
def _no_tf32():
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


@pytest.fixture(scope="module")
def detectors(tiny_clip, tmp_path_factory):
    """The same tiny random-init detector on the CPU and on cuda (weights through a local file)."""
    torch.manual_seed(0)
    cpu = OpenCLIPDetector(tiny_clip, grid=2)
    weights = tmp_path_factory.mktemp("clip_w") / "tiny.pt"
    torch.save(cpu.model.state_dict(), weights)
    gpu = OpenCLIPDetector(tiny_clip, pretrained=weights, grid=2, device="cuda")
    return cpu, gpu


def test_detector_weights_on_cuda_and_embeddings_equal_cpu(detectors, examples):
    """Every parameter is on cuda; image and text embeddings (returned as numpy) equal the CPU ones."""
    cpu, gpu = detectors
    assert all(p.is_cuda for p in gpu.model.parameters())
    image = examples[0].images[0]
    np.testing.assert_allclose(gpu.image_features(image), cpu.image_features(image), atol=1e-5)
    texts = ["a photo of a cat.", "a photo of an empty background."]
    np.testing.assert_allclose(gpu._text_features(texts), cpu._text_features(texts), atol=1e-5)


def test_detector_scores_and_evaluation_on_cuda_equal_cpu(detectors, examples):
    """Per-slot presence scores on cuda equal the CPU scores; ``evaluate`` runs on the cuda detector."""
    cpu, gpu = detectors
    ex = examples[0]
    want, got = cpu.scores(ex), gpu.scores(ex)
    obj = list(ex.object_indices)
    assert np.all((got[:, obj] >= 0) & (got[:, obj] <= 1)) and np.isnan(got[:, ex.none_index]).all()
    np.testing.assert_allclose(got, want, atol=1e-4)
    assert evaluate(gpu, examples[:2]).n == 2
