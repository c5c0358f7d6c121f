"""GPT-2 through transformers from a local directory: a tiny random-init GPT2Config, no download."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

LINES = ["Shall I compare thee to a summer's day?", "Thou art more lovely and more temperate:",
         "Rough winds do shake the darling buds of May,", "And summer's lease hath all too short a date;"]  # fmt: skip


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    """A GPT-2 directory as save_pretrained writes it: byte-level BPE trained here, random 1-layer model."""
    from tokenizers import ByteLevelBPETokenizer

    path = tmp_path_factory.mktemp("gpt2")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(LINES * 4, vocab_size=300, min_frequency=1, special_tokens=["<|endoftext|>"])
    bpe.save_model(str(path))
    eot = "<|endoftext|>"
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token=eot, bos_token=eot)
    tok.save_pretrained(path)
    torch.manual_seed(0)
    eos = tok.eos_token_id
    cfg = transformers.GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=16, n_layer=1, n_head=2,
                                  bos_token_id=eos, eos_token_id=eos)  # fmt: skip
    transformers.GPT2LMHeadModel(cfg).save_pretrained(path)
    return path


def test_load_gpt2_from_a_local_path_or_the_environment_and_train_with_fedavg(gpt2_dir, monkeypatch):
    from nips25_fedrw import FedAvgConfig, fedavg_train, perplexity, sample_weights
    from nips25_fedrw.gpt2 import GPT2_ENV, load_gpt2

    assert len(transformers.AutoTokenizer.from_pretrained(gpt2_dir)) == 300
    lm = load_gpt2(gpt2_dir, max_len=32)
    x, y, m = lm.encode(LINES[:2])
    eos = lm.tokenizer.eos_token_id
    assert x.shape == (2, 32) and bool((x[:, 0] == eos).all())
    n0 = int(m[0].sum())
    assert y[0, n0 - 1] == eos and x[0, 1:n0].tolist() == y[0, : n0 - 1].tolist()  # targets are inputs shifted by 1
    assert lm(x).shape == (2, 32, len(lm.tokenizer)) and 250 < perplexity(lm, LINES) < 350  # random init ~ V
    monkeypatch.setenv(GPT2_ENV, str(gpt2_dir))
    clients = [[*LINES[:2], LINES[0]], LINES[2:]]
    weights = [sample_weights(np.array([2, 1, 2])), np.ones(2)]
    cfg = FedAvgConfig(rounds=1, local_epochs=1, batch_size=2, lr=1e-3, reduction="token")
    model, hist = fedavg_train(clients, weights=weights, config=cfg, seed=0, model=load_gpt2(max_len=32))
    again, _ = fedavg_train(clients, weights=weights, config=cfg, seed=0, model=load_gpt2(max_len=32))
    assert hist[0]["steps"] == 3
    ppl = perplexity(model, LINES)
    assert 1.0 < ppl < 2 * len(lm.tokenizer) and ppl == perplexity(again, LINES)  # deterministic under a seed


def test_missing_or_wrong_gpt2_weights_give_clear_errors(tmp_path, monkeypatch, capsys):
    from nips25_fedrw.cli import main
    from nips25_fedrw.gpt2 import GPT2_ENV, GPT2LM, load_gpt2
    from nips25_fedrw.reproduce import reproduce

    monkeypatch.delenv(GPT2_ENV, raising=False)
    with pytest.raises(FileNotFoundError, match=GPT2_ENV):
        load_gpt2()
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_gpt2(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(ValueError, match="'gpt2'"):
        load_gpt2(tmp_path)
    with pytest.raises(FileNotFoundError, match=GPT2_ENV):
        reproduce(profile="paper", seed=0, out_dir=tmp_path / "out")
    for argv in (["reproduce", "--profile", "paper"], ["reproduce", "--gpt2", str(tmp_path / "nowhere")]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert "GPT-2" in err and "Traceback" not in err

    class _Tok:
        eos_token_id = None

    class _Cfg:
        n_positions = 8

    class _Model:
        config = _Cfg()

    with pytest.raises(ValueError, match="max_len"):
        GPT2LM(_Model(), _Tok(), max_len=9)
    with pytest.raises(ValueError, match="eos"):
        GPT2LM(_Model(), _Tok(), max_len=4)

    class _EmptyTok:  # a broken tokenizer (e.g. a vocabulary that did not load) must not train on nothing
        eos_token_id = 0

        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": []}

    with pytest.raises(ValueError, match="no tokens"):
        GPT2LM(_Model(), _EmptyTok(), max_len=4).encode(["some text"])


def test_malformed_gpt2_config_and_gpt2_flag_outside_paper_profile_are_user_errors(tmp_path, monkeypatch, capsys):
    """Review regressions: a config.json that is not JSON raised a bare JSONDecodeError; ``--gpt2`` with a profile
    that trains the tiny model was validated, then silently ignored (the tiny model trained)."""
    import nips25_fedrw.reproduce as rep
    from nips25_fedrw.cli import main
    from nips25_fedrw.gpt2 import load_gpt2

    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="config.json"):
        load_gpt2(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))

    def ran(**kwargs):
        raise AssertionError("reproduce ran with --gpt2 ignored")

    monkeypatch.setattr(rep, "reproduce", ran)
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "--profile", "quick", "--gpt2", str(tmp_path), "--out", str(tmp_path / "out")])
    assert exc.value.code == 2
    assert "--profile paper" in capsys.readouterr().err.strip().splitlines()[-1]
