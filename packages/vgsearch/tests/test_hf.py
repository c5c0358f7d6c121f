"""The transformers path on tiny random-init models with a character tokenizer built in code (no downloads)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nips25_vgsearch import HFPRM, STOP, HFGenerator, Step, StepRequest, load_generator, load_prm, vg_search


def test_generated_step_ends_at_stop_or_eos(tiny):
    tok, lm, _ = tiny
    nl = tok.convert_tokens_to_ids("\n")
    # a prompt that does not end in the delimiter, so that the forced newlines are the step's own
    forced = HFGenerator(lm, tok, prompt_template="{problem}:", max_step_tokens=12,
                         generate_kwargs={"sequence_bias": {(nl,): 50.0}})  # fmt: skip
    steps = forced.step([StepRequest("1+1", "", 0, 3), StepRequest("2+2", "", 0, 4)])
    assert all(s.text == STOP and not s.finished and s.n_tokens == 2 for s in steps)
    a = tok.convert_tokens_to_ids("a")
    capped = HFGenerator(lm, tok, max_step_tokens=3, generate_kwargs={"sequence_bias": {(a,): 50.0}})
    assert capped.step([StepRequest("1+1", "", 0, 3)])[0] == Step("aaa", 3, 1, True)  # length limit ends the answer
    free = HFGenerator(lm, tok, max_step_tokens=6)
    for s in free.step([StepRequest("1+1", "", 0, i) for i in range(4)]):
        assert s.text.endswith(STOP) != s.finished  # either a whole step or the end of the answer
        assert s.n_tokens == free.count_tokens(s.text)


def test_same_seed_same_output(tiny):
    tok, lm, _ = tiny
    gen = HFGenerator(lm, tok, max_step_tokens=8)
    reqs = [StepRequest("3+4", "", 0, 11), StepRequest("5-1", "", 0, 12)]
    assert gen.step(reqs) == gen.step(reqs)


def test_value_head_prm_batched_equals_one_by_one(tiny):
    tok, _, prm_model = tiny
    prm = HFPRM(prm_model, tok, batch_size=8)
    problems = ["1+1", "22+3", "9"]
    prefixes = ["a\n\nbb\n\n", "abc\n\nd", "x y z\n\n"]
    batched = prm.score(problems, prefixes)
    assert [len(r) for r in batched] == [2, 2, 1]
    for p, s, row in zip(problems, prefixes, batched):
        np.testing.assert_allclose(prm.score([p], [s])[0], row, atol=1e-5)


def test_token_prob_prm_reads_good_vs_bad(tiny):
    tok, lm, _ = tiny
    prm = HFPRM(lm, tok, mode="token_prob", step_tag=" z", good_token="+", bad_token="-")
    scores = prm.score(["1+1"], ["a\n\nb"])[0]
    assert len(scores) == 2 and all(0 < s < 1 for s in scores)
    text = "1+1\n\na z\nb z\n"
    enc = tok(text, return_tensors="pt", add_special_tokens=False)
    logits = lm(**enc).logits[0]
    pos = [i for i, t in enumerate(enc["input_ids"][0].tolist()) if t == tok.convert_tokens_to_ids("z")]
    ref = torch.softmax(logits[pos][:, [prm.good_id, prm.bad_id]], dim=-1)[:, 0]
    np.testing.assert_allclose(scores, ref.detach().numpy(), atol=1e-5)


def test_search_runs_on_hf_models(tiny):
    tok, lm, prm_model = tiny
    gen = HFGenerator(lm, tok, max_step_tokens=4, max_answer_tokens=6)
    res = vg_search(["1+1", "2+2"], gen, HFPRM(prm_model, tok), n=4, beam_width=2, g=2, max_steps=3)
    assert len(res) == 2 and all(r.completions and r.ledger.verifier_calls > 0 for r in res)


def test_loading_from_a_local_directory(tiny, tmp_path):
    tok, lm, prm_model = tiny
    lm.save_pretrained(tmp_path / "gen")
    tok.save_pretrained(tmp_path / "gen")
    prm_model.save_pretrained(tmp_path / "prm")
    tok.save_pretrained(tmp_path / "prm")
    gen = load_generator(tmp_path / "gen", dtype=torch.float32, max_step_tokens=4)
    prm = load_prm(tmp_path / "prm", dtype=torch.float32)
    assert gen.n_params == pytest.approx(sum(p.numel() for p in lm.parameters()))
    np.testing.assert_allclose(prm.score(["1"], ["a\n\n"]), HFPRM(prm_model, tok).score(["1"], ["a\n\n"]), atol=1e-5)


def test_hf_bad_input(tiny, tmp_path):
    tok, lm, prm_model = tiny
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "missing")):
        load_generator(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="PRM path"):
        load_prm(tmp_path)
    with pytest.raises(ValueError, match="temperature"):
        HFGenerator(lm, tok, temperature=0.0)
    with pytest.raises(ValueError, match="top_p"):
        HFGenerator(lm, tok, top_p=1.5)
    with pytest.raises(ValueError, match="prompt_template"):
        HFGenerator(lm, tok, prompt_template="no slot")
    with pytest.raises(TypeError, match="generate"):
        HFGenerator(object(), tok)
    with pytest.raises(ValueError, match="mode"):
        HFPRM(prm_model, tok, mode="logits")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="single tokens"):
        HFPRM(lm, tok, mode="token_prob", good_token="ab", bad_token="-")
    with pytest.raises(ValueError, match="same length"):
        HFPRM(prm_model, tok).score(["1"], [])


def test_gguf_loading_names_what_is_missing(tmp_path):
    """`load_generator(dir, gguf_file=...)`: a missing GGUF file names gguf_file and the path; without the `gguf`
    package a present file gives an ImportError naming it (nothing is downloaded either way)."""
    import importlib.util

    with pytest.raises(FileNotFoundError, match="gguf_file"):
        load_generator(tmp_path, gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    if importlib.util.find_spec("gguf") is None:
        with pytest.raises(ImportError, match="gguf"):
            load_generator(tmp_path, gguf_file="model.gguf")
    else:
        with pytest.raises(Exception):  # noqa: B017 - a 4-byte file is not a GGUF checkpoint; transformers' error
            load_generator(tmp_path, gguf_file="model.gguf")


def _write_tiny_gguf(lm, tok, path) -> None:
    """Writes the tiny Llama and its character vocabulary as a llama-architecture GGUF file (float32 tensors, a
    byte-level BPE vocabulary without merges, Q/K rows in llama.cpp's rotary order)."""
    import gguf
    import numpy as np

    cfg = lm.config
    rope = (getattr(cfg, "rope_parameters", None) or {}).get("rope_theta", getattr(cfg, "rope_theta", 10000.0))
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(rope)
    w.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    w.add_vocab_size(len(tok))
    byte_char = {i: chr(i) for i in range(33, 127)} | {32: "\u0120", 10: "\u010a"}  # GPT-2 byte-level symbols
    tokens = [""] * len(tok)
    for text, i in tok.get_vocab().items():
        tokens[i] = text if text.startswith("<") else "".join(byte_char[b] for b in text.encode())
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.CONTROL if t.startswith("<") else gguf.TokenType.NORMAL for t in tokens])
    w.add_token_scores([0.0] * len(tokens))
    w.add_token_merges([])
    w.add_eos_token_id(tok.eos_token_id)
    w.add_bos_token_id(tok.eos_token_id)
    w.add_pad_token_id(tok.pad_token_id)
    w.add_add_bos_token(False)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, cfg.num_hidden_layers)

    def rotary_order(x, heads):  # llama.cpp stores q/k rows pairwise interleaved per head; transformers undoes it
        return x.reshape(heads, 2, x.shape[0] // heads // 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)

    for name, tensor in lm.state_dict().items():
        a = tensor.numpy().astype(np.float32)
        if name.endswith("q_proj.weight"):
            a = rotary_order(a, cfg.num_attention_heads)
        elif name.endswith("k_proj.weight"):
            a = rotary_order(a, cfg.num_key_value_heads)
        w.add_tensor(names.get_name(name, try_suffixes=(".weight", ".bias")), a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_gguf_file_loads_the_same_model(tiny, tmp_path):
    """`load_generator(dir, gguf_file=...)` on a GGUF file written here from the tiny Llama: same parameter count,
    same tokens for the same text, the same logits, the same greedy steps (the path SmolLM2's GGUF would take)."""
    pytest.importorskip("gguf")
    tok, lm, _ = tiny
    _write_tiny_gguf(lm, tok, tmp_path / "tiny.gguf")
    gen = load_generator(tmp_path, gguf_file="tiny.gguf", dtype=torch.float32, do_sample=False, max_step_tokens=8)
    assert gen.n_params == pytest.approx(sum(p.numel() for p in lm.parameters()))
    text = "1+1=\n\nab 3"
    ids = gen.tokenizer(text, add_special_tokens=False)["input_ids"]
    assert ids == tok(text, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        got, want = gen.model(torch.tensor([ids])).logits, lm(torch.tensor([ids])).logits
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    reqs = [StepRequest("3+4", "", 0, 1), StepRequest("5-1", "a\n\n", 1, 2)]
    assert gen.step(reqs) == HFGenerator(lm, tok, do_sample=False, max_step_tokens=8).step(reqs)


def test_chat_template_prompt_equals_the_rendered_template(tiny, fresh_tokenizer):
    """``chat_template=True`` renders system + user messages up to the assistant turn (the paper's code) and the
    search continues that text: greedy steps equal those of a plain template holding the same rendered text."""
    _, lm, _ = tiny
    tok = fresh_tokenizer
    tok.chat_template = ("{% for m in messages %}{{ m['role'][0] }}={{ m['content'] }};{% endfor %}"
                         "{% if add_generation_prompt %}a={% endif %}")  # fmt: skip
    chat = HFGenerator(lm, tok, chat_template=True, system_prompt="be brief", do_sample=False, max_step_tokens=8)
    assert chat.prompt("1+1") == "s=be brief;u=1+1;a="
    assert HFGenerator(lm, tok, chat_template=True).prompt("2+2") == "u=2+2;a="  # no system message
    plain = HFGenerator(lm, tok, prompt_template="s=be brief;u={problem};a=", do_sample=False, max_step_tokens=8)
    reqs = [StepRequest("1+1", "", 0, 0), StepRequest("2+2", "3\n\n", 1, 1)]
    assert chat.step(reqs) == plain.step(reqs)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"system_prompt": "x"}, ValueError, "system_prompt needs chat_template=True"),
        ({"chat_template": True}, ValueError, "tokenizer.chat_template is not set"),
        ({"chat_template": 1}, TypeError, "chat_template must be a bool"),
        ({"chat_template": True, "system_prompt": 3}, TypeError, "system_prompt must be a str"),
    ],
)
def test_chat_template_bad_input(tiny, kwargs, error, match):
    tok, lm, _ = tiny
    with pytest.raises(error, match=match):
        HFGenerator(lm, tok, **kwargs)


