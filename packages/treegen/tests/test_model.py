"""TreeGen network: equivariance, loss, sampler shapes, validity bookkeeping, determinism, training."""

import numpy as np
import pytest
import torch
from nips25_treegen.ginkgo import simulate, tree_log_lik
from nips25_treegen.hierarchy import encode, is_binary_tree
from nips25_treegen.model import TrainConfig, TreeGen, TreeGenConfig, jet_features, row_layout, train

SMALL = TreeGenConfig(n_max=7, d_model=16, n_heads=2, n_layers=1)


def _batch(n=6, b=4, seed=0):
    jets = simulate(b, n_leaves=(n, n), seed=seed)
    return np.stack([j.leaves for j in jets]), np.stack([j.parents for j in jets])


def test_row_layout_matches_parametrisation():
    """N A-rows with N-1 classes; B-row i has N-2-i classes (strictly upper triangular)."""
    mask, k = row_layout(6)
    assert mask.shape == (10, 5)
    assert k.tolist() == [5] * 6 + [4, 3, 2, 1]


def test_network_is_leaf_permutation_equivariant():
    """Permuting the leaves permutes the A-row logits and leaves the B-row logits unchanged."""
    torch.manual_seed(0)
    model = TreeGen(SMALL).eval()
    leaves, _ = _batch()
    perm = np.array([3, 0, 5, 1, 4, 2])
    lf, pf = jet_features(leaves)
    lf2, pf2 = jet_features(leaves[:, perm])
    mask, _ = row_layout(6)
    theta = torch.softmax(torch.randn(4, 10, 5).masked_fill(~mask, -torch.inf), -1)
    theta2 = theta.clone()
    theta2[:, :6] = theta[:, perm]
    t = torch.rand(4)
    with torch.no_grad():
        out, out2 = model(lf, pf, theta, t), model(lf2, pf2, theta2, t)
    assert torch.allclose(out[:, perm], out2[:, :6], atol=1e-5)
    assert torch.allclose(out[:, 6:], out2[:, 6:], atol=1e-5)


def test_loss_finite_and_gradients_flow():
    torch.manual_seed(0)
    model = TreeGen(SMALL)
    leaves, parents = _batch()
    loss = model.loss(leaves, parents, generator=torch.Generator().manual_seed(0))
    loss.backward()
    assert torch.isfinite(loss) and loss > 0
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


def test_every_decoded_sample_is_a_binary_tree():
    """The issue's test: with the default (constrained) decoder every sample has two children per internal node."""
    torch.manual_seed(0)
    model = TreeGen(SMALL).eval()
    leaves, _ = _batch(n=5, b=2)
    out = model.sample(leaves, n_samples=6, n_steps=3, seed=1)
    assert out.shape == (2, 6, 9)
    for p in out.reshape(-1, 9):
        assert p[-1] == -1 and np.all(p[:-1] > np.minimum(np.arange(8), 4))  # edges point to higher slots
        assert is_binary_tree(p, 5)
        kids = np.bincount(p[p >= 0], minlength=9)
        assert np.all(kids[5:] == 2) and np.all(kids[:5] == 0)


def test_sampling_and_training_are_deterministic():
    leaves, _ = _batch(n=5, b=8)
    jets = simulate(16, n_leaves=(5, 6), seed=2)
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        model = TreeGen(SMALL)
        losses = train(model, jets, TrainConfig(steps=3, batch_size=4, seed=0))
        runs.append((losses, model.sample(leaves, n_samples=2, n_steps=2, seed=5)))
    assert runs[0][0] == runs[1][0]
    assert np.array_equal(runs[0][1], runs[1][1])


def test_cross_entropy_variant_and_quadratic_schedule():
    torch.manual_seed(0)
    leaves, parents = _batch()
    for cfg in (
        TreeGenConfig(n_max=7, d_model=16, n_heads=2, n_layers=1, loss_weighting="cross_entropy"),
        TreeGenConfig(n_max=7, d_model=16, n_heads=2, n_layers=1, schedule="quadratic"),
    ):
        assert torch.isfinite(TreeGen(cfg).loss(leaves, parents))


def test_model_rejects_bad_input():
    model = TreeGen(SMALL)
    leaves, parents = _batch()
    with pytest.raises(ValueError, match="d_model"):
        TreeGenConfig(d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="schedule"):
        TreeGenConfig(schedule="linear")
    with pytest.raises(ValueError, match="loss_weighting"):
        TreeGenConfig(loss_weighting="l1")
    with pytest.raises(ValueError, match="n_max"):
        model.loss(np.ones((2, 9, 4)), np.zeros((2, 17), dtype=int))
    with pytest.raises(ValueError, match="parents"):
        model.loss(leaves, parents[:, :-1])
    with pytest.raises(ValueError, match="finite"):
        model.sample(np.full((6, 4), np.nan))
    with pytest.raises(ValueError, match="n_samples"):
        model.sample(leaves[0], n_samples=0)
    with pytest.raises(ValueError, match="n_steps"):
        model.sample(leaves[0], n_steps=0)
    with pytest.raises(ValueError, match="batch_jets"):
        model.sample(leaves, batch_jets=0)
    with pytest.raises(ValueError, match="decoder"):
        model.sample(leaves, decoder="repair")
    with pytest.raises(TypeError, match="constrain_steps"):
        model.sample(leaves, constrain_steps="yes")
    with pytest.raises(ValueError, match="jets"):
        train(model, [])
    with pytest.raises(ValueError, match="steps"):
        TrainConfig(steps=0)
    with pytest.raises(ValueError, match="positive energies"):
        jet_features(-np.abs(leaves))


