"""A ``Model`` adapter for Hugging Face image-text-to-text models (LLaVA, Qwen-VL, Idefics, ...) from a local dir.

Install with ``pip install nips25-commono[hf]``. Loading uses ``local_files_only=True``: nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nips25_commono.example import Example
from nips25_commono.prompt import format_prompt

__all__ = ["DEFAULT_MAX_NEW_TOKENS", "HFVisionLanguageModel"]

#: Default generation budget. A reasoning model writes its chain of thought before the ``Answer:`` line; 1024
#: tokens hold a few hundred words of reasoning plus the answer (64 cut such replies off before the answer).
#: Models that answer directly stop at their end-of-sequence token, so the budget costs them nothing.
DEFAULT_MAX_NEW_TOKENS = 1024


class HFVisionLanguageModel:
    """Answer Common-O questions with a transformers vision-language model (greedy decoding).

    The user turn holds the images (two, or one for the control task) followed by
    :func:`~nips25_commono.prompt.format_prompt`; the processor's chat template builds the input and the generated
    continuation is returned as the raw reply (parse and score it with :func:`~nips25_commono.scoring.evaluate`).

    Args:
        path: a local directory holding the model and processor (``save_pretrained`` layout).
        max_new_tokens: generation budget, ``>= 1`` (default :data:`DEFAULT_MAX_NEW_TOKENS`, room for a reasoning
            model's chain of thought before its answer).
        template: prompt template (see :func:`~nips25_commono.prompt.format_prompt`); ``None`` for the default.
        device: torch device the inputs go to, and the model too when ``device_map`` is ``None``; with a
            ``device_map`` the inputs go to the model's first device.
        torch_dtype: dtype of the weights (``torch.bfloat16``, ``"bfloat16"``, ``"auto"`` for the checkpoint's
            own); ``None`` loads float32, as transformers does. A 7B model needs ``bfloat16`` to fit in 16 GB.
        device_map: passed to ``from_pretrained`` (``"auto"`` spreads the model over the GPUs and the CPU; needs
            accelerate); ``None`` loads on ``device``.
        model, processor: already-loaded objects (skips loading; ``path`` may then be ``None``).

    Raises:
        FileNotFoundError: if ``path`` is not an existing directory.
        ImportError: if transformers or torch is missing (``pip install 'nips25-commono[hf]'``).
        ValueError: if ``max_new_tokens`` is out of range, ``torch_dtype`` names no torch dtype, or only one of
            ``model`` / ``processor`` is given.

    Example:
        >>> vlm = HFVisionLanguageModel("/models/llava-onevision-qwen2-0.5b-ov-hf")  # doctest: +SKIP
        >>> evaluate(vlm, examples).accuracy  # doctest: +SKIP
    """

    def __init__(
        self,
        path: str | Path | None,
        *,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        template: str | None = None,
        device: str = "cpu",
        torch_dtype: Any = None,
        device_map: str | dict[str, Any] | None = None,
        model: Any = None,
        processor: Any = None,
    ) -> None:
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be an int >= 1, got {max_new_tokens!r}")
        if (model is None) != (processor is None):
            raise ValueError("model and processor must be given together")
        if torch_dtype is not None:
            torch_dtype = _dtype(torch_dtype)
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
            kwargs: dict[str, Any] = {"local_files_only": True}
            if torch_dtype is not None:
                kwargs["dtype"] = torch_dtype  # transformers >= 4.56 names it dtype
            if device_map is not None:
                kwargs["device_map"] = device_map
            model = AutoModelForImageTextToText.from_pretrained(str(path), **kwargs)
            if device_map is None:
                model = model.to(device)
        self.model = model.eval() if hasattr(model, "eval") else model
        self.processor = processor
        self.max_new_tokens = max_new_tokens
        self.template = template
        self.device = str(getattr(model, "device", device)) if device_map is not None else device

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
        dtype = getattr(self.model, "dtype", None)
        moved: dict[str, Any] = {}
        for key, value in dict(inputs).items():
            if isinstance(value, torch.Tensor):  # pixel values follow the weights' dtype (bfloat16 models)
                floating = torch.is_floating_point(value) and isinstance(dtype, torch.dtype)
                value = value.to(self.device, dtype=dtype) if floating else value.to(self.device)
            moved[key] = value
        inputs = moved
        with torch.no_grad():
            out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False)
        new_tokens = out[0, inputs["input_ids"].shape[1] :]
        return str(self.processor.decode(new_tokens, skip_special_tokens=True))


def _dtype(value: Any) -> Any:
    """``"auto"``, a ``torch.dtype``, or the name of one (``"bfloat16"``, ``"torch.float16"``)."""
    import torch

    if value == "auto" or isinstance(value, torch.dtype):
        return value
    if isinstance(value, str):
        found = getattr(torch, value.removeprefix("torch."), None)
        if isinstance(found, torch.dtype):
            return found
    raise ValueError(f"torch_dtype must be 'auto', a torch.dtype or its name, got {value!r}")
