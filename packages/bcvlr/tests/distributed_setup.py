"""The tiny configuration shared by the data-parallel script and its single-process reference."""

from __future__ import annotations

from typing import Any

from nips25_bcvlr import BCVLRConfig, BFSExpert, make_minigrid_pixels, record_video


def make_agent_inputs(batch: int) -> tuple[BCVLRConfig, Any, list[Any]]:
    """Config (Stage 1 off: its contrastive negatives are per process), a 60-frame video and 2 envs."""
    config = BCVLRConfig.preset(
        "cpu", stage1_steps=0, stage2_steps=4, stage3_steps=4, stage2_batch=batch, stage3_batch=batch,
        finetune_batch=batch, idm_updates=2, reclone_steps=2, n_envs=2, steps_per_iter=8, codebook_size=8,
    )  # fmt: skip
    video = record_video(make_minigrid_pixels(), BFSExpert(), n_frames=60, seed=0)
    return config, video, [make_minigrid_pixels() for _ in range(2)]
