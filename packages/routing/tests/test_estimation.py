"""Known answers for the kNN estimates: faiss vs scikit-learn, self-lookup, HNSW recall, scale invariance."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_routing import ANNEstimator, HistoryStore
from sklearn.neighbors import NearestNeighbors

from .conftest import make_history


def test_faiss_flat_topk_equals_sklearn_brute_cosine():
    """faiss IndexFlatIP on normalised vectors returns the same top-k as sklearn's brute-force cosine kNN."""
    hist = make_history(0, n=400, dim=16)
    queries = np.random.default_rng(1).normal(size=(50, 16)) * 3
    ours = ANNEstimator(hist, backend="faiss-flat", k=5).neighbors(queries)
    ref = NearestNeighbors(n_neighbors=5, metric="cosine", algorithm="brute").fit(hist.embeddings)
    expected = ref.kneighbors(queries, return_distance=False)
    assert np.array_equal(ours, expected)
    assert np.array_equal(ANNEstimator(hist, backend="sklearn", k=5).neighbors(queries), expected)


@pytest.mark.parametrize("backend", ["faiss-flat", "faiss-hnsw", "sklearn"])
def test_history_point_with_k1_returns_its_own_quality_and_cost(backend):
    """A history query looked up with k=1 is its own nearest neighbour: the estimates are its own d and g."""
    hist = make_history(2, n=200)
    d, g = ANNEstimator(hist, backend=backend, k=1).estimate(hist.embeddings[:40])
    np.testing.assert_allclose(d, hist.quality[:40])
    np.testing.assert_allclose(g, hist.cost[:40])


def test_hnsw_recall_at_5_on_clustered_data():
    """faiss HNSW (M=32, efC=200, ef=50) finds >= 95% of the exact top-5 on clustered data."""
    hist = make_history(3, n=3000, dim=32, clusters=20)
    queries = hist.embeddings[:300] + np.random.default_rng(4).normal(size=(300, 32)) * 0.5
    approx = ANNEstimator(hist, backend="faiss-hnsw").neighbors(queries)
    exact = ANNEstimator(hist, backend="faiss-flat").neighbors(queries)
    recall = np.mean([len(set(a) & set(e)) / 5 for a, e in zip(approx, exact, strict=True)])
    assert recall >= 0.95


@settings(max_examples=25, deadline=None)
@given(scale=st.floats(0.01, 100.0), seed=st.integers(0, 1000))
def test_estimates_are_invariant_to_query_scale_and_bounded(scale, seed):
    """Cosine similarity ignores the query's norm; estimates are means, so they lie within the history's range."""
    hist = make_history(5, n=120)
    est = ANNEstimator(hist, backend="faiss-flat", k=3)
    q = np.random.default_rng(seed).normal(size=(4, 8))
    d1, g1 = est.estimate(q)
    d2, g2 = est.estimate(q * scale)
    np.testing.assert_allclose(d1, d2)
    np.testing.assert_allclose(g1, g2)
    assert (d1 >= hist.quality.min(axis=0) - 1e-12).all() and (d1 <= hist.quality.max(axis=0) + 1e-12).all()


def test_estimate_is_the_mean_over_neighbours_by_hand():
    """Hand value: 4 history points on two axes; k=2 around the first axis averages the two points there."""
    emb = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    hist = HistoryStore(emb, [[1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, 1.0]], [[1.0, 2.0], [3.0, 4.0], [0, 0], [0, 0]])
    d, g = ANNEstimator(hist, backend="faiss-flat", k=2).estimate([[1.0, 0.05]])
    np.testing.assert_allclose(d, [[0.5, 0.0]])
    np.testing.assert_allclose(g, [[2.0, 3.0]])


def test_a_users_ivf_index_gives_the_exact_neighbours_with_every_list_probed_and_bad_indexes_are_refused():
    import faiss
    from nips25_routing import l2_normalize

    from .conftest import make_history

    hist = make_history(0)
    base = l2_normalize(hist.embeddings)
    quantizer = faiss.IndexFlatIP(8)
    ivf = faiss.IndexIVFFlat(quantizer, 8, 8, faiss.METRIC_INNER_PRODUCT)
    ivf.train(base)
    ivf.add(base)
    ivf.nprobe = 8
    q = np.random.default_rng(3).normal(size=(40, 8)) * 3
    est = ANNEstimator(hist, index=ivf)
    assert est.backend == "index"
    exact = ANNEstimator(hist, backend="faiss-flat")
    np.testing.assert_allclose(est.estimate(q)[0], exact.estimate(q)[0])
    small = faiss.IndexFlatIP(8)
    small.add(base[:10])
    with pytest.raises(ValueError, match="index must hold the 300 history rows"):
        ANNEstimator(hist, index=small)
    with pytest.raises(TypeError, match="index must be a faiss index"):
        ANNEstimator(hist, index=object())
    quantizer64 = faiss.IndexFlatIP(8)
    empty_lists = faiss.IndexIVFFlat(quantizer64, 8, 64, faiss.METRIC_INNER_PRODUCT)
    empty_lists.train(base)
    empty_lists.add(base)
    empty_lists.nprobe = 1  # one list of 64 may hold fewer than k vectors
    with pytest.raises(RuntimeError, match="fewer than k=50"):
        ANNEstimator(hist, index=empty_lists, k=50, ef_search=50).estimate(q)
