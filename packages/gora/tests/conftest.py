"""Tiny random-init models and batches shared by the tests (no network, CPU only)."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
torch.set_num_threads(2)

HIDDEN = 16


def tiny_bert(seed: int = 0, *, num_labels: int = 3):
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    cfg = BertConfig(
        vocab_size=50,
        hidden_size=HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        num_labels=num_labels,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    model = BertForSequenceClassification(cfg)
    return model.eval()


def tiny_batches(n: int = 3, *, seed: int = 1, batch: int = 4, length: int = 6, num_labels: int = 3):
    gen = torch.Generator().manual_seed(seed)
    return [
        {
            "input_ids": torch.randint(0, 50, (batch, length), generator=gen),
            "labels": torch.randint(0, num_labels, (batch,), generator=gen),
        }
        for _ in range(n)
    ]


@pytest.fixture
def make_bert():
    """Factory of tiny random-init BertForSequenceClassification models (hidden size ``HIDDEN``)."""
    return tiny_bert


@pytest.fixture
def make_batches():
    """Factory of lists of random token batches with labels."""
    return tiny_batches


@pytest.fixture
def hidden():
    return HIDDEN


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "distributed: runs a script under accelerate launch with 2 CPU processes (nips25_shared.testing)"
    )