def test_chat_template_rejects_a_prompt_template(tiny, fresh_tokenizer):
    _, lm, _ = tiny
    tok = fresh_tokenizer
    tok.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    with pytest.raises(ValueError, match="prompt_template is not used with chat_template=True"):
        HFGenerator(lm, tok, chat_template=True, prompt_template="q={problem}")


def test_prm_scores_an_empty_prefix_at_the_end_of_the_prompt(tiny):
    """A path that ended before its first step (EOS sampled first) gets one score: the value head at the prompt's
    last token, or the good-token probability at a step tag after the prompt; searches no longer fail on it."""
    tok, lm, prm = tiny
    head = HFPRM(prm, tok)
    (score,) = head.score(["1+1"], [""])
    ids = tok("1+1\n\n", return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        expected = torch.sigmoid(prm(**ids).logits[0, -1, 0]).item()
    assert score == pytest.approx([expected], abs=1e-6)
    both = head.score(["1+1", "1+1"], ["", "2\n\n"])  # batched with a real prefix: the same score, right-padded
    assert both[0] == pytest.approx(score, abs=1e-6) and len(both[1]) == 1
    tagged = HFPRM(lm, tok, mode="token_prob", step_tag=";", good_token="a", bad_token="b").score(["1+1"], [""])
    assert len(tagged[0]) == 1 and 0.0 <= tagged[0][0] <= 1.0


def test_gguf_path_may_be_the_file_itself(tiny, tmp_path):
    """``load_generator("dir/model.gguf")`` is ``load_generator("dir", gguf_file="model.gguf")``, so the paper
    profile's ``$VGSEARCH_GENERATOR`` may name a GGUF file (it failed: no config.json)."""
    pytest.importorskip("gguf")
    tok, lm, _ = tiny
    _write_tiny_gguf(lm, tok, tmp_path / "tiny.gguf")
    kw = {"dtype": torch.float32, "do_sample": False, "max_step_tokens": 8}
    reqs = [StepRequest("3+4", "", 0, 1), StepRequest("5-1", "a\n\n", 1, 2)]
    by_file = load_generator(tmp_path / "tiny.gguf", **kw)
    assert by_file.step(reqs) == load_generator(tmp_path, gguf_file="tiny.gguf", **kw).step(reqs)


def test_loaders_put_the_models_on_the_gpu_when_there_is_one(tiny, tmp_path, monkeypatch):
    """``device=None`` (the default, and what ``--profile paper`` uses) moves both models to CUDA when it is
    available (they stayed on the CPU: a GPU host ran the paper profile on its CPU); ``device`` overrides it."""
    tok, lm, prm_model = tiny
    for model, name in ((lm, "gen"), (prm_model, "prm")):
        model.save_pretrained(tmp_path / name)
        tok.save_pretrained(tmp_path / name)
    assert load_generator(tmp_path / "gen", dtype=torch.float32, device="cpu").model.device.type == "cpu"
    moved: list[str] = []
    to = torch.nn.Module.to

    def fake_to(self, *args, **kwargs):  # record moves to CUDA (absent here), do every other move
        if args and isinstance(args[0], torch.device) and args[0].type == "cuda":
            moved.append(type(self).__name__)
            return self
        return to(self, *args, **kwargs)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.nn.Module, "to", fake_to)
    load_generator(tmp_path / "gen", dtype=torch.float32)
    load_prm(tmp_path / "prm", dtype=torch.float32)
    load_prm(tmp_path / "gen", mode="token_prob", dtype=torch.float32, device="cpu")
    assert moved == ["LlamaForCausalLM", "LlamaForTokenClassification"]


