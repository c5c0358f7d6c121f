"""Our decoding loop (`StepDecoder`, `HFGenerator(decoder="cached")`) on the tiny random Llama of conftest.py."""

from __future__ import annotations

import pytest
import torch
from nips25_vgsearch import HFPRM, STOP, HFGenerator, StepRequest, best_of_n, vg_search
from nips25_vgsearch.decoding import StepDecoder, supports_cached_decoding

PROMPTS = ["1+1=", "22+3=ab", "9", "hello world 12"]


class Bias:
    """Adds ``value`` to the logits of ``token`` (a logits processor that ignores the history)."""

    def __init__(self, token: int, value: float) -> None:
        self.token, self.value = token, value

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        scores[:, self.token] += self.value
        return scores


class Script:
    """Forces the ``t``-th new token of every row to ``tokens[t]`` (then leaves the logits alone)."""

    def __init__(self, tokens: list[int]) -> None:
        self.tokens, self.start = tokens, None

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.start = input_ids.shape[1] if self.start is None else self.start
        t = input_ids.shape[1] - self.start
        if t < len(self.tokens):
            scores[:] = -1e9
            scores[:, self.tokens[t]] = 0.0
        return scores


class NoEmptyStep:
    """Forbids a newline right after the delimiter, so that no step is empty."""

    def __init__(self, newline: int) -> None:
        self.newline = newline

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        after = (input_ids[:, -2:] == self.newline).all(dim=1)
        scores[after, self.newline] = float("-inf")
        return scores


class TripleNewline:
    """After two newlines forces a third (the next step starts with a newline), after three forbids a fourth; bans
    <pad> (it decodes to nothing: newline, pad, newline would be an empty step, which ends a VG-Search path)."""

    def __init__(self, newline: int) -> None:
        self.newline = newline

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        two = (input_ids[:, -2:] == self.newline).all(dim=1)
        three = (input_ids[:, -3:] == self.newline).all(dim=1)
        force = two & ~three
        scores[force] = float("-inf")
        scores[force, self.newline] = 0.0
        scores[three, self.newline] = float("-inf")
        scores[:, 0] = float("-inf")
        return scores


class ConstantVerifier:
    n_params = 1.0

    def score(self, problems, prefixes):
        return [[0.5] * max(1, len([s for s in p.split(STOP) if s])) for p in prefixes]


def test_greedy_equals_generate_token_for_token(tiny):
    """Greedy decoding through our loop (rows leave the batch as they end) is `generate(do_sample=False)`'s."""
    tok, lm, _ = tiny
    assert supports_cached_decoding(lm)
    got = StepDecoder(lm, tok, do_sample=False).run(PROMPTS, [0] * 4, [0] * 4, max_new_tokens=20,
                                                     stop_at_delimiter=False)  # fmt: skip
    tok.padding_side = "left"
    enc = tok(PROMPTS, return_tensors="pt", padding=True, add_special_tokens=False)
    out = lm.generate(**enc, do_sample=False, max_new_tokens=20, pad_token_id=0)
    for row, ref in zip(got, out[:, enc["input_ids"].shape[1] :].tolist()):
        ref = ref[: ref.index(1)] if 1 in ref else ref  # EOS (id 1) ends a row; generate pads after it
        assert row.ids == ref
    # through HFGenerator: the step texts of both decoders agree (greedy, steps end at the delimiter)
    nl = tok.convert_tokens_to_ids("\n")
    reqs = [StepRequest(p, "", 0, i) for i, p in enumerate(PROMPTS)]
    ours = HFGenerator(lm, tok, prompt_template="{problem}:", do_sample=False, max_step_tokens=12,
                       logits_processor=[Bias(nl, 2.5)])  # fmt: skip
    ref_gen = HFGenerator(lm, tok, prompt_template="{problem}:", do_sample=False, max_step_tokens=12,
                          generate_kwargs={"sequence_bias": {(nl,): 2.5}})  # fmt: skip
    assert ours.decoder == "cached" and ref_gen.decoder == "generate"
    steps = ours.step(reqs)
    assert steps == ref_gen.step(reqs)
    assert any(s.text.endswith(STOP) for s in steps)