def _patched(model, logits_fn):
    """Replace the network by ``logits_fn(theta)`` (masked logits) to test the BFN sampler alone."""
    model.forward = lambda lf, pf, theta, t: logits_fn(theta)
    return model


def test_sampler_with_uninformed_network_keeps_every_row_uniform():
    """p_O = theta makes the sampler the exact Bayesian flow of the uniform prior: each row's draw stays uniform."""
    from scipy.stats import chisquare

    n, m = 5, 1500
    mask, k = row_layout(n)
    leaves, _ = _batch(n=n, b=1)
    model = _patched(TreeGen(SMALL).eval(), lambda th: torch.log(th.clamp_min(1e-30)).masked_fill(~mask, -torch.inf))
    rows = model.sample(leaves[0], n_samples=m, n_steps=5, seed=3, decoder="independent")[:, :-1] - n  # slot indices
    for r in range(2 * n - 2):
        if k[r] < 2:
            assert np.all(rows[:, r] == n - 2)
            continue
        counts = np.bincount(rows[:, r], minlength=n - 1)[mask[r].numpy()]
        assert chisquare(counts).pvalue > 1e-3, (r, counts)


def test_sampler_with_uninformed_network_and_constrained_steps_is_uniform_over_valid_tables():
    """p_O = theta restricted to binary trees at every step is the Bayesian flow of the prior uniform over valid (A, B)
    tables, so the final draw is uniform over those tables (martingale), whatever the number of steps (N = 4)."""
    from scipy.stats import chisquare

    n, m = 4, 1800
    mask, _ = row_layout(n)
    leaves, _ = _batch(n=n, b=1)
    model = _patched(TreeGen(SMALL).eval(), lambda th: torch.log(th.clamp_min(1e-30)).masked_fill(~mask, -torch.inf))
    out = model.sample(leaves[0], n_samples=m, n_steps=3, seed=4, decoder="exact", constrain_steps=True)
    assert all(is_binary_tree(p, n) for p in out)
    _, counts = np.unique(out, axis=0, return_counts=True)
    assert counts.size == 18 and chisquare(counts).pvalue > 1e-3, counts


def test_every_default_sample_is_a_physically_valid_tree():
    """Issue 40: with the default decoder every sample of an untrained network (whose rows say nothing) is a binary
    tree with a finite Ginkgo likelihood, at N = 4..7 (exact "valid") and N = 9, 10 ("merge"), and comes in the
    canonical labelling that training uses."""
    from nips25_treegen.hierarchy import clusters
    from nips25_treegen.labelling import canonical_parents

    torch.manual_seed(0)
    model = TreeGen(TreeGenConfig(n_max=10, d_model=16, n_heads=2, n_layers=1)).eval()
    for n in (4, 5, 6, 7, 9, 10):
        leaves, _ = _batch(n=n, b=2, seed=n)
        out = model.sample(leaves, n_samples=12, n_steps=3, seed=n)
        for jet_leaves, trees in zip(leaves, out):
            for p in trees:
                assert is_binary_tree(p, n) and np.isfinite(tree_log_lik(jet_leaves, p)), n
                assert np.array_equal(canonical_parents(jet_leaves, clusters(p, n)), p)


def test_every_sample_of_an_untrained_network_is_a_binary_tree():
    """The constrained decoders give binary trees at every N (independent decoding does not, the old behaviour)."""
    torch.manual_seed(0)
    model = TreeGen(SMALL).eval()
    for n in (3, 5, 7):
        leaves, _ = _batch(n=n, b=2, seed=n)
        for decoder in ("auto", "valid", "merge", "exact", "assignment"):
            for constrain_steps in (False, True):
                out = model.sample(
                    leaves, n_samples=8, n_steps=3, seed=1, decoder=decoder, constrain_steps=constrain_steps
                )
                assert all(is_binary_tree(p, n) for p in out.reshape(-1, 2 * n - 1)), (n, decoder)
    leaves, _ = _batch(n=7, b=2, seed=7)
    out = model.sample(leaves, n_samples=8, n_steps=3, seed=1, decoder="independent")
    assert not all(is_binary_tree(p, 7) for p in out.reshape(-1, 13))


