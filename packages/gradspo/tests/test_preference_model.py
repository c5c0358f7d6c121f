"""SPO's step-aware preference model on a tiny random CLIP: identity modulation = plain PickScore, released key
mapping round trip, time dependence, local loading and its errors."""

from __future__ import annotations

import pytest
import torch
from nips25_gradspo.preference_model import (
    PreferenceModelReward,
    TimeConditionedCLIP,
    load_step_aware_preference_model,
    map_released_keys,
)

from .conftest import tiny_tokenizer


def _clip(seed: int = 0):
    from transformers import CLIPConfig, CLIPModel

    torch.manual_seed(seed)
    cfg = CLIPConfig(
        text_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                         vocab_size=100, max_position_embeddings=16, bos_token_id=0, eos_token_id=1, pad_token_id=1),
        vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                           image_size=16, patch_size=8),
        projection_dim=8,
    )  # fmt: skip
    return CLIPModel(cfg).eval()


def _inputs(b: int = 3):
    g = torch.Generator().manual_seed(1)
    return (
        torch.randn(b, 3, 16, 16, generator=g),
        torch.randint(2, 100, (b, 6), generator=g),
        torch.tensor([1, 500, 999])[:b],
    )


def test_identity_modulation_is_plain_pickscore():
    """Zero modulation weights, shifts/scales 0, gates 1: the score is CLIP's exp(tau) cos(image, text) at any t."""
    clip = _clip()
    model = TimeConditionedCLIP(clip).eval()
    px, ids, t = _inputs()
    with torch.no_grad():
        out = clip(input_ids=ids, pixel_values=px)
        want = out.logits_per_image.diagonal()
        torch.testing.assert_close(model.score(px, ids, t), want, rtol=1e-5, atol=1e-5)


def test_time_modulation_changes_scores_and_released_keys_round_trip():
    """Random modulation makes the score depend on t; a state dict renamed to the released layout loads back
    key by key and reproduces the scores."""
    model = TimeConditionedCLIP(_clip()).eval()
    with torch.no_grad():
        for p in [*model.layer_modulation.parameters(), *model.pooled_modulation.parameters()]:
            p.normal_(0, 0.2)
    px, ids, _ = _inputs()
    with torch.no_grad():
        s1 = model.score(px, ids, torch.full((3,), 10))
        s2 = model.score(px, ids, torch.full((3,), 900))
    assert not torch.allclose(s1, s2)
    released = {"model." + k: v for k, v in _released_like(model).items()}
    fresh = TimeConditionedCLIP(_clip(seed=9)).eval()
    fresh.load_state_dict(map_released_keys(released), strict=True)
    with torch.no_grad():
        torch.testing.assert_close(fresh.score(px, ids, torch.full((3,), 10)), s1)


def test_local_loading_errors_and_reward_from_latents(tmp_path):
    """Missing directory or checkpoint names the argument; a saved tiny CLIP loads with a matching checkpoint, and
    the latent reward decodes, preprocesses and scores (B,) values with gradients to the latents."""
    from diffusers import AutoencoderKL
    from transformers import CLIPImageProcessor

    with pytest.raises(FileNotFoundError, match="clip_dir"):
        load_step_aware_preference_model(tmp_path / "none")
    clip = _clip()
    clip.save_pretrained(tmp_path / "clip")
    CLIPImageProcessor(size={"shortest_edge": 16}, crop_size={"height": 16, "width": 16}).save_pretrained(
        tmp_path / "clip"
    )
    tiny_tokenizer(tmp_path / "clip")
    with pytest.raises(FileNotFoundError, match="checkpoint"):
        load_step_aware_preference_model(tmp_path / "clip", checkpoint=tmp_path / "spm.bin")
    released = {"model." + k.replace("clip.", "", 1): v for k, v in TimeConditionedCLIP(clip).state_dict().items()
                if k.startswith("clip.")}  # fmt: skip
    torch.save(released, tmp_path / "bad.bin")
    with pytest.raises(ValueError, match="checkpoint"):
        load_step_aware_preference_model(tmp_path / "clip", checkpoint=tmp_path / "bad.bin")
    model, _tok, proc = load_step_aware_preference_model(tmp_path / "clip")
    vae = AutoencoderKL(block_out_channels=(8,), norm_num_groups=8, latent_channels=4, sample_size=16).eval()
    reward = PreferenceModelReward(model, vae, image_size=16, mean=tuple(proc.image_mean), std=tuple(proc.image_std))
    x = torch.randn(2, 4, 12, 12, requires_grad=True)
    ids = torch.randint(2, 100, (2, 6))
    r = reward(x, torch.tensor([5, 700]), {"spm_input_ids": ids})
    assert r.shape == (2,) and bool(torch.isfinite(r).all())
    r.sum().backward()
    assert x.grad is not None and bool(x.grad.abs().sum() > 0)
    with pytest.raises(KeyError, match="spm_input_ids"):
        reward(x, torch.tensor([5, 700]), {})
    with pytest.raises(TypeError, match="CLIPModel"):
        TimeConditionedCLIP(torch.nn.Linear(2, 2))


