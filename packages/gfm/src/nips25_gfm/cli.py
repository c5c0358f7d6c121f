"""``nips25-gfm``: reproduce the headline experiment, train a TS-GNN on offline graphs, predict zero-shot."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

from nips25_shared import (
    add_common_arguments,
    configure_logging,
    positive_int,
    run_reproduce,
    seed_everything,
    seed_int,
)

__all__ = ["main"]


def _train(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nips25_gfm.datasets import load_dataset
    from nips25_gfm.model import TSGNN
    from nips25_gfm.training import FitConfig, default_accelerator, fit

    try:
        config = FitConfig(epochs=args.epochs, lr=args.lr, lp_ratio=args.lp_ratio, maps_from=args.maps_from)
        model = TSGNN(hidden=args.hidden, num_layers=args.layers, backbone=args.backbone)
        tasks = [load_dataset(name, seed=args.seed) for name in args.tasks]
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))
    if args.save.is_dir():
        parser.error(f"--save: {args.save} is a directory; expected a file path")
    parent = args.save.resolve().parent
    existing = next((p for p in (parent, *parent.parents) if p.exists()), parent)
    if not os.access(existing, os.W_OK) or not existing.is_dir():
        parser.error(f"--save: cannot write under {parent}")
    configure_logging(args.verbose - args.quiet)
    seed_everything(args.seed)
    accelerator = default_accelerator()
    history = fit(model, tasks, config=config, seed=args.seed, accelerator=accelerator)
    # one file, written by the main process once every process has finished its last step
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        try:
            path = model.save(args.save)
        except OSError as exc:
            parser.error(f"--save: cannot write {args.save} ({exc.strerror or exc})")
        print(json.dumps({"model": str(path), "final_loss": history[-1], "parameters": model.num_parameters()}))
    accelerator.wait_for_everyone()
    return 0


def _predict(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nips25_gfm.datasets import load_dataset
    from nips25_gfm.model import TSGNN
    from nips25_gfm.training import zero_shot_accuracy

    try:
        model = TSGNN.load(args.model)
        task = load_dataset(args.task, seed=args.seed)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        parser.error(str(exc))
    configure_logging(args.verbose - args.quiet)
    acc = zero_shot_accuracy(model, task)
    print(json.dumps({"task": args.task, "nodes": task.num_nodes, "classes": task.num_classes, "test_accuracy": acc}))
    return 0


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import numpy as np

    from nips25_gfm.datasets import load_graph_file
    from nips25_gfm.inference import zero_shot
    from nips25_gfm.model import TSGNN
    from nips25_gfm.planetoid import load_planetoid
    from nips25_gfm.training import accuracy

    if not args.data.exists():
        parser.error(f"--data: {args.data} does not exist (expected a Planetoid directory or a .npz file)")
    try:
        model = TSGNN.load(args.model)
        if args.data.is_file():
            task = load_graph_file(args.data, seed=args.seed, max_features=args.max_features)
        else:
            task = load_planetoid(args.data, name=args.name, seed=args.seed, max_features=args.max_features)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        parser.error(str(exc).splitlines()[0])
    configure_logging(args.verbose - args.quiet)
    proba = zero_shot(task.graph, task.x, task.y, task.train_mask, model=model).numpy()
    result = {
        "graph": task.name,
        "nodes": task.num_nodes,
        "features": task.num_features,
        "classes": task.num_classes,
        "labelled": int(task.train_mask.sum()),
        "test_accuracy": accuracy(proba, task.y, task.test_mask),
    }
    if args.out is not None:
        table = np.column_stack([np.arange(task.num_nodes), proba.argmax(axis=1), proba])
        header = ",".join(["node", "prediction", *(f"p{c}" for c in range(task.num_classes))])
        fmt = ["%d", "%d"] + ["%.6g"] * task.num_classes
        try:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            np.savetxt(args.out, table, delimiter=",", header=header, comments="", fmt=fmt)
        except OSError as exc:
            parser.error(f"--out: cannot write {args.out} ({exc.strerror or exc})")
        result["predictions"] = str(args.out)
    print(json.dumps(result))
    return 0


def _reproduce(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nips25_gfm.reproduce import DATA_ENV, reproduce

    if args.data_dir is not None:
        if not args.data_dir.is_dir():
            parser.error(f"--data-dir: {args.data_dir} is not a directory")
        os.environ[DATA_ENV] = str(args.data_dir)
    try:
        run_reproduce(reproduce, args)
    except (FileNotFoundError, ValueError, OSError) as exc:
        parser.error(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    return 0


def _convert(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nips25_gfm.datasets import convert_graph_file, load_graph_file

    # Convert to a temporary file beside DST and check that it loads before renaming it over DST, so that a
    # failed conversion never replaces or leaves a file.
    path = args.dst if args.dst.suffix == ".npz" else args.dst.with_name(args.dst.name + ".npz")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.convert.npz")
    try:
        if path.is_dir():
            raise ValueError(f"dst: {path} is a directory; expected a file path")
        convert_graph_file(args.src, tmp, layout=args.layout)
        task = load_graph_file(tmp, name=path.stem, max_features=None)
        os.replace(tmp, path)
    except (ValueError, FileNotFoundError, OSError) as exc:
        with contextlib.suppress(OSError):  # DST's directory may not exist or be a file
            tmp.unlink(missing_ok=True)
        parser.error(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    print(json.dumps({"file": str(path), "nodes": task.num_nodes, "features": task.num_features,
                      "classes": task.num_classes, "train_nodes": int(task.train_mask.sum())}))  # fmt: skip
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-gfm``."""
    from nips25_gfm.datasets import DATASETS, GRAPH_LAYOUTS

    parser = argparse.ArgumentParser(prog="nips25-gfm", description="TS-GNN graph foundation model (NeurIPS 2025).")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the headline experiment and write a report")
    add_common_arguments(rep, slug="gfm")
    rep.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="profile paper: directory of the paper's graphs as <name>.npz files (else $NIPS25_GFM_DATA)",
    )
    tr = sub.add_parser("train", help="train TS-GNN on offline graphs and save it")
    tr.add_argument("--tasks", nargs="+", required=True, choices=sorted(DATASETS), help="training graphs")
    tr.add_argument("--save", type=Path, required=True, help="output file for the model")
    tr.add_argument("--epochs", type=positive_int, default=500)
    tr.add_argument("--lr", type=float, default=1e-3)
    tr.add_argument("--lp-ratio", type=float, default=0.5, help="fraction of training labels fed as input")
    tr.add_argument("--hidden", type=positive_int, default=16)
    tr.add_argument("--layers", type=positive_int, default=2)
    tr.add_argument("--backbone", choices=("mean", "gat"), default="mean")
    tr.add_argument(
        "--maps-from",
        choices=("train", "fed"),
        default="train",
        help="fit the conversion maps on every training label (official) or only on each epoch's fed labels",
    )
    pr = sub.add_parser("predict", help="zero-shot accuracy of a saved model on an offline graph")
    pr.add_argument("--model", type=Path, required=True, help="file written by `train --save`")
    pr.add_argument("--task", required=True, choices=sorted(DATASETS), help="graph to classify")
    rn = sub.add_parser(
        "run",
        help="zero-shot class probabilities of a user's graph: Planetoid raw files (DGL/PyG caches) or a .npz file",
    )
    rn.add_argument("--model", type=Path, required=True, help="file written by `train --save`")
    rn.add_argument(
        "--data",
        type=Path,
        required=True,
        help="DGL's ~/.dgl/cora_v2, PyG's <root>/Cora (or its raw/), or a .npz file in this package's layout",
    )
    rn.add_argument("--name", default=None, help="Planetoid prefix (cora, citeseer, pubmed) when DIR holds several")
    rn.add_argument("--max-features", type=positive_int, default=None, help="PCA cap (default: none)")
    rn.add_argument("--out", type=Path, default=None, help="CSV of node, prediction, p0..p{C-1}")
    cv = sub.add_parser(
        "convert", help="convert a graph file (native or heterophilous-graphs layout) to this package's .npz layout"
    )
    cv.add_argument("src", type=Path, help="input .npz file (nothing is downloaded)")
    cv.add_argument("dst", type=Path, help="output .npz file, e.g. DIR/roman_empire.npz for --profile paper")
    cv.add_argument("--layout", choices=GRAPH_LAYOUTS, default="auto", help="layout of SRC (default: detected)")
    for p in (tr, pr, rn):
        p.add_argument("--seed", type=seed_int, default=0)
        p.add_argument("-v", "--verbose", action="count", default=0)
        p.add_argument("-q", "--quiet", action="count", default=0)
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        return _reproduce(args, rep)
    if args.command == "train":
        return _train(args, tr)
    if args.command == "run":
        return _run(args, rn)
    if args.command == "convert":
        return _convert(args, cv)
    return _predict(args, pr)


if __name__ == "__main__":
    raise SystemExit(main())