def test_generate_decoder_does_not_end_a_step_across_the_prompt_boundary(tiny):
    """Regression (rev4): with ``stop_strings``, ``generate`` matched the delimiter across the end of the input, so
    after the default prompt (ending in "\\n\\n") or any prefix a step whose first token is a newline ended at once
    (text "\\n", path finished) where the cached decoder continued it. Both decoders now read only new tokens."""
    tok, lm, _ = tiny
    nl = tok.convert_tokens_to_ids("\n")
    reqs = [StepRequest("1+1=", "", 0, 0), StepRequest("hello world 12", "", 0, 1), StepRequest("1+1", "ab\n\n", 1, 2)]
    steps = {}
    for decoder, kw in (("cached", {"logits_processor": [lambda ids, s: s + 2.5 * (torch.arange(s.shape[-1]) == nl)]}),
                        ("generate", {"generate_kwargs": {"sequence_bias": {(nl,): 2.5}}})):  # fmt: skip
        gen = HFGenerator(lm, tok, do_sample=False, max_step_tokens=12, decoder=decoder, **kw)  # type: ignore[arg-type]
        steps[decoder] = gen.step(reqs)
    assert steps["generate"] == steps["cached"]
    assert all(s.text.startswith("\n") and s.text.endswith(STOP) and not s.finished for s in steps["generate"])


