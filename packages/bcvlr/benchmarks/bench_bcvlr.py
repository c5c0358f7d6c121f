"""Benchmark of BCV-LR's hot paths, side by side with the peers, on 1 CPU thread.

1. VQ-EMA (forward + codebook update, 2 codebooks x 64 codes x 16 dims, batch 128) against vector-quantize-pytorch's
   ``VectorQuantize`` with the same layout (the peer named in the issue).
2. Training-step time of every stage (median ms per batched update) on the MiniGrid quick-profile shapes.
3. The online loop: environment steps plus updates per second, BCV-LR beside BCO on the same budget.
4. ``--online``: the online loop alone on the reproduction's shapes (MiniGrid ``"cpu"`` preset, its decoder-only
   ablation, the LAPO-style agent, and the point mass with ``"cpu-continuous"``): seconds spent in the updates over
   768 interactions, the figure the frozen-feature cache (0.2.1) changes. Run it alone with ``--online``.
Peak memory is the process's peak resident set size (``nips25_shared.bench.peak_rss_mib``).
"""

from __future__ import annotations

import statistics
import time

import torch
from nips25_bcvlr import BCVLR, VQEMA, BCVLRConfig, BFSExpert, make_minigrid_pixels, record_video
from nips25_bcvlr.baselines import BCO, BaselineConfig

from nips25_shared.bench import median_seconds, peak_rss_mib

REPEATS = 7


def median_ms(fn, repeats: int = REPEATS, inner: int = 20) -> float:  # type: ignore[no-untyped-def]
    """Median over ``repeats`` of the mean time of ``inner`` back-to-back calls, ms (one warm-up)."""

    def block() -> None:
        for _ in range(inner):
            fn()

    return 1e3 * median_seconds(block, repeats=repeats, warmup=1) / inner


def bench_vq() -> None:
    from vector_quantize_pytorch import VectorQuantize

    torch.manual_seed(0)
    z = torch.randn(128, 128)
    ours = VQEMA(decay=0.99).train()
    peer = VectorQuantize(dim=32, codebook_size=64, codebook_dim=16, heads=2, separate_codebook_per_head=True,
                          decay=0.99, commitment_weight=0.05).train()  # fmt: skip
    t_ours = median_ms(lambda: ours(z))
    t_peer = median_ms(lambda: peer(z.reshape(128, 4, 32)))
    print(f"VQ-EMA forward+update, batch 128: ours {t_ours:.3f} ms | vector-quantize-pytorch {t_peer:.3f} ms | "
          f"ratio ours/peer {t_ours / t_peer:.2f}")  # fmt: skip


def bench_pipeline() -> None:
    env = make_minigrid_pixels()
    video = record_video(env, BFSExpert(), n_frames=600, seed=0)
    cfg = BCVLRConfig.preset("cpu", stage1_steps=30, stage2_steps=30, stage3_steps=30)
    agent = BCVLR(cfg, obs_shape=video.frames.shape[1:], action_space=env.action_space, seed=0)
    agent.pretrain(video, show_progress=False)
    budget = 512
    log = agent.online([make_minigrid_pixels() for _ in range(cfg.n_envs)], budget, show_progress=False)
    for name, stage in agent.logs.items():
        ms = 1e3 * statistics.median(stage.step_times[1:] or stage.step_times)
        print(f"stage {name:9s}: {ms:7.1f} ms / update (batch {cfg.stage2_batch}, {len(stage.step_times)} updates)")
    print(f"BCV-LR online loop: {log.env_steps} env steps + {log.updates} updates in "
          f"{log.collect_seconds + log.update_seconds:.1f} s = {log.throughput:.1f} (steps+updates)/s "
          f"(collect {log.env_steps / log.collect_seconds:.0f} steps/s)")  # fmt: skip
    bcfg = BaselineConfig()
    bco = BCO(video.frames.shape[1:], env.action_space, config=bcfg, seed=0)
    start = time.perf_counter()
    bco.learn(video, [make_minigrid_pixels() for _ in range(cfg.n_envs)], budget)
    sec = time.perf_counter() - start
    updates = bcfg.n_iters * (bcfg.idm_steps + bcfg.bc_steps)
    bco_rate = (budget + updates) / sec
    print(f"BCO loop (peer baseline): {budget} env steps + {updates} updates in {sec:.1f} s = {bco_rate:.1f} "
          f"(steps+updates)/s | ratio BCV-LR/BCO {log.throughput / bco_rate:.2f}")  # fmt: skip


def bench_online() -> None:
    import dataclasses
    import itertools
    import sys

    from nips25_bcvlr import PDExpert, PointMassPixels
    from nips25_bcvlr.baselines import lapo_lite_config

    short = {"stage1_steps": 20, "stage2_steps": 20, "stage3_steps": 20}
    grid = make_minigrid_pixels()
    grid_video = record_video(grid, BFSExpert(), n_frames=1200, seed=0)
    mass_video = record_video(PointMassPixels(size=16, max_steps=60), PDExpert(), n_frames=1200, seed=0)
    cpu = BCVLRConfig.preset("cpu", **short)
    cases = [
        ("MiniGrid, BCV-LR", cpu, grid_video, make_minigrid_pixels),
        ("MiniGrid, decoder-only ablation", dataclasses.replace(cpu, finetune_idm=False, reclone=False), grid_video,
         make_minigrid_pixels),
        ("MiniGrid, LAPO-style (pixels)", lapo_lite_config(cpu), grid_video, make_minigrid_pixels),
        ("point mass, cpu-continuous", BCVLRConfig.preset("cpu-continuous", **short), mass_video,
         lambda: PointMassPixels(size=16, max_steps=60)),
    ]  # fmt: skip
    if "--no-continuous" in sys.argv[1:]:
        cases = cases[:-1]
    # 0.2.1: each case without the frozen-feature cache (feature_cache_mib=0, the 0.2.0 path) and with it, in turn
    fields = {f.name for f in dataclasses.fields(BCVLRConfig)}
    modes = [("no cache", {"feature_cache_mib": 0.0}), ("cache", {})] if "feature_cache_mib" in fields else [("", {})]
    for (name, base, video, make), (mode, extra) in itertools.product(cases, modes):
        cfg = dataclasses.replace(base, **extra)
        env = make()
        agent = BCVLR(cfg, obs_shape=video.frames.shape[1:], action_space=env.action_space, seed=0)
        agent.pretrain(video, show_progress=False)
        cpu = time.process_time()  # CPU seconds of this process: less sensitive than wall time to a loaded machine
        log = agent.online([make() for _ in range(cfg.n_envs)], 768, show_progress=False)
        cpu = time.process_time() - cpu
        print(f"online loop, {name} {mode}: {log.env_steps} steps + {log.updates} updates; "
              f"updates {log.update_seconds:.2f} s, collection {log.collect_seconds:.2f} s, "
              f"{log.throughput:.1f} (steps+updates)/s; loop CPU time {cpu:.2f} s")  # fmt: skip


def main() -> None:
    import sys

    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread")
    if "--online" in sys.argv[1:]:
        bench_online()
        return
    bench_vq()
    bench_pipeline()
    print(f"peak memory (max RSS): {peak_rss_mib():.0f} MB")


if __name__ == "__main__":
    main()
