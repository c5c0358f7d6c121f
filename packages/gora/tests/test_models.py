"""Real loading code on tiny configs: a causal LM from a local path, GoRA on q/k/v/o, one accelerate step."""

from __future__ import annotations

import json

import pytest
import torch
from nips25_gora import GoraConfig, apply_gora
from nips25_gora.corpus import TOPICS, load_math_jsonl, load_topics
from nips25_gora.models import LLAMA_TARGETS, load_causal_lm
from nips25_gora.training import TrainConfig, evaluate_accuracy, make_loader, train


def test_tiny_llama_from_local_path_gora_step_and_round_trip(tmp_path):
    from peft import PeftModel
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=32,
    )  # fmt: skip
    LlamaForCausalLM(cfg).save_pretrained(tmp_path / "llama")
    model, tokenizer = load_causal_lm(tmp_path / "llama", dtype=torch.float32)
    assert tokenizer is None
    ids = torch.randint(0, 64, (8, 10), generator=torch.Generator().manual_seed(1))
    data = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}
    batches = list(make_loader(data, batch_size=4, seed=0))
    config = GoraConfig(target_modules=LLAMA_TARGETS, r_ref=2, r_min=1, r_max=8, n_steps=2)
    peft_model = apply_gora(model, batches, config)
    assert len(peft_model.gora_init.ranks) == 8  # 2 layers x q/k/v/o (k/v are 8x16 with one KV head)
    log = train(peft_model, make_loader(data, batch_size=4, seed=0), TrainConfig(steps=1, lr=1e-3))
    assert len(log.losses) == 1 and torch.isfinite(torch.tensor(log.losses)).all()
    peft_model.save_pretrained(tmp_path / "adapter")
    x = ids[:2]
    with torch.no_grad():
        expected = peft_model.eval()(input_ids=x).logits
        base, _ = load_causal_lm(tmp_path / "llama", dtype=torch.float32)
        got = PeftModel.from_pretrained(base, tmp_path / "adapter").eval()(input_ids=x).logits
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)


def test_load_causal_lm_rejects_a_path_without_config(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_causal_lm(tmp_path)


def test_topics_split_by_conversation():
    split = load_topics(per_class=40)
    assert split.label_names == TOPICS
    for label in range(len(TOPICS)):
        n = split.train_labels.count(label) + split.test_labels.count(label)
        assert 0 < n <= 40 and split.test_labels.count(label) > 0
    assert len(split.train_texts) == len(split.train_labels)
    with pytest.raises(ValueError, match="test_fraction"):
        load_topics(test_fraction=1.0)


def test_math_jsonl_reader(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(
        json.dumps({"query": "1+1?", "response": "2"}) + "\n" + json.dumps({"question": "q", "answer": "a"})
    )
    assert load_math_jsonl(path) == [("1+1?", "2"), ("q", "a")]
    with pytest.raises(FileNotFoundError, match="path"):
        load_math_jsonl(tmp_path / "missing.jsonl")
    (tmp_path / "bad.jsonl").write_text(json.dumps({"x": 1}))
    with pytest.raises(ValueError, match="path"):
        load_math_jsonl(tmp_path / "bad.jsonl")
    good = json.dumps({"query": "q", "response": "a"})
    (tmp_path / "broken.jsonl").write_text(good + "\n{not json\n")
    with pytest.raises(ValueError, match=r"path: line 2 of .*broken.jsonl is not valid JSON"):
        load_math_jsonl(tmp_path / "broken.jsonl")
    (tmp_path / "list.jsonl").write_text(good + "\n[1, 2]\n")
    with pytest.raises(ValueError, match=r"path: line 2 of .*list.jsonl must be a JSON object, got list"):
        load_math_jsonl(tmp_path / "list.jsonl")
    with pytest.raises(ValueError, match="limit"):
        load_math_jsonl(path, limit=0)


@pytest.mark.parametrize(
    ("kwargs", "word"), [({"steps": 0}, "steps"), ({"lr": -1.0}, "lr"), ({"lora_plus_ratio": 0.5}, "lora_plus_ratio")]
)
def test_train_config_rejects_bad_values(kwargs, word):
    with pytest.raises(ValueError, match=word):
        TrainConfig(**kwargs)


def test_training_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="weight_decay"):
        TrainConfig(weight_decay=float("nan"))
    with pytest.raises(TypeError, match="steps"):
        TrainConfig(steps=2.5)  # type: ignore[arg-type]

    class Regressor(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)

        def forward(self, x, labels=None):
            out = self.lin(x)
            return type("Out", (), {"loss": ((out[:, 0] - labels) ** 2).mean() if labels is not None else None,
                                    "logits": out})()  # fmt: skip

    data = {"x": torch.randn(8, 2), "labels": torch.full((8,), float("nan"))}
    with pytest.raises(ValueError, match="not finite .* at step 0 of 2"):
        train(Regressor(), make_loader(data, batch_size=4, seed=0), TrainConfig(steps=2, lora_plus_ratio=1.0))
    with pytest.raises(ValueError, match="equal length"):
        evaluate_accuracy(Regressor(), {"x": torch.randn(8, 2), "labels": torch.zeros(5, dtype=torch.long)})
    with pytest.raises(ValueError, match="non-empty"):
        evaluate_accuracy(Regressor(), {"x": torch.randn(0, 2), "labels": torch.zeros(0, dtype=torch.long)})
    with pytest.raises(ValueError, match="batch_size"):
        evaluate_accuracy(
            Regressor(), {"x": torch.randn(4, 2), "labels": torch.zeros(4, dtype=torch.long)}, batch_size=0
        )
