"""Run by test_distributed.py under ``accelerate launch`` (2 CPU processes).

``fit OUT``: fit on three small graphs, then on one graph (the second process holds none and takes zero-loss steps);
the main process writes the weights and losses to OUT. ``cli OUT``: ``nips25-gfm train --save OUT/m.pt`` with every
``torch.save`` logged per process rank.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch
from accelerate import Accelerator
from nips25_gfm import TSGNN, FitConfig, fit


def fitted(tasks: list, accelerator: Accelerator) -> dict:
    torch.manual_seed(0)
    model = TSGNN(hidden=4).double()
    history = fit(model, tasks, config=FitConfig(epochs=4, lr=1e-2), seed=0, accelerator=accelerator)
    return {"history": history, "state": {k: v.tolist() for k, v in model.state_dict().items()}}


def main() -> None:
    from conftest import make_task  # the script's folder is sys.path[0] when it is run (not when collected)

    mode, out = sys.argv[1], Path(sys.argv[2])
    if mode == "fit":
        accelerator = Accelerator()
        tasks = [make_task(n=30 + 6 * i, f=3 + i, c=2 + i % 2, seed=i) for i in range(3)]
        result = {"three": fitted(tasks, accelerator), "one": fitted(tasks[:1], accelerator),
                  "processes": accelerator.num_processes}  # fmt: skip
        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            (out / "fit.json").write_text(json.dumps(result))
        return
    real_save = torch.save

    def logged_save(obj, f, *args, **kwargs):
        with (out / f"writes-{os.environ.get('RANK', '0')}.txt").open("a") as fh:
            fh.write(f"{f}\n")
        return real_save(obj, f, *args, **kwargs)

    torch.save = logged_save
    from nips25_gfm.cli import main as cli

    cli(["train", "--tasks", "iris", "karate", "--save", str(out / "m.pt"), "--epochs", "2", "--hidden", "4", "-q"])


if __name__ == "__main__":
    main()
