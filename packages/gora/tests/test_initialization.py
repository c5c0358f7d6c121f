"""Known-answer tests of the compressed-gradient initialisation (GoRA, Sec. 3.3)."""

from __future__ import annotations

import math

import pytest
import torch
from nips25_gora import GoraConfig, apply_gora, compress_init, lora_scaling, projection


def _draw(m: int, n: int, r: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(m, n, generator=gen, dtype=torch.float64), torch.randn(r, n, generator=gen, dtype=torch.float64)


def test_solve_equals_least_squares():
    """B = -(xi sqrt(n)/alpha) lstsq(A^T, G^T)^T in float64 (rsLoRA scaling)."""
    g, a = _draw(12, 20, 5, 0)
    xi, alpha = 0.05, 16.0
    b = compress_init(g, a, xi=xi, lora_alpha=alpha, ridge=0.0)
    expected = -(xi * math.sqrt(20) / alpha) * torch.linalg.lstsq(a.T, g.T).solution.T
    torch.testing.assert_close(b, expected, rtol=1e-10, atol=1e-12)


def test_projection_is_symmetric_idempotent_rank_r():
    """P_A = A^T (A A^T)^{-1} A is an orthogonal projector of rank r."""
    _, a = _draw(1, 30, 7, 1)
    p = projection(a)
    torch.testing.assert_close(p, p.T, rtol=0, atol=1e-10)
    torch.testing.assert_close(p @ p, p, rtol=0, atol=1e-10)
    assert torch.linalg.matrix_rank(p).item() == 7
    assert torch.trace(p).item() == pytest.approx(7.0, abs=1e-10)


@pytest.mark.parametrize("rank_stabilized", [True, False])
def test_update_is_scaled_gradient_projected_on_row_space_of_a(rank_stabilized):
    """s B0 A0 = -xi sqrt(n/r) G P_A for both scalings (the scaling cancels)."""
    g, a = _draw(9, 16, 4, 2)
    xi, alpha = 0.1, 8.0
    s = lora_scaling(4, lora_alpha=alpha, rank_stabilized=rank_stabilized)
    b = compress_init(g, a, xi=xi, lora_alpha=alpha, rank_stabilized=rank_stabilized, ridge=0.0)
    torch.testing.assert_close(s * b @ a, -xi * math.sqrt(16 / 4) * g @ projection(a), rtol=1e-9, atol=1e-12)


def test_full_rank_update_is_one_sgd_step():
    """At r = n, P_A = I and s B A = -xi G exactly: gradient DESCENT (the official HEAD's ascent fails this)."""
    g, a = _draw(6, 8, 8, 3)
    b = compress_init(g, a, xi=0.05, lora_alpha=16.0, ridge=0.0)
    torch.testing.assert_close(lora_scaling(8, lora_alpha=16.0) * b @ a, -0.05 * g, rtol=1e-9, atol=1e-12)


def test_expected_update_energy_is_one_sgd_step():
    """E||dW0||_F^2 = xi^2 ||G||_F^2 over random A (E[P_A] = (r/n) I); 200 draws, Gaussian 48x64, r=4."""
    gen = torch.Generator().manual_seed(4)
    g = torch.randn(48, 64, generator=gen, dtype=torch.float64)
    xi, ratios = 0.05, []
    for _ in range(200):
        a = torch.randn(4, 64, generator=gen, dtype=torch.float64)
        delta = lora_scaling(4, lora_alpha=16.0) * compress_init(g, a, xi=xi, lora_alpha=16.0, ridge=0.0) @ a
        ratios.append((delta.norm() ** 2 / (xi**2 * g.norm() ** 2)).item())
    assert sum(ratios) / len(ratios) == pytest.approx(1.0, abs=0.05)


def test_apply_gora_at_full_rank_equals_manual_sgd_step(make_bert, make_batches, hidden):
    """With r_i = n for every target, the GoRA model's logits equal the base model after W <- W - xi G (1e-6)."""
    batches = make_batches()
    targets = ("query", "value")
    xi = 0.5
    reference = make_bert()
    model = make_bert()
    config = GoraConfig(target_modules=targets, r_ref=hidden, r_min=hidden, r_max=hidden, xi=xi, n_steps=3)
    peft_model = apply_gora(model, batches, config)
    assert set(peft_model.gora_init.ranks.values()) == {hidden}
    # manual step: mean gradient of the mean loss over the batches, W <- W - xi * G
    params = {n: p for n, p in reference.named_parameters() if n.endswith(("query.weight", "value.weight"))}
    loss = sum(reference(**b).loss for b in batches) / len(batches)
    grads = torch.autograd.grad(loss, list(params.values()))
    with torch.no_grad():
        for p, g in zip(params.values(), grads):
            p -= xi * g
        x = make_batches(1, seed=9)[0]
        expected = reference(input_ids=x["input_ids"]).logits
        got = peft_model(input_ids=x["input_ids"]).logits
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)
    assert max(peft_model.gora_init.relative_error.values()) < 1e-4


