"""GradSPO vs SPO vs Diffusion-DPO on the digits stand-in: wall time per training iteration (median of several
iterations after a warm-up), peak resident memory, and per-step relative variance of the LoRA gradient.

Same batch, candidates, sampler steps and model for every method. The variance is measured as in ``reproduce``: every
method's estimator at the common starting model (theta = reference = EMA), on the same fixed states and the same
candidate noise (``paired_gradient_variance``), so a difference is a difference of the estimators.
Run: ``python benchmarks/bench_gradspo.py``.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import torch
from nips25_gradspo.diagnostics import paired_gradient_variance
from nips25_gradspo.reproduce import METHODS, PROFILES, _prompts, _trainer

from nips25_shared.bench import median_seconds, peak_rss_mib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=5, help="timed iterations per method")
    parser.add_argument("--resamples", type=int, default=8, help="candidate resamplings for the variance")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cfg = replace(PROFILES["quick"], iters=args.reps)
    print(f"batch {cfg.batch}, K {cfg.num_candidates}, {cfg.num_inference_steps} DDIM steps, "
          f"divert from step {cfg.divert_start_step}; {args.reps} timed iterations (median)")  # fmt: skip
    times: dict[str, float] = {}
    for method in ("gradspo", "spo", "dpo"):
        tr = _trainer(method, cfg, 0)
        gen = torch.Generator().manual_seed(0)
        # one warm-up iteration, then the timed ones
        times[method] = median_seconds(
            lambda tr=tr, gen=gen: tr.step(_prompts(cfg.batch), generator=gen), repeats=args.reps, warmup=1
        )
        peak = peak_rss_mib()
        print(f"{method:8s} {times[method] * 1e3:8.1f} ms/iteration   process peak RSS so far {peak:7.1f} MiB")
    fresh = {m: _trainer(m, cfg, 0) for m in METHODS}
    variance = paired_gradient_variance(fresh, _prompts(cfg.var_states), n_resamples=args.resamples, seed=1)
    for method, v in variance.items():
        cells = "  ".join(f"t={int(t)}: {r:.3g}" for t, r in zip(v["timestep"], v["relative_variance"]))
        print(f"{method:8s} relative variance per step (common starting model, paired draws): {cells}")
    print(
        f"ratio gradspo/spo {times['gradspo'] / times['spo']:.2f}   gradspo/dpo {times['gradspo'] / times['dpo']:.2f}"
    )


if __name__ == "__main__":
    main()
