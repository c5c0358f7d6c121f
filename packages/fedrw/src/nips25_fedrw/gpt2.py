"""GPT-2 from a local directory through ``transformers``: the paper's model family (optional extra ``gpt2``).

FedRW's experiments fine-tune GPT-2 (EP-MPD's ``gpt2-medium``) under FedAvg. Nothing is downloaded: the weights and
tokenizer are read from a directory saved with ``save_pretrained`` (``local_files_only=True``), named by the
``path`` argument or the ``NIPS25_FEDRW_GPT2`` environment variable.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from nips25_fedrw.model import pack_sequences

__all__ = ["GPT2LM", "GPT2_ENV", "gpt2_path", "load_gpt2"]

GPT2_ENV = "NIPS25_FEDRW_GPT2"


def gpt2_path(path: str | os.PathLike[str] | None = None) -> Path:
    """The local GPT-2 directory: ``path``, else ``$NIPS25_FEDRW_GPT2``; checked to exist.

    Args:
        path: a directory written by ``save_pretrained`` (``config.json``, weights, tokenizer files), or ``None``.

    Returns:
        The directory as a :class:`pathlib.Path`.

    Raises:
        FileNotFoundError: if neither names a directory holding ``config.json`` (the message says what to provide).
    """
    raw = path if path is not None else os.environ.get(GPT2_ENV)
    if raw is None or str(raw) == "":
        raise FileNotFoundError(
            f"GPT-2 weights are needed: pass a local directory saved with save_pretrained (path=..., CLI --gpt2) or "
            f"set {GPT2_ENV}; nothing is downloaded"
        )
    out = Path(raw)
    if not (out / "config.json").is_file():
        raise FileNotFoundError(f"GPT-2 path {str(out)!r} is not a directory with config.json (save_pretrained)")
    return out


class GPT2LM(nn.Module):
    """A ``transformers`` GPT-2 LM head model with the :class:`nips25_fedrw.fedavg.CausalLM` interface.

    Each sample is tokenised as ``x = [eos, t_1 .. t_n]``, ``y = [t_1 .. t_n, eos]`` (GPT-2's ``<|endoftext|>``
    starts and ends a text), cut to ``max_len`` tokens, padded with ``eos`` where ``mask`` is false.

    Args:
        model: a ``transformers.GPT2LMHeadModel``.
        tokenizer: its tokenizer (with an ``eos_token_id``).
        max_len: longest token sequence, ``2 <= max_len <= model.config.n_positions``.

    Raises:
        ValueError: if ``max_len`` is out of range or the tokenizer has no end-of-text token.
    """

    def __init__(self, model: Any, tokenizer: Any, *, max_len: int = 128) -> None:
        super().__init__()
        n_pos = int(model.config.n_positions)
        if isinstance(max_len, bool) or not isinstance(max_len, int) or not 2 <= max_len <= n_pos:
            raise ValueError(f"max_len must be an int in [2, {n_pos}], got {max_len!r}")
        if tokenizer.eos_token_id is None:
            raise ValueError("tokenizer must define an end-of-text (eos) token")
        self.hf = model
        self.tokenizer = tokenizer
        self._max_len = max_len

    @property
    def max_len(self) -> int:
        """Longest token sequence the model takes."""
        return self._max_len

    def encode(self, samples: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(x, y, mask)``, int64/int64/bool ``(B, max_len)``; see the class docstring.

        Raises:
            ValueError: if ``samples`` is empty or the tokenizer gives no token for a non-empty sample; TypeError
                if a sample is not a ``str``.
        """
        if isinstance(samples, str) or len(samples) == 0:
            raise ValueError("samples must be a non-empty sequence of str")
        eos = int(self.tokenizer.eos_token_id)
        seqs = []
        for r, s in enumerate(samples):
            if not isinstance(s, str):
                raise TypeError(f"samples[{r}] must be a str, got {type(s).__name__}")
            ids = list(self.tokenizer(s, add_special_tokens=False)["input_ids"])
            if s and not ids:
                raise ValueError(f"the tokenizer produced no tokens for samples[{r}] (is its vocabulary loaded?)")
            seqs.append(ids)
        return pack_sequences(seqs, boundary=eos, pad=eos, max_len=self._max_len)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, T, V)`` for int64 tokens ``(B, T)``, ``T <= max_len``."""
        if x.ndim != 2 or x.shape[1] > self._max_len:
            raise ValueError(f"x must be (B, T) with T <= {self._max_len}, got {tuple(x.shape)}")
        return self.hf(input_ids=x).logits


def load_gpt2(path: str | os.PathLike[str] | None = None, *, max_len: int = 128) -> GPT2LM:
    """Load GPT-2 (any size) and its tokenizer from a local directory, without network access.

    Args:
        path: the directory (``save_pretrained`` output); ``None`` reads ``$NIPS25_FEDRW_GPT2``.
        max_len: longest token sequence used in training and evaluation.

    Returns:
        A :class:`GPT2LM`, ready for :func:`nips25_fedrw.fedavg.fedavg_train` (``model=``) and
        :func:`nips25_fedrw.fedavg.perplexity`.

    Raises:
        FileNotFoundError: if no local GPT-2 directory is given or it lacks ``config.json``.
        ImportError: if ``transformers`` is not installed (``pip install 'nips25-fedrw[gpt2]'``).
        ValueError: if ``config.json`` is malformed, the directory holds another model type or ``max_len`` is out
            of range.

    References:
        Ye et al., "FedRW", NeurIPS 2025, arXiv:2511.07505 (GPT-2 experiments); EP-MPD's FL code (gpt2-medium).

    Example:
        >>> lm = load_gpt2("/models/gpt2-medium")  # doctest: +SKIP
    """
    where = gpt2_path(path)
    try:
        from transformers import AutoTokenizer, GPT2LMHeadModel
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("load_gpt2 needs transformers: pip install 'nips25-fedrw[gpt2]'") from exc
    import json

    try:
        model_type = json.loads((where / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (ValueError, AttributeError) as exc:  # not JSON, or JSON that is not an object
        raise ValueError(f"GPT-2 path {str(where)!r}: config.json is not a JSON object ({exc})") from exc
    if model_type != "gpt2":
        raise ValueError(f"GPT-2 path {str(where)!r} holds a {model_type!r} model, expected 'gpt2'")
    tokenizer = AutoTokenizer.from_pretrained(where, local_files_only=True)
    model = GPT2LMHeadModel.from_pretrained(where, local_files_only=True)
    return GPT2LM(model, tokenizer, max_len=max_len)
