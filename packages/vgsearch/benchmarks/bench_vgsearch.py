"""Orchestration overhead of VG-Search vs a plain batched ``generate`` of the same number of tokens.

Peer: Hugging Face ``model.generate`` on one batch (what a search-free sampler does). Ours: ``vg_search`` with the
same model through ``HFGenerator`` and a constant verifier (so verifier compute is excluded and only the search
loop's own overhead, step-wise calls, stop strings and re-prefill, is measured). Our tokens/s are the median over
the 5 seeds of each run's generated tokens over its own wall time (the seeds generate different numbers of tokens);
the peer generates our mean number of tokens as one batch of ``n`` rows per problem, all of equal length. The ratio
is ours/peer in seconds per generated token (the issue's target: under 1.2x). Forward passes (model calls) and the
deepest path (tokens of the longest completion, a lower bound on our sequential forwards) are printed beside them.
Peak memory is the process's resident high-water mark after each phase (ru_maxrss).
"""

from __future__ import annotations

import statistics
import sys

import torch
from nips25_vgsearch import STOP, HFGenerator, vg_search

from nips25_shared.bench import measure, peak_rss_mib

REPEATS = 5
torch.set_num_threads(1)


def char_tokenizer():
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = list("0123456789+-=;abcdefghijklmnopqrstuvwxyz \n")
    vocab = {"<pad>": 0, "<eos>": 1, **{c: i + 2 for i, c in enumerate(chars)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")


class ConstantVerifier:
    n_params = 1.0

    def score(self, problems, prefixes):
        return [[0.5] * max(1, len([s for s in p.split(STOP) if s])) for p in prefixes]


class DelimiterBias:
    """Adds ``bias`` to the logit of ``"\\n"`` so that the random model ends steps at the delimiter (multi-round)."""

    def __init__(self, token_id: int, bias: float) -> None:
        self.token_id, self.bias = token_id, bias

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        scores[:, self.token_id] += self.bias
        return scores


def case(name: str, model, tok, problems, search: dict, step_tokens: int, answer_tokens: int, bias: float) -> None:
    """Median time of ``vg_search`` (our decoding loop and the ``generate`` loop) vs one batched ``generate``."""
    from transformers import LogitsProcessorList

    processors = [DelimiterBias(tok.convert_tokens_to_ids("\n"), bias)] if bias else []
    lengths = {"max_step_tokens": step_tokens, "max_answer_tokens": answer_tokens}
    ours = HFGenerator(model, tok, **lengths, logits_processor=processors)
    old = HFGenerator(model, tok, **lengths, decoder="generate",
                      generate_kwargs={"logits_processor": LogitsProcessorList(processors)})  # fmt: skip
    rows = len(problems) * search["n"]
    forwards = [0]
    hook = model.register_forward_hook(lambda *_: forwards.__setitem__(0, forwards[0] + 1))
    timings = {}
    for label, gen in (("ours", ours), ("generate loop", old)):
        vg_search(problems, gen, ConstantVerifier(), **search)  # warm-up
        seeds, tokens, calls, passes, depth = iter(range(REPEATS)), [], [], [], []

        def run(gen=gen, seeds=seeds, tokens=tokens, calls=calls, passes=passes, depth=depth) -> None:
            start = forwards[0]
            res = vg_search(problems, gen, ConstantVerifier(), **{**search, "seed": next(seeds)})
            passes.append(forwards[0] - start)
            tokens.append(sum(x.ledger.gen_tokens for x in res))
            calls.append(sum(x.ledger.gen_calls for x in res))
            depth.append(max((gen.count_tokens(c) for x in res for c in x.completions), default=0))

        times = measure(run, repeats=REPEATS, memory="none").times
        rate = statistics.median(t / s for t, s in zip(tokens, times))  # each run's own tokens over its own time
        timings[label] = (rate, statistics.mean(tokens), peak_rss_mib())
        print(f"  {label:14s} vg_search: {min(tokens)}-{max(tokens)} tokens in {min(calls)}-{max(calls)} step "
              f"requests, {min(passes)}-{max(passes)} forward passes (deepest path {min(depth)}-{max(depth)} "
              f"tokens), median {statistics.median(times):.3f} s, {rate:.0f} tok/s (median over the {REPEATS} "
              f"seeds), peak RSS {timings[label][2]:.0f} MB")  # fmt: skip
    per_row = max(1, round(timings["ours"][1] / rows))
    enc = tok([p for p in problems for _ in range(search["n"])], return_tensors="pt", padding=True)
    peer_seeds = iter(range(REPEATS + 1))  # seed 0 for the warm-up run

    def peer() -> torch.Tensor:
        torch.manual_seed(next(peer_seeds))
        return model.generate(**enc, do_sample=True, temperature=0.8, max_new_tokens=per_row, min_new_tokens=per_row,
                              pad_token_id=0, logits_processor=LogitsProcessorList(processors))  # fmt: skip

    with torch.no_grad():
        peer_run = measure(peer, repeats=REPEATS, warmup=1, memory="none")
    t_peer, out = peer_run.seconds, peer_run.result
    hook.remove()
    peer_tokens = (out.shape[1] - enc["input_ids"].shape[1]) * rows
    tps_peer = peer_tokens / t_peer
    print(
        f"  {'peer':14s} batched generate: {peer_tokens} tokens ({rows} rows x {per_row}, the mean of ours), "
        f"{per_row} forward passes, median {t_peer:.3f} s, {tps_peer:.0f} tok/s, peak RSS {peak_rss_mib():.0f} MB"
    )
    for label, (rate, _, _) in timings.items():
        print(f"  ratio {label}/peer (seconds per generated token): {tps_peer / rate:.2f}x (target < 1.2x)")
    print(f"[{name}]")


def main() -> int:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    tok = char_tokenizer()
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024, pad_token_id=0,
                      eos_token_id=1, bos_token_id=1)  # fmt: skip
    model = LlamaForCausalLM(cfg).eval()
    problems = [f"{i}+{i + 1}=" for i in range(4)]
    print(f"machine: {sys.platform}, torch {torch.__version__}, 1 thread; tiny Llama 4x256, {len(problems)} problems")
    print("case A (the first benchmark): n=8, B2=4, g=2, 4 steps, 16 tokens per step; the random model never ends a "
          "step at the delimiter, so every path ends in round 0 at the length limit (one generator call)")  # fmt: skip
    search = {"n": 8, "beam_width": 4, "g": 2, "max_steps": 4, "seed": 0}
    case("A: one round", model, tok, problems, search, 16, 16, 0.0)
    print("case B (multi-round): as A with logit +3 on '\\n' (steps end at the delimiter), 6 steps, 24 tokens per "
          "step, 32 to the end")  # fmt: skip
    search = {"n": 8, "beam_width": 4, "g": 2, "max_steps": 6, "seed": 0}
    case("B: multi-round", model, tok, problems, search, 24, 32, 3.0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
