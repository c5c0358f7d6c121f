"""ST²360D end to end on a 2048 x 1024 panorama vs a py360convert cubemap pipeline, with the same simulated model.

Both pipelines: panorama -> perspective frames -> simulated depth model (exact depth of a ray-cast room, with the
models' scale errors) -> ray distance -> equirectangular depth. Ours: 24 SUS views in LGS order, our numpy e2p/p2e and
cos^2 blending. Peer: ``py360convert.e2c`` -> 6 faces -> ``py360convert.c2e`` (no overlap, no blending). Prints the
median wall time of several runs, the ratio ours/peer, the peak traced memory (tracemalloc, numpy allocations) and the
AbsRel of each output after global median scaling; then the back-projection alone: our ``p2e`` of one frame with
its cached sampling map (and without, map built in the call) against py360convert ``c2e`` of six faces / 6, on the
same panorama and frame size.

    python benchmarks/bench_st2360d.py [--repeats 3] [--frame-size 518] [--width 2048]
"""

from __future__ import annotations

import argparse

import numpy as np
import py360convert
from nips25_st2360d import (
    ST2360D,
    IndependentOracle,
    OracleVDE,
    ST2360DConfig,
    cubemap_views,
    depth_metrics,
    p2e,
    p2e_map,
    render_room,
    z_to_distance,
)

from nips25_shared.bench import measure, median_seconds


def cubemap_pipeline(rgb: np.ndarray, model: IndependentOracle, face_w: int) -> np.ndarray:
    """py360convert e2c -> model on the six faces -> ray distance -> py360convert c2e."""
    h, w = rgb.shape[:2]
    faces = py360convert.e2c(rgb, face_w=face_w, cube_format="list")
    frames = np.stack([np.clip(np.rint(f), 0, 255).astype(np.uint8) for f in faces])
    z = model.predict(frames, views=cubemap_views(), fov=90.0)
    rho = z_to_distance(z, fov=90.0)
    return py360convert.c2e(list(rho), h, w, cube_format="list")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--frame-size", type=int, default=518)
    parser.add_argument("--width", type=int, default=2048)
    args = parser.parse_args()
    w = args.width
    h = w // 2
    rgb, gt, scene = render_room(0, h=h, w=w)
    ours_model = OracleVDE(scene.ray_distance, seed=0)
    peer_model = IndependentOracle(scene.ray_distance, seed=0)
    st = ST2360D(ours_model, ST2360DConfig(frame_size=args.frame_size))

    def ours() -> np.ndarray:
        return st.predict(rgb, show_progress=False).depth

    def peer() -> np.ndarray:
        return cubemap_pipeline(rgb, peer_model, args.frame_size)

    def model_only() -> np.ndarray:
        frames, views = st.frames(rgb)
        return ours_model.predict(frames, views=views, fov=90.0)

    # one warm-up run each (imports, the sampling-map cache), then the timed runs, then one traced run for the peak
    ours_run = measure(ours, repeats=args.repeats, warmup=1, memory="tracemalloc")
    peer_run = measure(peer, repeats=args.repeats, warmup=1, memory="tracemalloc")
    t_ours, all_ours, mem_ours, d_ours = ours_run.seconds, ours_run.times, ours_run.peak_mib, ours_run.result
    t_peer, all_peer, mem_peer, d_peer = peer_run.seconds, peer_run.times, peer_run.peak_mib, peer_run.result
    t_model = median_seconds(model_only, repeats=args.repeats, warmup=1)
    q_ours = depth_metrics(d_ours, gt, align_mode="median")["abs_rel"]
    q_peer = depth_metrics(d_peer, gt, align_mode="median")["abs_rel"]
    print(f"panorama {w}x{h}, frames {args.frame_size}px, median of {args.repeats} runs (one process)")
    print(f"ours  ST2360D (24 SUS/LGS frames, OracleVDE): {t_ours:7.2f} s  runs {[round(t, 2) for t in all_ours]}  "
          f"peak {mem_ours:7.1f} MiB  AbsRel {q_ours:.4f}")  # fmt: skip
    print(f"peer  py360convert cubemap (6 faces, Indep.): {t_peer:7.2f} s  runs {[round(t, 2) for t in all_peer]}  "
          f"peak {mem_peer:7.1f} MiB  AbsRel {q_peer:.4f}")  # fmt: skip
    print(
        f"ratio ours/peer: {t_ours / t_peer:.2f}  (ours per frame {t_ours / 24:.2f} s, "
        f"peer per face {t_peer / 6:.2f} s)"
    )
    print(f"of ours, the simulated model (ray casting 24 frames) takes {t_model:.2f} s; geometry+merge "
          f"{t_ours - t_model:.2f} s")  # fmt: skip
    st_cold = ST2360D(ours_model, ST2360DConfig(frame_size=args.frame_size, cache_maps=False))
    t_cold = median_seconds(lambda: st_cold.predict(rgb, show_progress=False), repeats=args.repeats, warmup=0)
    print(f"ours without the map cache (maps rebuilt every call): {t_cold:7.2f} s  ratio to peer {t_cold / t_peer:.2f}")

    # back-projection alone, one view vs one cube face, on the same panorama size and frame size
    s = args.frame_size
    frame = np.random.default_rng(0).uniform(1.0, 5.0, (s, s)).astype(np.float32)
    views = st.sampling_maps(h, w)[1]
    equator = p2e_map(h, w, yaw=0.0, pitch=0.0, fov=90.0, size=s)
    pole = p2e_map(h, w, yaw=0.0, pitch=90.0, fov=90.0, size=s)
    reps = max(5, args.repeats)
    t_eq = median_seconds(lambda: p2e(frame, yaw=0.0, pitch=0.0, fov=90.0, h=h, w=w, sampling=equator), repeats=reps)
    t_pole = median_seconds(lambda: p2e(frame, yaw=0.0, pitch=90.0, fov=90.0, h=h, w=w, sampling=pole), repeats=reps)
    t_all = median_seconds(lambda: [m.sample(frame) for m in views], repeats=reps) / len(views)
    t_build = median_seconds(lambda: p2e_map(h, w, yaw=0.0, pitch=0.0, fov=90.0, size=s), repeats=reps)
    faces = [frame] * 6
    t_c2e = median_seconds(lambda: py360convert.c2e(faces, h, w, cube_format="list"), repeats=reps) / 6
    print(f"back-projection per view ({s}-px frame -> {w}x{h} ERP), median of {reps}:")
    print(f"  ours p2e, cached map: equator view {t_eq * 1e3:6.1f} ms, pole view {t_pole * 1e3:6.1f} ms; "
          f"pipeline's sparse sample, mean of the 24 SUS views {t_all * 1e3:6.1f} ms")  # fmt: skip
    print(f"  ours map construction (once per size and view) {t_build * 1e3:6.1f} ms")
    print(f"  peer py360convert c2e, 6 faces / 6: {t_c2e * 1e3:6.1f} ms per face")
    print(f"  ratio ours/peer per view: equator {t_eq / t_c2e:.2f}, pole {t_pole / t_c2e:.2f}, "
          f"pipeline mean {t_all / t_c2e:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
