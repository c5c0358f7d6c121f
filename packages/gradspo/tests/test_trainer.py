"""StepwiseTrainer on a tiny random digits UNet: start point, reference, EMA, determinism, config validation."""

from __future__ import annotations

import math

import pytest
import torch
from nips25_gradspo import EMA, TrainerConfig, adapters_disabled, add_unet_lora, digits_unet, lora_parameters
from nips25_gradspo.diagnostics import gradient_relative_variance, mmd2, paired_gradient_variance


def _cond(b: int = 3) -> dict[str, torch.Tensor]:
    return {"class_labels": torch.arange(b) % 10}


def test_lora_starts_at_the_base_model_and_disabling_gives_the_reference():
    """Gaussian init zeroes B: the adapted UNet equals the base; after a step, adapters_disabled gives the base."""
    torch.manual_seed(0)
    base = digits_unet()
    unet = digits_unet()
    unet.load_state_dict(base.state_dict())
    add_unet_lora(unet, r=2, alpha=2.0, target_modules=("to_q", "conv1"))
    x, t, c = torch.randn(2, 1, 8, 8), torch.tensor([10, 500]), torch.tensor([1, 2])
    with torch.no_grad():
        want = base(x, t, c).sample
        torch.testing.assert_close(unet(x, t, c).sample, want)
        for p in lora_parameters(unet).values():
            p.add_(0.1)
        assert not torch.allclose(unet(x, t, c).sample, want)
        with adapters_disabled(unet):
            torch.testing.assert_close(unet(x, t, c).sample, want)
    frozen = [n for n, p in unet.named_parameters() if p.requires_grad and "lora_" not in n]
    assert frozen == []


@pytest.mark.parametrize("method", ["gradspo", "spo", "dpo"])
def test_first_loss_is_log2_and_step_updates_only_lora(digits_trainer_factory, method):
    """At theta = ref = ema every method's loss is log 2; one step moves LoRA weights, base weights stay."""
    tr = digits_trainer_factory(method)
    before = {n: p.detach().clone() for n, p in tr.denoiser.unet.named_parameters()}
    pairs, _ = tr.pairs(_cond(), generator=torch.Generator().manual_seed(0))
    loss, _ = tr.loss(pairs)
    assert float(loss) == pytest.approx(math.log(2), abs=1e-5)
    stats = tr.step(_cond(), generator=torch.Generator().manual_seed(1))
    assert stats["n_pairs"] > 0 and math.isfinite(stats["loss"])
    changed = [n for n, p in tr.denoiser.unet.named_parameters() if not torch.equal(p, before[n])]
    assert changed and all("lora_" in n for n in changed)


def test_same_seed_same_pairs_and_loss(digits_trainer_factory):
    """Determinism: two trainers built and driven with one seed give identical pairs, losses and weights."""
    runs = []
    for _ in range(2):
        tr = digits_trainer_factory("gradspo", seed=3)
        g = torch.Generator().manual_seed(7)
        pairs, _ = tr.pairs(_cond(), generator=g)
        stats = [tr.step(_cond(), generator=g) for _ in range(2)]
        runs.append((pairs, stats, torch.cat([p.flatten() for p in tr.params.values()])))
    (p0, s0, w0), (p1, s1, w1) = runs
    assert torch.equal(p0.noise_w, p1.noise_w) and torch.equal(p0.valid, p1.valid)
    assert s0 == s1
    assert torch.equal(w0, w1)


def test_gradspo_samples_with_ema_and_spo_with_current_model(digits_trainer_factory):
    """The sampler rule: after a step, GradSPO's rollout uses EMA weights (different from current), SPO's not."""
    cfg_g = digits_trainer_factory("gradspo").config
    cfg_s = digits_trainer_factory("spo").config
    assert cfg_g.uses_ema_sampler and not cfg_s.uses_ema_sampler
    assert cfg_g.all_valid_at_last_step and not cfg_s.all_valid_at_last_step
    tr = digits_trainer_factory("gradspo")
    tr.step(_cond(), generator=torch.Generator().manual_seed(0))
    cur = {k: v.detach().clone() for k, v in tr.params.items()}
    with tr.sampler_model():
        inside = {k: v.detach().clone() for k, v in tr.params.items()}
    assert any(not torch.equal(cur[k], inside[k]) for k in cur)
    assert all(torch.equal(cur[k], v) for k, v in tr.params.items())  # restored
    for k in cur:  # EMA after one step from init: 0.9 * init + 0.1 * current
        torch.testing.assert_close(inside[k], tr.ema.shadow[k])


