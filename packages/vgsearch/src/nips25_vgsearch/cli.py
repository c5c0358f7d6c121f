"""``nips25-vgsearch``: reproduce the headline experiment, sweep g and n on a task, or ``run`` the search on a
user's own MATH-500-layout problem file with local Hugging Face models."""

from __future__ import annotations

import argparse
import json
import re
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
from nips25_shared.cache import atomic_write

__all__ = ["main"]


def _granularity(text: str) -> int | None:
    if text.lower() in ("inf", "full", "none"):
        return None
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"g must be an int >= 1 or 'inf', got {text!r}") from None


def _writable_dir(path: Path, flag: str, parser: argparse.ArgumentParser) -> None:
    """Create ``path`` as a directory, or exit 2 with one line naming ``flag``."""
    if path.exists() and not path.is_dir():
        parser.error(f"{flag}: {path} exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        parser.error(f"{flag}: cannot create directory {path} ({err.strerror or err})")


def _run_granularity(text: str) -> int | str:
    """``--g`` of ``run``: an int >= 1, ``"inf"`` (the full length) or ``"gap"`` (the :class:`GapPolicy`)."""
    if text.lower() == "gap":
        return "gap"
    try:
        g = _granularity(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"g must be an int >= 1, 'inf' or 'gap', got {text!r}") from None
    return "inf" if g is None else g


_DEVICE_FORMS = "cpu, cuda (the current GPU), cuda:N (GPU number N) or mps (Apple GPU)"


def _run_device(text: str) -> str:
    """``--device`` of ``run``: one of :data:`_DEVICE_FORMS` that this machine has, checked before any model loads.

    Raises:
        argparse.ArgumentTypeError: for another string (``gpu``, ``cuda:x``), ``cuda``/``cuda:N`` without CUDA or
            with ``N`` out of range, ``mps`` without the MPS backend.
    """
    match = re.fullmatch(r"(cpu|mps|cuda)(?::(0|[1-9][0-9]*))?", text)
    if match is None or (match.group(2) is not None and match.group(1) != "cuda"):
        raise argparse.ArgumentTypeError(f"expected {_DEVICE_FORMS}, got {text!r}")
    import torch

    kind, index = match.group(1), match.group(2)
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise argparse.ArgumentTypeError(f"{text!r}: CUDA is not available on this machine (torch "
                                             f"{torch.__version__}); use --device cpu")  # fmt: skip
        count = torch.cuda.device_count()
        if index is not None and int(index) >= count:
            raise argparse.ArgumentTypeError(f"{text!r}: this machine has {count} CUDA device(s), cuda:0 to "
                                             f"cuda:{count - 1}")  # fmt: skip
    if kind == "mps" and not torch.backends.mps.is_available():
        raise argparse.ArgumentTypeError(f"{text!r}: the MPS backend is not available on this machine (torch "
                                         f"{torch.__version__}); use --device cpu")  # fmt: skip
    return text


_VOCAB_HINT = "vocab.json with merges.txt, vocab.txt, a SentencePiece *.model or a *.tiktoken file"


def _tokenizer_gap(path: Path) -> str | None:
    """What ``path`` lacks for a tokenizer read offline, or ``None``: ``tokenizer.json`` (a fast tokenizer), or
    ``tokenizer_config.json`` with the vocabulary of a slow one (:data:`_VOCAB_HINT`)."""
    if (path / "tokenizer.json").is_file():
        return None
    if not (path / "tokenizer_config.json").is_file():
        return "no tokenizer.json and no tokenizer_config.json"
    files = {f.name for f in path.iterdir() if f.is_file()}
    if "vocab.json" in files and "merges.txt" not in files:
        return "no tokenizer.json, and vocab.json without merges.txt"
    if "vocab.json" in files or "vocab.txt" in files or any(f.endswith((".model", ".tiktoken")) for f in files):
        return None
    return f"no tokenizer.json, and tokenizer_config.json without a vocabulary file ({_VOCAB_HINT})"


def _model_dir(path: Path, flag: str, parser: argparse.ArgumentParser) -> None:
    """Exit 2 naming ``flag`` unless ``path`` is a local Hugging Face model directory with its tokenizer files
    (nothing is downloaded)."""
    if not (path / "config.json").is_file():
        what = "does not exist" if not path.exists() else "has no config.json"
        parser.error(f"{flag}: {path} is not a local Hugging Face model directory ({what}); nothing is downloaded, "
                     "give a directory holding config.json, the weights and the tokenizer")  # fmt: skip
    gap = _tokenizer_gap(path)
    if gap is not None:
        parser.error(f"{flag}: {path} has no tokenizer files ({gap}); nothing is downloaded, save the model's "
                     "tokenizer into the directory (tokenizer.save_pretrained)")  # fmt: skip


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``run``: the search on every problem of ``--data`` with the models of ``--generator`` and ``--prm``."""
    import torch

    from nips25_vgsearch.math500 import MathDataError, read_math_jsonl, search_problems, summarize_rows
    from nips25_vgsearch.reproduce import PAPER_SYSTEM_PROMPT, accountings
    from nips25_vgsearch.search import GapPolicy

    configure_logging(args.verbose - args.quiet)
    seed_everything(args.seed)
    bon, beam = args.method == "best_of_n", args.method == "beam_search"
    given = {
        flag: value
        for flag, value in (
            ("--beam-width", args.beam_width),
            ("--g", args.g),
            ("--num-iterations", args.num_iterations),
            ("--max-steps", args.max_steps),
        )
        if value is not None
    }
    if bon and (given or args.no_filter_duplicates):
        flags = [*given, *(["--no-filter-duplicates"] if args.no_filter_duplicates else [])]
        parser.error(f"{', '.join(flags)}: not used by --method best_of_n (n independent answers, one verification)")
    if beam and args.g is not None and args.g != 1:
        parser.error(f"--g: --method beam_search fixes g=1, got {args.g}; use --method vg_search")
    beam_width = 4 if args.beam_width is None else args.beam_width
    if not bon and args.n % beam_width:
        parser.error(f"--n: must be a multiple of --beam-width {beam_width}, got {args.n}")
    g = 1 if args.g is None else args.g  # None: not given (vg_search's default g=1); "inf": the full length
    if g == "gap" and args.num_iterations is not None:
        parser.error("--num-iterations: not used with --g gap (its rounds follow from --max-steps)")
    if args.no_chat_template and args.system_prompt is not None:
        parser.error("--system-prompt: needs the generator's chat template (drop --no-chat-template)")
    try:
        problems = read_math_jsonl(args.data, name="--data", require_answer=False)
    except (FileNotFoundError, MathDataError) as err:
        parser.error(str(err))
    _model_dir(args.generator, "--generator", parser)
    _model_dir(args.prm, "--prm", parser)
    _writable_dir(args.out, "--out", parser)
    from nips25_vgsearch.hf import HFGenerator, load_generator, load_prm

    dtype = getattr(torch, args.dtype)
    try:
        gen = load_generator(args.generator, dtype=dtype, device=args.device)
        if getattr(gen.tokenizer, "chat_template", None) and not args.no_chat_template:
            system = PAPER_SYSTEM_PROMPT if args.system_prompt is None else (args.system_prompt or None)
            gen = HFGenerator(gen.model, gen.tokenizer, chat_template=True, system_prompt=system)
    except (OSError, ValueError) as err:
        parser.error(f"--generator: cannot load {args.generator}: {err}")
    try:
        prm = load_prm(args.prm, mode=args.prm_mode, dtype=dtype, device=args.device)
    except (OSError, ValueError) as err:
        parser.error(f"--prm: cannot load {args.prm} with --prm-mode {args.prm_mode}: {err}")
    flops = accountings(gen.n_params, prm.n_params)
    rows = search_problems(
        problems, gen, prm, method=args.method, n=args.n, beam_width=beam_width,
        g=GapPolicy() if g == "gap" else (None if g == "inf" else g), num_iterations=args.num_iterations,  # type: ignore[arg-type]
        max_steps=12 if args.max_steps is None else args.max_steps, agg=args.agg,
        filter_duplicates=not args.no_filter_duplicates, seed=args.seed, batch_size=args.batch, flops_models=flops,
    )  # fmt: skip
    summary = summarize_rows(rows)
    summary["config"] = {
        "data": str(args.data), "generator": str(args.generator), "prm": str(args.prm), "prm_mode": args.prm_mode,
        "method": args.method, "n": args.n, "beam_width": None if bon else beam_width,
        "g": None if bon else g, "num_iterations": args.num_iterations,
        "max_steps": None if bon else (12 if args.max_steps is None else args.max_steps), "agg": args.agg,
        "filter_duplicates": None if bon else not args.no_filter_duplicates, "seed": args.seed,
        "batch": args.batch, "dtype": args.dtype, "prompt": "chat template" if gen.chat_template else "plain",
        "system_prompt": gen.system_prompt, "p_gen": gen.n_params, "p_ver": prm.n_params,
        "grading": "exact match of the last \\boxed{} of the chosen completion with 'answer' (no normalisation)",
    }  # fmt: skip
    # Both files are serialised before either is touched, and each replaces its old version whole (a temporary file
    # in OUT, then os.replace): a failure leaves the old file or none, never part of one.
    results_text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    summary_text = json.dumps(summary, indent=2, ensure_ascii=False) + "\n"
    results_path, summary_path = args.out / "results.jsonl", args.out / "summary.json"
    try:
        atomic_write(results_path, results_text.encode("utf-8"))
    except OSError as err:
        parser.error(f"--out: cannot write {results_path} ({err.strerror or err}); nothing in {args.out} was changed")
    try:
        atomic_write(summary_path, summary_text.encode("utf-8"))
    except OSError as err:
        parser.error(f"--out: wrote {results_path} but cannot write {summary_path} ({err.strerror or err}); a "
                     "summary.json there is from an earlier run, not of these results")  # fmt: skip
    acc = (
        "no reference answers"
        if summary["accuracy"] is None
        else (f"accuracy {summary['accuracy']:.3f} (SE {summary['se']:.3f}) on {summary['graded']} graded")
    )
    print(f"vgsearch run: {summary['problems']} problems, {acc}; mean FLOPs/problem "
          f"{summary['flops_mean']['prefill-reread']:.3e} (prefill re-read), "
          f"{summary['flops_mean']['prefix-cached']:.3e} (prefix-cached); wrote {args.out / 'results.jsonl'} and "
          f"{args.out / 'summary.json'}")  # fmt: skip
    return 0


def _sweep(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nips25_vgsearch.flops import FlopsModel
    from nips25_vgsearch.sweep import pareto_front, run_sweep

    configure_logging(args.verbose - args.quiet)
    seed_everything(args.seed)
    bad = [n for n in args.n if n % args.beam_width]
    if bad:
        parser.error(f"--n: every n must be a multiple of --beam-width {args.beam_width}, got {bad}")
    if args.task == "arith" and args.max_steps is not None:
        parser.error("--max-steps applies to --task stepchain only (arith chains have a fixed depth of 6 steps)")
    if args.json is not None:  # checked before the sweep, not after it
        if args.json.is_dir():
            parser.error(f"--json: {args.json} is a directory; give a file name")
        _writable_dir(args.json.parent, "--json", parser)
    if args.task == "stepchain":
        from nips25_vgsearch.simulator import StepChainTask

        task = StepChainTask(n_problems=args.problems, seed=args.seed)
        gen, prm, check, flops = task.generator(), task.verifier(), task.is_correct, FlopsModel()
        problems, max_steps = task.problems, 12 if args.max_steps is None else args.max_steps
    else:
        from nips25_vgsearch.arith import ArithChainTask, load_or_train_pair

        arith = ArithChainTask(n_problems=args.problems, seed=args.seed + 7)
        gen, prm, _ = load_or_train_pair(seed=args.seed)  # type: ignore[assignment]
        check, flops = arith.is_correct, FlopsModel(p_gen=gen.n_params, p_ver=prm.n_params)
        problems, max_steps = arith.problems, arith.depth
    points, _ = run_sweep(problems, gen, prm, check, ns=args.n, gs=args.g, beam_width=args.beam_width,
                          max_steps=max_steps, seed=args.seed, flops_model=flops)  # fmt: skip
    front = {(p.method, p.n) for p in pareto_front(points)}
    rows = [{**vars(p), "pareto": (p.method, p.n) in front} for p in points]
    print("| method | n | accuracy | se | FLOPs/problem | verifier calls | Pareto |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['method']} | {r['n']} | {r['accuracy']:.3f} | {r['se']:.3f} | {r['flops']:.3e} | "
              f"{r['verifier_calls']:.1f} | {'*' if r['pareto'] else ''} |")  # fmt: skip
    if args.json is not None:
        try:
            args.json.write_text(json.dumps(rows, indent=2) + "\n")
        except OSError as err:
            parser.error(f"--json: cannot write {args.json} ({err.strerror or err})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nips25-vgsearch``."""
    parser = argparse.ArgumentParser(
        prog="nips25-vgsearch", description="VG-Search (NeurIPS 2025): verifier-guided search with granularity g."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the headline experiment and write a report")
    add_common_arguments(rep, slug="vgsearch")
    swp = sub.add_parser("sweep", help="accuracy-FLOPs table over g and n, with its Pareto front")
    swp.add_argument("--task", choices=("stepchain", "arith"), default="stepchain")
    swp.add_argument("--n", type=positive_int, nargs="+", default=[4, 16, 64], help="candidates per round")
    swp.add_argument("--g", type=_granularity, nargs="+", default=[1, 2, 3, 4, None], help="granularities; 'inf'")
    swp.add_argument("--beam-width", type=positive_int, default=4, help="children per kept beam B2")
    swp.add_argument("--problems", type=positive_int, default=100, help="number of problems")
    swp.add_argument("--max-steps", type=positive_int, default=None,
                     help="depth reached before the last round (stepchain only; default 12)")  # fmt: skip
    swp.add_argument("--json", type=Path, default=None, help="also write the table as JSON here")
    swp.add_argument("--seed", type=seed_int, default=0)
    swp.add_argument("-v", "--verbose", action="count", default=0)
    swp.add_argument("-q", "--quiet", action="count", default=0)
    run = sub.add_parser(
        "run", help="the search on your own MATH-500-layout JSONL with local Hugging Face models",
        description="Run VG-Search on every problem of a MATH-500-layout JSONL (fields problem, answer; optional "
        "solution, subject, level, unique_id; a line without answer is solved, not graded) with a local causal-LM "
        "directory and a local PRM directory (nothing is downloaded). Writes OUT/results.jsonl (one line per "
        "problem) and OUT/summary.json (accuracy with its SE, mean FLOPs). Defaults are vg_search's.",
    )  # fmt: skip
    run.add_argument("--data", type=Path, required=True, help="MATH-500-layout JSONL, one problem per line")
    run.add_argument("--generator", type=Path, required=True, help="local causal-LM directory (config.json, ...)")
    run.add_argument("--prm", type=Path, required=True, help="local PRM directory (config.json, ...)")
    run.add_argument(
        "--prm-mode",
        choices=("value_head", "token_prob"),
        default="value_head",
        help="value_head: one-label token classifier (Skywork); token_prob: causal LM (Math-Shepherd)",
    )
    run.add_argument(
        "--out",
        type=Path,
        default=Path("reports") / "vgsearch-run",
        help="output directory (default reports/vgsearch-run)",
    )
    run.add_argument(
        "--method",
        choices=("vg_search", "beam_search", "best_of_n", "dvts"),
        default="vg_search",
        help="search strategy (default vg_search)",
    )
    run.add_argument("--n", type=positive_int, default=4, help="candidates per round n (the budget; default 4)")
    run.add_argument("--beam-width", type=positive_int, default=None, help="children per kept beam B2 (default 4)")
    run.add_argument(
        "--g",
        type=_run_granularity,
        default=None,
        help="verification granularity: an int >= 1, 'inf' (full length) or 'gap' (GapPolicy); default 1",
    )
    run.add_argument(
        "--num-iterations",
        type=positive_int,
        default=None,
        help="verification rounds (default: derived from --max-steps; the paper: 12/6/4/3 for g=1..4)",
    )
    run.add_argument("--max-steps", type=positive_int, default=None, help="depth before the last round (default 12)")
    run.add_argument("--agg", choices=("last", "min", "prod"), default="last", help="PRM score aggregation")
    run.add_argument("--no-filter-duplicates", action="store_true", help="keep beams with identical text")
    run.add_argument("--batch", type=positive_int, default=4, help="problems per search call (default 4)")
    run.add_argument(
        "--system-prompt",
        default=None,
        help="system message for a chat-template generator ('' for none; default the package's)",
    )
    run.add_argument(
        "--no-chat-template", action="store_true", help="plain prompt even if the tokenizer has a chat template"
    )
    run.add_argument("--dtype", choices=("bfloat16", "float16", "float32"), default="bfloat16")
    run.add_argument(
        "--device",
        type=_run_device,
        default=None,
        help="cpu, cuda, cuda:N or mps, checked before any model loads (default: the first GPU if any, else cpu)",
    )
    run.add_argument("--seed", type=seed_int, default=0)
    run.add_argument("-v", "--verbose", action="count", default=0)
    run.add_argument("-q", "--quiet", action="count", default=0)
    args = parser.parse_args(argv)
    if args.command == "run":
        return _run(args, run)
    if args.command == "reproduce":
        from nips25_vgsearch.reproduce import PaperInputError, paper_settings, reproduce

        _writable_dir(args.out, "--out", parser)
        try:
            if args.profile == "paper":
                paper_settings()  # the user's paths, data and settings, checked before any model loads
            run_reproduce(reproduce, args)
        except (FileNotFoundError, PaperInputError) as err:  # missing or unusable local inputs of --profile paper
            parser.error(str(err))
        return 0
    return _sweep(args, parser)


if __name__ == "__main__":
    raise SystemExit(main())
