"""Offline text corpora: 6-topic classification from chatterbot-corpus, and GSM8K-style JSONL from a local path."""

from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["TOPICS", "TextSplit", "load_math_jsonl", "load_topics"]

#: The six largest topics of chatterbot-corpus 1.3 (english), in label order.
TOPICS: tuple[str, ...] = ("tech_support", "trivia", "coding", "emotion", "ai", "conversations")


@dataclass(frozen=True)
class TextSplit:
    """Texts and integer labels of a train/test split."""

    train_texts: list[str]
    train_labels: list[int]
    test_texts: list[str]
    test_labels: list[int]
    label_names: tuple[str, ...]


def _corpus_dir() -> Path:
    spec = importlib.util.find_spec("chatterbot_corpus")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            "the topic task needs chatterbot-corpus: pip install 'nips25-gora[data]' (or chatterbot-corpus pyyaml)"
        )
    return Path(spec.origin).parent / "data" / "english"


def load_topics(
    *, per_class: int = 125, test_fraction: float = 0.2, seed: int = 0, topics: tuple[str, ...] = TOPICS
) -> TextSplit:
    """6-topic utterance classification from chatterbot-corpus, split by conversation.

    Each topic's conversations are shuffled (``seed``) and taken whole until ``per_class`` utterances are
    reached; a ``test_fraction`` of each topic's conversations goes to the test split, so a question and its
    answer never straddle the split.

    Args:
        per_class: cap on utterances per topic, ``>= 10``.
        test_fraction: share of each topic's conversations held out, in ``(0, 1)``.
        seed: seed of the shuffle (the split, not the model).
        topics: file stems under ``chatterbot_corpus/data/english``.

    Returns:
        A :class:`TextSplit`.

    Raises:
        ValueError: on out-of-range arguments or an unknown topic.
        ModuleNotFoundError: if chatterbot-corpus is not installed.
    """
    import yaml

    if per_class < 10:
        raise ValueError(f"per_class must be >= 10, got {per_class}")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    root = _corpus_dir()
    rng = np.random.default_rng(seed)
    split: dict[str, tuple[list[str], list[int]]] = {"train": ([], []), "test": ([], [])}
    for label, topic in enumerate(topics):
        path = root / f"{topic}.yml"
        if not path.is_file():
            raise ValueError(f"topics: {topic!r} is not in chatterbot-corpus ({root})")
        conversations = [
            [str(u) for u in c if str(u).strip()] for c in yaml.safe_load(path.read_text())["conversations"]
        ]
        order = rng.permutation(len(conversations))
        taken: list[list[str]] = []
        count = 0
        for i in order:
            if count >= per_class:
                break
            taken.append(conversations[i][: per_class - count])
            count += len(taken[-1])
        n_test = max(1, round(test_fraction * len(taken)))
        for j, conv in enumerate(taken):
            texts, labels = split["test" if j < n_test else "train"]
            texts.extend(conv)
            labels.extend([label] * len(conv))
    return TextSplit(*split["train"], *split["test"], label_names=tuple(topics))


def load_math_jsonl(path: str | os.PathLike[str], *, limit: int | None = None) -> list[tuple[str, str]]:
    """``(question, answer)`` pairs from a MetaMathQA/GSM8K-style JSONL file on a local path.

    Accepts the keys ``query``/``response`` (MetaMathQA) or ``question``/``answer`` (GSM8K).

    Raises:
        FileNotFoundError: if ``path`` does not exist (nothing is downloaded).
        ValueError: if a line is not a JSON object, lacks both key pairs, or the file is empty (the message names
            the line).
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be None or an int >= 1, got {limit!r}")
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: no JSONL file at {p}; download MetaMathQA/GSM8K yourself and pass its path")
    pairs = []
    with p.open() as fh:
        for n, line in enumerate(fh):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"path: line {n + 1} of {p} is not valid JSON ({e.msg}, column {e.colno})") from e
            if not isinstance(row, dict):
                raise ValueError(f"path: line {n + 1} of {p} must be a JSON object, got {type(row).__name__}")
            q = row.get("query", row.get("question"))
            a = row.get("response", row.get("answer"))
            if q is None or a is None:
                raise ValueError(f"path: line {n + 1} of {p} has neither query/response nor question/answer")
            pairs.append((str(q), str(a)))
            if limit is not None and len(pairs) >= limit:
                break
    if not pairs:
        raise ValueError(f"path: {p} holds no examples")
    return pairs