def test_ema_update_known_value_and_bad_decay():
    p = {"w": torch.nn.Parameter(torch.tensor([0.0, 10.0]))}
    ema = EMA(p, decay=0.9)
    with torch.no_grad():
        p["w"].copy_(torch.tensor([1.0, 0.0]))
    ema.update(p)
    torch.testing.assert_close(ema.shadow["w"], torch.tensor([0.1, 9.0]))
    with pytest.raises(ValueError, match="decay"):
        EMA(p, decay=1.0)
    with pytest.raises(ValueError, match="params"):
        ema.update({"v": p["w"]})


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_candidates": 1}, "num_candidates"),
        ({"threshold": 1.0}, "threshold"),
        ({"divert_start_step": 20}, "divert_start_step"),
        ({"method": "ppo"}, "method"),
        ({"clip": 0.0}, "clip"),
        ({"ema_decay": 1.0}, "ema_decay"),
        ({"lr": math.inf}, "lr"),
        ({"sampler": "old"}, "sampler"),
        ({"reward_input": "x"}, "reward_input"),
    ],
)
def test_trainer_config_rejects_out_of_range(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TrainerConfig(**kwargs)


def test_trainer_rejects_bad_cond_and_unet_without_lora(digits_trainer_factory):
    tr = digits_trainer_factory("spo")
    with pytest.raises(ValueError, match="cond"):
        tr.step({"class_labels": torch.zeros(0, dtype=torch.long)}, generator=torch.Generator())
    with pytest.raises(ValueError, match="cond"):
        tr.step({}, generator=torch.Generator())
    with pytest.raises(ValueError, match="LoRA"):
        lora_parameters(digits_unet())
    with pytest.raises(ValueError, match="target_modules"):
        add_unet_lora(digits_unet(), target_modules=("nope",))
    with pytest.raises(ValueError, match="r must"):
        add_unet_lora(digits_unet(), r=0)


def test_relative_variance_and_alignment_are_computed(digits_trainer_factory):
    tr = digits_trainer_factory("spo", reward_input="x0_hat")
    out = gradient_relative_variance(tr, _cond(2), n_resamples=3, generator=torch.Generator().manual_seed(0))
    assert len(out["timestep"]) == 2
    assert all(v >= 0 for v in out["relative_variance"])
    assert all(-1 <= a <= 1 for a in out["alignment"])
    with pytest.raises(ValueError, match="n_resamples"):
        gradient_relative_variance(tr, _cond(2), n_resamples=1, generator=torch.Generator())


def test_mmd2_known_answers():
    """MMD^2 of a set with itself-distributed copy ~ 0; of shifted sets > 0; unbiased zero for equal kernels."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(300, 4, generator=g), torch.randn(300, 4, generator=g)
    assert abs(mmd2(a, b)) < 0.01
    assert mmd2(a + 3.0, b) > 0.3
    x = torch.tensor([[0.0], [1.0]])
    # hand value: h = 1, k(0,1) = exp(-1/2); unbiased xx, yy terms = k(0,1); xy mean = (1 + 1 + 2k)/4
    k = math.exp(-0.5)
    assert mmd2(x, x, bandwidth=1.0) == pytest.approx(2 * k - 2 * (2 + 2 * k) / 4)
    with pytest.raises(ValueError, match="rows"):
        mmd2(torch.zeros(1, 2), b[:, :2])
    with pytest.raises(ValueError, match="finite"):
        mmd2(torch.full((3, 4), math.nan), b)


def test_paired_variance_same_samples_noise_and_parameters(digits_trainer_factory):
    """Review finding: the variance claim compared each method at its own trained model and sampler (different states,
    noise and parameters). On the same samples, noise and parameters at theta = ref, both closed forms make the
    per-pair gradient (n_w - n_l)-proportional with one weight per step, so the scale-free per-step relative variance
    of GradSPO and SPO must coincide; the step-mixing iteration gradient differs (weights differ per step); DPO runs
    in the same measurement."""
    trainers = {m: digits_trainer_factory(m, seed=2, last_step_all_valid="no") for m in ("gradspo", "spo", "dpo")}
    out = paired_gradient_variance(trainers, _cond(3), n_resamples=4, seed=5)
    g, s, d = out["gradspo"], out["spo"], out["dpo"]
    assert g["timestep"] == s["timestep"] == d["timestep"]
    assert g["valid_fraction"] == s["valid_fraction"]  # same candidates, same scores, same pairs
    finite = [i for i, v in enumerate(s["relative_variance"]) if math.isfinite(v)]
    assert finite
    for i in finite:
        assert g["relative_variance"][i] == pytest.approx(s["relative_variance"][i], rel=1e-4)
    assert all(math.isfinite(v) and v >= 0 for v in d["relative_variance"])
    assert len(g["iteration_relative_variance"]) == 1 and math.isnan(d["alignment"][0])


def test_paired_variance_rejects_different_parameters(digits_trainer_factory):
    a, b = digits_trainer_factory("gradspo", seed=0), digits_trainer_factory("spo", seed=0)
    b.step(_cond(), generator=torch.Generator().manual_seed(1))
    with pytest.raises(ValueError, match="different weights"):
        paired_gradient_variance({"gradspo": a, "spo": b}, _cond(2), n_resamples=2)
    with pytest.raises(ValueError, match="at least two"):
        paired_gradient_variance({"gradspo": a}, _cond(2), n_resamples=2)


def test_class_labels_out_of_range_raise_value_error_naming_the_argument(digits_trainer_factory):
    """Review finding: a label >= num_class_embeds (11) gave a raw IndexError from the embedding."""
    tr = digits_trainer_factory("gradspo")
    for bad in (torch.tensor([3, 11]), torch.tensor([-1]), torch.tensor([0.5])):
        with pytest.raises(ValueError, match="class_labels"):
            tr.step({"class_labels": bad}, generator=torch.Generator().manual_seed(0))


def test_relative_variance_without_valid_pairs_is_nan_not_inf(digits_trainer_factory):
    """Review finding: 0/0 (no valid pair in any draw) was reported as inf. SPO applies its threshold at every
    step, and no gap of a random classifier clears 2 artanh(0.999) = 7.6 nats: undefined everywhere, valid 0."""
    tr = digits_trainer_factory("spo", threshold=0.999)
    out = gradient_relative_variance(tr, _cond(2), n_resamples=2, generator=torch.Generator().manual_seed(0))
    assert all(math.isnan(v) for v in out["relative_variance"])
    assert out["valid_fraction"] == [0.0, 0.0]
    assert all(math.isnan(v) for v in out["clip_fraction"])
    assert math.isnan(out["iteration_relative_variance"][0])


def test_variance_on_a_state_subset_and_bootstrap_se(digits_trainer_factory):
    """n_states = B is the full measurement exactly (same states and draws); a subset changes it; SEs are finite."""
    kw = {"n_resamples": 3, "n_bootstrap": 20}
    tr = digits_trainer_factory("gradspo", seed=1)
    full = gradient_relative_variance(tr, _cond(4), generator=torch.Generator().manual_seed(2), **kw)
    same = gradient_relative_variance(tr, _cond(4), generator=torch.Generator().manual_seed(2), n_states=4, **kw)
    half = gradient_relative_variance(tr, _cond(4), generator=torch.Generator().manual_seed(2), n_states=2, **kw)
    assert same["relative_variance"] == full["relative_variance"]
    assert half["relative_variance"] != full["relative_variance"]
    assert all(math.isfinite(v) and v > 0 for v in full["relative_variance_se"])
    assert all(0 <= c <= 1 for c in full["clip_fraction"])
    with pytest.raises(ValueError, match="n_states"):
        gradient_relative_variance(tr, _cond(4), generator=torch.Generator(), n_states=5, **kw)
    flip = gradient_relative_variance(
        tr, _cond(4), generator=torch.Generator().manual_seed(2), flip_probability=0.25, **kw
    )
    assert flip["relative_variance"] == full["relative_variance"]  # the unflipped draws are the same measurement
    assert len(flip["relative_variance_flipped"]) == len(full["timestep"])
    assert flip["flip_fraction"] == [1 / 3]  # round(0.25 * 3) = 1 of the 3 draws negated, exactly
    with pytest.raises(ValueError, match="flip_probability"):
        gradient_relative_variance(tr, _cond(4), generator=torch.Generator(), flip_probability=0.5, **kw)


def test_planted_flip_control_has_the_known_relative_variance():
    """The positive control's known answer: negating each draw w.p. q maps relvar r to (r + 1 - (1-2q)^2)/(1-2q)^2
    (checked on 40k Gaussian draws, where the sampling error of relvar is below 2 %); the Gram-matrix bootstrap
    gives the same relvar as the direct formula on the identity weights."""
    from nips25_gradspo.diagnostics import _relvar, _relvar_gram, flipped_relative_variance

    g = torch.Generator().manual_seed(0)
    mu = torch.tensor([1.0, -0.5, 0.25], dtype=torch.float64)
    draws = mu + 1.2 * torch.randn(40_000, 3, generator=g, dtype=torch.float64)
    signs = torch.where(torch.rand(40_000, 1, generator=g, dtype=torch.float64) < 0.1, -1.0, 1.0)
    r = _relvar(draws)
    assert _relvar(draws * signs) == pytest.approx(flipped_relative_variance(r, 0.1), rel=0.03)
    assert flipped_relative_variance(3.0, 0.1) == pytest.approx(5.25)
    small = draws[:7]
    assert _relvar_gram(small @ small.T, torch.ones(7, dtype=torch.float64)) == pytest.approx(_relvar(small))


def test_flip_signs_negate_exactly_the_stated_share():
    """The planted control negates exactly round(q R) draws (an independent coin per draw flipped 2 of 32 at
    q = 0.1 in the 0.2.0 run), the same draws for the same seed, none at q = 0."""
    from nips25_gradspo.diagnostics import flip_signs

    for n, m in ((32, 3), (128, 13), (3, 0), (10, 1)):
        s = flip_signs(n, 0.1)
        assert s.shape == (n, 1) and s.dtype == torch.float64
        assert int((s < 0).sum()) == m and bool(((s == 1) | (s == -1)).all())
    assert torch.equal(flip_signs(128, 0.1), flip_signs(128, 0.1))
    assert not torch.equal(flip_signs(128, 0.1), flip_signs(128, 0.1, seed=2))
    assert bool((flip_signs(16, 0.0) == 1).all())
    with pytest.raises(ValueError, match="flip_probability"):
        flip_signs(8, 0.5)
