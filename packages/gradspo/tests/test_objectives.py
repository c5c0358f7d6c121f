"""Known answers for the three losses: closed forms, the log 2 start, the start gradient, sign, clamp, gradcheck."""

from __future__ import annotations

import math

import pytest
import torch
from nips25_gradspo import (
    antithetic_noise,
    clipped_ratio_loss,
    diffusion_dpo_loss,
    gradspo_loss,
    spo_loss,
    step_weights,
)

from .conftest import sd15_scheduler

D64 = torch.float64


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _setup(seed: int = 0, b: int = 3):
    g = _gen(seed)
    shape = (b, 2, 3, 3)
    eps_t, eps_r, eps_e = (torch.randn(shape, generator=g, dtype=D64) for _ in range(3))
    n_w, n_l = torch.randn(shape, generator=g, dtype=D64), torch.randn(shape, generator=g, dtype=D64)
    a_t = torch.rand(b, generator=g, dtype=D64) * 0.8 + 0.1
    return eps_t, eps_r, eps_e, n_w, n_l, a_t


def _log_ratio_diff(loss_fn, beta: float = 1.0) -> float:
    """Invert L = -log sigmoid(beta * delta) for the (unclipped) log-ratio difference delta."""
    loss, _ = loss_fn()
    return -math.log(math.expm1(float(loss))) / beta


def test_gradspo_log_ratio_difference_matches_closed_form():
    """Unclipped: log rho_w - log rho_l = -2 c_t <eps_theta - eps_ref, n_w - n_l> / D, eps_ema cancels."""
    eps_t, eps_r, eps_e, n_w, n_l, a_t = _setup()
    eps_t = eps_r + 1e-3 * eps_t  # stay inside the clip band
    d = eps_t[0].numel()
    nt = (n_w - n_l) / 2
    for i in range(3):
        sl = slice(i, i + 1)
        got = _log_ratio_diff(
            lambda sl=sl: gradspo_loss(eps_t[sl], eps_r[sl], eps_e[sl], nt[sl], a_t[sl], beta=1.0, clip=0.5)
        )
        c = 0.5 * math.sqrt(1 - float(a_t[i]))
        want = -2 * c * float(((eps_t[i] - eps_r[i]) * (n_w[i] - n_l[i])).sum()) / d
        assert got == pytest.approx(want, rel=1e-8, abs=1e-12)


def test_spo_log_ratio_difference_matches_closed_form():
    """Unclipped: log rho_w - log rho_l = -(k_t / sigma_t) <eps_theta - eps_ref, n_w - n_l> / D."""
    eps_t, eps_r, _, n_w, n_l, _ = _setup(1)
    eps_t = eps_r + 1e-4 * eps_t
    s = sd15_scheduler()
    from nips25_gradspo import ddim_coefficients, ddim_mean

    t = int(s.timesteps[5])
    co = ddim_coefficients(s, t)
    x_t = torch.randn(eps_t.shape, generator=_gen(2), dtype=D64)
    mu_s, sigma = ddim_mean(s, eps_r, x_t, t)  # sampler = any model; the mean cancels
    x_w, x_l = mu_s + sigma * n_w, mu_s + sigma * n_l
    w_spo = float(step_weights(s, method="spo")[5])
    d = eps_t[0].numel()
    for i in range(3):
        sl = slice(i, i + 1)
        got = _log_ratio_diff(
            lambda sl=sl: spo_loss(
                eps_t[sl],
                eps_r[sl],
                x_t[sl],
                x_w[sl],
                x_l[sl],
                co.alpha_bar_t,
                co.alpha_bar_prev,
                co.sigma_t,
                beta=1.0,
                clip=0.5,
            )
        )
        want = -w_spo * float(((eps_t[i] - eps_r[i]) * (n_w[i] - n_l[i])).sum()) / d
        assert got == pytest.approx(want, rel=1e-7, abs=1e-12)


def test_start_point_is_log2_and_gradient_is_two_beta_c_over_d():
    """theta = ref = ema: L = log 2 and dL/d eps_theta = 2 beta c_t n_tilde / (D B)."""
    _, eps_r, _, n_w, n_l, a_t = _setup(3)
    nt = (n_w - n_l) / 2
    eps_t = eps_r.clone().requires_grad_(True)
    loss, st = gradspo_loss(eps_t, eps_r, eps_r, nt, a_t, beta=10.0)
    assert float(loss) == pytest.approx(math.log(2), abs=1e-12)
    assert st["mean_ratio"] == pytest.approx(1.0)
    loss.backward()
    b, d = eps_r.shape[0], eps_r[0].numel()
    c = (0.5 * (1 - a_t).sqrt()).view(-1, 1, 1, 1)
    torch.testing.assert_close(eps_t.grad, 2 * 10.0 * c * nt / (d * b), rtol=1e-10, atol=1e-14)


