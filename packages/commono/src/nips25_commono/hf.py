"""A ``Model`` adapter for Hugging Face image-text-to-text models (LLaVA, Qwen-VL, Idefics, ...) from a local dir.

Install with ``pip install nips25-commono[hf]``. Loading uses ``local_files_only=True``: nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nips25_commono.example import Example
from nips25_commono.prompt import format_prompt

__all__ = ["HFVisionLanguageModel"]


class HFVisionLanguageModel:
    """Answer Common-O questions with a transformers vision-language model (greedy decoding).

    The user turn holds the images (two, or one for the control task) followed by
    :func:`~nips25_commono.prompt.format_prompt`; the processor's chat template builds the input and the generated
    continuation is returned as the raw reply (parse and score it with :func:`~nips25_commono.scoring.evaluate`).

    Args:
        path: a local directory holding the model and processor (``save_pretrained`` layout).
        max_new_tokens: generation budget, ``>= 1``.
        template: prompt template (see :func:`~nips25_commono.prompt.format_prompt`); ``None`` for the default.
        device: torch device string.
        model, processor: already-loaded objects (skips loading; ``path`` may then be ``None``).

    Raises:
        FileNotFoundError: if ``path`` is not an existing directory.
        ImportError: if transformers or torch is missing (``pip install 'nips25-commono[hf]'``).
        ValueError: if ``max_new_tokens`` is out of range or only one of ``model`` / ``processor`` is given.

    Example:
        >>> vlm = HFVisionLanguageModel("/models/llava-onevision-qwen2-0.5b-ov-hf")  # doctest: +SKIP
        >>> evaluate(vlm, examples).accuracy  # doctest: +SKIP
    """

    def __init__(
        self,
        path: str | Path | None,
        *,
        max_new_tokens: int = 64,
        template: str | None = None,
        device: str = "cpu",
        model: Any = None,
        processor: Any = None,
    ) -> None:
        if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be an int >= 1, got {max_new_tokens!r}")
        if (model is None) != (processor is None):
            raise ValueError("model and processor must be given together")
        if model is None:
            if path is None or not Path(path).is_dir():
                raise FileNotFoundError(
                    f"path: {path!r} is not a local model directory (nothing is downloaded; use save_pretrained)"
                )
            try:
                from transformers import AutoModelForImageTextToText, AutoProcessor
            except ImportError as err:  # pragma: no cover - exercised only without the extra
                raise ImportError("HFVisionLanguageModel needs transformers: pip install 'nips25-commono[hf]'") from err
            processor = AutoProcessor.from_pretrained(str(path), local_files_only=True)
            model = AutoModelForImageTextToText.from_pretrained(str(path), local_files_only=True).to(device)
        self.model = model.eval() if hasattr(model, "eval") else model
        self.processor = processor
        self.max_new_tokens = max_new_tokens
        self.template = template
        self.device = device

    def messages(self, example: Example) -> list[dict[str, Any]]:
        """The chat messages for ``example``: one user turn with the images then the prompt text."""
        if not isinstance(example, Example):
            raise TypeError(f"example must be an Example, got {type(example).__name__}")
        content: list[dict[str, Any]] = [{"type": "image"} for _ in example.images]
        content.append({"type": "text", "text": format_prompt(example, template=self.template)})
        return [{"role": "user", "content": content}]

    def answer(self, example: Example) -> str:
        """The model's greedy reply to ``example`` (new tokens only, special tokens removed)."""
        import torch

        text = self.processor.apply_chat_template(self.messages(example), add_generation_prompt=True)
        inputs = self.processor(images=list(example.images), text=text, return_tensors="pt")
        inputs = {k: v.to(self.device) if hasattr(v, "to") else v for k, v in dict(inputs).items()}
        with torch.no_grad():
            out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False)
        new_tokens = out[0, inputs["input_ids"].shape[1] :]
        return str(self.processor.decode(new_tokens, skip_special_tokens=True))
