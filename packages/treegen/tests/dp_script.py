"""Run under ``accelerate launch`` by ``test_distributed.py``: data-parallel training, then the CLI's writers.

``python -m accelerate.commands.launch --multi_gpu --num_processes 2 dp_script.py OUT`` (with ACCELERATE_USE_CPU=1)
trains the tiny model, saves its weights from the main process, then runs ``simulate`` and ``reproduce --profile
tiny``; every call of a file writer prints ``WRITE rank=R what`` so the test can see which process wrote.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import matplotlib.figure
import numpy as np
import torch

STEPS, BATCH, LR = 6, 7, 3e-3  # batch 7 over 2 processes: shares of 4 and 3 jets (uneven on purpose)


def train_tiny(accelerator):
    """The training run compared across process counts; returns (model, per-step losses)."""
    from nips25_treegen.ginkgo import simulate
    from nips25_treegen.model import TrainConfig, TreeGen, TreeGenConfig, train

    torch.manual_seed(0)
    model = TreeGen(TreeGenConfig(n_max=6, d_model=16, n_heads=2, n_layers=1))
    jets = simulate(48, n_leaves=(5, 6), seed=0)
    losses = train(model, jets, TrainConfig(steps=STEPS, batch_size=BATCH, lr=LR, seed=0), accelerator=accelerator)
    return model, losses


def table_digest(model) -> str:
    """sha256 of the model's entropy-schedule table as this process holds it (read from the shared cache)."""
    tab = model.config.flow().entropy.table()
    data = np.ascontiguousarray(tab["beta"]).tobytes() + np.ascontiguousarray(tab["h"]).tobytes()
    return hashlib.sha256(data).hexdigest()


def main(out: Path) -> None:
    import nips25_treegen.cli as cli
    from accelerate import Accelerator

    torch.set_num_threads(1)
    acc = Accelerator()
    rank = acc.process_index

    def spy(fn, what):
        def wrapper(*args, **kwargs):
            target = args[0] if what == "npz" else args[1]
            if isinstance(target, (str, Path)) and Path(target).resolve().is_relative_to(out.resolve()):
                print(f"WRITE rank={rank} {what}", flush=True)  # a file under OUT (not the shared cache's lock)
            return fn(*args, **kwargs)

        return wrapper

    cli.write_report = spy(cli.write_report, "report")
    matplotlib.figure.Figure.savefig = spy(matplotlib.figure.Figure.savefig, "figure")
    np.savez = spy(np.savez, "npz")
    model, losses = train_tiny(acc)
    acc.wait_for_everyone()
    if acc.is_main_process:
        torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, out / "weights.pt")
        (out / "losses.json").write_text(json.dumps(losses))
    print(f"PROCESSES {acc.num_processes} rank={rank}", flush=True)
    print(f"TABLE rank={rank} {table_digest(model)}", flush=True)
    acc.wait_for_everyone()
    cli.main(["simulate", "--n-jets", "3", "--leaves", "5", "--out", str(out / "jets.npz")])
    args = argparse.Namespace(profile="tiny", seed=0, out=out / "report", decoder=None, verbose=0, quiet=1)
    cli._reproduce(args)  # the CLI's reproduce path (its parser offers quick|paper only)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
