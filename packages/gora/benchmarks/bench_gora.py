"""GoRA vs peft's data-driven inits (LoRA-GA, EVA) on MiniLM-L6: init seconds and peak memory; step time vs LoRA.

Run: ``python packages/gora/benchmarks/bench_gora.py [--repeats 3] [--pairs 40]``. Every init timing is the median
of ``--repeats`` runs on the same model and batches; step times are interleaved GoRA/LoRA pairs. Peak memory is the
peak resident-set increase over the phase (sampled every 5 ms from /proc/self/statm) on CPU, or
``torch.cuda.max_memory_allocated`` on a GPU.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from nips25_gora import GoraConfig
from nips25_gora.baselines import build_method
from nips25_gora.corpus import load_topics
from nips25_gora.models import MINILM_TARGETS, load_minilm_classifier, tokenize
from nips25_gora.training import make_loader

from nips25_shared import seed_everything
from nips25_shared.bench import measure


def paired_step_seconds(
    models: dict[str, torch.nn.Module], batches: list[dict[str, torch.Tensor]], *, pairs: int
) -> dict[str, list[float]]:
    """Seconds per training step (forward, backward, AdamW step) of each model, timed interleaved.

    The models take turns on the same batch, ``pairs`` rounds in a round-robin whose order alternates, so that
    a load change on a shared machine hits every model alike; two warm-up rounds are discarded.
    """
    opts = {
        name: torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=1e-4) for name, m in models.items()
    }
    out: dict[str, list[float]] = {name: [] for name in models}
    names = list(models)
    for i in range(pairs + 2):
        batch = batches[i % len(batches)]
        for name in names if i % 2 == 0 else names[::-1]:
            model, opt = models[name], opts[name]
            model.train()
            t0 = time.perf_counter()
            model(**batch).loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            if i >= 2:
                out[name].append(time.perf_counter() - t0)
    return out


def step_flops(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> float:
    """FLOPs of one forward + backward pass on ``batch``, counted by ``torch.utils.flop_counter`` (load-independent)."""
    from torch.utils.flop_counter import FlopCounterMode

    model.train()
    with FlopCounterMode(display=False) as counter:
        model(**batch).loss.backward()
    model.zero_grad(set_to_none=True)
    return float(counter.get_total_flops())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--grad-batches", type=int, default=4)
    parser.add_argument("--pairs", type=int, default=40, help="interleaved GoRA/LoRA step pairs for the step time")
    args = parser.parse_args()
    torch.set_num_threads(min(2, torch.get_num_threads()))
    data = load_topics()
    _, tokenizer = load_minilm_classifier(len(data.label_names))
    train_set = tokenize(tokenizer, data.train_texts, max_length=32)
    train_set["labels"] = torch.tensor(data.train_labels)
    grad_batches = [b for _, b in zip(range(args.grad_batches), make_loader(train_set, batch_size=16, seed=1))]
    gora = GoraConfig(target_modules=MINILM_TARGETS, modules_to_save=("classifier",))
    init: dict[str, list[tuple[float, float]]] = {"gora": [], "loraga": [], "eva": []}
    memory = "cuda" if torch.cuda.is_available() else "rss"
    for rep in range(args.repeats):
        for method in init:
            seed_everything(rep)
            model, _ = load_minilm_classifier(len(data.label_names))
            run = measure(
                lambda method=method, model=model: build_method(method, model, gora=gora, grad_batches=grad_batches),
                repeats=1,
                memory=memory,
            )
            init[method].append((run.seconds, run.peak_mib))
    # step time: GoRA and LoRA r=8 adapters on the same base, same batches, timed interleaved (see paired_step_seconds)
    seed_everything(0)
    gora_model, _ = build_method(
        "gora", load_minilm_classifier(len(data.label_names))[0], gora=gora, grad_batches=grad_batches
    )
    lora_model, _ = build_method(
        "lora", load_minilm_classifier(len(data.label_names))[0], gora=gora, grad_batches=grad_batches
    )
    batches = [b for _, b in zip(range(8), make_loader(train_set, batch_size=8, seed=0))]
    flops = {name: step_flops(m, batches[0]) for name, m in (("gora", gora_model), ("lora", lora_model))}
    steps = paired_step_seconds({"gora": gora_model, "lora": lora_model}, batches, pairs=args.pairs)
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"CPU, {torch.get_num_threads()} threads"
    print(f"# GoRA benchmark on MiniLM-L6 ({device}); median of {args.repeats} runs")
    print(f"init: {args.grad_batches} gradient batches of 16 utterances, 24 target matrices 384x384")
    print(f"{'method':<10}{'init s':>10}{'peak MB':>10}{'ratio gora/peer (time)':>26}")
    med = {m: (statistics.median(s for s, _ in v), statistics.median(mb for _, mb in v)) for m, v in init.items()}
    for method, (seconds, mem) in med.items():
        ratio = med["gora"][0] / seconds if method != "gora" else 1.0
        print(f"{method:<10}{seconds:>10.3f}{mem:>10.1f}{ratio:>26.2f}")
    g, lo = statistics.median(steps["gora"]), statistics.median(steps["lora"])
    ratios = sorted(a / b for a, b in zip(steps["gora"], steps["lora"]))
    q1, q3 = ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4]
    print(
        f"training step (batch 8, {args.pairs} interleaved pairs): gora {g:.4f} s, lora {lo:.4f} s, "
        f"ratio of medians gora/lora {g / lo:.3f}; per-pair ratio median {statistics.median(ratios):.3f} "
        f"(IQR {q1:.3f}-{q3:.3f})"
    )
    print(
        f"training step FLOPs (forward + backward, batch 8, torch flop counter): gora {flops['gora']:.4g}, "
        f"lora {flops['lora']:.4g}, ratio gora/lora {flops['gora'] / flops['lora']:.4f}"
    )


if __name__ == "__main__":
    main()
