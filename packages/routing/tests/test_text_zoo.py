"""text-zoo: the encoder cost model, the corpus loader, the zoo's structure, and the real MiniLM encoder."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from nips25_routing import TEXT_ZOO_MODELS, MiniLMEncoder, encoder_macs, load_chatterbot_topics, text_zoo


class HashEncoder:
    """A cheap stand-in encoder: signed feature hashing of lower-cased words, 64-d, L2-normalised."""

    name = "hash64"

    def encode(self, texts):
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                h = int(hashlib.md5(word.encode()).hexdigest(), 16)
                out[i, h % 64] += 1.0 if (h >> 8) % 2 else -1.0
            out[i, 63] += 0.5  # no zero rows
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def macs(self, texts):
        return np.full(len(texts), 1e6)


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NIPS25_CACHE_DIR", str(tmp_path / "cache"))


def test_encoder_macs_matches_torch_flop_counter():
    """Known answer: our closed form equals torch's FLOP counter / 2 on a tiny BERT encoder (no pooler)."""
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import BertConfig, BertModel

    cfg = BertConfig(hidden_size=16, intermediate_size=40, num_hidden_layers=2, num_attention_heads=2)
    model = BertModel(cfg, add_pooling_layer=False).eval()
    for t in (1, 5, 9):
        ids = torch.ones((1, t), dtype=torch.long)
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model(input_ids=ids)
        expected = encoder_macs([t], hidden=16, intermediate=40, layers=2)[0]
        assert counter.get_total_flops() / 2 == pytest.approx(expected)


def test_encoder_macs_rejects_bad_input():
    with pytest.raises(ValueError, match="n_tokens"):
        encoder_macs([0], hidden=4, intermediate=8, layers=1)
    with pytest.raises(ValueError, match="n_tokens"):
        encoder_macs([], hidden=4, intermediate=8, layers=1)
    with pytest.raises(ValueError, match="hidden"):
        encoder_macs([3], hidden=0, intermediate=8, layers=1)
    with pytest.raises(ValueError, match="layers"):
        encoder_macs([3], hidden=4, intermediate=8, layers=True)


def test_chatterbot_topics_are_distinct_labelled_and_large_enough():
    texts, labels, topics = load_chatterbot_topics(min_per_topic=40)
    assert len(texts) == len(labels) == len(set(texts)) > 1000
    assert labels.dtype == np.int64 and labels.min() == 0 and labels.max() == len(topics) - 1
    assert np.bincount(labels).min() >= 40
    assert list(topics) == sorted(topics) and "trivia" in topics
    fewer = load_chatterbot_topics(min_per_topic=100)
    assert set(fewer[2]) < set(topics)
    with pytest.raises(ValueError, match="min_per_topic"):
        load_chatterbot_topics(min_per_topic=1)
    with pytest.raises(ValueError, match="min_per_topic"):
        load_chatterbot_topics(min_per_topic=10_000)


def test_text_zoo_structure_and_determinism(isolated_cache):
    z = text_zoo(seed=0, n_stream=300, fit_fraction=0.15, encoder=HashEncoder())
    again = text_zoo(seed=0, n_stream=300, fit_fraction=0.15, encoder=HashEncoder())
    assert z.models == list(TEXT_ZOO_MODELS)
    assert z.stream_embeddings.shape == (300, 64) and z.stream_quality.shape == (300, 6)
    assert set(np.unique(z.history.quality)) <= {0.0, 1.0}
    np.testing.assert_array_equal(z.stream_quality, again.stream_quality)
    np.testing.assert_array_equal(z.stream_embeddings, again.stream_embeddings)
    # head-only costs (default), known answer: every embedding model pays the same read cost plus its head, so the
    # column differences are constants: MLP 64*256 + 256*C, kNN n_fit*64, logreg 64*C multiply-adds (x $1e-7)
    n_fit, n_cls, c = round(0.15 * len(load_chatterbot_topics()[0])), 12, z.history.cost
    np.testing.assert_allclose(c[:, 4] - c[:, 3], (64 * 256 + 256 * n_cls - 64 * n_cls) * 1e-7)
    np.testing.assert_allclose(c[:, 5] - c[:, 3], (n_fit * 64 - 64 * n_cls) * 1e-7)
    charged = text_zoo(seed=0, n_stream=300, fit_fraction=0.15, encoder=HashEncoder(), charge_encoder=True)
    # charging the encoder adds its 1e6 multiply-adds (x $1e-7) to the three encoder-based models only
    np.testing.assert_allclose(charged.history.cost[:, 3:] - z.history.cost[:, 3:], 1e6 * 1e-7)
    np.testing.assert_array_equal(charged.history.cost[:, :3], z.history.cost[:, :3])
    # every model is better than chance (12 topics) on the held-out utterances
    assert (z.history.quality.mean(axis=0) > 1.5 / 12).all()


def test_text_zoo_classifiers_are_fitted_on_one_thread_whatever_the_callers_pool(isolated_cache, monkeypatch):
    """The MLP (BLAS-threaded, like digits-zoo's) sees a pool of 1 thread even when the caller allows 2."""
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_info, threadpool_limits

    fit, seen = MLPClassifier.fit, []

    def spy(self, *args, **kwargs):
        seen.append({pool["num_threads"] for pool in threadpool_info()})
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(MLPClassifier, "fit", spy)
    with threadpool_limits(limits=2):
        text_zoo(seed=0, n_stream=50, fit_fraction=0.15, encoder=HashEncoder())
    assert seen == [{1}]


def test_text_zoo_rejects_bad_arguments(isolated_cache):
    with pytest.raises(ValueError, match="n_stream"):
        text_zoo(n_stream=0, encoder=HashEncoder())
    with pytest.raises(ValueError, match="fit_fraction"):
        text_zoo(fit_fraction=0.9, encoder=HashEncoder())
    with pytest.raises(ValueError, match="encoder"):
        text_zoo(encoder=object())  # type: ignore[arg-type]
    bad = HashEncoder()
    bad.name = "../escape"
    with pytest.raises(ValueError, match=r"encoder\.name"):
        text_zoo(encoder=bad)


def test_minilm_encoder_embeds_paraphrases_closer_than_unrelated_text():
    enc = MiniLMEncoder()
    emb = enc.encode(["How do I reset my password?", "I forgot my password, how can I change it?", "I love pizza."])
    assert emb.shape == (3, 384) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert emb[0] @ emb[1] > emb[0] @ emb[2] + 0.2
    macs = enc.macs(["hi", "a much longer question about the weather in several cities tomorrow"])
    assert 0 < macs[0] < macs[1]


def test_minilm_encoder_rejects_bad_input(tmp_path):
    with pytest.raises(FileNotFoundError, match="path"):
        MiniLMEncoder(tmp_path / "missing")
    with pytest.raises(ValueError, match="batch_size"):
        MiniLMEncoder(batch_size=0)
    enc = MiniLMEncoder()
    with pytest.raises(ValueError, match="texts"):
        enc.encode([])
    with pytest.raises(TypeError, match="texts"):
        enc.encode("one string")
    with pytest.raises(ValueError, match="texts"):
        enc.macs(["ok", "  "])