def test_sampler_with_exact_posterior_network_samples_the_exact_posterior():
    """End to end (flow, schedule, canonical labels, final constrained decoding): with p_O the exact posterior
    predictive of the trellis, the samples' TV to the posterior is within 0.03 of exact trellis samples' (N = 4)."""
    from nips25_treegen.labelling import canonical_parents
    from nips25_treegen.trellis import Trellis, enumerate_trees, total_variation

    n, m = 4, 2000
    jet = simulate(1, n_leaves=(n, n), seed=1)[0]
    trellis = Trellis(jet.leaves)
    tables, log_post = [], []
    for masks in enumerate_trees(n):
        parents = canonical_parents(jet.leaves, masks)
        if np.isfinite(lp := trellis.log_posterior(parents)):
            tables.append(np.concatenate(encode(parents, n)))
            log_post.append(lp)
    onehot = torch.nn.functional.one_hot(torch.as_tensor(np.array(tables)), n - 1).double()
    mask, _ = row_layout(n)

    def oracle(theta):
        log_w = torch.as_tensor(log_post)[None] + torch.einsum(
            "trs,brs->bt", onehot, torch.log(theta.double().clamp_min(1e-300))
        )
        marginals = torch.einsum("bt,trs->brs", torch.softmax(log_w, -1), onehot)
        return torch.log(marginals).float().masked_fill(~mask, -torch.inf)

    model = _patched(TreeGen(SMALL).eval(), oracle)
    out = model.sample(jet.leaves, n_samples=m, n_steps=10, seed=0)  # default decoder: "valid"
    assert all(is_binary_tree(p, n) and np.isfinite(tree_log_lik(jet.leaves, p)) for p in out)
    floor = total_variation(trellis, np.stack(trellis.sample(m, seed=1)))
    assert total_variation(trellis, out) < floor + 0.03


def test_sampler_with_certain_network_returns_its_tree():
    """A network that puts all mass on one tree's (A, B) rows makes the sampler return that tree every time."""
    n = 6
    leaves, parents = _batch(n=n, b=1)
    mask, _ = row_layout(n)
    x = torch.as_tensor(np.concatenate(encode(parents[0], n)))
    onehot = torch.nn.functional.one_hot(x, n - 1).bool()
    model = _patched(
        TreeGen(SMALL).eval(), lambda th: torch.where(onehot, 0.0, -40.0).expand_as(th).masked_fill(~mask, -torch.inf)
    )
    for decoder in ("auto", "merge", "exact", "assignment", "independent"):
        out = model.sample(leaves[0], n_samples=50, n_steps=6, seed=0, decoder=decoder)
        assert np.all(out == parents[0]), decoder


def test_training_lowers_loss_below_a_network_that_copies_theta():
    """The training loop learns: the BFN loss on fixed (t, flow) draws falls, and ends below p_O = theta."""
    n = 5
    jets = simulate(64, n_leaves=(n, n), seed=4)
    leaves, parents = np.stack([j.leaves for j in jets]), np.stack([j.parents for j in jets])
    torch.manual_seed(0)
    model = TreeGen(SMALL)
    mask, _ = row_layout(n)

    def fixed_loss(copy=False):
        inputs, x, t = model.loss_inputs(leaves, parents, generator=torch.Generator().manual_seed(9))
        with torch.no_grad():
            logits = torch.log(inputs[2].clamp_min(1e-30)).masked_fill(~mask, -torch.inf) if copy else model(*inputs)
            return float(model.loss_from_logits(logits, x, t))

    before, copy = fixed_loss(), fixed_loss(copy=True)
    train(model, jets, TrainConfig(steps=25, batch_size=32, lr=3e-3, seed=0))
    after = fixed_loss()
    assert after < before and after < copy, (before, after, copy)


def test_sample_rejects_negative_seed_and_exact_decoder_beyond_limit_before_sampling(monkeypatch):
    """Review regressions: ``seed=-1`` raised numpy's unnamed "expected non-negative integer"; ``decoder="exact"``
    above ``EXACT_MAX_LEAVES`` was only rejected after every sampler step had run."""
    from nips25_treegen.decoding import EXACT_MAX_LEAVES

    n = EXACT_MAX_LEAVES + 1
    model = TreeGen(TreeGenConfig(n_max=n, d_model=16, n_heads=2, n_layers=1))
    leaves = simulate(1, n_leaves=(n, n), seed=0)[0].leaves

    def no_steps(*args, **kwargs):
        raise AssertionError("the sampler ran before the arguments were checked")

    monkeypatch.setattr(model, "_sample_rows", no_steps)
    with pytest.raises(ValueError, match="seed"):
        model.sample(leaves[:5], seed=-1)
    with pytest.raises(ValueError, match="EXACT_MAX_LEAVES"):
        model.sample(leaves, decoder="exact")
