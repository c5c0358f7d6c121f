"""Benchmark: FactoST inference vs the compact expert STID and a joint space-time Transformer of equal width.

Same work for every model: one batch of windows ``(B, L=12, N)`` -> ``(B, H=12, N)``, forward only, CPU, median of
several runs; also one training step (forward + backward + AdamW). Prints absolute times, the ratios ours/peer and
the process's peak resident memory after each model (``ru_maxrss``; models run from smallest to largest).

    python packages/factost/benchmarks/bench_factost.py [--nodes 20 100] [--repeats 9]
"""

from __future__ import annotations

import argparse

import torch
from nips25_factost import STID, BackboneConfig, FactoST, JointSTTransformer, STAdapter, TemporalBackbone

from nips25_shared.bench import median_seconds, peak_rss_mib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[20, 100])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    torch.manual_seed(0)
    cfg = BackboneConfig(d_model=64, n_layers=3, d_ff=128, n_domains=7, dropout=0.0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; batch {args.batch}, L=H=12, d=64, 3 layers")
    header = f"{'N':>4} {'model':<22} {'infer ms':>9} {'train ms':>9} {'params':>9} {'peak MiB':>9}"
    print(header)
    for n in args.nodes:
        x = torch.randn(args.batch, 12, n)
        cal = torch.stack([torch.randint(0, 7, (args.batch, 24)), torch.randint(0, 12, (args.batch, 24))], -1)
        y = torch.randn(args.batch, 12, n)
        models = {
            "STID (expert peer)": STID(n_nodes=n, context=12, horizon=12),
            "FactoST (frozen+adapter)": FactoST(
                TemporalBackbone(cfg), STAdapter(n_nodes=n, d_model=64, n_source_domains=7)
            ),
            "joint ST-Transformer": JointSTTransformer(n_nodes=n, context=12, horizon=12, d_model=64),
        }  # fmt: skip
        rows = {}
        for name, model in models.items():
            model.eval()
            with torch.no_grad():
                infer = 1e3 * median_seconds(lambda m=model, a=x, c=cal: m(a, c), repeats=args.repeats, warmup=1)
            opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
            model.train()

            def step(m=model, o=opt, a=x, c=cal, t=y) -> None:
                o.zero_grad()
                (m(a, c) - t).abs().mean().backward()
                o.step()

            train = 1e3 * median_seconds(step, repeats=max(3, args.repeats // 3), warmup=1)
            rows[name] = (infer, train)
            peak = peak_rss_mib()
            print(f"{n:>4} {name:<22} {infer:>9.2f} {train:>9.2f} {model.trainable_parameters():>9d} {peak:>9.0f}")
        ours = rows["FactoST (frozen+adapter)"]
        for peer in ("STID (expert peer)", "joint ST-Transformer"):
            print(f"{n:>4} ratio ours/{peer}: inference {ours[0] / rows[peer][0]:.2f}x, train step "
                  f"{ours[1] / rows[peer][1]:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
