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


def test_recall_at_k_by_hand_and_bad_shapes():
    from nips25_routing import recall_at_k

    assert recall_at_k([[0, 1], [2, 3]], [[1, 0], [2, 4]]) == 0.75
    assert recall_at_k([[5, 6, 7]], [[7, 6, 5]]) == 1.0
    with pytest.raises(ValueError, match="found and exact"):
        recall_at_k([[0, 1]], [[0, 1, 2]])


def test_exact_backends_have_recall_one_and_ef_search_only_applies_to_hnsw():
    hist = make_history(0)
    q = np.random.default_rng(5).normal(size=(60, 8)) * 3
    flat = ANNEstimator(hist, backend="faiss-flat")
    assert flat.recall(q) == 1.0
    assert ANNEstimator(hist, backend="sklearn").recall(q) == 1.0
    np.testing.assert_array_equal(flat.exact_neighbors(q), flat.neighbors(q))
    with pytest.raises(ValueError, match="applies to an HNSW index"):
        flat.set_ef_search(20)
    with pytest.raises(ValueError, match="applies to an HNSW index"):
        flat.tune_ef_search(q)
    hnsw = ANNEstimator(hist)
    with pytest.raises(ValueError, match="ef_search must be >= k=5"):
        hnsw.set_ef_search(4)
    with pytest.raises(ValueError, match="target_recall"):
        hnsw.tune_ef_search(q, target_recall=1.5)
    with pytest.raises(ValueError, match="candidates must hold a value >= k=5"):
        hnsw.tune_ef_search(q, candidates=(2, 3))


def test_tune_ef_search_picks_the_smallest_candidate_reaching_the_target():
    """On 3,000 clustered 32-d points the tuned efSearch reaches the target, and the next smaller one does not."""
    hist = make_history(3, n=3000, dim=32, clusters=20)
    rng = np.random.default_rng(4)
    calib = hist.embeddings[:300] + rng.normal(size=(300, 32)) * 0.5
    est = ANNEstimator(hist)
    candidates = (5, 6, 8, 12, 16, 24, 32, 64)
    ef, rec = est.tune_ef_search(calib, target_recall=0.97, candidates=candidates)
    assert est.ef_search == ef and est._index.hnsw.efSearch == ef
    assert rec >= 0.97 and est.recall(calib) == rec
    smaller = [c for c in candidates if c < ef]
    if smaller:
        est.set_ef_search(smaller[-1])
        assert est.recall(calib) < 0.97
    ef_max, rec_max = est.tune_ef_search(calib, target_recall=1.0, candidates=(5,))
    assert ef_max == 5 and rec_max == est.recall(calib)  # unreachable target: the largest candidate is kept


def test_the_single_gather_estimate_equals_the_two_means_bit_for_bit():
    """0.2.1 gathers quality and cost in one (H, 2M) array: identical floats to the two separate means."""
    hist = make_history(1, n=500, n_models=5)
    est = ANNEstimator(hist, backend="faiss-flat", k=7)
    q = np.random.default_rng(2).normal(size=(90, 8)) * 3
    idx = est.neighbors(q)
    d, g = est.estimate(q)
    np.testing.assert_array_equal(d, hist.quality[idx].mean(axis=1))
    np.testing.assert_array_equal(g, hist.cost[idx].mean(axis=1))


def test_a_users_index_over_the_raw_or_reordered_embeddings_warns_and_a_correct_one_does_not():
    """Review finding: an IVF index built on the raw embeddings gave recall 0.016 without a word."""
    import warnings

    import faiss
    from nips25_routing import l2_normalize

    from .conftest import make_history

    hist = make_history(0)
    raw = np.ascontiguousarray(hist.embeddings, dtype=np.float32)
    base = l2_normalize(hist.embeddings)
    wrong_content = faiss.IndexFlatL2(8)
    wrong_content.add(raw * 5.0 + 1.0)
    wrong_order = faiss.IndexFlatIP(8)
    wrong_order.add(np.ascontiguousarray(base[::-1]))
    for index in (wrong_content, wrong_order):
        with pytest.warns(UserWarning, match=r"index: only \d+% of 32 history rows find themselves"):
            ANNEstimator(hist, index=index)
    right = faiss.IndexFlatIP(8)
    right.add(base)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ANNEstimator(hist, index=right)


def test_ivf_backend_is_exact_with_every_list_probed_and_tune_nprobe_picks_the_smallest():
    """The faiss-ivf backend (0.2.3): nlist defaults to round(sqrt(H)); nprobe = nlist scans everything."""
    hist = make_history(5, n=3000, dim=32, clusters=20)
    rng = np.random.default_rng(6)
    calib = hist.embeddings[:300] + rng.normal(size=(300, 32)) * 0.5
    exact = ANNEstimator(hist, backend="faiss-flat").neighbors(calib)
    est = ANNEstimator(hist, backend="faiss-ivf", nprobe=10_000)  # clipped to nlist: every list
    assert est.nlist == round(3000**0.5) == est.nprobe
    np.testing.assert_array_equal(est.neighbors(calib), exact)
    candidates = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
    n, rec = est.tune_nprobe(calib, target_recall=0.97, candidates=candidates)
    assert est.nprobe == n == est._index.nprobe and rec >= 0.97 and est.recall(calib) == rec
    smaller = [c for c in candidates if c < n]
    if smaller:
        est.set_nprobe(smaller[-1])
        assert est.recall(calib) < 0.97
    with pytest.raises(ValueError, match="nprobe applies to an IVF index"):
        ANNEstimator(hist).set_nprobe(4)
    with pytest.raises(ValueError, match="ef_search applies to an HNSW index"):
        est.set_ef_search(16)
    with pytest.raises(ValueError, match="nlist must be <= the history size"):
        ANNEstimator(hist, backend="faiss-ivf", nlist=3001)
    with pytest.raises(ValueError, match="nprobe"):
        ANNEstimator(hist, backend="faiss-ivf", nprobe=0)
    with pytest.raises(ValueError, match="candidates"):
        est.tune_nprobe(calib, candidates=(0,))
