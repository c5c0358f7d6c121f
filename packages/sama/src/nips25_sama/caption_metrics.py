r"""Caption metrics of SAMA-Bench-C: corpus BLEU-1..4, ROUGE-L and CIDEr-D as defined by the COCO caption
evaluation (``pycocoevalcap``), plus METEOR through pycocoevalcap's jar when Java is present.

Inputs are already tokenised, lower-cased strings (split on spaces), as pycocoevalcap's scorers expect; SPICE and
CLAIR are not computed and are reported as missing.
"""

from __future__ import annotations

import math
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["UNAVAILABLE", "bleu", "caption_metrics", "cider_d", "meteor", "ptb_tokenize", "rouge_l"]

Refs = Mapping[str, Sequence[str]]
Hyps = Mapping[str, str]


def _check(refs: Refs, hyps: Hyps) -> list[str]:
    if not isinstance(refs, Mapping) or not isinstance(hyps, Mapping):
        raise TypeError("refs and hyps must be mappings {id: [reference, ...]} and {id: hypothesis}")
    if not hyps:
        raise ValueError("hyps must be non-empty")
    if set(refs) != set(hyps):
        raise ValueError(f"refs and hyps must have the same ids; differ on {sorted(set(refs) ^ set(hyps))[:3]}")
    for k in hyps:
        if not isinstance(hyps[k], str):
            raise TypeError(f"hyps[{k!r}] must be a string")
        if isinstance(refs[k], str) or not refs[k] or not all(isinstance(r, str) for r in refs[k]):
            raise ValueError(f"refs[{k!r}] must be a non-empty list of strings")
    return sorted(hyps)


