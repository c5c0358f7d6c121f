"""Known-answer tests of the Stage-1 objectives: InfoNCE closed form, Sinkhorn marginals, random shift, EMA."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_bcvlr import CurlObjective, ImpalaEncoder, ProtoTemporalObjective, curl_info_nce, random_shift, sinkhorn
from nips25_bcvlr.representation import ema_update_


@settings(max_examples=15, deadline=None)
@given(b=st.integers(2, 12), s=st.floats(0.0, 8.0), seed=st.integers(0, 1000))
def test_info_nce_closed_form_for_orthonormal_matched_pairs(b: int, s: float, seed: int) -> None:
    """q = k orthonormal and W = s I give logits s on the diagonal and 0 elsewhere: L = log(1 + (B-1) e^{-s})."""
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(16, 16, generator=g, dtype=torch.float64))
    q = q[:b]
    loss = curl_info_nce(q, q, s * torch.eye(16, dtype=torch.float64))
    assert loss.item() == pytest.approx(math.log1p((b - 1) * math.exp(-s)), rel=1e-9, abs=1e-12)


def test_sinkhorn_marginals_rows_exact_columns_converge() -> None:
    """Rows (samples) sum to 1; columns approach B/K: error <= 1e-6 after 50 iterations, and 3 beat 1."""
    torch.manual_seed(0)
    scores = torch.randn(32, 8, dtype=torch.float64)

    def col_err(n: int) -> float:
        q = sinkhorn(scores, n_iters=n, epsilon=0.5)
        assert torch.allclose(q.sum(1), torch.ones(32, dtype=torch.float64), atol=1e-12)
        assert bool((q >= 0).all())
        return float((q.sum(0) - 32 / 8).abs().max())

    assert col_err(50) <= 1e-6
    assert col_err(3) < col_err(1)


def test_sinkhorn_of_uniform_scores_is_uniform() -> None:
    """Equal scores: every sample is split equally over the prototypes, 1/K each."""
    q = sinkhorn(torch.zeros(5, 4), n_iters=3)
    assert torch.allclose(q, torch.full((5, 4), 0.25))


def test_random_shift_is_an_integer_translation_with_replicated_border() -> None:
    """Each output equals the input translated by some (dy, dx) in [-pad, pad]^2, edges replicated; pad 0 is id."""
    torch.manual_seed(0)
    x = torch.randn(6, 2, 7, 7)
    assert torch.equal(random_shift(x, pad=0), x)
    y = random_shift(x, pad=1, generator=torch.Generator().manual_seed(1))
    padded = torch.nn.functional.pad(x, (1, 1, 1, 1), mode="replicate")
    for i in range(6):
        shifts = [
            (dy, dx) for dy in range(3) for dx in range(3) if torch.equal(y[i], padded[i, :, dy : dy + 7, dx : dx + 7])
        ]
        assert shifts, f"image {i} is not a shifted crop"


def test_ema_update_interpolates_parameters() -> None:
    """theta' <- (1 - tau) theta' + tau theta, parameter by parameter."""
    a, b = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    before = [p.clone() for p in a.parameters()]
    ema_update_(a, b, tau=0.25)
    for p0, pa, pb in zip(before, a.parameters(), b.parameters()):
        assert torch.allclose(pa, 0.75 * p0 + 0.25 * pb)


def test_objectives_give_finite_losses_and_gradients_to_the_encoder() -> None:
    """Both Stage-1 objectives back-propagate into the shared encoder and not into the EMA targets."""
    torch.manual_seed(0)
    obs = torch.rand(8, 3, 10, 10) - 0.5
    for obj in (
        CurlObjective(ImpalaEncoder(channels=4), (3, 10, 10), dim=8),
        ProtoTemporalObjective(ImpalaEncoder(channels=4), (3, 10, 10), dim=8, n_protos=6, pad=2),
    ):
        loss = obj(obs) if isinstance(obj, CurlObjective) else obj(obs, obs.roll(1, 0))
        loss.backward()
        assert math.isfinite(loss.item())
        assert obj.encoder.conv.weight.grad is not None
        assert all(p.grad is None for p in obj.target_encoder.parameters())
        obj.update_target()
