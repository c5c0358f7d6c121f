"""Run by tests/test_distributed.py: FedAvg under ``accelerate launch`` (or plainly, as 1 process), then the CLI.

Usage: ``python dist_fedavg.py OUT [--cli]``. Writes ``OUT/state.pt`` and ``OUT/history.json`` from the main
process only, after ``wait_for_everyone``; every process also records the clients it trained in
``OUT/clients_rank{i}.json`` (the sharding check). With ``--cli`` it then runs ``nips25-fedrw reproduce
--profile tiny --out OUT/report``, which must write its files from the main process only.
"""

import json
import sys
from pathlib import Path

import nips25_fedrw.reproduce
import torch
from accelerate import Accelerator
from nips25_fedrw import FedAvgConfig, LMConfig, fedavg_train
from nips25_fedrw.cli import main

import nips25_shared.cli


def _run() -> None:
    """The launch (a function, so that pytest's doctest collection can import this file without running it)."""
    torch.set_num_threads(1)
    out = Path(sys.argv[1])
    acc = Accelerator()
    data = [
        ["the rose is red", "by any other name", "thy eternal summer", "the rose is red"],
        ["so long lives this", "and this gives life"],
        ["shall i compare thee", "to a summer's day", "thou art more lovely"],
    ]
    weights = [torch.rand(len(d), generator=torch.Generator().manual_seed(k)).numpy() + 0.5 for k, d in enumerate(data)]
    cfg = FedAvgConfig(rounds=2, local_steps=3, batch_size=2)
    model, history = fedavg_train(
        data,
        weights=weights,
        config=cfg,
        model_config=LMConfig(d_model=16, n_layers=1, n_heads=2, d_ff=16, max_len=24),
        seed=5,
        accelerator=acc,
    )
    mine = [k for k in range(len(data)) if k % acc.num_processes == acc.process_index]
    (out / f"clients_rank{acc.process_index}.json").write_text(json.dumps(mine))
    acc.wait_for_everyone()
    if acc.is_main_process:
        torch.save({n: p.cpu() for n, p in model.state_dict().items()}, out / "state.pt")
        (out / "history.json").write_text(json.dumps(history))
    if "--cli" in sys.argv:
        if not acc.is_main_process:  # a write from this process is a bug: make any attempt fail the launch

            def refuse(*args, **kwargs):
                raise RuntimeError(f"process {acc.process_index} tried to write a report file")

            nips25_shared.cli.write_report = refuse
            nips25_fedrw.reproduce._figure = refuse
        main(["reproduce", "--profile", "tiny", "--out", str(out / "report"), "-q"])


if __name__ == "__main__":
    _run()
