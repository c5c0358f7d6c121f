"""Shared fixtures: a tiny random-init Depth Anything V2 saved to a local directory (no download)."""

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_dav2_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    backbone = transformers.Dinov2Config(
        hidden_size=32, num_hidden_layers=4, num_attention_heads=2, intermediate_size=64, image_size=56,
        patch_size=14, out_indices=[1, 2, 3, 4], reshape_hidden_states=False, apply_layernorm=True,
    )  # fmt: skip
    config = transformers.DepthAnythingConfig(backbone_config=backbone, reassemble_hidden_size=32,
                                              neck_hidden_sizes=[8, 16, 32, 32], fusion_hidden_size=16,
                                              head_hidden_size=8)  # fmt: skip
    torch.manual_seed(0)
    model = transformers.DepthAnythingForDepthEstimation(config).eval()
    with torch.no_grad():  # a positive head bias so the random net predicts non-degenerate disparity
        model.head.conv3.bias.fill_(1.0)
    path = tmp_path_factory.mktemp("tiny_dav2")
    model.save_pretrained(path)
    return path
