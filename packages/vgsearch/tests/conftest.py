"""Scripted generators and verifiers shared by the tests (no network, CPU only)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence

import pytest
import torch
from nips25_vgsearch import STOP, Step, StepRequest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
torch.set_num_threads(1)


class ScriptedGenerator:
    """The k-th request for a given prefix gets letter ``letters[k % len(letters)]``; fixed tokens per step.

    A path finishes after ``finish_at`` steps (``None``: only when sampled to the end, which adds one step).
    """

    def __init__(self, *, letters: str = "abcd", tokens: int = 3, problem_tokens: int = 5, finish_at=None):
        self.letters, self.tokens, self.problem_tokens, self.finish_at = letters, tokens, problem_tokens, finish_at
        self.seen: Counter[str] = Counter()
        self.calls = 0
        self.n_params = 1.0

    def count_tokens(self, text: str) -> int:
        return self.problem_tokens

    def step(self, requests: Sequence[StepRequest], *, to_eos: bool = False) -> list[Step]:
        out = []
        for r in requests:
            self.calls += 1
            k = self.seen[r.prefix]
            self.seen[r.prefix] += 1
            letter = self.letters[k % len(self.letters)]
            done = to_eos or (self.finish_at is not None and r.depth + 1 >= self.finish_at)
            out.append(Step(letter if done else letter + STOP, self.tokens, 1, done))
        return out


class LetterVerifier:
    """Per-step score = weight of the step's letter."""

    def __init__(self, weights=None):
        self.weights = weights or {"a": 0.1, "b": 0.4, "c": 0.3, "d": 0.2}
        self.n_params = 10.0

    def score(self, problems, prefixes):
        return [[self.weights[s.strip()[0]] for s in p.split(STOP) if s] for p in prefixes]


@pytest.fixture
def scripted():
    return ScriptedGenerator


@pytest.fixture
def letters():
    return LetterVerifier


# The transformers path (test_hf.py, test_gpu.py): tiny random-init Llama generator and PRM with a character
# tokenizer built in code (no downloads).
CHARS = list("0123456789+-=;abcdefghijklmnopqrstuvwxyz \n")


def char_tokenizer():
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, **{c: i + 2 for i, c in enumerate(CHARS)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")


@pytest.fixture
def fresh_tokenizer():
    """A new character tokenizer (for tests that change it, e.g. set a chat template)."""
    return char_tokenizer()


def llama_config(vocab: int, **extra):
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                       pad_token_id=0, eos_token_id=1, bos_token_id=1, **extra)  # fmt: skip


@pytest.fixture(scope="module")
def tiny():
    from transformers import LlamaForCausalLM, LlamaForTokenClassification

    torch.manual_seed(0)
    tok = char_tokenizer()
    lm = LlamaForCausalLM(llama_config(len(tok))).eval()
    prm = LlamaForTokenClassification(llama_config(len(tok), num_labels=1)).eval()
    return tok, lm, prm


def pytest_configure(config):
    config.addinivalue_line("markers", "distributed: runs training under accelerate launch with 2 CPU processes")
