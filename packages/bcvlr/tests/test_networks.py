"""Networks of the latent action model and the policy: decoder alignment, shapes, scaling, gradient paths."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nips25_bcvlr import VQEMA, ActionDecoder, ImpalaEncoder, LatentActionModel, scale_observations


def test_decoder_recovers_actions_from_a_linear_map_of_them() -> None:
    """z = A onehot(a) + small noise with A full rank: the decoder trained on 500 labelled steps gets >= 0.99."""
    g = torch.Generator().manual_seed(0)
    a_map = torch.randn(16, 3, generator=g)
    assert torch.linalg.matrix_rank(a_map) == 3

    def batch(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        a = torch.randint(3, (n,), generator=g)
        z = torch.nn.functional.one_hot(a, 3).float() @ a_map.T + 0.05 * torch.randn(n, 16, generator=g)
        return z, a

    torch.manual_seed(0)
    dec = ActionDecoder(16, 3)
    z, a = batch(500)
    opt = torch.optim.Adam(dec.parameters(), lr=3e-3)
    for _ in range(150):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(dec(z), a).backward()
        opt.step()
    z_test, a_test = batch(500)
    assert (dec(z_test).argmax(-1) == a_test).float().mean().item() >= 0.99


def test_observation_scaling_range() -> None:
    """uint8 pixels map to x / 255 - 0.5, so 0 -> -0.5 and 255 -> 0.5."""
    x = np.array([0, 51, 255], np.uint8).reshape(1, 3, 1, 1).repeat(4, 2).repeat(4, 3)
    y = scale_observations(x)
    assert y.min().item() == -0.5 and y.max().item() == 0.5
    assert y[0, 1, 0, 0].item() == pytest.approx(0.2 - 0.5)


def test_latent_action_model_loss_and_gradient_paths() -> None:
    """L = FDM MSE + VQ loss; the FDM gradient reaches the IDM through the straight-through latent."""
    torch.manual_seed(0)
    enc = ImpalaEncoder(channels=4)
    lam = LatentActionModel(4, (8, 8), n_context=3, idm_channels=(8,), idm_hidden=16, fdm_base=8,
                            vq=VQEMA(n_codebooks=2, n_latents=2, codebook_size=8, dim=4))  # fmt: skip
    feats = enc(torch.rand(6, 3, 8, 8) - 0.5).detach().reshape(2, 3, 4, 8, 8)
    out = lam(feats)
    assert out.loss.item() == pytest.approx(out.fdm_loss.item() + out.vq.loss.item(), rel=1e-6)
    out.fdm_loss.backward()
    assert lam.idm.net.out.weight.grad is not None and lam.idm.net.out.weight.grad.abs().sum() > 0
    assert out.vq.z_q.shape == (2, 16) and out.vq.indices.shape == (2, 2, 2)
