"""Known-answer tests of the VQ-EMA quantiser: nearest code, straight-through gradient, commitment, EMA formula."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_bcvlr import VQEMA


def _vq(**kw: object) -> VQEMA:
    defaults: dict = dict(n_codebooks=2, n_latents=3, codebook_size=5, dim=4, init_from_data=False)
    defaults.update(kw)
    return VQEMA(**defaults)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_vq_returns_the_nearest_code_by_brute_force(seed: int) -> None:
    """Every head is replaced by its Euclidean-nearest code of its own codebook (brute force over all codes)."""
    torch.manual_seed(seed)
    vq = _vq().eval()
    z = torch.randn(6, vq.latent_dim)
    out = vq(z)
    heads = z.reshape(6, 3, 2, 4)
    zq = out.z_q.reshape(6, 3, 2, 4)
    for g in range(2):
        dist = ((heads[:, :, g, None, :] - vq.embed[g][None, None]) ** 2).sum(-1)  # (6, 3, K)
        expected = dist.argmin(-1)
        assert torch.equal(out.indices[:, :, g], expected)
        assert torch.allclose(zq[:, :, g], vq.embed[g][expected], atol=1e-6)


def test_vq_agrees_with_vector_quantize_pytorch() -> None:
    """Same codebooks in vector-quantize-pytorch (2 heads, separate codebooks) give the same code indices."""
    vqp = pytest.importorskip("vector_quantize_pytorch")
    torch.manual_seed(0)
    ours = VQEMA(n_codebooks=2, n_latents=4, codebook_size=16, dim=16, init_from_data=False).eval()
    ref = vqp.VectorQuantize(dim=32, codebook_size=16, codebook_dim=16, heads=2, separate_codebook_per_head=True)
    ref = ref.eval()
    ref._codebook.embed.data.copy_(ours.embed)
    z = torch.randn(8, ours.latent_dim)
    _, ref_idx, _ = ref(z.reshape(8, 4, 32))
    assert torch.equal(ours(z).indices, ref_idx.long())


def test_straight_through_gradient_is_identity_and_commitment_gradcheck() -> None:
    """d z_q / d z is the identity (straight-through; the value is the code, piecewise constant in z), and the
    commitment loss's hand-free gradient passes gradcheck in float64 (codes fixed within eps)."""
    torch.manual_seed(0)
    vq = _vq().eval().double()
    z = torch.randn(3, vq.latent_dim, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: vq(x).loss, (z,), eps=1e-7, atol=1e-6)
    jac = torch.autograd.functional.jacobian(lambda x: vq(x).z_q, z)
    assert torch.allclose(jac.reshape(z.numel(), z.numel()), torch.eye(z.numel(), dtype=torch.float64))


def test_commitment_loss_is_beta_times_mse_to_the_stopped_codes() -> None:
    """L_VQ = beta * mean((z - sg(z_hat))^2); its gradient reaches z only, 2 beta (z - z_hat) / n."""
    vq = _vq(beta=0.25).eval()
    z = torch.randn(4, vq.latent_dim, requires_grad=True)
    out = vq(z)
    z_hat = out.z_q.detach()
    assert out.loss.item() == pytest.approx(0.25 * ((z.detach() - z_hat) ** 2).mean().item(), rel=1e-6)
    out.loss.backward()
    assert z.grad is not None
    assert torch.allclose(z.grad, 2 * 0.25 * (z.detach() - z_hat) / z.numel(), atol=1e-7)


def test_one_ema_update_matches_the_hand_formula() -> None:
    """N <- g N + (1-g) n; m <- g m + (1-g) sum z; e = m / ((N + eps) / (sum N + K eps) * sum N)."""
    vq = VQEMA(n_codebooks=1, n_latents=1, codebook_size=3, dim=2, decay=0.9, eps=1e-5, init_from_data=False)
    vq.embed.copy_(torch.tensor([[[0.0, 0.0], [1.0, 1.0], [5.0, 5.0]]]))
    vq.embed_avg.copy_(torch.tensor([[[0.0, 0.0], [2.0, 2.0], [5.0, 5.0]]]))
    vq.cluster_size.copy_(torch.tensor([[1.0, 2.0, 1.0]]))
    z = torch.tensor([[0.1, -0.1], [0.9, 1.2], [1.1, 0.7], [0.2, 0.0]])
    out = vq.train()(z)
    assert out.indices.flatten().tolist() == [0, 1, 1, 0]
    n = np.array([2.0, 2.0, 0.0])
    sums = np.array([[0.3, -0.1], [2.0, 1.9], [0.0, 0.0]])
    big_n = 0.9 * np.array([1.0, 2.0, 1.0]) + 0.1 * n
    m = 0.9 * np.array([[0.0, 0.0], [2.0, 2.0], [5.0, 5.0]]) + 0.1 * sums
    total = big_n.sum()
    smoothed = (big_n + 1e-5) / (total + 3 * 1e-5) * total
    np.testing.assert_allclose(vq.cluster_size[0].numpy(), big_n, rtol=1e-6)
    np.testing.assert_allclose(vq.embed_avg[0].numpy(), m, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(vq.embed[0].numpy(), m / smoothed[:, None], rtol=1e-5)
    # the forward pass used the codes from before the update
    assert torch.allclose(out.z_q[1], torch.tensor([1.0, 1.0]))


def test_perplexity_counts_used_codes_and_dead_codes_are_reseeded() -> None:
    """Perplexity is exp(entropy) of code usage: 1 when one code is used, K when all are used equally;
    with a dead-code threshold unused codes are moved onto batch vectors."""
    vq = VQEMA(n_codebooks=1, n_latents=1, codebook_size=4, dim=1, init_from_data=False).eval()
    vq.embed.copy_(torch.tensor([[[0.0], [1.0], [2.0], [3.0]]]))
    assert vq(torch.zeros(8, 1)).perplexity.item() == pytest.approx(1.0, rel=1e-5)
    assert vq(torch.tensor([[0.0], [1.0], [2.0], [3.0]])).perplexity.item() == pytest.approx(4.0, rel=1e-5)
    dead = VQEMA(n_codebooks=1, n_latents=1, codebook_size=4, dim=1, decay=0.5, dead_code_threshold=0.6,
                 init_from_data=False)  # fmt: skip
    dead.embed.copy_(torch.tensor([[[0.0], [100.0], [200.0], [300.0]]]))
    dead.embed_avg.copy_(dead.embed)
    dead.train()(torch.full((16, 1), 0.5))
    assert torch.all(dead.embed[0, 1:] == 0.5)  # re-seeded from the batch


def test_vq_init_from_data_uses_batch_vectors() -> None:
    """With init_from_data the first training batch seeds the codebooks (no collapse onto far random codes)."""
    torch.manual_seed(0)
    vq = VQEMA(n_codebooks=2, n_latents=4, codebook_size=8, dim=16, decay=0.999).train()
    z = 10 + torch.randn(32, vq.latent_dim)
    out = vq(z)
    assert out.perplexity.item() > 2.0
    assert bool(vq.initialized)
