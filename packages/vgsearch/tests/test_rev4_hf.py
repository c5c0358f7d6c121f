"""Review (rev4) of the transformers path as a new user meets it: checkpoints of the wrong kind, tokenizers that
drop whitespace, NaN logits (each test failed before its fix)."""

from __future__ import annotations

import pytest
import torch
from nips25_vgsearch import HFPRM, HFGenerator, load_generator, load_prm
from nips25_vgsearch.decoding import StepDecoder


def _config(vocab: int, **extra):
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                       pad_token_id=0, eos_token_id=1, bos_token_id=1, **extra)  # fmt: skip


def _save(model, tok, path):
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_loaders_refuse_a_checkpoint_of_the_wrong_kind(tiny, tmp_path):
    """A causal LM loaded as a value-head PRM (or a PRM as a generator) got a random head, with only a log line:
    every score was noise. Now the missing weights are named; the right pairing still loads."""
    tok, lm, prm = tiny
    lm_dir, prm_dir = _save(lm, tok, tmp_path / "lm"), _save(prm, tok, tmp_path / "prm")
    with pytest.raises(ValueError, match=r"no weights for score\.bias, score\.weight .*mode='token_prob'"):
        load_prm(lm_dir, dtype=torch.float32)
    with pytest.raises(ValueError, match=r"no weights for lm_head\.weight.*load_prm"):
        load_generator(prm_dir, dtype=torch.float32)
    with pytest.raises(ValueError, match=r"lm_head\.weight.*mode='value_head'"):
        load_prm(prm_dir, mode="token_prob", dtype=torch.float32)
    tagged = load_prm(lm_dir, mode="token_prob", dtype=torch.float32, step_tag=";")
    assert tagged.score(["1+1"], ["2\n\n"]) == HFPRM(lm, tok, mode="token_prob", step_tag=";").score(["1+1"], ["2\n\n"])


def test_prm_refuses_a_model_whose_logits_do_not_fit_the_mode(tiny):
    """``value_head`` on a causal LM read the logit of token 0 as the score (silently); ``token_prob`` on a one-label
    head failed with an IndexError."""
    tok, lm, prm = tiny
    with pytest.raises(ValueError, match="one output per token"):
        HFPRM(lm, tok).score(["1+1"], ["2\n\n"])
    with pytest.raises(ValueError, match="cover good_token and bad_token"):
        HFPRM(prm, tok, mode="token_prob").score(["1+1"], ["2\n\n"])


def _word_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, "x": 2, "=": 3, "2": 4, "1": 5, "+": 6}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")


def test_prm_scores_where_the_tokenizer_drops_whitespace():
    """A whitespace-splitting tokenizer has no token at a step's trailing space nor at the prompt's newlines: the
    score is read at the last token before them (it raised StopIteration out of ``score``)."""
    from transformers import LlamaForTokenClassification

    tok = _word_tokenizer()
    torch.manual_seed(0)
    model = LlamaForTokenClassification(_config(len(tok), num_labels=1)).eval()
    prm = HFPRM(model, tok)
    step, empty = prm.score(["1 + 1", "1 + 1"], ["x = 2 \n\nx = 1\n\n", ""])
    ids = tok("1 + 1\n\nx = 2 \n\nx = 1\n\n", return_tensors="pt", add_special_tokens=False)
    assert ids["input_ids"][0].tolist() == [5, 6, 5, 2, 3, 4, 2, 3, 5]
    with torch.no_grad():
        want = torch.sigmoid(model(**ids).logits[0, :, 0])
    assert step == pytest.approx([want[5].item(), want[8].item()], abs=1e-6)  # at "2" and at the last "1"
    assert empty == pytest.approx([want[2].item()], abs=1e-6)  # the prompt's last token


