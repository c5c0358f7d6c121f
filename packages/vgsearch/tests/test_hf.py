"""The transformers path on tiny random-init models with a character tokenizer built in code (no downloads)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nips25_vgsearch import HFPRM, STOP, HFGenerator, Step, StepRequest, load_generator, load_prm, vg_search


def test_generated_step_ends_at_stop_or_eos(tiny):
    tok, lm, _ = tiny
    nl = tok.convert_tokens_to_ids("\n")
    # the prompt must not end in the stop string: generate() matches stop strings across the prompt boundary
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
    with pytest.raises(ValueError, match="empty"):
        HFPRM(prm_model, tok).score(["1"], [""])
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
