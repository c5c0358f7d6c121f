"""Peak memory of GoRA's gradient accumulation: accumulators on the weight's device (default) vs offloaded to host.

Run: ``python packages/gora/benchmarks/bench_accumulate.py [--layers 8] [--width 1024] [--steps 8] [--samples 5]``.

Every sample is one fresh Python process running one mode (so one mode's freed pages cannot hide the other's
peak); the modes alternate (device, host, host, device, ...) for ``--samples`` samples each. The model is an MLP of
``--layers`` square ``--width`` x ``--width`` target layers fed ``--steps`` batches of 64, after one untimed warm-up
call. The same three measurements are taken in every sample of both modes, each over its own call:

* **tensor peak** (the number to read on a CPU): the peak of the bytes held by torch's CPU allocator above the
  bytes held before the call, from ``torch.profiler`` (``profile_memory=True``): every allocation and free, in
  time order, at operator granularity. It is exact and does not depend on timing.
* **RSS peak**: the peak resident-set increase, sampled every 1 ms by a thread (``nips25_shared.bench.measure``);
  it sees every allocator but misses spikes shorter than the interval and counts freed pages the C allocator
  has not yet returned to the kernel, so it varies between samples.
* on a CUDA device (when one is present): ``torch.cuda.max_memory_allocated`` above the memory allocated before
  the call, i.e. the accelerator memory that offloading saves.

On a CPU-only machine "device" and "host" are the same memory: both modes run the same operations, so their
tensor peaks must agree exactly. What the option changes on a GPU is where the ``sum(numel) x 4`` accumulator
bytes live (printed as "accumulator bytes"), plus a device-to-host copy per layer per step when offloaded.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys
import torch
from torch import nn
import nips25_gora
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
call = lambda: accumulate_gradients(net, batches, target_modules=targets, n_steps=steps, loss_fn=loss_fn,
                                    offload_to_cpu=offload)
# warm-up (allocator, autograd graph): one untimed pass, so the measured calls see only the accumulation's own cost
accumulate_gradients(net, batches[:1], target_modules=targets, n_steps=1, loss_fn=loss_fn, offload_to_cpu=offload)


def tensor_peak_mib():
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = call()
        del out  # the result's free is inside the window: the running total must end at 0
    events = sorted((e for e in prof.events() if e.self_cpu_memory_usage), key=lambda e: e.time_range.start)
    live = peak = 0
    for e in events:
        live += e.self_cpu_memory_usage
        peak = max(peak, live)
    return peak / 2**20, live / 2**20


rss = measure(call, repeats=1, memory="rss", interval_s=0.001)
out = {"seconds": rss.seconds, "rss_peak_mib": rss.peak_mib}
out["tensor_peak_mib"], out["tensor_end_mib"] = tensor_peak_mib()
if cuda:
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    call()
    torch.cuda.synchronize()
    out["cuda_peak_mib"] = (torch.cuda.max_memory_allocated() - before) / 2**20
out["device"] = torch.cuda.get_device_name(0) if cuda else "CPU, 1 thread"
out["version"] = nips25_gora.__version__
out["source"] = nips25_gora.__file__
out["accumulator_mib"] = sum(p.numel() for n, p in net.named_parameters() if n.endswith("0.weight")) * 4 / 2**20
out["gradient_mib"] = width * width * 4 / 2**20
print(json.dumps(out))
"""

MODES = {"on device (default)": False, "offloaded to host": True}


def run_mode(offload: bool, *, layers: int, width: int, steps: int) -> dict[str, float | str]:
    """One sample of one mode in a fresh interpreter; returns the child's JSON line."""
    args = [sys.executable, "-c", CHILD, str(layers), str(width), str(steps), "1" if offload else "0"]
    proc = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} [{min(values):.1f}-{max(values):.1f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--samples", type=int, default=5, help="fresh processes per mode")
    parser.add_argument("--json", action="store_true", help="also print every sample as one JSON line")
    args = parser.parse_args()
    rows: dict[str, list[dict[str, float | str]]] = {name: [] for name in MODES}
    for i in range(args.samples):  # alternate the order, so a load change hits both modes alike
        for name in list(MODES) if i % 2 == 0 else list(MODES)[::-1]:
            rows[name].append(run_mode(MODES[name], layers=args.layers, width=args.width, steps=args.steps))
    first = rows["on device (default)"][0]
    print(f"# GoRA gradient accumulation (nips25-gora {first['version']}), {args.layers} targets "
          f"{args.width}x{args.width}, {args.steps} batches of 64 ({first['device']}); {args.samples} fresh "
          "processes per mode, alternating")  # fmt: skip
    print(f"accumulator bytes (float32, one per target weight): {first['accumulator_mib']:.1f} MiB; "
          f"one gradient: {first['gradient_mib']:.1f} MiB")  # fmt: skip
    cuda = "cuda_peak_mib" in first
    head = f"{'mode':<22}{'seconds, median':>16}{'tensor peak MiB':>24}{'RSS peak MiB':>24}"
    print("median [min-max] over samples")
    print(head + (f"{'CUDA peak MiB':>24}" if cuda else "  (GPU memory not measured: no CUDA device)"))
    for name, samples in rows.items():
        col = {k: [float(s[k]) for s in samples] for k in ("seconds", "tensor_peak_mib", "rss_peak_mib")}
        line = (f"{name:<22}{statistics.median(col['seconds']):>16.3f}{_spread(col['tensor_peak_mib']):>24}"
                f"{_spread(col['rss_peak_mib']):>24}")  # fmt: skip
        print(line + (f"{_spread([float(s['cuda_peak_mib']) for s in samples]):>24}" if cuda else ""))
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
