"""DDIM candidates against diffusers, the validity threshold, the antithetic noise; step weights."""

from __future__ import annotations

import math

import pytest
import torch
from diffusers import DDIMScheduler
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_gradspo import (
    antithetic_noise,
    ddim_candidates,
    ddim_coefficients,
    select_pair,
    step_weights,
    validity_margin,
)

from .conftest import SD15, sd15_scheduler


@pytest.mark.parametrize("clip_sample", [False, True])
def test_candidate_step_equals_diffusers_ddim_step(clip_sample):
    """x^k = scheduler.step(eps, t, x_t, eta=1, variance_noise=n_k).prev_sample for every k and step."""
    s = DDIMScheduler(**{**SD15, "clip_sample": clip_sample})
    s.set_timesteps(10)
    g = torch.Generator().manual_seed(0)
    for t in s.timesteps.tolist():
        x = torch.randn(2, 4, 3, 3, generator=g, dtype=torch.float64)
        eps = torch.randn(2, 4, 3, 3, generator=g, dtype=torch.float64)
        xs, noise, sigma = ddim_candidates(s, eps, x, t, k=3, generator=g)
        for k in range(3):
            want = s.step(eps, t, x, eta=1.0, variance_noise=noise[k]).prev_sample
            # diffusers does its schedule arithmetic in float32 tensors: agreement to float32 precision
            torch.testing.assert_close(xs[k], want, rtol=1e-5, atol=1e-6)
        assert float(sigma) == pytest.approx(float(ddim_coefficients(s, t).sigma_t))


def test_step_weight_ratios_on_sd15_schedule():
    """SPO/GradSPO weight ratio on SD1.5 (20 steps, offset 1): 0.856 at t=951, 3.49 at t=101, 24.4 at t=51."""
    s = sd15_scheduler(20)
    ratio = dict(
        zip(s.timesteps.tolist(), (step_weights(s, method="spo") / step_weights(s, method="gradspo")).tolist())
    )
    assert ratio[951] == pytest.approx(0.856, abs=5e-4)
    assert ratio[101] == pytest.approx(3.49, abs=5e-3)
    assert ratio[51] == pytest.approx(24.4, abs=0.05)
    assert min(ratio.values()) == pytest.approx(0.708, abs=2e-3)
    assert torch.equal(step_weights(s, method="dpo"), torch.ones(20, dtype=torch.float64))
    gw = step_weights(s, method="gradspo", grad_scale=0.5)
    a = s.alphas_cumprod[951].double()
    assert float(gw[0]) == pytest.approx(float((1 - a).sqrt()), rel=1e-12)


def test_threshold_boundary_and_last_step_rule():
    """thr 0.3 -> margin 2 artanh(0.3) = 0.619039; 0.61903 invalid, 0.61905 valid; final_step accepts all."""
    assert validity_margin(0.3) == pytest.approx(0.6190392084062235, rel=1e-12)
    assert validity_margin(0.4) == pytest.approx(0.8472978603872037, rel=1e-12)
    scores = torch.tensor([[0.0, 0.0, 1.0], [0.61903, 0.61905, 1.0]], dtype=torch.float64)
    iw, il, valid = select_pair(scores, threshold=0.3)
    assert valid.tolist() == [False, True, False]
    assert iw.tolist() == [1, 1, 0] and il.tolist() == [0, 0, 0]
    assert select_pair(scores, threshold=0.3, final_step=True)[2].all()
    # softmax-gap definition, independently
    p = torch.softmax(torch.tensor([0.61905, 0.0], dtype=torch.float64), 0)
    assert float(p[0] - p[1]) > 0.3


@settings(max_examples=30, deadline=None)
@given(shift=st.floats(-5, 5), seed=st.integers(0, 10_000), k=st.integers(2, 5))
def test_antithetic_noise_properties(shift, seed, k):
    """n_tilde_w = -n_tilde_l; a shift common to every candidate's noise leaves it unchanged."""
    g = torch.Generator().manual_seed(seed)
    noise = torch.randn(k, 3, 2, 2, generator=g, dtype=torch.float64)
    iw = torch.randint(0, k, (3,), generator=g)
    il = torch.randint(0, k, (3,), generator=g)
    a = antithetic_noise(noise, iw, il)
    torch.testing.assert_close(antithetic_noise(noise, il, iw), -a)
    common = torch.randn(1, 3, 2, 2, generator=g, dtype=torch.float64) * shift
    torch.testing.assert_close(antithetic_noise(noise + common, iw, il), a, rtol=1e-9, atol=1e-9)


def test_candidates_reject_bad_input():
    s = sd15_scheduler(10)
    x = torch.zeros(1, 4, 2, 2)
    t = int(s.timesteps[0])
    with pytest.raises(ValueError, match="k must"):
        ddim_candidates(s, x, x, t, k=1)
    with pytest.raises(ValueError, match="eps and x_t"):
        ddim_candidates(s, torch.zeros(2, 4, 2, 2), x, t, k=2)
    with pytest.raises(ValueError, match="eps"):
        ddim_candidates(s, torch.full_like(x, math.nan), x, t, k=2)
    with pytest.raises(ValueError, match="noise"):
        ddim_candidates(s, x, x, t, k=2, noise=torch.zeros(3, 1, 4, 2, 2))
    with pytest.raises(ValueError, match="t must"):
        ddim_candidates(s, x, x, 5000, k=2)
    with pytest.raises(ValueError, match="set_timesteps"):
        ddim_candidates(DDIMScheduler(), x, x, 1, k=2)
    with pytest.raises(TypeError, match="scheduler"):
        step_weights(object(), method="spo")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="method"):
        step_weights(s, method="ppo")  # type: ignore[arg-type]


@pytest.mark.parametrize("thr", [-0.1, 1.0, math.nan])
def test_select_pair_rejects_bad_threshold_and_scores(thr):
    with pytest.raises(ValueError, match="threshold"):
        select_pair(torch.zeros(2, 3), threshold=thr)
    with pytest.raises(ValueError, match="scores"):
        select_pair(torch.zeros(1, 3), threshold=0.3)
    with pytest.raises(ValueError, match="scores"):
        select_pair(torch.tensor([[0.0], [math.inf]]), threshold=0.3)
    with pytest.raises(ValueError, match="idx_w"):
        antithetic_noise(torch.zeros(2, 3, 1), torch.tensor([0, 1, 2]), torch.zeros(3, dtype=torch.long))
