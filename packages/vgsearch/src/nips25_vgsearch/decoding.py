"""Our decoding loop for ``transformers`` causal LMs: active rows only, a KV cache kept across search rounds.

``model.generate`` re-reads the prompt and prefix of every beam at every search round, keeps rows that already
ended in the batch until the longest row of the call ends, and samples copies of one beam as if they were unrelated
prompts. :class:`StepDecoder` instead

* runs one forward pass per token over the rows that are still decoding (a row leaves the batch at its step
  delimiter, its EOS token or its length limit: ``Cache.batch_select_indices``);
* keeps the KV cache of every step that ended at the delimiter, keyed by its text (when the text tokenizes back to
  the tokens the model read, so that reuse never changes the context), for ``cache_calls`` later calls:
  when the search sends that text back (the beam survived the verifier), only its last token is read again;
* reads a text shared by several requests of a call (the ``n`` first samples of a problem, the copies a kept beam
  branches into) once, and branches the rows by gathering cache rows (``Cache.reorder_cache``).

Rows of different lengths share one batch with padding masked out of attention (the 2-D ``attention_mask`` may
have holes between a row's cached part and its new tokens) and explicit position ids, so each row sees exactly
its own tokens at positions ``0, 1, ...``, as a lone sequence would.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from nips25_vgsearch.generator import STOP, step_seed

__all__ = ["DelimiterStop", "StepDecoder", "delimiter_tables", "supports_cached_decoding"]

#: ``processor(input_ids (rows, length), scores (rows, vocab)) -> scores``, e.g. a ``transformers`` LogitsProcessor.
LogitsProcessor = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
_BLOCK = 256  # uniforms drawn at a time per random stream


def supports_cached_decoding(model: Any) -> bool:
    """Whether ``model``'s cache is a ``DynamicCache`` of full-attention layers (what :class:`StepDecoder` handles).

    Sliding-window, chunked or linear-attention layers keep a cache that is not one entry per token, so their rows
    cannot be cut out and reused; such models go through ``model.generate`` instead.
    """
    try:
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer

        layers = DynamicCache(config=model.config).layers
    except Exception:  # an older transformers, or a model without a decoder config
        return False
    return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)


def _finite(logits: torch.Tensor) -> torch.Tensor:
    """``logits``, refused when one is NaN or +inf (argmax and sampling would then pick arbitrary tokens)."""
    if not bool((logits < float("inf")).all()):  # False for NaN and +inf; -inf (a banned token) is fine
        raise FloatingPointError(
            "the model returned NaN or +inf logits; with padded rows this is what transformers' eager attention "
            "does in float64 (its float32 softmax turns the padding mask into NaN): use attn_implementation='sdpa', "
            "or float32/bfloat16 weights"
        )
    return logits


def delimiter_tables(tokenizer: Any, vocab: int, device: torch.device | str) -> tuple[torch.Tensor, ...]:
    """Per-token flags, shape ``(vocab,)`` each, to find the delimiter across tokens: the token's text contains it,
    ends with its first char, starts with its second char, is empty (a special token)."""
    n_tok = min(vocab, len(tokenizer))
    pieces = tokenizer.batch_decode([[i] for i in range(n_tok)], skip_special_tokens=True) + [""] * (vocab - n_tok)
    flags = [[STOP in p, p.endswith(STOP[0]), p.startswith(STOP[1:]), not p] for p in pieces]
    t = torch.tensor(flags, dtype=torch.bool, device=device)
    return t[:, 0], t[:, 1], t[:, 2], t[:, 3]


class DelimiterStop:
    """A ``transformers`` stopping criterion for ``generate``: a row stops once its new tokens hold the delimiter.

    ``generate``'s own ``stop_strings`` also match across the end of the input, so after a prompt or prefix that
    ends in ``"\\n\\n"`` a step whose first token is a newline stopped right there (a one-newline step that ended
    its path); this one reads only the tokens after ``prompt_length``, as :class:`StepDecoder` does.

    Args:
        tables: :func:`delimiter_tables` of the model's tokenizer and vocabulary, on the model's device.
        prompt_length: width of the (left-padded) input batch.
    """

    def __init__(self, tables: tuple[torch.Tensor, ...], prompt_length: int) -> None:
        self.tables, self.prompt_length = tables, int(prompt_length)
        self._previous = self._done = torch.zeros(0, dtype=torch.bool)

    def __call__(self, input_ids: torch.Tensor, scores: Any = None, **kwargs: Any) -> torch.Tensor:
        has_stop, ends_c0, starts_c1, empty = self.tables
        if input_ids.shape[1] <= self.prompt_length + 1:  # the first new token: nothing before it counts
            self._previous = self._done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        token = input_ids[:, -1]
        crossed = has_stop[token] | (self._previous & starts_c1[token])
        self._previous = torch.where(empty[token], self._previous, ends_c0[token])
        self._done = self._done | crossed
        return self._done.clone()


@dataclass
class _Entry:
    """The cached state of one text: its tokens and the KV of all tokens but the last, per layer."""

    ids: list[int]
    kv: list[tuple[torch.Tensor, torch.Tensor]]  # per layer: keys, values of shape (heads, len(ids) - 1, head_dim)
    call: int


@dataclass(frozen=True)
class DecodedRow:
    """One decoded row: the new tokens (without EOS) and why decoding stopped."""

    ids: list[int]
    eos: bool
    stop: bool


class StepDecoder:
    r"""Sampling loop over a causal LM with a per-text KV cache reused across calls.

    Sampling: logits divided by ``temperature``, nucleus filter ``top_p`` (the smallest set of most probable tokens
    whose mass reaches ``top_p``), then inverse-CDF sampling with one uniform draw per row and token. Row ``i`` draws
    from its own stream seeded by :func:`~nips25_vgsearch.generator.step_seed` ``(seeds[i], depths[i])``; when a
    run to the end of the answer crosses a step delimiter, the row's stream restarts at
    ``step_seed(seeds[i], depth + 1)``, so a path's ``k``-th step draws the same numbers whether it is sampled alone
    or inside a run to the end. ``do_sample=False`` is greedy (argmax), token for token ``model.generate``'s.

    Args:
        model: a ``transformers`` causal LM whose cache is full attention (:func:`supports_cached_decoding`).
        tokenizer: its tokenizer.
        temperature, top_p, do_sample: sampling parameters.
        cache_calls: later calls for which the KV cache of a step that ended at the delimiter is kept (0: no reuse).
        logits_processor: callables ``(input_ids, scores) -> scores`` applied in order before sampling (``input_ids``
            holds each row's tokens so far, left-padded).
    """

    def __init__(
        self, model: Any, tokenizer: Any, *, temperature: float = 0.8, top_p: float = 1.0, do_sample: bool = True,
        cache_calls: int = 2, logits_processor: Sequence[LogitsProcessor] = (),
    ) -> None:  # fmt: skip
        if isinstance(cache_calls, bool) or not isinstance(cache_calls, int) or cache_calls < 0:
            raise ValueError(f"cache_calls must be an int >= 0, got {cache_calls!r}")
        self.model, self.tokenizer = model, tokenizer
        self.temperature, self.top_p, self.do_sample = float(temperature), float(top_p), bool(do_sample)
        self.cache_calls = cache_calls
        self.logits_processor = list(logits_processor)
        self.pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)
        eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        eos_ids = set(eos if isinstance(eos, (list, tuple)) else [] if eos is None else [eos])
        if tokenizer.eos_token_id is not None:
            eos_ids.add(int(tokenizer.eos_token_id))
        self.eos_ids = sorted(int(i) for i in eos_ids)
        self._tables: tuple[torch.Tensor, ...] | None = None
        self._entries: dict[str, _Entry] = {}
        self._unchecked: list[str] = []  # texts stored in this call, checked against their tokens at its end
        self._call = 0
        params = inspect.signature(model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"  # renamed in transformers 5.x
        #: reads of the last call: ``{"rows", "unique", "cached_tokens", "prefill_tokens", "forwards"}``.
        self.last_stats: dict[str, int] = {}

    def clear(self) -> None:
        """Drop every cached entry."""
        self._entries.clear()

    @property
    def cached_texts(self) -> int:
        """Number of texts whose KV cache is kept."""
        return len(self._entries)

    def _stop_tables(self, vocab: int, device: torch.device) -> tuple[torch.Tensor, ...]:
        if self._tables is None or self._tables[0].shape[0] != vocab or self._tables[0].device != device:
            self._tables = delimiter_tables(self.tokenizer, vocab, device)
        return self._tables

    def _sample(self, scores: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
        if not self.do_sample:
            return scores.argmax(-1)
        scores = scores / self.temperature
        if self.top_p < 1.0:
            ordered, order = scores.sort(-1)
            drop = ordered.softmax(-1).cumsum(-1) <= 1.0 - self.top_p
            drop[:, -1] = False
            scores = scores.scatter(-1, order, ordered.masked_fill(drop, float("-inf")))
        cdf = scores.softmax(-1).cumsum(-1)
        picked = torch.searchsorted(cdf, (uniform * cdf[:, -1]).unsqueeze(-1).contiguous(), right=True)
        return picked.squeeze(-1).clamp_max(cdf.shape[-1] - 1)

    def _streams(self, seed: int, length: int) -> torch.Tensor:
        """The first ``length`` uniforms of stream ``seed``, drawn in fixed blocks so that they do not depend on
        ``length`` (torch's CPU sampler fills short and long tensors in different orders)."""
        rng = torch.Generator().manual_seed(seed)
        blocks = [torch.rand(_BLOCK, generator=rng, dtype=torch.float64) for _ in range(-(-length // _BLOCK))]
        return torch.cat(blocks)[:length].float()

    @torch.no_grad()
    def run(
        self, texts: Sequence[str], seeds: Sequence[int], depths: Sequence[int], *, max_new_tokens: int,
        stop_at_delimiter: bool,
    ) -> list[DecodedRow]:  # fmt: skip
        """Decode one continuation per text.

        Args:
            texts: the full input texts (prompt + prefix), one per row; equal texts are read once.
            seeds, depths: per row, the path seed and the number of steps already in its prefix.
            max_new_tokens: length limit per row, ``>= 1``.
            stop_at_delimiter: end a row at the step delimiter (a step) or only at EOS (the rest of the answer).

        Returns:
            One :class:`DecodedRow` per text, in order.

        Raises:
            ValueError: on mismatched lengths, ``max_new_tokens < 1`` or a text without tokens.
            FloatingPointError: if the model returns NaN or +inf logits.
        """
        from transformers import DynamicCache

        if not (len(texts) == len(seeds) == len(depths)):
            raise ValueError(f"texts, seeds and depths must have the same length, got {len(texts)}, {len(seeds)}, "
                             f"{len(depths)}")  # fmt: skip
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        self._call += 1
        rows = len(texts)
        if rows == 0:
            return []
        device = self.model.device
        first: dict[str, int] = {}
        row_u = [first.setdefault(t, len(first)) for t in texts]
        keys = list(first)
        cached: list[list[int]] = []
        pending: list[list[int]] = []
        kvs: list[list[tuple[torch.Tensor, torch.Tensor]] | None] = []
        for key in keys:
            entry = self._entries.pop(key, None)
            if entry is None:
                ids = list(self.tokenizer(key, add_special_tokens=False)["input_ids"])
                if not ids:
                    raise ValueError(f"texts: {key!r} has no tokens; the decoder needs at least one prompt token")
                cached.append([])
                pending.append(ids)
                kvs.append(None)
            else:
                cached.append(entry.ids[:-1])
                pending.append(entry.ids[-1:])
                kvs.append(entry.kv)
        n_u = len(keys)
        width_c = max(len(c) for c in cached)
        width_m = max(len(p) for p in pending)
        mask = torch.zeros(n_u, width_c + width_m, dtype=torch.long)
        input_ids = torch.full((n_u, width_m), self.pad_id, dtype=torch.long)
        position_ids = torch.ones(n_u, width_m, dtype=torch.long)
        for u in range(n_u):
            c, m = len(cached[u]), len(pending[u])
            mask[u, width_c - c : width_c] = 1
            mask[u, width_c + width_m - m :] = 1
            input_ids[u, width_m - m :] = torch.tensor(pending[u])
            position_ids[u, width_m - m :] = torch.arange(c, c + m)
        cache = DynamicCache(config=self.model.config)
        if width_c:
            ref = next(kv for kv in kvs if kv is not None)
            layers = []
            for layer, (k_ref, v_ref) in enumerate(ref):
                k = k_ref.new_zeros(n_u, k_ref.shape[0], width_c, k_ref.shape[2])
                v = v_ref.new_zeros(n_u, v_ref.shape[0], width_c, v_ref.shape[2])
                for u, kv in enumerate(kvs):
                    if kv is not None:
                        c = kv[layer][0].shape[1]
                        k[u, :, width_c - c :] = kv[layer][0]
                        v[u, :, width_c - c :] = kv[layer][1]
                layers.append((k, v))
            cache = DynamicCache(ddp_cache_data=layers, config=self.model.config)
        mask = mask.to(device)
        out = self.model(input_ids=input_ids.to(device), attention_mask=mask, position_ids=position_ids.to(device),
                         use_cache=True, logits_to_keep=1, **{self._cache_kw: cache})  # fmt: skip
        forwards = 1
        logits = _finite(out.logits[:, -1, :].float())
        index = torch.tensor(row_u, device=device)
        if row_u != list(range(n_u)):  # branch: copies of a text gather its cache row
            cache.reorder_cache(index)  # type: ignore[arg-type]
            logits, mask = logits[index], mask[index]
        ids = [cached[u] + pending[u] for u in row_u]
        length = torch.tensor([len(i) for i in ids], device=device)
        has_stop, ends_c0, starts_c1, empty = self._stop_tables(logits.shape[-1], device)
        eos_ids = torch.tensor(self.eos_ids, device=device, dtype=torch.long)
        uniform = torch.zeros(rows, max_new_tokens)
        if self.do_sample:
            for i in range(rows):
                uniform[i] = self._streams(step_seed(seeds[i], depths[i]), max_new_tokens)
        uniform = uniform.to(device)
        depth = list(depths)
        hist = torch.zeros(rows, 0, dtype=torch.long, device=device)  # tokens so far, for the logits processors
        if self.logits_processor:
            width = max(len(i) for i in ids)
            hist = torch.tensor([[self.pad_id] * (width - len(i)) + i for i in ids], device=device)
        new: list[list[int]] = [[] for _ in range(rows)]
        results: list[DecodedRow | None] = [None] * rows
        active = list(range(rows))
        previous_c0 = torch.zeros(rows, dtype=torch.bool, device=device)
        for t in range(max_new_tokens):
            scores = logits
            for proc in self.logits_processor:
                scores = proc(hist, scores)
            token = self._sample(scores, uniform[:, t])
            is_eos = torch.isin(token, eos_ids)
            crossed = has_stop[token] | (previous_c0 & starts_c1[token])
            # a crossing starts a new step, which (like a step sampled alone) has no newline before it
            previous_c0 = torch.where(empty[token], previous_c0, ends_c0[token]) & ~crossed
            done_flags = (is_eos | crossed) if stop_at_delimiter else is_eos
            flags = torch.stack([is_eos, crossed, done_flags]).tolist()
            tokens = token.tolist()
            keep: list[int] = []
            for a, row in enumerate(active):
                eos, stop, done = flags[0][a], flags[1][a], flags[2][a]
                if not eos:
                    new[row].append(tokens[a])
                if stop and not stop_at_delimiter and self.do_sample:
                    depth[row] += 1  # the next step of a run to the end draws from its own stream
                    rest = max_new_tokens - t - 1
                    if rest:
                        uniform[a, t + 1 :] = self._streams(step_seed(seeds[row], depth[row]), rest).to(device)
                if done or t + 1 == max_new_tokens:
                    results[row] = DecodedRow(new[row], bool(eos), bool(stop and done and not eos))
                    if results[row].stop and self.cache_calls:  # type: ignore[union-attr]
                        self._store(texts[row], ids[row], new[row], cache, mask[a], a)
                else:
                    keep.append(a)
            if not keep:
                break
            if len(keep) < len(active):  # rows that ended leave the batch
                sel = torch.tensor(keep, device=device)
                cache.batch_select_indices(sel)
                mask, token, length, hist = mask[sel], token[sel], length[sel], hist[sel]
                previous_c0, uniform = previous_c0[sel], uniform[sel]
                active = [active[a] for a in keep]
                start = int(mask.any(0).int().argmax())
                if start:  # columns that are padding in every remaining row
                    kept: list[Any] = list(cache.layers)  # full-attention DynamicLayer (supports_cached_decoding)
                    for layer_cache in kept:
                        layer_cache.keys = layer_cache.keys[:, :, start:]
                        layer_cache.values = layer_cache.values[:, :, start:]
                    mask = mask[:, start:]
            mask = torch.cat([mask, mask.new_ones(len(active), 1)], dim=1)
            if self.logits_processor:
                hist = torch.cat([hist, token.unsqueeze(1)], dim=1)
            out = self.model(input_ids=token.unsqueeze(1), attention_mask=mask, position_ids=length.unsqueeze(1),
                             use_cache=True, **{self._cache_kw: cache})  # fmt: skip
            forwards += 1
            logits = _finite(out.logits[:, -1, :].float())
            length = length + 1
        self.last_stats = {
            "rows": rows, "unique": n_u, "cached_tokens": sum(len(c) for c in cached),
            "prefill_tokens": sum(len(p) for p in pending), "forwards": forwards,
        }  # fmt: skip
        self._check_stored()
        self._entries = {k: e for k, e in self._entries.items() if self._call - e.call < self.cache_calls}
        return [r for r in results if r is not None]

    def _store(self, text: str, ids: list[int], new: list[int], cache: Any, row_mask: torch.Tensor, a: int) -> None:
        """Keep row ``a``'s cache (its unmasked positions) under the text it continues to: ``text`` + its new tokens.

        Only when that text tokenizes back to exactly these tokens: a token that decodes to nothing (a special token
        the model sampled) or a split the tokenizer would not make leaves the text's tokens different from what the
        model read, and reusing the cache would continue from a context that re-reading the text does not give.
        """
        key = text + self.tokenizer.decode(new, skip_special_tokens=True)
        where = row_mask.nonzero().squeeze(1)
        kv = [(layer.keys[a][:, where], layer.values[a][:, where]) for layer in cache.layers]
        self._entries[key] = _Entry(ids + new, kv, self._call)
        self._unchecked.append(key)

    def _check_stored(self) -> None:
        """Drop the entries of this call whose text does not tokenize back to their tokens (one batched call)."""
        keys = list(dict.fromkeys(k for k in self._unchecked if k in self._entries))  # a text may end two rows
        self._unchecked = []
        if keys:
            for key, ids in zip(keys, self.tokenizer(keys, add_special_tokens=False)["input_ids"]):
                if list(ids) != self._entries[key].ids:
                    del self._entries[key]