def test_chat_template_that_rejects_the_messages_fails_at_construction(tiny, fresh_tokenizer):
    """Regression (rev4): a chat template without a system role (Mistral/Gemma style) raised inside the first
    search call; it is now a ValueError naming ``system_prompt`` when the generator is built."""
    _, lm, _ = tiny
    tok = fresh_tokenizer
    tok.chat_template = ("{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('no system role') }}"
                         "{% endif %}{{ m['content'] }};{% endfor %}")  # fmt: skip
    with pytest.raises(ValueError, match=r"system_prompt='be brief'\): no system role"):
        HFGenerator(lm, tok, chat_template=True, system_prompt="be brief")
    assert HFGenerator(lm, tok, chat_template=True).prompt("1+1") == "1+1;"  # no system message: fine


def test_generate_decoder_leaves_the_global_random_state_alone(tiny):
    """Regression (rev4): ``decoder="generate"`` seeded torch's global generator on every call (``manual_seed``), so
    a caller's own random numbers after a search depended on the search; the seeding now happens in a forked state."""
    tok, lm, _ = tiny
    gen = HFGenerator(lm, tok, decoder="generate", max_step_tokens=4)
    reqs = [StepRequest("1+1", "", 0, 3)]
    torch.manual_seed(123)
    want = torch.rand(3)
    torch.manual_seed(123)
    first = gen.step(reqs)
    assert torch.equal(torch.rand(3), want)
    assert gen.step(reqs) == first  # still seeded per call
