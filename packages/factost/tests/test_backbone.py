"""Temporal backbone: normalisation identities, patching, affine equivariance, space-agnostic tokens."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_factost import (
    BackboneConfig,
    TemporalBackbone,
    instance_denormalize,
    instance_normalize,
    patchify,
    unpatchify,
)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 6), st.integers(2, 20), st.integers(0, 10_000))
def test_denormalize_normalize_is_identity(b, length, seed):
    """de-norm(norm(x)) = x for any observed window (float64)."""
    x = torch.randn(b, length, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 7 + 3
    z, observed, mean, std = instance_normalize(x)
    assert observed.all()
    torch.testing.assert_close(instance_denormalize(z, mean, std), x)
    torch.testing.assert_close(z.mean(1), torch.zeros(b, dtype=torch.float64), atol=1e-12, rtol=0)


def test_normalize_ignores_missing_values():
    """Mean and variance are those of the observed entries (hand values); missing entries become 0."""
    x = torch.tensor([[1.0, float("nan"), 3.0]], dtype=torch.float64)
    z, observed, mean, std = instance_normalize(x, eps=1e-5)
    assert observed.tolist() == [[True, False, True]]
    assert mean.item() == 2.0 and std.item() == pytest.approx((1.0 + 1e-5) ** 0.5)
    assert z[0, 1].item() == 0.0


def test_patchify_left_pads_and_unpatchify_inverts():
    """Padding sits at the start so the last patch ends at the origin; unpatchify drops it exactly."""
    z = torch.arange(1.0, 11.0)[None]
    values, obs = patchify(z, torch.ones_like(z, dtype=torch.bool), 4)
    assert values.shape == (1, 3, 4)
    assert values[0, 0].tolist() == [0.0, 0.0, 1.0, 2.0] and obs[0, 0].tolist() == [False, False, True, True]
    assert values[0, -1].tolist() == [7.0, 8.0, 9.0, 10.0]
    assert torch.equal(unpatchify(values, 10), z)


def test_forecast_is_affine_equivariant(backbone):
    """f(a x + b) = a f(x) + b for a > 0, up to the 1e-5 variance epsilon."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 12, generator=g, dtype=torch.float64) * 3
    bb = backbone.double()
    dom = torch.zeros(6, dtype=torch.long)
    a, b = 50.0, -7.0
    with torch.no_grad():
        lhs = bb(a * x + b, dom, 9)
        rhs = a * bb(x, dom, 9) + b
    torch.testing.assert_close(lhs, rhs, rtol=1e-4, atol=1e-3)


def test_space_agnostic_tokens_and_outputs(backbone):
    """Permuting series permutes outputs; changing series j leaves series i's tokens and forecast unchanged."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(5, 12, generator=g)
    dom = torch.tensor([0, 1, 0, 1, 0])
    perm = torch.tensor([3, 0, 4, 1, 2])
    with torch.no_grad():
        out = backbone(x, dom, 12)
        torch.testing.assert_close(backbone(x[perm], dom[perm], 12), out[perm])
        tokens = backbone.tokens(x)
        x2 = x.clone()
        x2[2] = torch.randn(12, generator=g) * 100
        tokens2 = backbone.tokens(x2)
        out2 = backbone(x2, dom, 12)
    keep = torch.tensor([0, 1, 3, 4])
    assert torch.equal(tokens2[keep], tokens[keep])
    torch.testing.assert_close(out2[keep], out[keep])
    assert not torch.equal(tokens2[2], tokens[2])


def test_missing_values_are_handled(backbone):
    """NaN contexts give finite forecasts, and the observed-mask channel makes the result depend on where NaNs are."""
    x = torch.randn(2, 12)
    x[0, 3] = float("nan")
    with torch.no_grad():
        out = backbone(x, torch.zeros(2, dtype=torch.long), 5)
    assert out.shape == (2, 5) and torch.isfinite(out).all()


def test_prompts_start_at_the_shared_bias(backbone):
    """u_d = 0 at initialisation, so every domain prompt equals the shared map's bias (P_d = W u_d v_d^T + b)."""
    prompts = backbone.domain_prompts()
    assert prompts.shape == (2, 3, 16)
    torch.testing.assert_close(prompts[0, 0], backbone.prompt_proj.bias)
    torch.testing.assert_close(prompts[1, 2], backbone.prompt_proj.bias)


def test_bad_inputs(backbone):
    dom = torch.zeros(2, dtype=torch.long)
    with pytest.raises(ValueError, match="shape"):
        backbone(torch.zeros(2, 3, 4), dom, 4)
    with pytest.raises(ValueError, match="inf"):
        backbone(torch.full((2, 8), float("inf")), dom, 4)
    with pytest.raises(TypeError, match="floating"):
        backbone(torch.zeros(2, 8, dtype=torch.long), dom, 4)
    with pytest.raises(ValueError, match="horizon"):
        backbone(torch.zeros(2, 8), dom, 0)
    with pytest.raises(ValueError, match="domain ids"):
        backbone(torch.zeros(2, 8), torch.tensor([0, 5]), 4)
    with pytest.raises(ValueError, match="max_tokens"):
        backbone(torch.zeros(2, 8), dom, 4000)
    with pytest.raises(ValueError, match="d_model"):
        BackboneConfig(d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="dropout"):
        BackboneConfig(dropout=1.5)
    with pytest.raises(ValueError, match="patch_len"):
        TemporalBackbone(patch_len=0)
    with pytest.raises(ValueError, match="eps"):
        instance_normalize(torch.zeros(1, 3), eps=0.0)
