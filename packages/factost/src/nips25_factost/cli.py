"""``nips25-factost``: reproduce the headline experiment, pretrain a backbone, adapt it to a CSV panel."""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nips25_shared import (
    add_common_arguments,
    configure_logging,
    get_logger,
    positive_int,
    run_reproduce,
    seed_everything,
    seed_int,
)

if TYPE_CHECKING:
    import pandas as pd

    from nips25_factost.panel import STPanel

__all__ = ["main", "read_panel_file"]

log = get_logger("nips25_factost.cli")


def _pretrain(args: argparse.Namespace) -> int:
    from accelerate import Accelerator

    from nips25_factost.backbone import BackboneConfig, TemporalBackbone
    from nips25_factost.datasets import load_pretraining_pool
    from nips25_factost.pretraining import UTPConfig, pool_windows, save_pretrained, utp_pretrain
    from nips25_factost.replay import ReplayBuffer

    series, domains, names = load_pretraining_pool()
    utp = UTPConfig(context=args.context, horizon=args.horizon, steps=args.steps, batch_size=args.batch_size)
    windows, dom = pool_windows(series, domains, length=utp.window, per_domain=args.per_domain, seed=args.seed)
    seed_everything(args.seed)
    backbone = TemporalBackbone(BackboneConfig(d_model=args.d_model, n_layers=args.n_layers, d_ff=2 * args.d_model,
                                               n_domains=len(names)))  # fmt: skip
    accelerator = Accelerator()
    losses = utp_pretrain(backbone, windows, dom, config=utp, seed=args.seed, accelerator=accelerator)
    replay = ReplayBuffer(args.replay, seed=args.seed)
    replay.add_batch(windows, dom)
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:  # every process holds the same weights; one writes them
        args.out.write_bytes(save_pretrained(backbone, replay))
        print(json.dumps({"checkpoint": str(args.out), "domains": list(names), "windows": len(windows),
                          "final_loss": losses[-1]}))  # fmt: skip
    return 0


def read_panel_file(path: Path, coords: Path | None = None) -> STPanel:
    """A user's panel from a CSV or parquet file: first column timestamps, one numeric column per node.

    ``coords`` (CSV or parquet): first column the node names (the panel's column names), then two coordinate
    columns. Empty cells are missing values (NaN).

    Raises:
        ValueError: naming the file and the column (and row) that cannot be read.
        ImportError: for a parquet file without pandas' parquet engine (pyarrow).
    """
    import numpy as np
    import pandas as pd

    from nips25_factost.panel import STPanel

    def read(file: Path) -> pd.DataFrame:
        if file.suffix.lower() in (".parquet", ".pq"):
            return pd.read_parquet(file)  # ImportError without pyarrow: reported as a usage error
        try:
            return pd.read_csv(file)
        except pd.errors.EmptyDataError as err:
            raise ValueError(f"{file}: the file is empty (need a header row and data rows)") from err
        except pd.errors.ParserError as err:
            raise ValueError(f"{file}: not a readable CSV file: {err}") from err

    frame = read(path)
    if isinstance(frame.index, pd.DatetimeIndex):
        frame = frame.reset_index()
    if frame.shape[1] < 2:
        raise ValueError(f"{path}: need a timestamp column and at least one node column, got {list(frame.columns)}")
    time_col = frame.columns[0]
    stamps = pd.to_datetime(frame[time_col], errors="coerce")
    if stamps.isna().any():
        row = int(np.flatnonzero(stamps.isna().to_numpy())[0])
        raise ValueError(f"{path}: column {time_col!r} (first column) must hold timestamps; row {row} holds "
                         f"{frame[time_col].iloc[row]!r}")  # fmt: skip
    values = {}
    for col in frame.columns[1:]:
        numeric = pd.to_numeric(frame[col], errors="coerce")
        bad = numeric.isna() & frame[col].notna()
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(f"{path}: column {col!r} must be numeric; row {row} holds {frame[col].iloc[row]!r}")
        values[str(col)] = numeric.to_numpy(dtype=np.float64)
    table = pd.DataFrame(values, index=pd.DatetimeIndex(stamps))
    table = _fill_missing_steps(table, path)
    xy = None
    if coords is not None:
        c = read(coords)
        if c.shape[1] < 3:
            raise ValueError(f"{coords}: need a node-name column and two coordinate columns, got {list(c.columns)}")
        c = c.set_index(c.columns[0])
        c.index = c.index.map(str)
        missing = [n for n in table.columns if n not in c.index]
        if missing:
            raise ValueError(f"{coords}: no row for node column(s) {missing} of {path}")
        for col in c.columns[:2]:
            if not pd.api.types.is_numeric_dtype(c[col]):
                raise ValueError(f"{coords}: column {col!r} must be numeric")
        rows = c.loc[list(table.columns)].iloc[:, :2]
        for col in rows.columns:
            bad = np.flatnonzero(~np.isfinite(rows[col].to_numpy(dtype=np.float64)))
            if bad.size:
                raise ValueError(f"{coords}: column {col!r} must hold a finite coordinate for every node; node "
                                 f"{rows.index[bad[0]]!r} has {rows[col].iloc[bad[0]]!r}")  # fmt: skip
        xy = rows.to_numpy(dtype=np.float64)
    try:
        return STPanel.from_frame(table, coords=xy, name=path.stem)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from err