def test_gora_init_lowers_the_loss(make_bert, make_batches):
    """The init is a descent step: the loss on the gradient batches drops below the base model's."""
    batches = make_batches()
    model = make_bert()
    with torch.no_grad():
        base = sum(model(**b).loss.item() for b in batches)
    peft_model = apply_gora(model, batches, GoraConfig(target_modules=("query", "key", "value"), xi=0.5, r_min=2))
    with torch.no_grad():
        after = sum(peft_model(**b).loss.item() for b in batches)
    assert after < base


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"xi": 0.0}, "xi"),
        ({"xi": float("nan")}, "xi"),
        ({"ridge": -1.0}, "ridge"),
        ({"lora_alpha": -1.0}, "lora_alpha"),
    ],
)
def test_compress_init_rejects_bad_hyper_parameters(kwargs, word):
    g, a = _draw(3, 4, 2, 5)
    with pytest.raises(ValueError, match=word):
        compress_init(g, a, **kwargs)


def test_compress_init_rejects_bad_tensors():
    g, a = _draw(3, 4, 2, 6)
    with pytest.raises(ValueError, match="lora_A"):
        compress_init(g, a[:, :3])
    bad = g.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="grad"):
        compress_init(bad, a)
    with pytest.raises(ValueError, match="grad"):
        compress_init(torch.zeros(0, 4, dtype=torch.float64), a)
    with pytest.raises(TypeError, match="grad"):
        compress_init(g.numpy(), a)
    with pytest.raises(ValueError, match="grad"):
        compress_init(g[0], a)


def test_projection_and_compress_init_reject_negative_ridge_and_rank_deficient_a():
    g, a = _draw(3, 6, 2, 7)
    with pytest.raises(ValueError, match="ridge"):
        projection(a, ridge=-1)
    with pytest.raises(ValueError, match="lora_A is rank-deficient"):
        compress_init(g, torch.zeros(3, 6, dtype=torch.float64), ridge=0.0)
    with pytest.raises(ValueError, match="lora_A is rank-deficient"):
        projection(torch.zeros(3, 6), ridge=0.0)


def _ill_conditioned(n: int, cond: float, seed: int) -> torch.Tensor:
    """A random (n, n) lora_A at peft's kaiming-uniform scale (1/sqrt(n)) with condition number ``cond``."""
    gen = torch.Generator().manual_seed(seed)
    u, _ = torch.linalg.qr(torch.randn(n, n, generator=gen, dtype=torch.float64))
    v, _ = torch.linalg.qr(torch.randn(n, n, generator=gen, dtype=torch.float64))
    return (u * (torch.logspace(0, -math.log10(cond), n, dtype=torch.float64) / math.sqrt(n))) @ v.T


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_full_rank_ill_conditioned_a_is_one_sgd_step_to_1e6(dtype):
    """cond(A) = 387 at r = n = 6: the least-squares solve gives s B A = -xi G to 1e-6 (float32 inputs included).

    The official absolute ridge 1e-8 on A A^T (whose condition is 387^2) biases the step by ~4e-4 here: kept as
    ``ridge=1e-8`` for parity, no longer the default.
    """
    a = _ill_conditioned(6, 387.0, seed=0)
    assert float(torch.linalg.cond(a)) == pytest.approx(387.0, rel=1e-6)
    g = torch.randn(5, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    s = lora_scaling(6, lora_alpha=16.0)
    b = compress_init(g.to(dtype), a.to(dtype), xi=0.05, lora_alpha=16.0)
    step = s * b.double() @ a.to(dtype).double()
    torch.testing.assert_close(step, -0.05 * g, rtol=0, atol=1e-6)
    official = compress_init(g, a, xi=0.05, lora_alpha=16.0, ridge=1e-8)
    assert float((s * official @ a + 0.05 * g).abs().max()) > 1e-5


def test_least_squares_handles_a_rank_deficient_a():
    """ridge=None gives the minimum-norm solve: s B A = -xi sqrt(n/r) G P with P the projector onto A's row space."""
    g, a = _draw(3, 6, 2, 8)
    a = torch.cat([a, a[:1]])  # rank 2, three rows
    p = projection(a)
    torch.testing.assert_close(p @ p, p, rtol=0, atol=1e-10)
    assert torch.trace(p).item() == pytest.approx(2.0, abs=1e-10)
    b = compress_init(g, a, xi=0.1, lora_alpha=4.0, rank_stabilized=False)
    s = lora_scaling(3, lora_alpha=4.0, rank_stabilized=False)
    torch.testing.assert_close(s * b @ a, -0.1 * math.sqrt(6 / 3) * g @ p, rtol=1e-9, atol=1e-12)
