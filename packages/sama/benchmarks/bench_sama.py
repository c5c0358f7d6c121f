"""Benchmarks of nips25-sama, side by side with the peer where one exists.

1. Caption metrics (BLEU-1..4, ROUGE-L, CIDEr-D) on the same corpus: ours vs pycocoevalcap's scorers; median of
   several runs, ratio ours/peer, peak Python memory (tracemalloc) of each.
2. Aggregator latency per question at the 1B model's shapes (C = 896, 32 sparse frames, 12-layer spatial
   Q-Former) on CPU with random weights, for 1 question and for ``--prompts`` questions on the same frames (the
   frame tokens and the spatial Q-Former are shared across questions); median of several runs, peak resident
   memory. No peer runs this module on CPU (the released code needs the full InternVL model and a GPU).

Usage: python bench_sama.py [--repeats 5] [--pairs 400] [--frames 32] [--prompts 4]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from nips25_shared.bench import measure, median_seconds, peak_rss_mib


def _corpus(n: int, seed: int = 0) -> tuple[dict[str, list[str]], dict[str, str]]:
    from nips25_sama.synthetic import MOTIONS, OBJECTS

    rng = np.random.default_rng(seed)
    adjs = ["small", "brown", "large", "striped", "shiny", "old", "young", "bright"]
    places = ["on the grass", "over the bricks", "across the gravel", "near the edge", "in the middle"]

    def sentence() -> str:
        o, m, a, p = rng.choice(OBJECTS), rng.choice(MOTIONS), rng.choice(adjs), rng.choice(places)
        return f"the {a} {o} moves {m} {p} while the camera stays still"

    refs = {str(i): [sentence() for _ in range(int(rng.integers(1, 4)))] for i in range(n)}
    hyps = {str(i): sentence() for i in range(n)}
    return refs, hyps


def bench_captions(pairs: int, repeats: int) -> None:
    from nips25_sama.caption_metrics import bleu, cider_d, rouge_l

    refs, hyps = _corpus(pairs)

    def ours() -> None:
        bleu(refs, hyps)
        rouge_l(refs, hyps)
        cider_d(refs, hyps)

    try:
        from pycocoevalcap.bleu.bleu import Bleu
        from pycocoevalcap.cider.cider import Cider
        from pycocoevalcap.rouge.rouge import Rouge
    except ImportError:
        print("caption metrics: pycocoevalcap not installed; peer skipped")
        run = measure(ours, repeats=repeats, memory="tracemalloc")
        t, mem = run.seconds, run.peak_mib
        print(f"caption metrics ours: {t * 1e3:.1f} ms for {pairs} pairs, peak {mem:.1f} MiB")
        return
    res = {k: [v] for k, v in hyps.items()}

    def peer() -> None:
        Bleu(4).compute_score(refs, res, verbose=0)
        Rouge().compute_score(refs, res)
        Cider().compute_score(refs, res)

    ours_run = measure(ours, repeats=repeats, memory="tracemalloc")
    peer_run = measure(peer, repeats=repeats, memory="tracemalloc")
    t_ours, m_ours = ours_run.seconds, ours_run.peak_mib
    t_peer, m_peer = peer_run.seconds, peer_run.peak_mib
    print(f"caption metrics (BLEU-1..4 + ROUGE-L + CIDEr-D), {pairs} pairs, median of {repeats}:")
    print(f"  ours          {t_ours * 1e3:8.1f} ms  ({pairs / t_ours:8.0f} pairs/s)  peak {m_ours:6.1f} MiB")
    print(f"  pycocoevalcap {t_peer * 1e3:8.1f} ms  ({pairs / t_peer:8.0f} pairs/s)  peak {m_peer:6.1f} MiB")
    print(f"  ratio ours/peer (time) = {t_ours / t_peer:.2f}")


def bench_aggregator(frames: int, repeats: int, prompts: int) -> None:
    from nips25_sama import SAMAConfig, SpatioTemporalAggregator

    torch.manual_seed(0)
    cfg = SAMAConfig.for_model("1b", dropout=0.0)
    model = SpatioTemporalAggregator(cfg).eval()
    x = torch.randn(frames, cfg.tokens_per_frame, cfg.vis_dim)
    one = torch.tensor([101, 2029, 2126, 2515, 30528, 30523, 30524, 30529, 2693, 1029, 102])
    n_params = sum(p.numel() for p in model.parameters()) / 1e6
    print(
        f"aggregator at 1B shapes (C=896, {frames} frames, {n_params:.0f} M params, {torch.get_num_threads()} threads):"
    )
    for p in sorted({1, prompts}):
        ids = one.expand(p, -1)
        rv, rs = torch.randn(p, 1, cfg.vis_dim), torch.ones(p, 1, cfg.region_mask_size, cfg.region_mask_size)
        with torch.no_grad():  # one warm-up run, then the timed ones
            seconds = median_seconds(
                lambda ids=ids, rv=rv, rs=rs: model(x, ids, region_visual=rv, region_shape=rs),
                repeats=repeats,
                warmup=1,
            )
        print(f"  {p} question(s) on the same frames: {seconds:.2f} s, {seconds / p:.2f} s per question "
              f"(median of {repeats}); peak RSS {peak_rss_mib():.0f} MiB")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--frames", type=int, default=32)
    parser.add_argument("--prompts", type=int, default=4, help="questions sharing the frames (also timed: 1)")
    args = parser.parse_args()
    torch.set_num_threads(2)
    bench_captions(args.pairs, args.repeats)
    bench_aggregator(args.frames, args.repeats, args.prompts)


if __name__ == "__main__":
    main()
