"""Shared fixtures: a procedural library, small generators and a tiny random-init open_clip config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from nips25_commono import ProceduralLibrary, SceneGenerator

# One torch intra-op thread: on the shared 2-core CI machine two threads spin-wait and run several times slower.
torch.set_num_threads(1)

TINY_CLIP = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "head_width": 16, "patch_size": 8},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2},
}


@pytest.fixture(scope="session")
def library() -> ProceduralLibrary:
    return ProceduralLibrary()


@pytest.fixture(scope="session")
def generator(library: ProceduralLibrary) -> SceneGenerator:
    return SceneGenerator(library, n_objects=(3, 6), canvas=100, seed=0)


@pytest.fixture(scope="session")
def examples(generator: SceneGenerator) -> list:
    return generator.examples(40)


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Register a tiny random-init open_clip architecture (no weights exist anywhere) and return its name."""
    open_clip = pytest.importorskip("open_clip")
    path: Path = tmp_path_factory.mktemp("clip") / "commono-tiny.json"
    path.write_text(json.dumps(TINY_CLIP))
    open_clip.add_model_config(path)
    return "commono-tiny"
