"""Stage-0 pilot of the shifted-domain task (README, 0.2.5): pick the shift before GoRA is run on it.

Looks only at facts that do not involve GoRA: the pretrained digits-0-4 net (its own head) on each candidate
shift of digits 0-4 (accuracy, cross-entropy), and the SGD-step control at xi = 1/L on the 25 few-shot images.
Pilot seeds 3000-3004, apart from the test seeds (0-39) and the LR seeds (1000, 1001). The rule that picks the
shift from these numbers is in the README, written before this script ran.

    python packages/gora/benchmarks/pilot_digits_shift.py
"""

from __future__ import annotations

import json
import statistics

import torch
from nips25_gora.digits import SHIFTS, load_digits_shift, pretrain
from nips25_gora.reproduce import PROFILES
from nips25_gora.training import evaluate_accuracy, mean_loss
from nips25_gora.transfer import CURVATURE_SEED_OFFSET, _grad_batches, _sgd_gradient, _sgd_step, hessian_spectral_norm

PILOT_SEEDS = range(3000, 3005)


def main() -> None:
    torch.set_num_threads(1)
    p = PROFILES["quick"]
    rows: dict[str, list[dict[str, float]]] = {k: [] for k in SHIFTS}
    for seed in PILOT_SEEDS:
        for kind in SHIFTS:
            data = load_digits_shift(kind=kind, shots=p.shots, seed=seed)
            net = pretrain(data.source, seed=seed)
            splits = (data.train, data.val, data.test)
            shifted = {k: torch.cat([split[k] for split in splits]) for k in ("pixels", "labels")}
            batches = _grad_batches(data, p, seed)
            L = hessian_spectral_norm(net, batches, seed=seed + CURVATURE_SEED_OFFSET)["L"]
            grads = _sgd_gradient(net, batches)
            base = mean_loss(net, batches)
            rows[kind].append(
                {
                    "seed": seed,
                    "unshifted_accuracy": evaluate_accuracy(net, data.source),
                    "shifted_accuracy": evaluate_accuracy(net, shifted),
                    "shifted_loss": mean_loss(net, [shifted]),
                    "grad_batch_loss": base,
                    "L": L,
                    "sgd_drop": base - mean_loss(_sgd_step(net, grads, 1.0 / L), batches),
                }
            )
    summary = {}
    for kind, rs in rows.items():
        drops = [r["sgd_drop"] for r in rs]
        summary[kind] = {
            "shifted_accuracy": statistics.fmean(r["shifted_accuracy"] for r in rs),
            "unshifted_accuracy": statistics.fmean(r["unshifted_accuracy"] for r in rs),
            "shifted_loss": statistics.fmean(r["shifted_loss"] for r in rs),
            "sgd_drop_mean": statistics.fmean(drops),
            "sgd_drop_sd": statistics.stdev(drops),
            "sgd_drop_min": min(drops),
            "sgd_mean_over_sd": statistics.fmean(drops) / statistics.stdev(drops),
        }
    print(json.dumps({"summary": summary, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
