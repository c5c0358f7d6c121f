"""Run by ``test_distributed.py`` under ``accelerate launch`` (1 or 2 CPU processes); not a test module.

``python data_parallel.py OUT MODE...`` runs each mode in turn. ``fit``: UTP pretraining (3 steps) then a full
fine-tune with replay (4 steps) of a tiny dropout-free FactoST at global batch 8; the main process saves the
weights, losses and a forecast to ``OUT/result.npz``. ``cli``: ``nips25-factost adapt`` on a CSV panel; every file
write of every rank is logged to ``OUT/writes-<rank>.txt`` (test instrumentation) so the test can check that only
rank 0 wrote.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from accelerate import Accelerator
from nips25_factost import (
    BackboneConfig,
    FactoST,
    FitConfig,
    ReplayBuffer,
    STAdapter,
    STPanel,
    TemporalBackbone,
    UTPConfig,
    save_pretrained,
    utp_pretrain,
)


def _panel(days: int = 90) -> STPanel:
    rng = np.random.default_rng(0)
    t = np.arange(days)
    values = 5 + np.sin(2 * np.pi * t / 7)[:, None] * rng.uniform(1, 2, 4) + rng.normal(0, 0.1, (days, 4))
    return STPanel(values, pd.date_range("2021-01-01", periods=days, freq="D"), coords=rng.uniform(0, 1, (4, 2)))


def _backbone() -> tuple[TemporalBackbone, ReplayBuffer, np.ndarray, np.ndarray]:
    torch.manual_seed(0)
    config = BackboneConfig(patch_len=4, d_model=16, n_layers=1, n_heads=2, d_ff=32, dropout=0.0, n_domains=2)
    backbone = TemporalBackbone(config)
    rng = np.random.default_rng(1)
    windows = np.sin(np.arange(96) / 3.0)[None] * rng.uniform(1, 3, (64, 1)) + rng.normal(0, 0.2, (64, 96))
    domains = np.arange(64, dtype=np.int64) % 2
    replay = ReplayBuffer(64, seed=0)
    replay.add_batch(windows, domains)
    return backbone, replay, windows, domains


def fit(out: Path) -> None:
    accelerator = Accelerator()
    backbone, replay, windows, domains = _backbone()
    utp_losses = utp_pretrain(backbone, windows, domains, config=UTPConfig(steps=3, batch_size=8), seed=0,
                              accelerator=accelerator)  # fmt: skip
    torch.manual_seed(1)
    adapter = STAdapter(n_nodes=4, d_model=16, emb_dim=4, rank=2, topk=2, n_source_domains=2)
    model = FactoST(backbone, adapter, freeze_backbone=False, replay=replay)
    # align_weight 0: the moment penalty is not a mean over rows, so P processes would differ from one by design
    config = FitConfig(steps=4, batch_size=8, align_weight=0.0, replay_ratio=0.25)
    model.fit(_panel(), config=config, seed=0, accelerator=accelerator)
    params = {f"param:{k}": v.detach().cpu().numpy() for k, v in model.named_parameters()}
    panel = _panel()
    x, cal = panel.values[None, -24:-12], panel.calendar()[0][None, -24:]
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        np.savez(out / "result.npz", utp=np.array(utp_losses), fit=np.array(model.history_),
                 world=accelerator.num_processes, pred=model.predict(x, cal), **params)  # fmt: skip


def cli(out: Path) -> None:
    import os

    from nips25_factost.cli import main

    rank = int(os.environ.get("RANK", "0"))
    log = out / f"writes-{rank}.txt"
    original_csv, original_bytes = pd.DataFrame.to_csv, Path.write_bytes

    def to_csv(self, path=None, *args, **kwargs):  # type: ignore[no-untyped-def]
        with open(log, "a") as f:
            f.write(f"{path}\n")
        return original_csv(self, path, *args, **kwargs)

    def write_bytes(self, data):  # type: ignore[no-untyped-def]
        with open(log, "a") as f:
            f.write(f"{self}\n")
        return original_bytes(self, data)

    panel = _panel(150)
    if rank == 0:
        pd.DataFrame(panel.values, index=panel.timestamps).to_csv(out / "panel.csv")
        backbone, replay, _, _ = _backbone()
        (out / "backbone.pt").write_bytes(save_pretrained(backbone, replay))
    Accelerator().wait_for_everyone()
    pd.DataFrame.to_csv, Path.write_bytes = to_csv, write_bytes  # type: ignore[method-assign]
    log.touch()
    main(["adapt", "--checkpoint", str(out / "backbone.pt"), "--csv", str(out / "panel.csv"), "--steps", "2",
          "--batch-size", "8", "--out", str(out / "forecast.csv")])  # fmt: skip


if __name__ == "__main__":
    for mode in sys.argv[2:]:
        {"fit": fit, "cli": cli}[mode](Path(sys.argv[1]))
