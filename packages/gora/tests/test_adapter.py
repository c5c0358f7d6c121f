"""apply_gora -> an ordinary peft LoRA adapter: base untouched, exact rank_pattern keys, reload in vanilla peft."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch
from nips25_gora import GoraConfig, apply_gora, check_rank_pattern, export_rank_json, rank_pattern_keys
from peft.tuners.lora import LoraLayer

CONFIG = GoraConfig(
    target_modules=("query", "key", "value", "attention.output.dense"),
    r_ref=4,
    r_min=1,
    r_max=16,
    n_steps=3,
    xi=0.5,
    modules_to_save=("classifier",),
)


def _gora(make_bert, make_batches, config=CONFIG):
    model = make_bert()
    base_state = {k: v.clone() for k, v in model.state_dict().items()}
    x = make_batches(1, seed=7)[0]["input_ids"]
    with torch.no_grad():
        base_logits = model(input_ids=x).logits
    return apply_gora(model, make_batches(), config), base_state, x, base_logits


def test_base_weights_bit_identical_and_disable_adapter_is_base(make_bert, make_batches):
    peft_model, base_state, x, base_logits = _gora(make_bert, make_batches)
    for name, module in peft_model.named_modules():
        if isinstance(module, LoraLayer):
            short = name.removeprefix("base_model.model.")
            assert torch.equal(module.get_base_layer().weight, base_state[f"{short}.weight"])
    with torch.no_grad(), peft_model.disable_adapter():
        assert torch.equal(peft_model(input_ids=x).logits, base_logits)
        # the adapter is live: outputs differ when it is on
    with torch.no_grad():
        assert not torch.equal(peft_model(input_ids=x).logits, base_logits)


def test_every_rank_pattern_key_matches_exactly_one_module(make_bert, make_batches):
    peft_model, *_ = _gora(make_bert, make_batches)
    info = peft_model.gora_init
    pattern = peft_model.peft_config["default"].rank_pattern
    assert pattern == rank_pattern_keys(info.ranks)
    assert len(info.ranks) == 8 and len(set(info.ranks.values())) > 1  # heterogeneous ranks
    mapping = check_rank_pattern(peft_model, pattern)
    assert sorted(mapping.values()) == sorted(info.ranks)
    modules = dict(peft_model.base_model.model.named_modules())
    for name, r in info.ranks.items():
        assert modules[name].lora_A["default"].weight.shape[0] == r
        assert modules[name].lora_B["default"].weight.shape[1] == r
        # peft's own matcher (get_pattern_key semantics) finds this key and no other
        assert [k for k in pattern if re.match(rf"(.*\.)?({k})$", name)] == ["^" + re.escape(name)]
    assert all(CONFIG.r_min <= r <= CONFIG.r_max for r in info.ranks.values())
    assert info.realised == sum(r * sum(info.shapes[n]) for n, r in info.ranks.items())


def test_bare_suffix_keys_would_be_ambiguous(make_bert, make_batches):
    """Why keys are anchored: a bare suffix matches several modules, which check_rank_pattern refuses."""
    peft_model, *_ = _gora(make_bert, make_batches)
    with pytest.raises(ValueError, match="matches 2 modules"):
        check_rank_pattern(peft_model, {"query": 4})


def test_save_and_reload_in_vanilla_peft_gives_identical_logits(make_bert, make_batches, tmp_path):
    """Base and adapter reloaded from disk with transformers + PeftModel.from_pretrained only give the same logits.

    The saved adapter_config.json is a plain LoRA config (rank_pattern, use_rslora) with no reference to this
    package, so vanilla peft needs nothing from nips25_gora (checked in-process to keep the suite fast).
    """
    from peft import PeftModel
    from transformers import BertForSequenceClassification

    peft_model, _, x, _ = _gora(make_bert, make_batches)
    make_bert().save_pretrained(tmp_path / "base")  # same seed, same base weights
    peft_model.save_pretrained(tmp_path / "adapter")
    export_rank_json(peft_model.gora_init, tmp_path / "adapter")
    with torch.no_grad():
        expected = peft_model(input_ids=x).logits
        base = BertForSequenceClassification.from_pretrained(tmp_path / "base")
        reloaded = PeftModel.from_pretrained(base, tmp_path / "adapter").eval()
        got = reloaded(input_ids=x).logits
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)
    saved = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    assert saved["peft_type"] == "LORA" and saved["use_rslora"] is True
    assert saved["rank_pattern"] == rank_pattern_keys(peft_model.gora_init.ranks)
    assert "nips25" not in (tmp_path / "adapter" / "adapter_config.json").read_text()
    check_rank_pattern(reloaded, saved["rank_pattern"])
    ranks = json.loads((tmp_path / "adapter" / "rank.json").read_text())["ranks"]
    assert ranks == peft_model.gora_init.ranks


def test_same_seed_same_adapter(make_bert, make_batches):
    """Determinism: the same torch seed gives the same ranks and bit-identical lora_A/lora_B."""
    states = []
    for _ in range(2):
        torch.manual_seed(11)
        peft_model, *_ = _gora(make_bert, make_batches)
        states.append({k: v for k, v in peft_model.state_dict().items() if "lora_" in k})
    assert states[0].keys() == states[1].keys()
    assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"r_min": 9, "r_max": 4}, "r_min"),
        ({"xi": 0.0}, "xi"),
        ({"xi": -1.0}, "xi"),
        ({"n_steps": 0}, "n_steps"),
        ({"target_modules": ()}, "target_modules"),
        ({"importance": "bogus"}, "importance"),
        ({"early_stop_tol": -0.1}, "early_stop_tol"),
        ({"lora_dropout": 1.0}, "lora_dropout"),
    ],
)
def test_gora_config_rejects_bad_values(kwargs, word):
    with pytest.raises(ValueError, match=word):
        GoraConfig(**kwargs)


def test_apply_gora_rejects_bad_input(make_bert, make_batches):
    with pytest.raises(ValueError, match="target_modules"):
        apply_gora(make_bert(), make_batches(), GoraConfig(target_modules=("nope",)))
    with pytest.raises(TypeError, match="config"):
        apply_gora(make_bert(), make_batches(), {"target_modules": ("query",)})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batches"):
        apply_gora(make_bert(), [], GoraConfig(target_modules=("query",)))
    nan_batches = make_batches()
    model = make_bert()
    with torch.no_grad():
        model.bert.embeddings.word_embeddings.weight[:] = float("nan")
    with pytest.raises(ValueError, match="not finite"):
        apply_gora(model, nan_batches, GoraConfig(target_modules=("query",)))


def test_fresh_user_review_bad_inputs_name_the_argument(make_bert, make_batches):
    with pytest.raises(ValueError, match=r"modules_to_save: \['clasifier'\] match no module"):
        apply_gora(make_bert(), make_batches(1), GoraConfig(target_modules=("query",), modules_to_save=("clasifier",)))
    with pytest.raises(TypeError, match="batches must be an iterable"):
        apply_gora(make_bert(), None, GoraConfig(target_modules=("query",)))  # type: ignore[arg-type]
    bad = make_batches(2)
    bad[1] = {"input_ids": bad[1]["input_ids"], "labels": bad[1]["labels"][:1]}  # 4 rows, 1 label
    with pytest.raises(ValueError) as info:
        apply_gora(make_bert(), bad, GoraConfig(target_modules=("query",), n_steps=2))
    assert "batch 1 of `batches`" in "".join(getattr(info.value, "__notes__", []))
    with pytest.warns(UserWarning, match="r_ref=64 > r_max=32"):
        GoraConfig(r_ref=64)


def test_gora_config_types_review_findings():
    with pytest.raises(TypeError, match="lora_dropout"):
        GoraConfig(lora_dropout="0.1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="rank_stabilized"):
        GoraConfig(rank_stabilized="no")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="renormalize"):
        GoraConfig(renormalize="no")  # type: ignore[arg-type]
    config = GoraConfig(lora_alpha=np.float32(16), xi=np.float64(0.05))  # numpy reals are accepted, stored as float
    assert type(config.lora_alpha) is float and config.lora_alpha == 16.0


def test_apply_gora_twice_on_the_same_model_names_the_model(make_bert, make_batches):
    model = make_bert()
    config = GoraConfig(target_modules=("query",), n_steps=1)
    apply_gora(model, make_batches(1), config)
    with pytest.raises(TypeError, match="model: .*already a peft"):
        apply_gora(model, make_batches(1), config)


def test_a_non_main_rank_writes_nothing(make_bert, make_batches, tmp_path, monkeypatch):
    """Under a launch (env ``RANK=1``) without an accelerator: no adapter, no rank.json, no figure (issue 42)."""
    from nips25_gora import save_adapter
    from nips25_gora.reproduce import _figure

    peft_model, *_ = _gora(make_bert, make_batches)
    results = {"gora": [{"losses": [1.0, 0.5]}]}
    monkeypatch.setenv("RANK", "1")
    assert save_adapter(peft_model, tmp_path / "adapter") is None
    assert export_rank_json(peft_model.gora_init, tmp_path / "rank.json") is None
    assert _figure(results, peft_model.gora_init, tmp_path) == "gora_loss_and_ranks.png"
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("RANK", "0")
    assert export_rank_json(peft_model.gora_init, tmp_path / "rank.json", is_main_process=False) is None
    assert save_adapter(peft_model, tmp_path / "adapter") == tmp_path / "adapter"
    assert (tmp_path / "adapter" / "rank.json").is_file()
    assert _figure(results, peft_model.gora_init, tmp_path) == "gora_loss_and_ranks.png"
    assert (tmp_path / "gora_loss_and_ranks.png").is_file()


def test_readme_quickstart_prints_the_ranks_the_readme_shows():
    """The README's quickstart, verbatim in its seeding: the ranks it prints (issue #36, item 5)."""
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    model = BertForSequenceClassification(BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2))
    batches = [{"input_ids": torch.randint(0, 1000, (8, 16)), "labels": torch.randint(0, 2, (8,))} for _ in range(4)]
    config = GoraConfig(target_modules=("query", "value"), r_ref=8, n_steps=4, modules_to_save=("classifier",))
    ranks = apply_gora(model, batches, config).gora_init.ranks
    layer = "bert.encoder.layer.{}.attention.self.{}"
    assert ranks == {layer.format(0, "query"): 4, layer.format(0, "value"): 16, layer.format(1, "query"): 4,
                     layer.format(1, "value"): 15}  # fmt: skip
