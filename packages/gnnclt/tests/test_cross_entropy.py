"""Cross-entropy heads: gradient check, Lipschitz constant, Kantorovich-Rubinstein risk-gap bound."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads
from nips25_gnnclt import CEHead, ce_lipschitz, ce_risk, risk_gap, sample_mixture, train_ce_head


def test_head_loss_gradients_x64():
    with jax.enable_x64(True):
        rng = np.random.default_rng(0)
        H = jnp.asarray(rng.normal(size=(20, 3)))
        y = np.arange(20) % 3
        head = CEHead(W=jnp.asarray(rng.normal(size=(3, 3))), b=jnp.asarray(rng.normal(size=3)))
        check_grads(lambda W, b: ce_risk(CEHead(W, b), H, y), (head.W, head.b), order=1, modes=["rev"])


def test_lipschitz_constant_bounds_the_input_gradient():
    """|| d loss / d h || <= sqrt(2) ||W||_2 for every sample (per-sample gradient of the mean, times n)."""
    rng = np.random.default_rng(1)
    W = rng.normal(size=(2, 4))
    head = CEHead(W=jnp.asarray(W, jnp.float32), b=jnp.zeros(4))
    H = jnp.asarray(rng.normal(size=(50, 2)) * 3, jnp.float32)
    y = np.arange(50) % 4
    g = jax.grad(lambda h: ce_risk(head, h, y))(H) * 50
    assert float(jnp.linalg.norm(g, axis=1).max()) <= ce_lipschitz(W) * (1 + 1e-5)


def test_risk_gap_within_w1_bound_for_every_head():
    """|R_P(W) - R_G(W)| <= sqrt2 ||W|| sum_c pi_c W1(P_c, G_c), W1 exact by matching, for random W."""
    rng = np.random.default_rng(2)
    y = np.repeat([0, 1], 60)
    P = rng.standard_t(3, size=(120, 2)) + 2 * np.eye(2)[y]
    G = np.asarray(sample_mixture(jax.random.key(0), 2 * np.eye(2), np.stack([np.eye(2)] * 2), y))
    for seed in range(10):
        w = np.random.default_rng(seed).normal(size=(2, 2)) * 3
        gap = risk_gap(CEHead(W=jnp.asarray(w, jnp.float32), b=jnp.zeros(2)), P, y, G, y)
        assert gap.gap <= gap.bound


def test_trained_heads_agree_and_training_is_deterministic():
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1], 50)
    P = rng.normal(size=(100, 2)) * 0.5 + np.eye(2)[y]
    h1 = train_ce_head(P, y, jax.random.key(0), n_classes=2, l2=1e-2, steps=20)
    h2 = train_ce_head(P, y, jax.random.key(0), n_classes=2, l2=1e-2, steps=20)
    np.testing.assert_array_equal(np.asarray(h1.W), np.asarray(h2.W))

    # the minimiser beats the zero head and a perturbed head (strictly convex objective)
    def objective(head):
        return float(ce_risk(head, P, y)) + 0.5e-2 * float(jnp.sum(head.W**2))

    assert objective(h1) < np.log(2) - 0.2
    for d in (1e-2, -1e-2):
        assert objective(h1) <= objective(CEHead(h1.W + d, h1.b)) + 1e-6


def test_cross_entropy_rejects_bad_input():
    head = CEHead(W=jnp.ones((2, 2)), b=jnp.zeros(2))
    with pytest.raises(ValueError, match="y"):
        ce_risk(head, np.ones((3, 2)), np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="head.W"):
        ce_risk(head, np.ones((3, 3)), np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="l2"):
        train_ce_head(np.ones((3, 2)), np.array([0, 1, 1]), jax.random.key(0), n_classes=2, l2=-1.0)
    with pytest.raises(ValueError, match="n_classes"):
        train_ce_head(np.ones((3, 2)), np.array([0, 0, 0]), jax.random.key(0), n_classes=1)
    with pytest.raises(ValueError, match="same count"):
        risk_gap(head, np.ones((2, 2)), np.array([0, 1]), np.ones((2, 2)), np.array([0, 0]))
    with pytest.raises(ValueError, match="covs"):
        sample_mixture(jax.random.key(0), np.eye(2), -np.stack([np.eye(2)] * 2), np.array([0, 1]))