def test_nan_logits_raise_instead_of_choosing_tokens(tiny):
    """NaN logits (e.g. transformers' eager attention in float64 on left-padded rows) made argmax and sampling pick
    arbitrary tokens without a word; the decoder and the PRM now raise."""
    tok, lm, prm = tiny

    def poison(module, args, output):
        output.logits[0, -1, -1] = float("nan")

    for model in (lm, prm):
        hook = model.register_forward_hook(poison)
        try:
            with pytest.raises(FloatingPointError, match="NaN"):
                if model is lm:
                    StepDecoder(lm, tok, do_sample=False).run(["1+1="], [0], [0], max_new_tokens=3,
                                                              stop_at_delimiter=True)  # fmt: skip
                else:
                    HFPRM(prm, tok).score(["1+1"], ["2"])
        finally:
            hook.remove()

    def ban(module, args, output):
        output.logits[..., 3] = float("-inf")

    banned = lm.register_forward_hook(ban)
    try:  # -inf (a banned token) is not an error
        (row,) = StepDecoder(lm, tok, do_sample=False).run(["1+1="], [0], [0], max_new_tokens=3,
                                                           stop_at_delimiter=True)  # fmt: skip
    finally:
        banned.remove()
    assert 3 not in row.ids


def test_ledger_counts_the_prompt_the_generator_reads(tiny, fresh_tokenizer):
    from nips25_vgsearch import best_of_n

    _, lm, _ = tiny
    tok = fresh_tokenizer
    tok.chat_template = "{% for m in messages %}{{ m['role'][0] }}={{ m['content'] }};{% endfor %}a="
    gen = HFGenerator(lm, tok, chat_template=True, system_prompt="be brief", max_answer_tokens=4)

    class Half:
        n_params = 1.0

        def score(self, problems, prefixes):
            return [[0.5] for _ in prefixes]

    (res,) = best_of_n(["1+1"], gen, Half(), n=4, seed=0)
    assert gen.count_tokens(gen.prompt("1+1")) == 19  # "s=be brief;u=1+1;a=", one token per character
    assert res.ledger.prefill_tokens == 4 * 19


def test_token_prob_prm_copies_two_logit_columns_not_the_vocabulary(tiny, monkeypatch):
    """``token_prob`` moved the whole ``(batch, length, vocab)`` logits to the CPU in float32 (16 prefixes of 1000
    tokens of a 32k-vocabulary PRM: 2 GB per batch); only the good and bad tokens' columns leave the device now.
    The scores are those of the full softmax pair (known-answer test in test_hf.py)."""
    tok, lm, _ = tiny
    widths = []
    to_cpu = torch.Tensor.cpu

    def spy(self, *args, **kwargs):
        widths.append(self.shape[-1] if self.dim() == 3 else None)
        return to_cpu(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "cpu", spy)
    scores = HFPRM(lm, tok, mode="token_prob", step_tag=";").score(["1+1", "2+2"], ["a\n\nb", "c\n\n"])
    assert [len(r) for r in scores] == [2, 1] and widths == [2]


def test_prm_reads_the_bos_token_its_tokenizer_adds(tiny):
    """A Llama/Mistral-style tokenizer prepends BOS (``tokenizer(text)``, ``tokenizer.encode``: how Math-Shepherd's
    PRM is read); ``HFPRM`` tokenized without special tokens, so such a PRM saw inputs unlike its training ones.
    Now it reads what ``tokenizer(text)`` gives (``add_special_tokens=False`` keeps the old reading)."""
    from tokenizers import processors

    tok, _, prm = tiny
    tok = type(tok)(tokenizer_object=tok.backend_tokenizer.__class__.from_str(tok.backend_tokenizer.to_str()),
                    pad_token="<pad>", eos_token="<eos>", bos_token="<eos>")  # fmt: skip
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="<eos> $A", special_tokens=[("<eos>", 1)]
    )
    text, prefix = "1+1\n\n", "ab\n\n"
    ids = tok(text + prefix, return_tensors="pt")
    assert ids["input_ids"][0, 0].item() == 1  # BOS (here the <eos> id) first
    with torch.no_grad():
        want = torch.sigmoid(prm(**ids).logits[0, -3, 0]).item()  # at "b", the step's last character
    assert HFPRM(prm, tok).score(["1+1"], [prefix])[0] == pytest.approx([want], abs=1e-6)
    plain = HFPRM(prm, tok, add_special_tokens=False).score(["1+1"], [prefix])[0][0]
    assert plain != pytest.approx(want, abs=1e-6)
    with pytest.raises(TypeError, match="add_special_tokens"):
        HFPRM(prm, tok, add_special_tokens=1)  # type: ignore[arg-type]