def test_paper_profile_runs_on_tiny_local_inputs(tmp_path, monkeypatch, capsys):
    """--profile paper end to end on tiny random SD1.5 + tiny time-conditioned CLIP saved to disk: the inputs are
    read from the NIPS25_GRADSPO_* variables, GradSPO trains with the SPM reward on x0_hat, the LoRA is saved, and
    the report's claim is computed. A missing checkpoint variable is named in a one-line CLI error (exit 2)."""
    from nips25_gradspo.cli import main
    from nips25_gradspo.paper import PaperConfig, check_paper_inputs, read_prompts
    from nips25_gradspo.reproduce import _paper_report
    from transformers import CLIPImageProcessor

    from .conftest import tiny_sd15

    tiny_sd15(tmp_path).save_pretrained(tmp_path / "sd15")
    clip = _clip()
    clip.save_pretrained(tmp_path / "spm")
    CLIPImageProcessor(size={"shortest_edge": 16}, crop_size={"height": 16, "width": 16}).save_pretrained(
        tmp_path / "spm"
    )
    tiny_tokenizer(tmp_path / "spm")
    torch.save({"model." + k: v for k, v in _released_like(TimeConditionedCLIP(clip)).items()}, tmp_path / "spm.bin")
    (tmp_path / "prompts.txt").write_text("a cat\n\na dog\n")
    env = {"NIPS25_GRADSPO_SD15": tmp_path / "sd15", "NIPS25_GRADSPO_SPM": tmp_path / "spm",
           "NIPS25_GRADSPO_PROMPTS": tmp_path / "prompts.txt"}  # fmt: skip
    for k, v in env.items():
        monkeypatch.setenv(k, str(v))
    monkeypatch.delenv("NIPS25_GRADSPO_SPM_CKPT", raising=False)
    with pytest.raises(SystemExit) as err:
        main(["reproduce", "--profile", "paper", "--out", str(tmp_path / "out")])
    msg = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.value.code == 2 and "NIPS25_GRADSPO_SPM_CKPT" in msg and "NIPS25_GRADSPO_SD15" not in msg
    monkeypatch.setenv("NIPS25_GRADSPO_SPM_CKPT", str(tmp_path / "spm.bin"))
    assert set(check_paper_inputs()) == {"sd15", "spm", "spm_ckpt", "prompts"}
    assert read_prompts(tmp_path / "prompts.txt") == ["a cat", "a dog"]
    cfg = PaperConfig(iters=2, batch=2, num_inference_steps=3, divert_start_step=1, num_candidates=2, threshold=0.0)
    (tmp_path / "out").mkdir(exist_ok=True)
    report = _paper_report(0, tmp_path / "out", 0.0, cfg)
    claim = report.claims[0]
    assert claim.measured["iterations"] == 2 and isinstance(claim.holds, bool)
    assert (tmp_path / "out" / "lora" / "pytorch_lora_weights.safetensors").is_file()
    assert (tmp_path / "out" / report.figures[0]).is_file()
    with pytest.raises(ValueError, match="iters"):
        PaperConfig(iters=0)


def _released_like(model: TimeConditionedCLIP) -> dict[str, torch.Tensor]:
    """Our state dict under the released key names (without the ``model.`` prefix)."""
    out = {}
    for k, v in model.state_dict().items():
        k = k.replace("clip.", "", 1) if k.startswith("clip.") else k
        k = k.replace("pooled_modulation.1.", "vision_model.adaLN_modulation.1.")
        if k.startswith("layer_modulation."):
            i = k.split(".")[1]
            k = k.replace(f"layer_modulation.{i}.1.", f"vision_model.encoder.layers.{i}.adaLN_modulation.1.")
        if k.startswith("t_embedder."):
            k = "t_embedder.mlp." + k[len("t_embedder.") :]
        out[k] = v
    return out


def test_read_prompts_names_the_file_for_malformed_json_and_non_utf8(tmp_path):
    """Review finding (0.2.2): a truncated JSON list or a non-UTF-8 file raised json's / the codec's own error, with
    no file name; both are now a ValueError naming the file (and the JSON line)."""
    from nips25_gradspo.paper import read_prompts

    (tmp_path / "cut.json").write_text('["a cat", ')
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe a cat\n")
    with pytest.raises(ValueError, match=r"cut\.json is not valid JSON \(line 1"):
        read_prompts(tmp_path / "cut.json")
    with pytest.raises(ValueError, match=r"bin\.txt is not UTF-8 text"):
        read_prompts(tmp_path / "bin.txt")
