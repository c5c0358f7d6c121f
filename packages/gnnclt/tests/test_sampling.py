"""The O(n nu) sampler: symmetry, no self-loops, degrees, exact Bernoulli law, determinism, no dense n x n."""

import jax
import numpy as np
import pytest
from jax.experimental import sparse as jsparse
from nips25_gnnclt import CSBM, sample_csbm


def _edges(A):
    idx = np.asarray(A.indices)
    return idx[:, 0], idx[:, 1]


def test_sampler_symmetric_no_self_loops_and_class_degrees(model):
    """Per-class mean degree equals sum_c' (n_c' - [c=c']) nu B_cc' / n within 4 standard errors."""
    n, nu = 6000, 20.0
    s = sample_csbm(model, jax.random.key(0), n=n, nu=nu)
    assert isinstance(s.A, jsparse.BCOO)
    r, c = _edges(s.A)
    assert not np.any(r == c)
    fwd = set(zip(r.tolist(), c.tolist()))
    assert len(fwd) == len(r)  # no duplicate entries
    assert all((j, i) in fwd for i, j in list(fwd)[:2000])
    y = np.asarray(s.y)
    deg = np.bincount(r, minlength=n)
    counts = np.bincount(y, minlength=2)
    p = model.edge_probabilities(n=n, nu=nu)
    for cls in range(2):
        expected = sum((counts[b] - (b == cls)) * p[cls, b] for b in range(2))
        d = deg[y == cls]
        assert abs(d.mean() - expected) <= 4 * np.sqrt(expected / d.size)


def test_blockwise_and_bernoulli_agree_in_law(model):
    """Edge counts per block: the O(n nu) sampler and exact Bernoulli indicators match the binomial mean."""
    n, nu = 300, 30.0
    totals = {"blockwise": [], "bernoulli": []}
    for method in totals:
        for seed in range(3):
            s = sample_csbm(model, jax.random.key(seed), n=n, nu=nu, method=method)
            totals[method].append(s.A.nse / 2)
    y = np.asarray(sample_csbm(model, jax.random.key(0), n=n, nu=nu).y)
    for method, vals in totals.items():
        # labels differ per seed; compare with the population expectation n^2/2 * nu pi^T B pi / n
        expected = 0.5 * n * model.average_degree(nu)
        assert abs(np.mean(vals) - expected) <= 4 * np.sqrt(expected / len(vals)) + 0.01 * expected, method
    assert y.shape == (n,)


def test_resampling_yields_exactly_distinct_pairs():
    """Dense regime (p = 0.9): 'resample' keeps every pair distinct, 'keep' leaves duplicates (a multigraph)."""
    m = CSBM(pi=[1.0], B=[[1.0]], means=[[0.0]], cov=[[1.0]])
    s = sample_csbm(m, jax.random.key(2), n=400, nu=360.0, method="blockwise")
    r, c = _edges(s.A)
    assert len(set(zip(r.tolist(), c.tolist()))) == len(r)
    expected = 0.9 * 400 * 399 / 2
    assert abs(s.A.nse / 2 - expected) <= 5 * np.sqrt(expected * 0.1)
    multi = sample_csbm(m, jax.random.key(2), n=400, nu=360.0, method="blockwise", duplicates="keep")
    r, c = _edges(multi.A)
    assert len(set(zip(r.tolist(), c.tolist()))) < len(r)


def test_same_key_same_sample(model):
    a = sample_csbm(model, jax.random.key(7), n=2000, nu=15.0)
    b = sample_csbm(model, jax.random.key(7), n=2000, nu=15.0)
    c = sample_csbm(model, jax.random.key(8), n=2000, nu=15.0)
    np.testing.assert_array_equal(np.asarray(a.A.indices), np.asarray(b.A.indices))
    np.testing.assert_array_equal(np.asarray(a.X), np.asarray(b.X))
    assert not np.array_equal(np.asarray(a.y), np.asarray(c.y))


def test_large_sparse_graph_never_builds_dense_matrix(model):
    """n = 300 000 (a dense float32 matrix would need 360 GB): memory is O(n nu)."""
    s = sample_csbm(model, jax.random.key(0), n=300_000, nu=2.0)
    assert s.A.shape == (300_000, 300_000)
    assert s.A.nse == pytest.approx(300_000 * model.average_degree(2.0), rel=0.02)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": 1}, "n"),
        ({"nu": 0.0}, "nu"),
        ({"nu": float("nan")}, "nu"),
        ({"n": 10, "nu": 100.0}, "nu"),
        ({"method": "dense"}, "method"),
        ({"duplicates": "drop"}, "duplicates"),
        ({"n": 5000, "method": "bernoulli"}, "bernoulli"),
    ],
)
def test_sampler_rejects_bad_input(model, kwargs, match):
    args = {"n": 100, "nu": 5.0, **kwargs}
    with pytest.raises(ValueError, match=match):
        sample_csbm(model, jax.random.key(0), **args)


def test_sampler_rejects_bad_types(model):
    with pytest.raises(TypeError, match="key"):
        sample_csbm(model, 0, n=100, nu=5.0)
    with pytest.raises(TypeError, match="model"):
        sample_csbm("csbm", jax.random.key(0), n=100, nu=5.0)
    with pytest.raises(TypeError, match="n"):
        sample_csbm(model, jax.random.key(0), n=100.5, nu=5.0)