def test_reused_cache_equals_re_reading_the_prefix(tiny):
    """Continuing from the kept KV cache gives the tokens a fresh read of the whole text gives (greedy)."""
    tok, lm, _ = tiny
    nl = tok.convert_tokens_to_ids("\n")
    dec = StepDecoder(lm, tok, do_sample=False, logits_processor=[Bias(nl, 2.5)])
    first = dec.run(PROMPTS, [0] * 4, [0] * 4, max_new_tokens=16, stop_at_delimiter=True)
    ended = [p + tok.decode(r.ids) for p, r in zip(PROMPTS, first) if r.stop]
    assert len(ended) >= 2 and dec.cached_texts == len(ended)
    texts = ended + ended[:1]  # a copy: branched by gathering the cache row
    again = dec.run(texts, [0] * len(texts), [1] * len(texts), max_new_tokens=16, stop_at_delimiter=True)
    assert dec.last_stats["unique"] == len(ended)
    assert dec.last_stats["prefill_tokens"] == len(ended)  # only the last token of each text is read again
    fresh = StepDecoder(lm, tok, do_sample=False, logits_processor=[Bias(nl, 2.5)])
    ref = fresh.run(texts, [0] * len(texts), [1] * len(texts), max_new_tokens=16, stop_at_delimiter=True)
    assert fresh.last_stats["cached_tokens"] == 0
    assert [r.ids for r in again] == [r.ids for r in ref]


def test_sampling_is_deterministic_and_batch_invariant(tiny):
    """Same seeds, same tokens; a row's tokens do not depend on the other rows of the call (own random stream)."""
    tok, lm, _ = tiny
    gen = HFGenerator(lm, tok, max_step_tokens=10)
    reqs = [StepRequest(p, "", 0, 100 + i) for i, p in enumerate(PROMPTS)]
    a, b = gen.step(reqs), HFGenerator(lm, tok, max_step_tokens=10).step(reqs)
    assert a == b
    assert gen.step(reqs[2:3]) == a[2:3]
    other_seed = gen.step([StepRequest(p, "", 0, 200 + i) for i, p in enumerate(PROMPTS)])
    assert other_seed != a
    res1 = vg_search(["1+1", "2+2"], gen, ConstantVerifier(), n=4, beam_width=2, g=2, max_steps=3, seed=3)
    res2 = vg_search(["1+1", "2+2"], gen, ConstantVerifier(), n=4, beam_width=2, g=2, max_steps=3, seed=3)
    assert [r.completions for r in res1] == [r.completions for r in res2]


def test_special_token_between_newlines_still_ends_the_step(tiny):
    """Regression: a token that decodes to nothing (here <pad>) between two newlines; the decoded text holds the
    delimiter, so the step ends there (it was missed before the fix)."""
    tok, lm, _ = tiny
    nl, a = tok.convert_tokens_to_ids("\n"), tok.convert_tokens_to_ids("a")
    dec = StepDecoder(lm, tok, do_sample=False, logits_processor=[Script([a, nl, tok.pad_token_id, nl, a, a])])
    (row,) = dec.run(["1+1="], [0], [0], max_new_tokens=6, stop_at_delimiter=True)
    assert row.ids == [a, nl, tok.pad_token_id, nl] and row.stop
    assert tok.decode(row.ids, skip_special_tokens=True) == "a" + STOP


def test_rows_leave_the_batch_and_searches_reuse_the_cache(tiny):
    """A multi-round search: after round 0, every call reads one token per surviving text (cache hits), and the
    forwards of a call are the longest row's length, not more."""
    tok, lm, _ = tiny
    nl = tok.convert_tokens_to_ids("\n")
    gen = HFGenerator(lm, tok, max_step_tokens=12, max_answer_tokens=8, logits_processor=[Bias(nl, 3.0)])
    assert gen._decoder is not None
    stats = []
    run = gen._decoder.run

    def spy(*args, **kwargs):
        out = run(*args, **kwargs)
        stats.append((dict(gen._decoder.last_stats), max(len(r.ids) + r.eos for r in out)))
        return out

    gen._decoder.run = spy  # type: ignore[method-assign]
    vg_search(["1+1", "2+2"], gen, ConstantVerifier(), n=4, beam_width=2, g=2, max_steps=5, seed=0)
    assert len(stats) >= 3
    first, _ = stats[0]
    assert first["unique"] == 2 and first["cached_tokens"] == 0  # the 4 samples of a problem read its prompt once
    for s, longest in stats[1:]:
        assert s["prefill_tokens"] == s["unique"] and s["cached_tokens"] > 0
        assert s["forwards"] == longest


