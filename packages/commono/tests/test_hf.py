"""The Hugging Face adapter's plumbing, with a stand-in processor and model (no weights, no download)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from nips25_commono import HFVisionLanguageModel, score  # noqa: E402


class _Processor:
    def __init__(self) -> None:
        self.calls: list[tuple[int, str]] = []

    def apply_chat_template(self, messages, add_generation_prompt):  # type: ignore[no-untyped-def]
        content = messages[0]["content"]
        return "".join("<image>" if c["type"] == "image" else c["text"] for c in content)

    def __call__(self, images, text, return_tensors):  # type: ignore[no-untyped-def]
        self.calls.append((len(images), text))
        return {"input_ids": torch.zeros((1, 5), dtype=torch.long)}

    def decode(self, tokens, skip_special_tokens):  # type: ignore[no-untyped-def]
        return "Answer: " + ", ".join(chr(ord("A") + int(t)) for t in tokens)


class _Model:
    def eval(self):  # type: ignore[no-untyped-def]
        return self

    def generate(self, input_ids, max_new_tokens, do_sample):  # type: ignore[no-untyped-def]
        return torch.cat([input_ids, torch.tensor([[0, 2]])], dim=1)


def test_adapter_sends_both_images_and_decodes_new_tokens_only(examples) -> None:  # type: ignore[no-untyped-def]
    proc = _Processor()
    vlm = HFVisionLanguageModel(None, model=_Model(), processor=proc)
    ex = examples[0]
    reply = vlm.answer(ex)
    assert reply == "Answer: A, C"
    n_images, text = proc.calls[0]
    assert n_images == 2 and text.startswith("<image><image>") and "A. " + ex.options[0] in text
    assert score([reply], [ex]).n == 1


def test_adapter_needs_a_local_directory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FileNotFoundError, match="local model directory"):
        HFVisionLanguageModel(tmp_path / "missing")
    with pytest.raises(ValueError, match="together"):
        HFVisionLanguageModel(None, model=_Model())
    with pytest.raises(ValueError, match="max_new_tokens"):
        HFVisionLanguageModel(None, model=_Model(), processor=_Processor(), max_new_tokens=0)


def _tiny_llava(path):  # type: ignore[no-untyped-def]
    """A randomly initialised two-layer LLaVA (CLIP vision tower + Llama), saved with save_pretrained."""
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration

    vision = CLIPVisionConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=16, patch_size=8
    )
    text = LlamaConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
        vocab_size=64,
    )  # fmt: skip
    config = LlavaConfig(vision_config=vision.to_dict(), text_config=text.to_dict(), image_token_index=63)
    torch.manual_seed(0)
    LlavaForConditionalGeneration(config).save_pretrained(path)
    return path


class _RecordingModel(_Model):
    """Records the generation budget it was asked for."""

    def __init__(self) -> None:
        self.budgets: list[int] = []

    def generate(self, input_ids, max_new_tokens, do_sample):  # type: ignore[no-untyped-def]
        self.budgets.append(max_new_tokens)
        return super().generate(input_ids, max_new_tokens, do_sample)


def test_default_budget_is_long_enough_for_reasoning_and_is_passed(examples) -> None:  # type: ignore[no-untyped-def]
    from nips25_commono.hf import DEFAULT_MAX_NEW_TOKENS

    assert DEFAULT_MAX_NEW_TOKENS >= 1024
    model = _RecordingModel()
    HFVisionLanguageModel(None, model=model, processor=_Processor()).answer(examples[0])
    HFVisionLanguageModel(None, model=model, processor=_Processor(), max_new_tokens=7).answer(examples[0])
    assert model.budgets == [DEFAULT_MAX_NEW_TOKENS, 7]


@pytest.mark.parametrize(
    ("dtype", "expected"), [("bfloat16", torch.bfloat16), (torch.float16, torch.float16), (None, torch.float32)]
)
def test_tiny_model_loads_with_dtype_and_device_map(tmp_path, monkeypatch, examples, dtype, expected) -> None:  # type: ignore[no-untyped-def]
    transformers = pytest.importorskip("transformers")
    path = _tiny_llava(tmp_path / "tiny-llava")
    monkeypatch.setattr(transformers.AutoProcessor, "from_pretrained", lambda *a, **k: _Processor())
    vlm = HFVisionLanguageModel(path, torch_dtype=dtype, device_map="cpu" if dtype else None, max_new_tokens=3)
    assert type(vlm.model).__name__ == "LlavaForConditionalGeneration"
    assert vlm.model.dtype == expected
    assert vlm.model.device.type == "cpu"
    reply = vlm.answer(examples[0])  # the real generate: text-only input from the stand-in processor
    assert reply.startswith("Answer: ") and 1 <= len(reply.removeprefix("Answer: ").split(", ")) <= 3


@pytest.mark.parametrize("bad", ["float17", 3, "torch.Tensor"])
def test_bad_dtype_is_refused_before_loading(tmp_path, bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="torch_dtype"):
        HFVisionLanguageModel(None, model=_Model(), processor=_Processor(), torch_dtype=bad)