def _ngrams(words: list[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(words[i : i + k]) for k in range(1, n + 1) for i in range(len(words) - k + 1))


def bleu(refs: Refs, hyps: Hyps, *, n: int = 4) -> list[float]:
    r"""Corpus BLEU-1..n (Papineni et al., 2002) with the "closest" reference length of the COCO scorer.

    :math:`\mathrm{BLEU}_k = \mathrm{BP}\,\big(\prod_{i \le k} p_i\big)^{1/k}`, :math:`p_i` clipped i-gram precision
    summed over the corpus, :math:`\mathrm{BP} = \min(1, e^{1 - r/c})`; the COCO smoothing constants
    (``1e-15``/``1e-9``) are kept so that scores equal pycocoevalcap's.

    Args:
        refs: ``{id: [reference, ...]}`` tokenised strings.
        hyps: ``{id: hypothesis}``.
        n: highest order.

    Returns:
        ``[BLEU-1, ..., BLEU-n]``.
    """
    ids = _check(refs, hyps)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    correct, guess = [0] * n, [0] * n
    testlen = reflen = 0
    for k in ids:
        words = hyps[k].split()
        ref_words = [r.split() for r in refs[k]]
        maxcounts: Counter[tuple[str, ...]] = Counter()
        for rw in ref_words:
            for g, c in _ngrams(rw, n).items():
                maxcounts[g] = max(maxcounts[g], c)
        lens = [len(rw) for rw in ref_words]
        reflen += min(lens, key=lambda length: (abs(length - len(words)), length))
        testlen += len(words)
        for g, c in _ngrams(words, n).items():
            correct[len(g) - 1] += min(maxcounts.get(g, 0), c)
        for i in range(n):
            guess[i] += max(0, len(words) - i)
    tiny, small = 1e-15, 1e-9
    out, prod = [], 1.0
    for i in range(n):
        prod *= (correct[i] + tiny) / (guess[i] + small)
        out.append(prod ** (1.0 / (i + 1)))
    ratio = (testlen + tiny) / (reflen + small)
    if ratio < 1:
        out = [b * math.exp(1 - 1 / ratio) for b in out]
    return out


def _lcs(a: list[str], b: list[str]) -> int:
    if len(a) < len(b):
        a, b = b, a
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def rouge_l(refs: Refs, hyps: Hyps, *, beta: float = 1.2) -> float:
    r"""ROUGE-L (Lin, 2004) as in the COCO scorer, averaged over ids.

    Per id: :math:`P = \max_r \mathrm{LCS}/|c|`, :math:`R = \max_r \mathrm{LCS}/|r|`,
    :math:`F = (1+\beta^2)PR/(R + \beta^2 P)` with :math:`\beta = 1.2`.
    """
    ids = _check(refs, hyps)
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    scores = []
    for k in ids:
        c = hyps[k].split()
        precs, recs = [], []
        for r in refs[k]:
            rw = r.split()
            lcs = _lcs(c, rw)
            precs.append(lcs / len(c) if c else 0.0)
            recs.append(lcs / len(rw) if rw else 0.0)
        p, r_ = max(precs), max(recs)
        scores.append((1 + beta**2) * p * r_ / (r_ + beta**2 * p) if p and r_ else 0.0)
    return float(np.mean(scores))


def cider_d(refs: Refs, hyps: Hyps, *, n: int = 4, sigma: float = 6.0) -> float:
    r"""CIDEr-D (Vedantam et al., CVPR 2015) as implemented by the COCO scorer.

    TF-IDF n-gram vectors with document frequencies from the references, clipped cosine
    :math:`\sum_g \min(h_g, r_g) r_g / (\|h\|\|r\|)`, Gaussian length penalty
    :math:`e^{-\delta^2/2\sigma^2}`, averaged over orders and references, times 10. The length :math:`\delta` counts
    bigrams, as the COCO code does.
    """
    ids = _check(refs, hyps)
    doc_freq: Counter[tuple[str, ...]] = Counter()
    ref_counts = {k: [_ngrams(r.split(), n) for r in refs[k]] for k in ids}
    for k in ids:
        for g in {g for c in ref_counts[k] for g in c}:
            doc_freq[g] += 1
    log_n = math.log(float(len(ids)))

    def vec(counts: Counter[tuple[str, ...]]) -> tuple[list[dict[tuple[str, ...], float]], list[float], int]:
        v: list[dict[tuple[str, ...], float]] = [{} for _ in range(n)]
        norm = [0.0] * n
        length = 0
        for g, tf in counts.items():
            o = len(g) - 1
            v[o][g] = tf * (log_n - math.log(max(1.0, doc_freq[g])))
            norm[o] += v[o][g] ** 2
            if o == 1:
                length += tf
        return v, [math.sqrt(x) for x in norm], length

    scores = []
    for k in ids:
        vh, nh, lh = vec(_ngrams(hyps[k].split(), n))
        total = np.zeros(n)
        for rc in ref_counts[k]:
            vr, nr, lr = vec(rc)
            delta = float(lh - lr)
            for o in range(n):
                val = sum(min(x, vr[o].get(g, 0.0)) * vr[o].get(g, 0.0) for g, x in vh[o].items())
                if nh[o] != 0 and nr[o] != 0:
                    val /= nh[o] * nr[o]
                total[o] += val * math.exp(-(delta**2) / (2 * sigma**2))
        scores.append(float(np.mean(total)) / len(ref_counts[k]) * 10.0)
    return float(np.mean(scores))


def meteor(refs: Refs, hyps: Hyps) -> float | None:
    """METEOR 1.5 through pycocoevalcap's jar; ``None`` when Java or pycocoevalcap is missing (never faked)."""
    ids = _check(refs, hyps)
    if shutil.which("java") is None:
        return None
    try:
        from pycocoevalcap.meteor.meteor import Meteor
    except ImportError:
        return None
    scorer = Meteor()
    try:
        score, _ = scorer.compute_score({k: list(refs[k]) for k in ids}, {k: [hyps[k]] for k in ids})
    finally:
        close = getattr(scorer, "close", None)
        if close is not None:
            close()
    return float(score)


#: Why a caption metric is not computed here; reported next to its ``None`` value, never faked.
UNAVAILABLE = {
    "SPICE": "not run: needs Java and the Stanford CoreNLP models that pycocoevalcap downloads at first use",
    "CLAIR": "not run: needs a paid GPT judge (the official code calls the OpenAI API)",
}
_PTB_PUNCTUATION = {"''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-", "--",
                    "...", ";"}  # fmt: skip


def _pycocoevalcap_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("pycocoevalcap") is not None


def ptb_tokenize(texts: Refs) -> dict[str, list[str]]:
    """Tokenise captions as the COCO evaluation does: Stanford PTB tokenizer, lower-cased, punctuation dropped.

    Uses pycocoevalcap's ``PTBTokenizer`` (Java) when both are present; otherwise a regular-expression fallback
    (words and single punctuation marks, lower-cased, the same punctuation dropped) that equals it on plain text
    but splits contractions differently (``don't`` -> ``don t``, PTB: ``do n't``).

    Args:
        texts: ``{id: [caption, ...]}`` raw strings.

    Returns:
        ``{id: [tokenised caption, ...]}``, tokens joined by single spaces.

    Example:
        >>> ptb_tokenize({"0": ["A cat, sitting."]})
        {'0': ['a cat sitting']}
    """
    import re

    if shutil.which("java") is not None and _pycocoevalcap_available():
        from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

        out = PTBTokenizer().tokenize({k: [{"caption": c} for c in v] for k, v in texts.items()})
        return {k: list(v) for k, v in out.items()}
    return {k: [" ".join(w for w in re.findall(r"\w+|[^\w\s]", c.lower()) if w not in _PTB_PUNCTUATION)
                for c in v] for k, v in texts.items()}  # fmt: skip


def caption_metrics(refs: Refs, hyps: Hyps, *, with_meteor: bool = True, backend: str = "auto") -> dict[str, Any]:
    """BLEU-1..4, ROUGE-L, CIDEr (CIDEr-D), METEOR (``None`` if unavailable), SPICE and CLAIR (``None``: not run).

    Args:
        refs: ``{id: [reference, ...]}`` tokenised, lower-cased strings (:func:`ptb_tokenize`).
        hyps: ``{id: hypothesis}``.
        with_meteor: try METEOR (starts a Java process).
        backend: ``"pycocoevalcap"`` (its ``Bleu(4)``, ``Rouge``, ``Cider`` scorers, as the official evaluator),
            ``"ours"`` (:func:`bleu`, :func:`rouge_l`, :func:`cider_d`, tested equal to them) or ``"auto"``
            (pycocoevalcap when installed, else ours).

    Returns:
        ``{"Bleu_1": ..., "Bleu_4": ..., "ROUGE_L": ..., "CIDEr": ..., "METEOR": ..., "SPICE": None, "CLAIR": None,
        "backend": "pycocoevalcap" | "ours", "unavailable": {metric: reason}}``.

    Raises:
        ValueError: for an unknown ``backend`` or bad ``refs``/``hyps``. ImportError: ``backend="pycocoevalcap"``
            without it installed.

    Example:
        >>> out = caption_metrics({"0": ["a cat sits"], "1": ["a dog runs"]}, {"0": "a cat sits", "1": "a dog"},
        ...                       with_meteor=False, backend="ours")
        >>> round(out["Bleu_1"], 3), out["SPICE"], sorted(out["unavailable"])
        (0.819, None, ['CLAIR', 'METEOR', 'SPICE'])
    """
    if backend not in ("auto", "pycocoevalcap", "ours"):
        raise ValueError(f"backend must be 'auto', 'pycocoevalcap' or 'ours', got {backend!r}")
    ids = _check(refs, hyps)
    use_coco = backend == "pycocoevalcap" or (backend == "auto" and _pycocoevalcap_available())
    if use_coco:
        from pycocoevalcap.bleu.bleu import Bleu
        from pycocoevalcap.cider.cider import Cider
        from pycocoevalcap.rouge.rouge import Rouge

        gts = {k: list(refs[k]) for k in ids}
        res = {k: [hyps[k]] for k in ids}
        b = [float(x) for x in Bleu(4).compute_score(gts, res, verbose=0)[0]]
        rouge, cider = float(Rouge().compute_score(gts, res)[0]), float(Cider().compute_score(gts, res)[0])
    else:
        b, rouge, cider = bleu(refs, hyps), rouge_l(refs, hyps), cider_d(refs, hyps)
    out: dict[str, Any] = {f"Bleu_{i + 1}": v for i, v in enumerate(b)}
    out["ROUGE_L"] = rouge
    out["CIDEr"] = cider
    out["METEOR"] = meteor(refs, hyps) if with_meteor else None
    out["SPICE"] = None
    out["CLAIR"] = None
    out["backend"] = "pycocoevalcap" if use_coco else "ours"
    unavailable = dict(UNAVAILABLE)
    if out["METEOR"] is None:
        unavailable["METEOR"] = ("not requested (with_meteor=False)" if not with_meteor else
                                 "not run: needs Java and pycocoevalcap")  # fmt: skip
    out["unavailable"] = unavailable
    return out