@pytest.mark.parametrize(
    ("shape", "mark"), [(NoEmptyStep, STOP), (TripleNewline, "\n\n\n")], ids=["steps", "newline-first"]
)
def test_hf_best_of_n_equals_vg_search_without_pruning(tiny, shape, mark):
    """With per-step random streams the HF generator honours `step_seed`: `beam_width=1` (nothing pruned) draws the
    paths Best-of-N draws, so the completions coincide (the exactness test of the simulator, on a real LM).

    ``newline-first`` (regression, rev4): steps that start with a newline. In a run to the end, "a\\n\\n" then
    "\\n" counted as two step ends, restarting the path's stream twice where the step-wise search starts one step;
    a step end now starts a step with no newline before it, as a step sampled alone."""
    tok, lm, _ = tiny
    nl = tok.convert_tokens_to_ids("\n")
    # paths end at EOS well before the length limits, and no step is empty (an empty step ends a VG-Search path)
    gen = HFGenerator(lm, tok, max_step_tokens=200, max_answer_tokens=200,
                      logits_processor=[Bias(nl, 3.0), Bias(tok.eos_token_id, 0.5), shape(nl)])  # fmt: skip
    kw = {"n": 4, "seed": 5}
    bon = best_of_n(["1+1"], gen, ConstantVerifier(), **kw)[0]
    vg = vg_search(["1+1"], gen, ConstantVerifier(), beam_width=1, g=1, max_steps=40, refill="branch", **kw)[0]
    assert sorted(bon.completions) == sorted(vg.completions)
    assert sum(c.count(mark) for c in bon.completions) >= 4  # multi-step paths, steps that start with a newline


def test_decoder_bad_input(tiny):
    tok, lm, _ = tiny
    with pytest.raises(ValueError, match="cache_calls"):
        StepDecoder(lm, tok, cache_calls=-1)
    dec = StepDecoder(lm, tok)
    with pytest.raises(ValueError, match="same length"):
        dec.run(["a"], [0, 1], [0], max_new_tokens=2, stop_at_delimiter=True)
    with pytest.raises(ValueError, match="max_new_tokens"):
        dec.run(["a"], [0], [0], max_new_tokens=0, stop_at_delimiter=True)
    assert dec.run([], [], [], max_new_tokens=2, stop_at_delimiter=True) == []
    with pytest.raises(ValueError, match="decoder"):
        HFGenerator(lm, tok, decoder="vllm")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="generate_kwargs"):
        HFGenerator(lm, tok, decoder="cached", generate_kwargs={"top_k": 5})
    with pytest.raises(ValueError, match="logits_processor"):
        HFGenerator(lm, tok, decoder="generate", logits_processor=[Bias(0, 1.0)])
    with pytest.raises(TypeError, match="logits_processor"):
        HFGenerator(lm, tok, logits_processor=[1])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="do_sample"):
        HFGenerator(lm, tok, do_sample=1)  # type: ignore[arg-type]


def test_kept_caches_expire_after_cache_calls(tiny):
    """A kept cache lives for `cache_calls` later calls; `cache_calls=0` keeps none and decodes the same tokens;
    `clear_cache` drops them."""
    tok, lm, _ = tiny
    nl = tok.convert_tokens_to_ids("\n")
    kw = {"max_new_tokens": 16, "stop_at_delimiter": True}
    runs = {}
    for calls in (0, 1, 2):
        dec = StepDecoder(lm, tok, do_sample=False, cache_calls=calls, logits_processor=[Bias(nl, 2.5)])
        first = dec.run(PROMPTS, [0] * 4, [0] * 4, **kw)
        kept = sum(r.stop for r in first)
        assert kept >= 1 and dec.cached_texts == (kept if calls else 0)
        dec.run(["9+9="], [1], [0], **kw)  # an unrelated call
        assert dec.cached_texts <= (kept + 1 if calls == 2 else 1)
        texts = [p + tok.decode(r.ids) for p, r in zip(PROMPTS, first) if r.stop]
        runs[calls] = [r.ids for r in dec.run(texts, [0] * len(texts), [1] * len(texts), **kw)]
        if calls < 2:  # expired (or never kept): the texts are read again in full
            assert dec.last_stats["cached_tokens"] == 0
        else:  # still kept after one unrelated call: one token per text is read
            assert dec.last_stats["prefill_tokens"] == len(texts)
    assert runs[0] == runs[1] == runs[2]
    gen = HFGenerator(lm, tok, max_step_tokens=16, logits_processor=[Bias(nl, 2.5)])
    gen.step([StepRequest(p, "", 0, i) for i, p in enumerate(PROMPTS)])
    assert gen._decoder is not None and gen._decoder.cached_texts > 0
    gen.clear_cache()
    assert gen._decoder.cached_texts == 0


