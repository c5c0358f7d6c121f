"""GoRA vs peft's data-driven inits (LoRA-GA, EVA) on MiniLM-L6: init seconds and peak memory; step time vs LoRA.

Run: ``python packages/gora/benchmarks/bench_gora.py [--repeats 3] [--steps 20]``. Every timing is the median of
``--repeats`` runs on the same model and batches. Peak memory is the peak resident-set increase over the phase
(sampled every 5 ms from /proc/self/status) on CPU, or ``torch.cuda.max_memory_allocated`` on a GPU.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import torch
from nips25_gora import GoraConfig
from nips25_gora.baselines import build_method
from nips25_gora.corpus import load_topics
from nips25_gora.models import MINILM_TARGETS, load_minilm_classifier, tokenize
from nips25_gora.training import TrainConfig, make_loader, train

from nips25_shared import seed_everything


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_memory(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """Run ``fn``; return its result, wall seconds and peak memory increase in MB."""
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        t0 = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        return out, time.perf_counter() - t0, (torch.cuda.max_memory_allocated() - before) / 2**20
    base, peak, stop = _rss_mb(), [0.0], threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _rss_mb())
            time.sleep(0.005)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    t0 = time.perf_counter()
    try:
        out = fn()
    finally:
        seconds = time.perf_counter() - t0
        stop.set()
        thread.join()
    return out, seconds, max(peak[0], _rss_mb()) - base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10, help="training steps timed per method and repeat")
    parser.add_argument("--grad-batches", type=int, default=4)
    args = parser.parse_args()
    torch.set_num_threads(min(2, torch.get_num_threads()))
    data = load_topics()
    _, tokenizer = load_minilm_classifier(len(data.label_names))
    train_set = tokenize(tokenizer, data.train_texts, max_length=32)
    train_set["labels"] = torch.tensor(data.train_labels)
    grad_batches = [b for _, b in zip(range(args.grad_batches), make_loader(train_set, batch_size=16, seed=1))]
    gora = GoraConfig(target_modules=MINILM_TARGETS, modules_to_save=("classifier",))
    init: dict[str, list[tuple[float, float]]] = {"gora": [], "loraga": [], "eva": []}
    steps: dict[str, list[float]] = {"gora": [], "lora": []}
    for rep in range(args.repeats):
        for method in init:
            seed_everything(rep)
            model, _ = load_minilm_classifier(len(data.label_names))
            (wrapped, _), seconds, mem = peak_memory(
                lambda method=method, model=model: build_method(method, model, gora=gora, grad_batches=grad_batches)
            )
            init[method].append((seconds, mem))
            if method == "gora":
                log = train(wrapped, make_loader(train_set, batch_size=8, seed=rep), TrainConfig(steps=args.steps))
                steps["gora"].append(log.seconds_per_step)
        seed_everything(rep)
        model, _ = load_minilm_classifier(len(data.label_names))
        lora, _ = build_method("lora", model, gora=gora, grad_batches=grad_batches)
        log = train(lora, make_loader(train_set, batch_size=8, seed=rep), TrainConfig(steps=args.steps))
        steps["lora"].append(log.seconds_per_step)
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"CPU, {torch.get_num_threads()} threads"
    print(f"# GoRA benchmark on MiniLM-L6 ({device}); median of {args.repeats} runs")
    print(f"init: {args.grad_batches} gradient batches of 16 utterances, 24 target matrices 384x384")
    print(f"{'method':<10}{'init s':>10}{'peak MB':>10}{'ratio gora/peer (time)':>26}")
    med = {m: (statistics.median(s for s, _ in v), statistics.median(mb for _, mb in v)) for m, v in init.items()}
    for method, (seconds, mem) in med.items():
        ratio = med["gora"][0] / seconds if method != "gora" else 1.0
        print(f"{method:<10}{seconds:>10.3f}{mem:>10.1f}{ratio:>26.2f}")
    g, lo = statistics.median(steps["gora"]), statistics.median(steps["lora"])
    print(f"training step (batch 8, {args.steps} steps): gora {g:.4f} s, lora {lo:.4f} s, ratio gora/lora {g / lo:.3f}")


if __name__ == "__main__":
    main()
