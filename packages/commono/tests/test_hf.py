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