def test_last_call_stats_reports_the_last_step_call(tiny):
    """``HFGenerator.last_call_stats`` is a copy of what the last call read and ran; the ``generate`` loop has none."""
    tok, lm, _ = tiny
    gen = HFGenerator(lm, tok, max_step_tokens=5, do_sample=False)
    assert gen.last_call_stats == {}
    reqs = [StepRequest("1+1", "", 0, 7), StepRequest("1+1", "", 0, 8), StepRequest("2+2", "", 0, 9)]
    steps = gen.step(reqs)
    stats = gen.last_call_stats
    assert stats["rows"] == 3 and stats["unique"] == 2 and stats["cached_tokens"] == 0
    assert max(s.n_tokens for s in steps) <= stats["forwards"] <= 5  # the longest row, at most the limit
    stats["rows"] = -1
    assert gen.last_call_stats["rows"] == 3  # a copy
    assert HFGenerator(lm, tok, decoder="generate").last_call_stats == {}


def test_a_kept_cache_holds_exactly_the_tokens_of_its_text(tiny):
    """Regression (rev4): a step whose tokens do not re-tokenize to its text (here a <pad> the model sampled, which
    decodes to nothing) was kept under that text, so a surviving beam continued from a context with the hidden token
    while a fresh read (``cache_calls=0``, or the ``generate`` decoder) had none: results depended on the cache. Such
    a step is not kept; one whose tokens are its text's is."""
    tok, lm, prm = tiny
    nl, a, pad = tok.convert_tokens_to_ids("\n"), tok.convert_tokens_to_ids("a"), tok.pad_token_id
    kw = {"max_new_tokens": 6, "stop_at_delimiter": True}
    hidden = StepDecoder(lm, tok, do_sample=False, logits_processor=[Script([a, pad, nl, nl])])
    rows = hidden.run(["1+1=", "1+1="], [0, 1], [0, 0], **kw)  # two rows ending in the same text
    assert all(r.ids == [a, pad, nl, nl] and r.stop for r in rows) and hidden.cached_texts == 0
    plain = StepDecoder(lm, tok, do_sample=False, logits_processor=[Script([a, nl, nl])])
    (row,) = plain.run(["1+1="], [0], [0], **kw)
    assert row.ids == [a, nl, nl] and plain.cached_texts == 1
    # a search in which a kept beam's step holds a sampled <pad>: keeping caches changes nothing
    runs = []
    for calls in (0, 2):
        gen = HFGenerator(lm, tok, max_step_tokens=6, max_answer_tokens=8, cache_calls=calls,
                          logits_processor=[Bias(nl, 2.5)])  # fmt: skip
        res = vg_search(["1+1", "a\n\nb", "x" * 150, "  "], gen, HFPRM(prm, tok), n=4, beam_width=2, g=2, max_steps=3,
                        seed=0)  # fmt: skip
        runs.append([r.completions for r in res])
    assert runs[0] == runs[1]


def test_a_sliding_window_model_needs_the_generate_path(tiny, fresh_tokenizer):
    """Why two decoders (issue 34): our cached loop keeps one KV entry per token and cuts rows out of it, which a
    sliding-window cache does not hold; such a model is routed to ``generate`` by ``decoder="auto"``, refused by
    ``decoder="cached"``, and still searched (steps end at the delimiter). ``generate_kwargs`` also need it."""
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(0)
    tok = fresh_tokenizer
    cfg = MistralConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, sliding_window=4,
                        pad_token_id=0, eos_token_id=1, bos_token_id=1)  # fmt: skip
    lm = MistralForCausalLM(cfg).eval()
    assert not supports_cached_decoding(lm)
    assert HFGenerator(lm, tok).decoder == "generate"
    with pytest.raises(ValueError, match="full attention"):
        HFGenerator(lm, tok, decoder="cached")
    steps = HFGenerator(lm, tok, max_step_tokens=6).step([StepRequest("1+2", "", 0, 3)])
    assert len(steps) == 1 and steps[0].n_tokens >= 1
    llama = tiny[1]
    with pytest.raises(ValueError, match="generate_kwargs needs decoder='generate'"):
        HFGenerator(llama, tok, decoder="cached", generate_kwargs={"sequence_bias": {(5,): 1.0}})
    assert HFGenerator(llama, tok, generate_kwargs={"sequence_bias": {(5,): 1.0}}).decoder == "generate"
