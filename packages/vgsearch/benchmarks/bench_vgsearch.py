"""Orchestration overhead of VG-Search vs a plain batched ``generate`` of the same number of tokens.

Peer: Hugging Face ``model.generate`` on one batch (what a search-free sampler does). Ours: ``vg_search`` with the
same model through ``HFGenerator`` and a constant verifier (so verifier compute is excluded and only the search
loop's own overhead, step-wise calls, stop strings and re-prefill, is measured). Tokens/s are generated tokens over
wall time; the ratio is ours/peer in seconds per generated token (the issue's target: under 1.2x). Peak memory is
the process's resident high-water mark after each phase (ru_maxrss).
"""

from __future__ import annotations

import sys

import torch
from nips25_vgsearch import STOP, HFGenerator, vg_search

from nips25_shared.bench import measure, median_seconds, peak_rss_mib

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


def main() -> int:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    tok = char_tokenizer()
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024, pad_token_id=0,
                      eos_token_id=1, bos_token_id=1)  # fmt: skip
    model = LlamaForCausalLM(cfg).eval()
    problems = [f"{i}+{i + 1}=" for i in range(4)]
    gen = HFGenerator(model, tok, max_step_tokens=16, max_answer_tokens=16)
    kwargs = {"n": 8, "beam_width": 4, "g": 2, "max_steps": 4, "seed": 0}
    vg_search(problems, gen, ConstantVerifier(), **kwargs)  # warm-up
    seeds, tokens = iter(range(REPEATS)), []

    def ours() -> None:
        res = vg_search(problems, gen, ConstantVerifier(), **{**kwargs, "seed": next(seeds)})
        tokens.append(sum(x.ledger.gen_tokens for x in res))

    t_ours = median_seconds(ours, repeats=REPEATS)
    ours_tokens = tokens[0]
    mem_ours = peak_rss_mib()
    rows = len(problems) * kwargs["n"]
    per_row = max(1, round(ours_tokens / rows))
    enc = tok([p for p in problems for _ in range(kwargs["n"])], return_tensors="pt", padding=True)
    peer_seeds = iter(range(REPEATS + 1))  # seed 0 for the warm-up run

    def peer() -> torch.Tensor:
        torch.manual_seed(next(peer_seeds))
        return model.generate(**enc, do_sample=True, temperature=0.8, max_new_tokens=per_row, min_new_tokens=per_row,
                              pad_token_id=0)  # fmt: skip

    with torch.no_grad():
        peer_run = measure(peer, repeats=REPEATS, warmup=1, memory="none")
    t_peer, out = peer_run.seconds, peer_run.result
    peer_tokens = (out.shape[1] - enc["input_ids"].shape[1]) * rows
    mem_peer = peak_rss_mib()
    tps_ours, tps_peer = ours_tokens / t_ours, peer_tokens / t_peer
    print(f"machine: {sys.platform}, torch {torch.__version__}, 1 thread; tiny Llama 4x256, {rows} rows")
    print(f"ours  vg_search (n=8, B2=4, g=2, 4 steps): {ours_tokens} tokens, median {t_ours:.3f} s, "
          f"{tps_ours:.0f} tok/s, peak RSS {mem_ours:.0f} MB")  # fmt: skip
    print(f"peer  batched generate: {peer_tokens} tokens, median {t_peer:.3f} s, {tps_peer:.0f} tok/s, "
          f"peak RSS {mem_peer:.0f} MB")  # fmt: skip
    print(f"ratio ours/peer (seconds per generated token): {tps_peer / tps_ours:.2f}x (target < 1.2x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
