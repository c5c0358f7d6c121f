"""``nips25-gora``: reproduce the headline experiment, or write a GoRA adapter for a local model."""

from __future__ import annotations

import argparse
import json
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


def _init(args: argparse.Namespace) -> int:
    """GoRA on a local causal LM with a JSONL of question/answer pairs; saves a peft adapter and rank.json.

    Runs under ``accelerate launch`` as well as alone: the ``--n-steps`` gradient batches of ``--batch-size`` are
    dealt out to the processes (process ``k`` takes batches ``k, k + P, ...``), the gradients are summed across
    processes, and only the main process writes the adapter and prints the ranks.
    """
    import torch
    from accelerate import Accelerator

    from nips25_gora.adapter import apply_gora, save_adapter
    from nips25_gora.config import GoraConfig
    from nips25_gora.corpus import load_math_jsonl
    from nips25_gora.models import load_causal_lm

    configure_logging(args.verbose - args.quiet)
    accelerator = Accelerator()
    n_proc = accelerator.num_processes
    if args.n_steps % n_proc:
        raise ValueError(f"--n-steps ({args.n_steps}) must be a multiple of the number of processes ({n_proc})")
    seed_everything(args.seed)
    model, tokenizer = load_causal_lm(args.model, dtype=torch.float32)
    if tokenizer is None:
        raise ValueError(f"--model: {args.model} has no tokenizer")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    pairs = load_math_jsonl(args.data, limit=args.n_steps * args.batch_size)
    texts = [f"{q}\n{a}" for q, a in pairs]
    batches = []
    for i in range(0, len(texts), args.batch_size):
        enc = tokenizer(texts[i : i + args.batch_size], return_tensors="pt", padding=True, truncation=True,
                        max_length=args.max_length)  # fmt: skip
        labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        batches.append({**enc, "labels": labels})
    if len(batches) < n_proc:
        raise ValueError(f"--data: {len(batches)} batches of {args.batch_size} cannot feed {n_proc} processes")
    mine = batches[accelerator.process_index :: n_proc]
    config = GoraConfig(target_modules=tuple(args.targets), n_steps=len(mine), r_ref=args.r_ref)
    model.to(accelerator.device)
    peft_model = apply_gora(model, mine, config, accelerator=accelerator)
    out = save_adapter(peft_model, args.out, accelerator=accelerator)
    if out is not None:
        print(json.dumps({"adapter": str(out), "ranks": peft_model.gora_init.ranks}, indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-gora``."""
    from nips25_gora.models import LLAMA_TARGETS

    parser = argparse.ArgumentParser(prog="nips25-gora", description="GoRA (NeurIPS 2025) as a peft LoRA adapter.")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the headline experiment and write a report")
    add_common_arguments(rep, slug="gora", profiles=("quick", "full", "topics", "paper"))
    ini = sub.add_parser("init", help="GoRA-initialise a local causal LM; write a peft adapter and rank.json")
    ini.add_argument("--model", type=Path, required=True, help="local Hugging Face causal LM directory")
    ini.add_argument("--data", type=Path, required=True, help="JSONL with query/response or question/answer")
    ini.add_argument("--out", type=Path, required=True, help="output directory for the adapter")
    ini.add_argument("--targets", nargs="+", default=list(LLAMA_TARGETS), help="target module names")
    ini.add_argument("--r-ref", type=positive_int, default=8, help="LoRA-equivalent rank (sets the budget)")
    ini.add_argument("--n-steps", type=positive_int, default=32, help="gradient batches N, over all processes")
    ini.add_argument("--batch-size", type=positive_int, default=4, help="rows per gradient batch")
    ini.add_argument("--max-length", type=positive_int, default=512, help="tokens per row (truncated)")
    ini.add_argument("--seed", type=seed_int, default=0)
    ini.add_argument("-v", "--verbose", action="count", default=0)
    ini.add_argument("-q", "--quiet", action="count", default=0)
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        from nips25_gora.reproduce import reproduce

        run_reproduce(reproduce, args)
        return 0
    return _init(args)


if __name__ == "__main__":
    raise SystemExit(main())
