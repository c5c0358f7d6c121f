"""Benchmark of nips25-commono's hot paths, side by side with the peers.

1. Template matching: our batched FFT ``normalized_cross_correlation`` against ``skimage.feature.match_template``
   (one call per template and size), on the same scenes and templates; the matcher's per-image work.
2. Scoring throughput: questions parsed and scored per second (``score`` on raw reply strings).
3. Generator throughput: rendered scenes (images) per second.
4. Detector throughput: questions answered per second by ``TemplateMatcher`` and by ``OpenCLIPDetector`` on a tiny
   random-init open_clip config (a lower bound on its cost: real ViT weights are far larger).

Each timing is the median of several runs; peak memory is the tracemalloc peak of one run (numpy allocations) and
the process's maximum resident set size at the end.

    python packages/commono/benchmarks/bench_commono.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
from nips25_commono import (
    DEFAULT_EMOJI_FONT,
    EmojiLibrary,
    Oracle,
    ProceduralLibrary,
    SceneGenerator,
    TemplateMatcher,
    normalized_cross_correlation,
    score,
)
from skimage.feature import match_template

from nips25_shared.bench import measure, peak_rss_mib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n", type=int, default=40, help="questions per throughput run")
    args = parser.parse_args()
    library = EmojiLibrary() if DEFAULT_EMOJI_FONT.is_file() else ProceduralLibrary()
    gen = SceneGenerator(library, n_objects=(3, 7), seed=0)
    examples = gen.examples(args.n)
    matcher = TemplateMatcher(library, sizes=gen.config.size_range_px)
    results: dict[str, dict[str, float]] = {}

    # 1. NCC: ours (batched FFT) vs skimage.feature.match_template, same images and templates.
    images = [np.asarray(ex.images[0].resize((112, 112)), dtype=float) / 255.0 for ex in examples[:10]]
    objs = [o for o in examples[0].meta["option_objects"] if o >= 0][:10]
    sizes = [round(s / 2) for s in gen.config.size_range_px]
    batches = [np.stack([matcher._template(o, s) for o in objs]) for s in sizes]

    def ours() -> None:
        for img in images:
            for batch in batches:
                normalized_cross_correlation(img, batch)

    def peer() -> None:
        for img in images:
            for batch in batches:
                for t in batch:
                    match_template(img, t)

    ours_run = measure(ours, repeats=args.repeats, memory="tracemalloc")
    t_ours, m_ours = ours_run.seconds, ours_run.peak_mib
    peer_run = measure(peer, repeats=args.repeats, memory="tracemalloc")
    t_peer, m_peer = peer_run.seconds, peer_run.peak_mib
    n_maps = len(images) * len(objs) * len(sizes)
    a, b = normalized_cross_correlation(images[0], batches[0])[0], match_template(images[0], batches[0][0])[..., 0]
    results["ncc"] = {
        "ours_s": t_ours,
        "skimage_s": t_peer,
        "ratio_ours_over_skimage": t_ours / t_peer,
        "maps": n_maps,
        "ours_peak_mib": m_ours,
        "skimage_peak_mib": m_peer,
        "max_abs_difference": float(np.abs(a - b).max()),
    }

    # 2. Scoring throughput on raw strings.
    replies = [Oracle().answer(ex) for ex in examples] * 25
    data = examples * 25
    score_run = measure(lambda: score(replies, data), repeats=args.repeats, memory="tracemalloc")
    t_score, m_score = score_run.seconds, score_run.peak_mib
    results["score"] = {"questions_per_s": len(data) / t_score, "peak_mib": m_score}

    # 3. Generator throughput (two images per question).
    gen_run = measure(lambda: gen.examples(10, start=1000), repeats=args.repeats, memory="tracemalloc")
    t_gen, m_gen = gen_run.seconds, gen_run.peak_mib
    results["generator"] = {"images_per_s": 20 / t_gen, "peak_mib": m_gen}

    # 4. Detectors: questions per second (fresh caches each run).
    def run_matcher() -> None:
        m = TemplateMatcher(library, sizes=gen.config.size_range_px)
        for ex in examples[:20]:
            m.answer(ex)

    match_run = measure(run_matcher, repeats=args.repeats, memory="tracemalloc")
    t_match, m_match = match_run.seconds, match_run.peak_mib
    results["template_matcher"] = {"questions_per_s": 20 / t_match, "peak_mib": m_match}
    try:
        import open_clip
        import torch
        from nips25_commono import OpenCLIPDetector

        with tempfile.TemporaryDirectory() as tmp:
            cfg = {
                "embed_dim": 32,
                "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "head_width": 16, "patch_size": 8},
                "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2},
            }
            (Path(tmp) / "commono-bench-tiny.json").write_text(json.dumps(cfg))
            open_clip.add_model_config(Path(tmp) / "commono-bench-tiny.json")
            torch.manual_seed(0)
            det = OpenCLIPDetector("commono-bench-tiny")

            def run_clip() -> None:
                det._scores.clear()
                for ex in examples[:10]:
                    det.answer(ex)

            clip_run = measure(run_clip, repeats=max(1, args.repeats // 2), memory="tracemalloc")
            t_clip, m_clip = clip_run.seconds, clip_run.peak_mib
        results["openclip_tiny"] = {"questions_per_s": 10 / t_clip, "peak_mib": m_clip}
    except ImportError:
        results["openclip_tiny"] = {"skipped": 1.0}

    results["process"] = {"max_rss_mib": peak_rss_mib()}
    print(f"library: {library!r}; {args.repeats} repeats, medians")
    r = results["ncc"]
    print(
        f"NCC ({r['maps']:.0f} maps): ours {r['ours_s'] * 1e3:.1f} ms vs skimage.match_template "
        f"{r['skimage_s'] * 1e3:.1f} ms, ratio ours/peer {r['ratio_ours_over_skimage']:.3f}; "
        f"peak {r['ours_peak_mib']:.1f} vs {r['skimage_peak_mib']:.1f} MiB; max |diff| {r['max_abs_difference']:.1e}"
    )
    print(f"score: {results['score']['questions_per_s']:.0f} questions/s (peak {results['score']['peak_mib']:.1f} MiB)")
    print(
        f"generator: {results['generator']['images_per_s']:.1f} images/s (peak {results['generator']['peak_mib']:.1f})"
    )
    tm = results["template_matcher"]
    print(f"TemplateMatcher: {tm['questions_per_s']:.1f} questions/s (peak {tm['peak_mib']:.1f} MiB)")
    if "questions_per_s" in results["openclip_tiny"]:
        oc = results["openclip_tiny"]
        rate, peak = oc["questions_per_s"], oc["peak_mib"]
        print(f"OpenCLIPDetector (tiny random config): {rate:.1f} questions/s (peak {peak:.1f} MiB)")
    print(f"process max RSS: {results['process']['max_rss_mib']:.0f} MiB")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
