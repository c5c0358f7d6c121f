"""Peak memory of GoRA's gradient accumulation: accumulators on the weight's device (default) vs offloaded to host.

Run: ``python packages/gora/benchmarks/bench_accumulate.py [--layers 8] [--width 1024] [--steps 8]``.

Each mode runs in its own fresh Python process (so one mode's freed pages cannot hide the other's peak), on an
MLP of ``--layers`` square ``--width`` x ``--width`` target layers fed ``--steps`` batches of 64. Reported per mode:

* the peak resident-set increase over ``accumulate_gradients`` (sampled every 5 ms, ``nips25_shared.bench``),
* the peak of Python-level allocations (``tracemalloc``; torch's tensor storage is not seen by it, so this is the
  bookkeeping only),
* on a CUDA device (when one is present): ``torch.cuda.max_memory_allocated`` over the call, i.e. the accelerator
  memory that offloading saves, and the time.

On a CPU-only machine "device" and "host" are the same memory: both modes hold one float32 accumulator per target
weight in RAM and the offload copy is a no-op, so the two RSS peaks should agree to sampling noise. What the
option changes on a GPU is where those ``sum(numel) x 4`` bytes live (printed as "accumulator bytes"), plus a
device-to-host copy per layer per step when offloaded.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, sys, time, tracemalloc
import torch
from torch import nn
from nips25_gora import accumulate_gradients
from nips25_shared.bench import measure

layers, width, steps, offload = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
torch.set_num_threads(1)
torch.manual_seed(0)
cuda = torch.cuda.is_available()
device = "cuda" if cuda else "cpu"
net = nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.Tanh()) for _ in range(layers)]).to(device)
targets = [f"{i}.0" for i in range(layers)]
batches = [torch.randn(64, width, device=device) for _ in range(steps)]
loss_fn = lambda m, x: m(x).pow(2).mean()
# warm-up (allocator, autograd graph): one untimed pass, so the measured call sees only the accumulation's own cost
accumulate_gradients(net, batches[:1], target_modules=targets, n_steps=1, loss_fn=loss_fn, offload_to_cpu=offload)
call = lambda: accumulate_gradients(net, batches, target_modules=targets, n_steps=steps, loss_fn=loss_fn,
                                    offload_to_cpu=offload)
rss = measure(call, repeats=1, memory="rss")
out = {"seconds": rss.seconds, "rss_peak_mib": rss.peak_mib}
tracemalloc.start()
call()
out["tracemalloc_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
tracemalloc.stop()
if cuda:
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    call()
    torch.cuda.synchronize()
    out["cuda_peak_mib"] = (torch.cuda.max_memory_allocated() - before) / 2**20
out["device"] = torch.cuda.get_device_name(0) if cuda else "CPU, 1 thread"
out["accumulator_mib"] = sum(p.numel() for n, p in net.named_parameters() if n.endswith("0.weight")) * 4 / 2**20
print(json.dumps(out))
"""


def run_mode(offload: bool, *, layers: int, width: int, steps: int) -> dict[str, float | str]:
    """One mode in a fresh interpreter; returns the child's JSON line."""
    args = [sys.executable, "-c", CHILD, str(layers), str(width), str(steps), "1" if offload else "0"]
    proc = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    rows = {
        name: run_mode(offload, layers=args.layers, width=args.width, steps=args.steps)
        for name, offload in (("on device (default)", False), ("offloaded to host", True))
    }
    first = next(iter(rows.values()))
    print(f"# GoRA gradient accumulation, {args.layers} targets {args.width}x{args.width}, {args.steps} batches of 64 "
          f"({first['device']}); each mode in a fresh process")  # fmt: skip
    print(f"accumulator bytes (float32, one per target weight): {first['accumulator_mib']:.1f} MiB")
    cuda = "cuda_peak_mib" in first
    head = f"{'mode':<22}{'seconds':>9}{'RSS peak MiB':>14}{'tracemalloc MiB':>17}"
    print(head + (f"{'CUDA peak MiB':>15}" if cuda else "  (GPU memory not measured: no CUDA device)"))
    for name, r in rows.items():
        line = f"{name:<22}{r['seconds']:>9.3f}{r['rss_peak_mib']:>14.1f}{r['tracemalloc_peak_mib']:>17.3f}"
        print(line + (f"{r['cuda_peak_mib']:>15.1f}" if cuda else ""))


if __name__ == "__main__":
    main()