def _fill_missing_steps(table: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Insert all-missing rows where the timestamps skip steps of the panel's sampling interval.

    The interval is the smallest step between consecutive timestamps; every other step must be a whole multiple of
    it (a skipped step becomes a row of NaN, logged), otherwise the file is refused, naming the row.
    """
    import numpy as np
    import pandas as pd

    if len(table) < 2 or not table.index.is_monotonic_increasing or table.index.has_duplicates:
        return table  # too short or unordered: STPanel names the problem
    steps = np.diff(pd.DatetimeIndex(table.index).as_unit("ns").asi8)  # nanoseconds, whatever the resolution
    unit = int(steps.min())
    off = np.flatnonzero(steps % unit)
    if off.size:
        row = int(off[0]) + 1
        raise ValueError(f"{path}: timestamps must be evenly spaced; row {row} ({table.index[row]}) is "
                         f"{pd.Timedelta(int(steps[row - 1]))} after the previous row, not a multiple of the "
                         f"interval {pd.Timedelta(unit)}")  # fmt: skip
    if (steps == unit).all():
        return table
    full = pd.date_range(table.index[0], table.index[-1], freq=pd.Timedelta(unit))
    log.warning("%s: %d missing time steps (interval %s) inserted as missing values", path, len(full) - len(table),
                pd.Timedelta(unit))  # fmt: skip
    return table.reindex(full)


def _adapt(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import numpy as np
    import pandas as pd
    import torch
    from accelerate import Accelerator

    from nips25_factost.adapter import STAdapter
    from nips25_factost.factost import FactoST
    from nips25_factost.metrics import masked_mae
    from nips25_factost.panel import calendar_features, make_windows, split_panel
    from nips25_factost.pretraining import load_pretrained
    from nips25_factost.training import FitConfig

    try:
        panel = read_panel_file(args.data, args.coords)
        backbone, replay = load_pretrained(args.checkpoint.read_bytes(), seed=args.seed)
    except (OSError, ValueError, TypeError, KeyError, ImportError) as err:
        parser.error(str(err))
    seed_everything(args.seed)
    _, sizes = panel.calendar()
    cfg = backbone.config
    adapter = STAdapter(n_nodes=panel.n_nodes, d_model=cfg.d_model, calendar=sizes, n_source_domains=cfg.n_domains,
                        n_prompt_tokens=cfg.n_prompt_tokens, refinement=args.refinement, prompt=args.prompt,
                        coords=None if panel.coords is None else torch.as_tensor(panel.coords))  # fmt: skip
    model = FactoST(backbone, adapter, freeze_backbone=not args.fine_tune, replay=replay)
    need = args.context + args.horizon
    rows = next(t for t in range(need, 6 * need) if round(0.2 * t) >= need)  # the 20% test span is the shortest
    if panel.n_times < rows:
        parser.error(f"--data {args.data}: {panel.n_times} time steps are too few: the 70% training and 20% test "
                     f"spans each need at least L + H = {need} steps, so at least {rows} rows")  # fmt: skip
    train, _, test = split_panel(panel, train=0.7, val=0.1)
    accelerator = Accelerator()
    try:
        fit = FitConfig(context=args.context, horizon=args.horizon, steps=args.steps, batch_size=args.batch_size)
        model.fit(train.slice(0, max(fit.context + fit.horizon, round(args.frac * train.n_times))), config=fit,
                  seed=args.seed, accelerator=accelerator)  # fmt: skip
        w = make_windows(test, context=fit.context, horizon=fit.horizon)
    except ValueError as err:
        parser.error(str(err))
    mae = float(masked_mae(model.predict(w.x, w.calendar), w.y))
    step = panel.timestamps[-1] - panel.timestamps[-2]
    future = pd.date_range(panel.timestamps[-1] + step, periods=fit.horizon, freq=step)
    codes, _ = calendar_features(panel.timestamps[-fit.context :].append(future))
    forecast = model.predict(panel.values[None, -fit.context :], codes[None])[0]
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:  # every process holds the same model; one writes
        pd.DataFrame(forecast, index=future, columns=list(panel.node_names)).to_csv(args.out)
        print(json.dumps({"test_mae": mae, "test_windows": len(w), "trainable_parameters":
                          model.trainable_parameters(), "forecast": str(args.out),
                          "nan_in_input": bool(np.isnan(panel.values).any())}))  # fmt: skip
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-factost``."""
    parser = argparse.ArgumentParser(prog="nips25-factost", description="FactoST (NeurIPS 2025): factorised "
                                     "spatio-temporal foundation models.")  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the few-shot headline experiment and write a report")
    add_common_arguments(rep, slug="factost", profiles=("quick", "paper", "wide"))
    rep.add_argument("--wind", type=Path, default=None, help="gstat's data/wind.rda for --profile paper "
                     "(default $NIPS25_FACTOST_WIND or Debian's r-cran-gstat path)")  # fmt: skip
    rep.add_argument("--checkpoint", type=Path, default=None, help="local backbone checkpoint (`nips25-factost "
                     "pretrain`) used instead of pretraining")  # fmt: skip
    rep.add_argument("--pool", choices=("all", "daily"), default=None, help="stage-1 pool: all (the default of every "
                     "profile but wide) or daily (0.2.4: the 30-minute-to-daily domains, one-view unmasked UTP, 2000 "
                     "steps; the wide profile's pool)")  # fmt: skip
    pre = sub.add_parser("pretrain", help="Stage 1: pretrain a backbone on the offline pool (needs [data])")
    ada = sub.add_parser("run", aliases=["adapt"], help="Stage 2 on your own panel (CSV/parquet): few-shot fit of "
                         "the adapter, test MAE, forecast of the next H steps")  # fmt: skip
    for p in (pre, ada):
        p.add_argument("--context", type=positive_int, default=12, help="L (12)")
        p.add_argument("--horizon", type=positive_int, default=12, help="H (12)")
        p.add_argument("--steps", type=positive_int, default=300, help="optimiser steps (300)")
        p.add_argument("--seed", type=seed_int, default=0)
        p.add_argument("-v", "--verbose", action="count", default=0)
        p.add_argument("-q", "--quiet", action="count", default=0)
    pre.add_argument("--out", type=Path, required=True, help="checkpoint file to write")
    pre.add_argument("--batch-size", type=positive_int, default=128, help="global batch over all processes (128)")
    ada.add_argument("--batch-size", type=positive_int, default=16, help="global batch over all processes (16)")
    pre.add_argument("--per-domain", type=positive_int, default=1500, help="pool windows per domain")
    pre.add_argument("--d-model", type=positive_int, default=64)
    pre.add_argument("--n-layers", type=positive_int, default=3)
    pre.add_argument("--replay", type=positive_int, default=1024, help="replay buffer capacity")
    ada.add_argument("--checkpoint", type=Path, required=True, help="file written by `nips25-factost pretrain`")
    ada.add_argument("--data", "--csv", dest="data", type=Path, required=True,
                     help="CSV or parquet: first column timestamps, one numeric column per node")  # fmt: skip
    ada.add_argument("--coords", type=Path, default=None, help="CSV/parquet: node name, then two coordinate columns")
    ada.add_argument("--frac", type=float, default=1.0, help="fraction of the 70%% training span to fit on (1.0)")
    ada.add_argument("--fine-tune", action="store_true", help="also train the backbone (with replay)")
    ada.add_argument("--refinement", action="store_true", help="v2's cyclic prototype refinement in the adapter")
    ada.add_argument("--prompt", choices=("hda", "dspa"), default="hda",
                     help="target prompt: hda (source-prompt mix + alignment, default) or dspa (v2)")  # fmt: skip
    ada.add_argument("--out", type=Path, required=True, help="CSV for the forecast of the next H steps")
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        from accelerate import PartialState

        from nips25_factost.reproduce import reproduce

        run = functools.partial(reproduce, wind_path=args.wind, checkpoint=args.checkpoint, pool=args.pool)
        state = PartialState()
        try:
            if state.is_main_process:  # writes the report; other processes compute alongside and write nothing
                run_reproduce(run, args)
            else:
                seed_everything(args.seed)
                run(profile=args.profile, seed=args.seed, out_dir=args.out)
            state.wait_for_everyone()
        except (ImportError, FileNotFoundError) as err:
            parser.error(str(err))
        except ValueError as err:
            if args.checkpoint is None:
                raise
            parser.error(f"--checkpoint: {err}")
        return 0
    configure_logging(args.verbose - args.quiet)
    if args.command == "pretrain":
        try:
            return _pretrain(args)
        except ImportError as err:
            parser.error(str(err))
    if not 0.0 < args.frac <= 1.0:
        parser.error(f"--frac must be in (0, 1], got {args.frac}")
    return _adapt(args, parser)


if __name__ == "__main__":
    raise SystemExit(main())