def test_swapping_winner_and_loser_flips_the_gradient():
    """Antithetic pair: swapping w and l negates n_tilde and, near the start, the gradient."""
    eps_t, eps_r, eps_e, n_w, n_l, a_t = _setup(4)
    base = eps_r + 1e-6 * eps_t
    grads = []
    zero, one = torch.zeros(3, dtype=torch.long), torch.ones(3, dtype=torch.long)
    noise = torch.stack([n_w, n_l])
    for nt in (antithetic_noise(noise, zero, one), antithetic_noise(noise, one, zero)):
        e = base.clone().requires_grad_(True)
        gradspo_loss(e, eps_r, eps_e, nt, a_t)[0].backward()
        grads.append(e.grad)
    torch.testing.assert_close(grads[0], -grads[1], rtol=1e-4, atol=1e-12)
    assert grads[0].abs().sum() > 0


def test_clamp_gives_zero_gradient_outside_band():
    """rho outside [1 - eps, 1 + eps]: clamped, so no gradient flows."""
    lw = torch.tensor([0.5, -0.5, 0.01], dtype=D64, requires_grad=True)  # exp: 1.65, 0.61 (outside), 1.01 (inside)
    ll = torch.zeros(3, dtype=D64, requires_grad=True)
    loss, st = clipped_ratio_loss(lw, ll, beta=10.0, clip=0.1)
    loss.backward()
    assert lw.grad[0] == 0 and lw.grad[1] == 0 and lw.grad[2] != 0
    assert st["clip_fraction"] == pytest.approx(2 / 6)


def test_gradcheck_gradspo_and_spo_float64():
    """Autograd of both losses agrees with finite differences in float64 (inside the clip band)."""
    eps_t, eps_r, eps_e, n_w, n_l, a_t = _setup(5, b=2)
    e = (eps_r + 1e-3 * eps_t).requires_grad_(True)
    nt = (n_w - n_l) / 2
    assert torch.autograd.gradcheck(lambda x: gradspo_loss(x, eps_r, eps_e, nt, a_t)[0], (e,))
    s = sd15_scheduler()
    from nips25_gradspo import ddim_coefficients

    co = ddim_coefficients(s, torch.tensor([901, 501]))
    x_t = torch.randn(e.shape, generator=_gen(6), dtype=D64)
    x_w, x_l = x_t + 0.01 * n_w, x_t + 0.01 * n_l
    ee = (eps_r + 1e-6 * eps_t).requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda x: spo_loss(x, eps_r, x_t, x_w, x_l, co.alpha_bar_t, co.alpha_bar_prev, co.sigma_t)[0], (ee,)
    )


def test_diffusion_dpo_loss_hand_value():
    """One pair by hand: mse_w - mse_l = 1 - 0, reference margin 0 -> L = -log sigmoid(-beta/2) = softplus(beta/2)."""
    noise = torch.zeros(1, 1, 1, 2, dtype=D64)
    ew = torch.ones(1, 1, 1, 2, dtype=D64)
    el = torch.zeros(1, 1, 1, 2, dtype=D64)
    loss, st = diffusion_dpo_loss(ew, el, el, el, noise, beta=2.0)
    assert float(loss) == pytest.approx(math.log1p(math.e), rel=1e-12)
    assert st["accuracy"] == 0.0
    z = torch.zeros(2, 1, 2, 2)
    assert float(diffusion_dpo_loss(z, z, z, z, z)[0]) == pytest.approx(math.log(2))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"beta": 0.0}, "beta"),
        ({"clip": 1.0}, "clip"),
        ({"grad_scale": -1.0}, "grad_scale"),
        ({"beta": math.nan}, "beta"),
    ],
)
def test_gradspo_loss_rejects_bad_hyper_parameters(kwargs, match):
    z = torch.zeros(2, 1, 2, 2)
    with pytest.raises(ValueError, match=match):
        gradspo_loss(z, z, z, z, torch.full((2,), 0.5), **kwargs)


def test_losses_reject_bad_tensors():
    z = torch.zeros(2, 1, 2, 2)
    a = torch.full((2,), 0.5)
    with pytest.raises(ValueError, match="eps_ref"):
        gradspo_loss(z, torch.zeros(3, 1, 2, 2), z, z, a)
    with pytest.raises(ValueError, match="n_tilde"):
        gradspo_loss(z, z, z, torch.full_like(z, math.nan), a)
    with pytest.raises(ValueError, match="alpha_bar_t"):
        gradspo_loss(z, z, z, z, torch.full((2,), 1.5))
    with pytest.raises(ValueError, match="eps_theta"):
        gradspo_loss(torch.zeros(0), z, z, z, a)
    with pytest.raises(TypeError, match="eps_theta"):
        gradspo_loss(z.long(), z, z, z, a)
    with pytest.raises(ValueError, match="sigma_t"):
        spo_loss(z, z, z, z, z, a, a, torch.zeros(2))
    with pytest.raises(ValueError, match="x_w"):
        spo_loss(z, z, z, torch.zeros(2, 1, 2, 3), z, a, a, a)
    with pytest.raises(ValueError, match="noise"):
        diffusion_dpo_loss(z, z, z, z, torch.full_like(z, math.inf))
    with pytest.raises(ValueError, match="beta"):
        diffusion_dpo_loss(z, z, z, z, z, beta=-1.0)
    with pytest.raises(ValueError, match="log_ratio_l"):
        clipped_ratio_loss(torch.zeros(2), torch.zeros(3), beta=1.0, clip=0.1)
